// What each runtime runs: the capability table's rows and the plans each runtime refuses, with
// the feature named.
#include "simulator/spec/runtime_support.h"

#include <catch2/catch.hpp>

#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

std::string runtime_refusal(const std::string& inline_plan, const std::string& model_name) {
  Plan plan = parse_plan(inline_plan, "test");
  ModelSpec model = load_model_spec(model_name);
  std::optional<std::string> problem = runtime_plan_problem(plan, model);
  return problem ? *problem : "";
}

TEST_CASE("Runtime support: every row cites its launcher sources") {
  for (Runtime runtime : all_runtimes()) {
    INFO(runtime_name(runtime));
    CHECK(std::string(runtime_support(runtime).source).size() > 100);
  }
}

TEST_CASE("Runtime support: schedules each runtime runs") {
  auto runs = [](Runtime runtime, ScheduleKind kind) {
    return (runtime_support(runtime).schedules & (1u << static_cast<unsigned>(kind))) != 0;
  };
  // Megatron: 1F1B and interleaved only (schedules.py get_forward_backward_func).
  CHECK(runs(Runtime::kMegatronCore, ScheduleKind::kOneFOneB));
  CHECK(runs(Runtime::kMegatronCore, ScheduleKind::kInterleaved1F1B));
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::kZbH1, ScheduleKind::kZbH2,
                            ScheduleKind::kZbv, ScheduleKind::kDualPipeV}) {
    CHECK_FALSE(runs(Runtime::kMegatronCore, kind));
  }
  // DeepSpeed: its TrainSchedule (1F1B) only.
  CHECK(runtime_support(Runtime::kDeepSpeed).schedules ==
        1u << static_cast<unsigned>(ScheduleKind::kOneFOneB));
  // torchtitan: torch.distributed.pipelining's classes; no ZB-H2 / ZB-2P.
  CHECK(runs(Runtime::kTorchtitan, ScheduleKind::kZbv));
  CHECK(runs(Runtime::kTorchtitan, ScheduleKind::kDualPipeV));
  CHECK_FALSE(runs(Runtime::kTorchtitan, ScheduleKind::kZbH2));
  CHECK_FALSE(runtime_support(Runtime::kPytorchFsdp).pipeline);
}

TEST_CASE("Runtime support: plans each runtime refuses, naming the feature") {
  // Megatron-Core.
  CHECK(runtime_refusal("tp=2,pp=4,gbs=16,schedule=zb-h1", "llama3-8b") ==
        "runtime megatron-core cannot run pipeline schedule zb-h1 (it runs 1f1b, "
        "interleaved-1f1b) (its capabilities: docs/export.md \"What each runtime runs\"); "
        "choose a plan it runs, or another runtime");
  CHECK(runtime_refusal("tp=2,pp=4,gbs=16,schedule=interleaved-1f1b,vpp=2", "llama3-8b") == "");
  CHECK(runtime_refusal("dp=8,gbs=16,offload=0.5", "llama3-8b")
            .find("offload without the distributed optimizer") != std::string::npos);
  CHECK(runtime_refusal("dp=8,gbs=16,zero_stage=1,offload=0.5", "llama3-8b") == "");
  CHECK(runtime_refusal("tp=2,dp=4,ep=2,gbs=16,seq=4096", "mixtral-8x7b")
            .find("expert and tensor parallelism without sequence parallelism") !=
        std::string::npos);
  // DeepSpeed: partial offload needs ZeRO-3; ZeRO-2/3 not with a pipeline; no cp.
  CHECK(runtime_refusal("dp=8,gbs=16,zero_stage=2,offload=0.5,runtime=deepspeed", "llama3-8b")
            .find("partial offload needs ZeRO-3") != std::string::npos);
  CHECK(runtime_refusal("dp=8,gbs=16,zero_stage=3,offload=0.5,runtime=deepspeed", "llama3-8b") ==
        "");
  CHECK(runtime_refusal("pp=2,dp=4,gbs=16,zero_stage=3,runtime=deepspeed", "llama3-8b")
            .find("ZeRO stage 3 with pipeline parallelism") != std::string::npos);
  CHECK(runtime_refusal("dp=4,cp=2,gbs=16,zero_stage=1,runtime=deepspeed", "llama3-8b")
            .find("ring context parallelism (cp=2)") != std::string::npos);
  // torchtitan: offload only with FSDP sharding, whole; no ZeRO-1; DDP only alone.
  CHECK(runtime_refusal("tp=8,gbs=16,sequence_parallel=true,offload_optimizer=true,"
                        "runtime=torchtitan",
                        "llama3-8b")
            .find("optimizer CPU offload without FSDP sharding (dp*cp = 1") != std::string::npos);
  CHECK(runtime_refusal("tp=2,dp=4,gbs=16,sequence_parallel=true,zero_stage=2,"
                        "offload_optimizer=true,runtime=torchtitan",
                        "llama3-8b") == "");
  CHECK(runtime_refusal("dp=8,gbs=16,runtime=torchtitan", "llama3-8b") == "");  // DDP
  CHECK(runtime_refusal("dp=8,gbs=16,zero_stage=1,runtime=torchtitan", "llama3-8b")
            .find("ZeRO stage 1") != std::string::npos);
  // PyTorch FSDP alone: no model parallelism.
  CHECK(runtime_refusal("tp=2,dp=4,gbs=16,runtime=pytorch-fsdp", "llama3-8b")
            .find("tensor parallelism (tp=2)") != std::string::npos);
}

TEST_CASE("Runtime support: the 2021-2022 Megatron-LM reduces bf16 gradients in fp32 only") {
  for (Runtime runtime :
       {Runtime::kMegatronCore, Runtime::kDeepSpeed, Runtime::kTorchtitan, Runtime::kPytorchFsdp}) {
    CHECK(runtime_support(runtime).half_gradient_reduce);
  }
  CHECK_FALSE(runtime_support(Runtime::kMegatronLm).half_gradient_reduce);
  CHECK(runtime_refusal("tp=2,dp=4,gbs=8,grad_reduce_in_fp32=false", "llama3-8b").empty());
  CHECK(
      runtime_refusal("tp=2,dp=4,gbs=8,grad_reduce_in_fp32=false,runtime=megatron-lm", "llama3-8b")
          .rfind("runtime megatron-lm cannot run bf16 gradient reduction "
                 "(grad_reduce_in_fp32=false; Megatron-Core's --grad-reduce-in-bf16)",
                 0) == 0);
  // fp16 training reduces fp16 gradients there by default.
  CHECK(runtime_refusal("tp=2,dp=4,gbs=8,precision=fp16,grad_reduce_in_fp32=false,"
                        "runtime=megatron-lm",
                        "llama3-8b")
            .empty());
}

TEST_CASE("Runtime support: fp8 recipes each runtime runs") {
  const std::string fp8 = "tp=2,dp=4,gbs=8,precision=fp8,zero_stage=1";
  for (const char* recipe : {"delayed", "tensorwise", "mxfp8", "blockwise"}) {
    CHECK(runtime_refusal(fp8 + ",fp8_recipe=" + recipe, "llama3-8b").empty());
  }
  // Transformer Engine's delayed scaling only, elsewhere but torchtitan (torchao: tensorwise,
  // MXFP8).
  CHECK(runtime_refusal(fp8 + ",fp8_recipe=tensorwise,runtime=megatron-lm", "llama3-8b")
            .rfind("runtime megatron-lm cannot run the tensorwise fp8 recipe", 0) == 0);
  CHECK(runtime_refusal(fp8 + ",fp8_recipe=mxfp8,runtime=deepspeed", "llama3-8b")
            .rfind("runtime deepspeed cannot run the mxfp8 fp8 recipe", 0) == 0);
  const std::string titan = "tp=1,dp=8,gbs=8,precision=fp8,zero_stage=3,runtime=torchtitan";
  CHECK(runtime_refusal(titan + ",fp8_recipe=delayed", "llama3-8b")
            .rfind("runtime torchtitan cannot run the delayed fp8 recipe", 0) == 0);
  CHECK(runtime_refusal(titan, "llama3-8b").empty());  // Tensorwise.
  CHECK(runtime_refusal(titan + ",fp8_recipe=mxfp8", "llama3-8b").empty());
  // Megatron-Core's assert: delayed scaling with moe_act or layernorm recompute.
  CHECK(runtime_refusal(fp8 + ",fp8_recipe=delayed,recompute=selective,"
                              "recompute_modules=moe_act",
                        "qwen3-30b-a3b")
            .find("delayed fp8 scaling beside moe_act or layernorm recompute") !=
        std::string::npos);
  CHECK(runtime_refusal(fp8 + ",recompute=selective,recompute_modules=moe_act", "qwen3-30b-a3b")
            .empty());  // Unnamed, the recipe is tensorwise there.
}

TEST_CASE("Runtime support: activation offloading is Megatron-Core's, without recompute") {
  CHECK(runtime_refusal("dp=8,gbs=64,activation_offload_layers=4", "llama3-8b").empty());
  CHECK(runtime_refusal("dp=8,gbs=64,activation_offload_layers=4,zero_stage=3,runtime=deepspeed",
                        "llama3-8b")
            .rfind("runtime deepspeed cannot run activation offloading", 0) == 0);
  CHECK(runtime_refusal("dp=8,gbs=64,activation_offload_layers=4,recompute=selective", "llama3-8b")
            .find("activation offloading with recompute=selective") != std::string::npos);
  CHECK(runtime_refusal("dp=8,gbs=64,activation_offload_layers=4,cuda_graphs=layers", "llama3-8b")
            .find("inside per-layer CUDA graphs") != std::string::npos);
  CHECK(runtime_refusal("dp=8,gbs=64,activation_offload_layers=4,cuda_graphs=full-iteration",
                        "llama3-8b")
            .empty());
}

TEST_CASE("Runtime support: partial full recompute as each runtime can express it") {
  // Megatron's block method runs any N; torchtitan's layer-level selective checkpointing every
  // k-th block (32 layers, pp 2: chunks of 16, so N = 8 is k = 2 and N = 5 has no k);
  // DeepSpeed's pipeline checkpoints every layer or none.
  CHECK(runtime_refusal("pp=2,dp=4,gbs=16,recompute_num_layers=5", "llama3-8b").empty());
  CHECK(runtime_refusal("pp=2,dp=4,gbs=16,zero_stage=2,recompute_num_layers=8,"
                        "runtime=torchtitan",
                        "llama3-8b")
            .empty());
  CHECK(runtime_refusal("pp=2,dp=4,gbs=16,zero_stage=2,recompute_num_layers=5,"
                        "runtime=torchtitan",
                        "llama3-8b") ==
        "runtime torchtitan cannot run full recompute of 5 layers per pipeline chunk "
        "(recompute_num_layers), which is not every k-th layer of equal chunks (torchtitan's "
        "selective_ac_option = k) (its capabilities: docs/export.md \"What each runtime runs\"); "
        "choose a plan it runs, or another runtime");
  CHECK(torchtitan_ac_frequency(parse_plan("pp=2,dp=4,gbs=16,recompute_num_layers=8", "t"),
                                load_model_spec("llama3-8b")) == 2);
  CHECK(torchtitan_ac_frequency(parse_plan("pp=2,dp=4,gbs=16,recompute_num_layers=4,"
                                           "schedule=interleaved-1f1b,vpp=2",
                                           "t"),
                                load_model_spec("llama3-8b")) == 2);
  CHECK(torchtitan_ac_frequency(parse_plan("pp=2,dp=4,gbs=16,recompute_num_layers=20", "t"),
                                load_model_spec("llama3-8b")) == 1);
  CHECK_FALSE(torchtitan_ac_frequency(parse_plan("pp=2,dp=4,gbs=16,recompute=full", "t"),
                                      load_model_spec("llama3-8b")));
  CHECK(runtime_refusal("dp=8,gbs=16,zero_stage=1,recompute_num_layers=5,runtime=deepspeed",
                        "llama3-8b")
            .empty());
  CHECK(runtime_refusal("pp=2,dp=4,gbs=16,zero_stage=1,recompute_num_layers=5,"
                        "runtime=deepspeed",
                        "llama3-8b")
            .find("under pipeline parallelism (its PipelineModule checkpoints every layer") !=
        std::string::npos);
}

TEST_CASE(
    "Runtime support: megatron-core overlaps TP communication by default, torchtitan "
    "when told") {
  CHECK(runtime_support(Runtime::kMegatronCore).tp_comm_overlap == TpCommOverlap::kDefault);
  CHECK(runtime_support(Runtime::kTorchtitan).tp_comm_overlap == TpCommOverlap::kOptional);
  for (Runtime runtime : {Runtime::kMegatronLm, Runtime::kDeepSpeed, Runtime::kPytorchFsdp}) {
    CHECK(runtime_support(runtime).tp_comm_overlap == TpCommOverlap::kNone);
  }
  const std::string sp = "tp=2,dp=4,gbs=8,zero_stage=3,sequence_parallel=true";
  CHECK(tp_comm_overlap_in_force(parse_plan(sp, "p")));
  CHECK_FALSE(tp_comm_overlap_in_force(parse_plan(sp + ",runtime=torchtitan", "p")));
  CHECK(tp_comm_overlap_in_force(parse_plan(sp + ",runtime=torchtitan,tp_comm_overlap=true", "p")));
  CHECK(runtime_refusal("tp=2,dp=4,gbs=8,sequence_parallel=true,tp_comm_overlap=true", "llama3-8b")
            .empty());
  CHECK(
      runtime_refusal("tp=2,dp=4,gbs=8,sequence_parallel=true,tp_comm_overlap=true,"
                      "runtime=megatron-lm",
                      "llama3-8b")
          .rfind("runtime megatron-lm cannot run tensor-parallel communication overlap "
                 "(tp_comm_overlap=true; Megatron-Core's --tp-comm-overlap, torchtitan's async TP) "
                 "(its capabilities",
                 0) == 0);
  // torchtitan's async TP (enable_async_tensor_parallel on the compiled model).
  CHECK(runtime_refusal("tp=2,dp=4,gbs=8,zero_stage=3,sequence_parallel=true,"
                        "tp_comm_overlap=true,runtime=torchtitan",
                        "llama3-8b")
            .empty());
  CHECK(runtime_refusal("tp=2,dp=4,gbs=8,zero_stage=3,sequence_parallel=true,"
                        "tp_comm_overlap=true,runtime=deepspeed",
                        "llama3-8b")
            .find("torchtitan's async TP") != std::string::npos);
  // Off is always possible, and is what the other runtimes default to.
  CHECK(runtime_refusal("tp=2,dp=4,gbs=8,zero_stage=3,sequence_parallel=true,"
                        "tp_comm_overlap=false,runtime=torchtitan",
                        "llama3-8b")
            .empty());
}

TEST_CASE("Runtime support: only megatron-core captures CUDA graphs") {
  CHECK(runtime_support(Runtime::kMegatronCore).cuda_graphs);
  for (Runtime runtime :
       {Runtime::kMegatronLm, Runtime::kDeepSpeed, Runtime::kTorchtitan, Runtime::kPytorchFsdp}) {
    CHECK_FALSE(runtime_support(runtime).cuda_graphs);
  }
  CHECK(runtime_refusal("dp=8,gbs=8,cuda_graphs=full-iteration", "llama3-8b").empty());
  CHECK(runtime_refusal("dp=8,gbs=8,cuda_graphs=layers,runtime=torchtitan", "llama3-8b")
            .rfind("runtime torchtitan cannot run CUDA graph capture of the training step "
                   "(cuda_graphs=layers; Megatron-Core's --cuda-graph-impl) (its capabilities",
                   0) == 0);
  CHECK(runtime_refusal("dp=8,gbs=8,runtime=torchtitan", "llama3-8b").empty());
  // Megatron-Core runs full recompute only under the full-iteration graph.
  CHECK(runtime_refusal("dp=8,gbs=8,recompute=full,cuda_graphs=layers", "llama3-8b")
            .rfind("runtime megatron-core cannot run full recompute inside per-layer CUDA graphs "
                   "(cuda_graphs=layers, recompute=full; only cuda_graphs=full-iteration allows "
                   "it)",
                   0) == 0);
  CHECK(
      runtime_refusal("dp=8,gbs=8,recompute=full,cuda_graphs=full-iteration", "llama3-8b").empty());
  CHECK(runtime_refusal("dp=8,gbs=8,recompute=selective,cuda_graphs=layers", "llama3-8b").empty());
}

TEST_CASE("Runtime support: only megatron-core runs nvfp4 GEMMs") {
  CHECK_FALSE(runtime_precision_problem(Runtime::kMegatronCore, Precision::kNvfp4).has_value());
  for (Runtime runtime :
       {Runtime::kMegatronLm, Runtime::kDeepSpeed, Runtime::kTorchtitan, Runtime::kPytorchFsdp}) {
    INFO(runtime_name(runtime));
    REQUIRE(runtime_precision_problem(runtime, Precision::kNvfp4).has_value());
    CHECK(runtime_precision_problem(runtime, Precision::kNvfp4)
              ->rfind("runtime " + runtime_name(runtime) + " cannot run precision nvfp4", 0) == 0);
    CHECK_FALSE(runtime_precision_problem(runtime, Precision::kBf16).has_value());
  }
  CHECK(runtime_refusal("dp=8,gbs=8,precision=nvfp4", "llama3-8b").empty());
  CHECK(runtime_refusal("dp=8,gbs=8,precision=nvfp4,runtime=torchtitan", "llama3-8b")
            .rfind("runtime torchtitan cannot run precision nvfp4", 0) == 0);
}

TEST_CASE(
    "Runtime support: only megatron-core re-runs recompute modules other than core_attn; "
    "torchtitan none") {
  CHECK(runtime_refusal("dp=8,gbs=8,recompute_modules=moe_act:layernorm", "qwen3-30b-a3b").empty());
  for (Runtime runtime : all_runtimes()) {
    INFO(runtime_name(runtime));
    const RecomputeModules modules = recompute_module_bit(RecomputeModule::kLayernorm) |
                                     recompute_module_bit(RecomputeModule::kMoeAct);
    // torchtitan refuses any module list: its selective recompute is its op policy.
    CHECK(
        runtime_recompute_modules_problem(runtime, recompute_module_bit(RecomputeModule::kCoreAttn))
            .has_value() == (runtime == Runtime::kTorchtitan));
    if (runtime == Runtime::kMegatronCore) {
      CHECK(runtime_recompute_modules_problem(runtime, modules) == std::nullopt);
    } else if (runtime == Runtime::kTorchtitan) {
      CHECK(runtime_recompute_modules_problem(runtime, modules)
                .value_or("")
                .rfind("runtime torchtitan cannot run selective recompute of moe_act, layernorm "
                       "(recompute_modules; its selective recompute is its op policy",
                       0) == 0);
    } else {
      CHECK(runtime_recompute_modules_problem(runtime, modules)
                .value_or("")
                .rfind(
                    "runtime " + runtime_name(runtime) +
                        " cannot run selective recompute of moe_act, layernorm (recompute_modules, "
                        "Megatron-Core's --recompute-modules; it re-runs the attention core only)",
                    0) == 0);
    }
  }
  // torchtitan's selective recompute is its op policy (model/op_sac.h): plain selective runs,
  // a module list (even Megatron's default core_attn) does not.
  CHECK(runtime_refusal("dp=8,gbs=8,recompute=selective,runtime=torchtitan", "llama3-8b").empty());
  CHECK(runtime_refusal("dp=8,gbs=8,recompute_modules=core_attn,runtime=torchtitan", "llama3-8b")
            .rfind("runtime torchtitan cannot run selective recompute of core_attn", 0) == 0);
  CHECK(runtime_refusal("dp=8,gbs=8,recompute_modules=mlp,runtime=torchtitan", "llama3-8b")
            .rfind("runtime torchtitan cannot run selective recompute of mlp", 0) == 0);
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("Runtime support: only megatron-core groups interleaved microbatches other than pp") {
  const std::string plan =
      "tp=1,pp=4,dp=2,mbs=1,gbs=24,schedule=interleaved-1f1b,vpp=2,"
      "microbatch_group_size_per_vp_stage=";
  CHECK(runtime_refusal(plan + "6", "llama3-8b").empty());
  CHECK_THAT(runtime_refusal(plan + "6,runtime=megatron-lm", "llama3-8b"),
             Catch::StartsWith("runtime megatron-lm cannot run interleaved microbatch groups of 6 "
                               "rather than pp=4"));
  CHECK_THAT(runtime_refusal(plan + "6,runtime=torchtitan,zero_stage=2", "llama3-8b"),
             Catch::StartsWith("runtime torchtitan cannot run interleaved microbatch groups"));
  // Groups of pp are every interleaving runtime's own.
  CHECK(runtime_refusal(plan + "4,runtime=megatron-lm", "llama3-8b").empty());
}

}  // namespace
}  // namespace ppsim
