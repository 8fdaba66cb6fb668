#include "simulator/spec/plan.h"

#include <catch2/catch.hpp>

#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

// The message parse_plan(text, "--plan") throws, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_plan(text, "--plan");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

ModelSpec test_model() {
  ModelSpec model;
  model.name = "m";
  model.num_layers = 32;
  model.hidden_size = 4096;
  model.ffn_hidden_size = 14336;
  model.num_attention_heads = 32;
  model.num_kv_heads = 8;
  model.head_dim = 128;
  model.vocab_size = 128256;
  model.seq_length = 8192;
  return model;
}

ClusterSpec test_cluster(int64_t nodes, const std::string& gpu = "H100-SXM-80GB") {
  ClusterSpec cluster;
  cluster.name = "c";
  NodeGroup group;
  group.count = nodes;
  group.gpus_per_node = 8;
  group.gpu = *find_gpu(gpu);
  group.intra_node = {450e9, 2e-6};
  group.nic = {{50e9, 5e-6}, true};
  cluster.nodes.push_back(group);
  return cluster;
}

std::string problem(const std::string& inline_plan, const ModelSpec& model = test_model(),
                    const ClusterSpec& cluster = test_cluster(4)) {
  return plan_problem(parse_plan(inline_plan, "--plan"), model, cluster).value_or("");
}

TEST_CASE("Plan: inline and JSON forms parse to the same plan") {
  Plan inline_plan = parse_plan(
      "tp=8,pp=4,dp=8,mbs=1,gbs=512,schedule=interleaved-1f1b,vpp=2,precision=fp8", "--plan");
  Plan json_plan = parse_plan(
      R"({"tp": 8, "pp": 4, "dp": 8, "micro_batch_size": 1, "global_batch_size": 512,
          "schedule": "interleaved-1f1b", "vpp": 2, "precision": "fp8"})",
      "p.json");
  CHECK(plan_to_json(inline_plan) == plan_to_json(json_plan));
  CHECK(inline_plan.num_gpus() == 256);
  CHECK(inline_plan.schedule == ScheduleKind::kInterleaved1F1B);
  CHECK(inline_plan.precision == Precision::kFp8);
}

TEST_CASE("Plan: round trips through its JSON and inline forms") {
  Plan plan = parse_plan(
      "tp=2,pp=4,dp=2,cp=2,mbs=2,gbs=64,seq=4096,schedule=zb-h1,recompute=selective,"
      "sequence_parallel=true,zero_stage=1,stage_layers=7:9:9:7,placement=0:0:0:0",
      "--plan");
  CHECK(plan.stage_layers == std::vector<int64_t>{7, 9, 9, 7});
  CHECK(plan.seq_length == 4096);
  CHECK(plan_to_json(parse_plan(plan_to_json(plan), "x")) == plan_to_json(plan));
  CHECK(plan_to_json(parse_plan(plan_to_inline(plan), "x")) == plan_to_json(plan));
}

TEST_CASE("Plan: offload_fraction, its inline short form and round trips") {
  Plan partial = parse_plan("tp=1,gbs=8,offload=0.6", "x");
  CHECK(partial.offload_optimizer);
  CHECK(partial.offload_fraction == 0.6);
  CHECK(offloaded_fraction(partial) == 0.6);
  CHECK(plan_to_inline(partial) == "tp=1,pp=1,dp=1,mbs=1,gbs=8,schedule=1f1b,offload=0.6");
  CHECK(plan_to_json(parse_plan(plan_to_inline(partial), "x")) == plan_to_json(partial));
  CHECK(plan_to_json(parse_plan(plan_to_json(partial), "x")) == plan_to_json(partial));
  Plan json = parse_plan(R"({"gbs": 8, "offload_optimizer": true, "offload_fraction": 0.25})", "x");
  CHECK(json.offload_fraction == 0.25);
  // offload_optimizer alone offloads everything; the inline form stays as it was.
  Plan full = parse_plan("gbs=8,offload_optimizer=true", "x");
  CHECK(full.offload_fraction == 1.0);
  CHECK(plan_to_inline(full).find(",offload_optimizer=true") != std::string::npos);
  CHECK(plan_to_json(full).find("\"offload_fraction\":1.0") != std::string::npos);
  // Fraction 0 is no offload; without offload the JSON has no fraction.
  Plan none = parse_plan("gbs=8,offload=0", "x");
  CHECK_FALSE(none.offload_optimizer);
  CHECK(offloaded_fraction(none) == 0);
  CHECK(plan_to_json(none).find("offload_fraction") == std::string::npos);
}

TEST_CASE("Plan: offload_fraction errors name the key") {
  CHECK(error_of("gbs=8,offload=1.5").rfind("--plan: /offload: expected a number", 0) == 0);
  CHECK(error_of(R"({"gbs": 8, "offload_fraction": -0.1})")
            .rfind("--plan: /offload_fraction: expected a number", 0) == 0);
  CHECK(error_of("gbs=8,offload_optimizer=false,offload=0.5") ==
        "--plan: /offload: offload=0.5 contradicts offload_optimizer=false; a fraction above 0 "
        "offloads, 0 does not (give one of the two keys, or make them agree)");
  CHECK(error_of("gbs=8,offload=0.5,offload_fraction=0.5") ==
        "--plan: /offload: 'offload_fraction' and 'offload' are the same setting; give only one");
}

TEST_CASE("Plan: V-shaped schedules default to two chunks per rank") {
  CHECK(parse_plan("pp=4,gbs=64,schedule=zbv", "x").vpp == 2);
  CHECK(parse_plan("pp=4,gbs=64,schedule=1f1b", "x").vpp == 1);
}

TEST_CASE("Plan: parse errors say where and what") {
  CHECK(error_of("tp=8,pp=4") ==
        "--plan: /: required key 'global_batch_size' (or 'gbs') is missing: the sequences per "
        "optimizer step, e.g. \"global_batch_size\": 512");
  CHECK(error_of("tp=8,gbs=64,schedule=onefoneb")
            .rfind("--plan: /schedule: unknown value 'onefoneb'; expected one of gpipe, 1f1b", 0) ==
        0);
  CHECK(error_of("tp=0,gbs=64") == "--plan: /tp: expected an integer in [1, 16777216], got 0");
  CHECK(error_of("tpp=2,gbs=64").rfind("--plan: /tpp: unknown key 'tpp' (did you mean 'tp'?)", 0) ==
        0);
  CHECK(error_of("tp8,gbs=64") ==
        "--plan: 'tp8' is not KEY=VALUE; write the plan as tp=8,pp=4,dp=8,mbs=1,gbs=512,"
        "schedule=1f1b");
  CHECK(error_of("mbs=1,micro_batch_size=2,gbs=4") ==
        "--plan: /mbs: 'micro_batch_size' and 'mbs' are the same setting; give only one");
  CHECK(error_of("gbs=4,zero_stage=4") ==
        "--plan: /zero_stage: expected an integer in [0, 3], got 4");
}

TEST_CASE("Plan: validation explains impossible plans") {
  CHECK(problem("tp=8,pp=4,dp=8,gbs=512") ==
        "tp*pp*dp*cp = 8*4*8*1 = 256 GPUs, but cluster 'c' has 32");
  CHECK(problem("tp=16,pp=1,dp=2,gbs=512").rfind("tp=16 is more than the 8 GPUs per node", 0) == 0);
  CHECK(problem("tp=3,pp=1,dp=1,gbs=3") == "tp=3 does not divide the 32 attention heads of m");
  CHECK(problem("tp=2,pp=2,dp=2,mbs=2,gbs=6") ==
        "global batch 6 is not divisible by dp*mbs = 2*2 = 4");
  CHECK(problem("pp=33,gbs=33", test_model(), test_cluster(8)) ==
        "pp=33 stages but m has only 32 layers");
  // Chunks within a stage may be uneven (Megatron's pipeline layouts); a middle stage needs a
  // layer per chunk.
  CHECK(problem("pp=4,vpp=3,gbs=8,schedule=interleaved-1f1b") == "");
  CHECK(problem("pp=4,vpp=9,gbs=8,schedule=interleaved-1f1b") ==
        "stage 1 has 8 layers for its 9 chunks (vpp); middle stages need at least one layer per "
        "chunk");
  CHECK(problem("pp=4,dp=2,ep=3,gbs=8").rfind("ep=3 but m has no experts", 0) == 0);
  CHECK(problem("pp=2,gbs=8,schedule=1f1b,stage_layers=10:20") ==
        "stage_layers add up to 30 but m has 32 layers");
  CHECK(problem("tp=8,pp=4,gbs=8,precision=fp8", test_model(), test_cluster(4, "A100-SXM-80GB")) ==
        "precision fp8 needs FP8 tensor cores, which A100-SXM-80GB lacks (use bf16)");
  CHECK(problem("tp=8,pp=4,dp=1,gbs=64,schedule=1f1b").empty());
  CHECK(
      problem("tp=8,pp=4,gbs=8,precision=nvfp4", test_model(), test_cluster(4, "H100-SXM-80GB")) ==
      "precision nvfp4 needs FP4 tensor cores (Blackwell: B200, GB200, B300, GB300), which "
      "H100-SXM-80GB lacks (use fp8 or bf16)");
  CHECK(problem("tp=8,pp=4,gbs=8,precision=nvfp4", test_model(), test_cluster(4, "B200")).empty());
}

TEST_CASE("Plan: precision nvfp4 in the inline and JSON forms") {
  Plan plan = parse_plan("tp=2,pp=2,dp=2,mbs=1,gbs=16,precision=nvfp4", "--plan");
  CHECK(plan.precision == Precision::kNvfp4);
  CHECK(plan_to_json(plan).find(R"("precision":"nvfp4")") != std::string::npos);
  CHECK(plan_to_inline(plan).find(",precision=nvfp4") != std::string::npos);
  CHECK(plan_to_json(parse_plan(plan_to_inline(plan), "x")) == plan_to_json(plan));
  CHECK(plan_to_json(parse_plan(plan_to_json(plan), "x")) == plan_to_json(plan));
  CHECK(error_of("tp=2,gbs=16,precision=fp4").find("bf16, fp16, fp8, nvfp4") != std::string::npos);
}

TEST_CASE("Plan: kv heads must divide tp or be divided by it") {
  ModelSpec model = test_model();
  model.num_attention_heads = 12;
  model.num_kv_heads = 4;
  model.hidden_size = 1536;
  CHECK(
      problem("tp=6,gbs=6", model).rfind("tp=6 and the 4 key/value heads of m do not divide", 0) ==
      0);
  CHECK(problem("tp=2,gbs=2", model).empty());
}

TEST_CASE("Plan: ep must divide the experts") {
  ModelSpec model = test_model();
  model.moe = MoeSpec{8, 2, 14336, 1};
  CHECK(problem("dp=6,ep=3,gbs=6", model) == "ep=3 does not divide the 8 experts of m");
  CHECK(problem("dp=4,ep=8,gbs=8", model) ==
        "etp*ep = 1*8 = 8 must divide tp*dp*cp = 4 (expert groups fold over the GPUs of a "
        "pipeline stage)");
  CHECK(problem("dp=8,ep=8,gbs=8", model).empty());
}

TEST_CASE("Plan: balanced split gives the remainder to the middle stages") {
  ModelSpec model = test_model();
  model.num_layers = 30;
  Plan plan = parse_plan("pp=4,gbs=8", "x");
  CHECK(stage_layer_counts(plan, model) == std::vector<int64_t>{7, 8, 8, 7});
  model.num_layers = 32;
  CHECK(stage_layer_counts(plan, model) == std::vector<int64_t>{8, 8, 8, 8});
}

TEST_CASE("Plan: the default split gives the last stage's MTP layers and heads slots") {
  ModelSpec model = test_model();
  model.num_layers = 61;  // DeepSeek-V3: 61 layers and one MTP layer.
  model.mtp_layers = 1;
  // 61 layers do not divide 16 stages, so each head takes a slot too: 61 + MTP + its head +
  // the loss's = 64 slots, 4 each; the last stage keeps 1 decoder layer beside MTP and the
  // loss -- Megatron-Bridge's own pp 16 layout for DeepSeek-V3 (4 beside the embedding, 4 x 14,
  // 1 beside MTP and the loss).
  Plan plan = parse_plan("pp=16,gbs=64", "x");
  std::vector<int64_t> expected(16, 4);
  expected.back() = 1;
  CHECK(stage_layer_counts(plan, model) == expected);
  // Its pp 8 layout: 8 beside the embedding, 8 x 6, 5 beside MTP and the loss.
  CHECK(stage_layer_counts(parse_plan("pp=8,gbs=64", "x"), model) ==
        std::vector<int64_t>{8, 8, 8, 8, 8, 8, 8, 5});
  // 64 over 2: 32 each, the last keeps 29 decoder layers.
  CHECK(stage_layer_counts(parse_plan("pp=2,gbs=64", "x"), model) == std::vector<int64_t>{32, 29});
  // Never below one decoder layer: 3 layers and 2 MTP layers on pp 3 stay one each (an even
  // split: no head slots), and 5 layers on pp 4 give the loss no slot (6 slots would leave the
  // last stage 1 - 1 = 0 decoder layers).
  model.num_layers = 3;
  model.mtp_layers = 2;
  CHECK(stage_layer_counts(parse_plan("pp=3,gbs=64", "x"), model) == std::vector<int64_t>{1, 1, 1});
  model.num_layers = 5;
  model.mtp_layers = 0;
  CHECK(stage_layer_counts(parse_plan("pp=4,gbs=64", "x"), model) ==
        std::vector<int64_t>{1, 2, 1, 1});
  // Without MTP the loss alone takes a slot where the split is uneven: 62 slots, 3 each and
  // the 14 extra to the middle stages, the loss one of the last stage's 3.
  model.mtp_layers = 0;
  model.num_layers = 61;
  expected.assign(16, 4);
  expected.front() = 3;
  expected.back() = 2;
  CHECK(stage_layer_counts(plan, model) == expected);
  // An even split stays even (Megatron's default): 64 layers on 16 stages, 4 each.
  model.num_layers = 64;
  CHECK(stage_layer_counts(plan, model) == std::vector<int64_t>(16, 4));
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("Plan: first/last stage layers, uneven chunks, etp and moe_a2a_overlap") {
  ModelSpec model = test_model();
  model.num_layers = 126;  // Llama 3 405B on pp 16: first and last stages one layer short.
  Plan plan = parse_plan("pp=16,gbs=64,first_stage_layers=7,last_stage_layers=7", "--plan");
  std::vector<int64_t> expected(16, 8);
  expected.front() = expected.back() = 7;
  CHECK(stage_layer_counts(plan, model) == expected);
  Plan round = parse_plan(plan_to_json(plan), "json");
  CHECK(round.first_stage_layers == 7);
  CHECK(round.last_stage_layers == 7);
  CHECK(parse_plan(plan_to_inline(plan), "inline").first_stage_layers == 7);
  CHECK_THROWS_WITH(
      parse_plan(R"({"gbs": 8, "stage_layers": [1, 1], "first_stage_layers": 1})", "p.json"),
      Catch::Contains("p.json") && Catch::Contains("/first_stage_layers"));
  Plan moe = parse_plan("tp=2,dp=4,ep=8,etp=1,gbs=8,moe_a2a_overlap=true", "--plan");
  CHECK(moe.expert_tp() == 1);
  CHECK(parse_plan("tp=2,gbs=8", "--plan").expert_tp() == 2);
  CHECK(parse_plan(plan_to_json(moe), "json").etp == 1);
  CHECK(parse_plan(plan_to_inline(moe), "inline").moe_a2a_overlap);
}

TEST_CASE("Plan: moe_dispatcher parses, round-trips and needs experts to dispatch") {
  CHECK(parse_plan("gbs=8", "--plan").moe_dispatcher == MoeDispatcher::kAllToAll);
  Plan deepep = parse_plan("dp=8,ep=8,gbs=8,moe_dispatcher=deepep", "--plan");
  CHECK(deepep.moe_dispatcher == MoeDispatcher::kDeepEp);
  CHECK(parse_plan(plan_to_json(deepep), "json").moe_dispatcher == MoeDispatcher::kDeepEp);
  CHECK(parse_plan(plan_to_inline(deepep), "inline").moe_dispatcher == MoeDispatcher::kDeepEp);
  CHECK(parse_plan(R"({"gbs": 8, "moe_dispatcher": "hybridep"})", "p.json").moe_dispatcher ==
        MoeDispatcher::kHybridEp);
  CHECK(plan_to_inline(parse_plan("gbs=8", "--plan")).find("moe_dispatcher") == std::string::npos);
  CHECK_THROWS_WITH(parse_plan("gbs=8,moe_dispatcher=nccl", "--plan"),
                    Catch::Contains("--plan") && Catch::Contains("/moe_dispatcher") &&
                        Catch::Contains("alltoall") && Catch::Contains("hybridep"));
  CHECK(problem("gbs=8,moe_dispatcher=deepep") ==
        "moe_dispatcher=deepep needs an MoE model with ep > 1 (there are no tokens to dispatch "
        "to other ranks)");
}

TEST_CASE("Plan: grad_reduce_in_fp32 parses, round-trips and defaults by precision") {
  Plan plain = parse_plan("tp=2,dp=4,gbs=8", "--plan");
  CHECK_FALSE(plain.grad_reduce_in_fp32.has_value());
  CHECK(grad_reduce_in_fp32_in_force(plain));
  CHECK_FALSE(grad_reduce_in_fp32_in_force(parse_plan("tp=2,dp=4,gbs=8,precision=fp16", "--plan")));
  Plan off = parse_plan("tp=2,dp=4,gbs=8,grad_reduce_in_fp32=false", "--plan");
  CHECK_FALSE(grad_reduce_in_fp32_in_force(off));
  CHECK(parse_plan(plan_to_inline(off), "inline").grad_reduce_in_fp32 ==
        std::optional<bool>(false));
  CHECK(parse_plan(plan_to_json(off), "json").grad_reduce_in_fp32 == std::optional<bool>(false));
  CHECK(plan_to_inline(plain).find("grad_reduce_in_fp32") == std::string::npos);
  CHECK_THROWS_WITH(
      parse_plan(R"({"tp":1,"dp":8,"global_batch_size":8,"grad_reduce_in_fp32":"no"})",
                 "plan.json"),
      Catch::Contains("/grad_reduce_in_fp32"));
}

TEST_CASE("Plan: activation_offload_layers parses, round-trips, needs pp 1 and a layer kept") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:2");
  Plan plan = parse_plan("tp=1,pp=1,dp=8,gbs=64,activation_offload_layers=8", "--plan");
  CHECK(plan.activation_offload_layers == 8);
  CHECK(parse_plan(plan_to_inline(plan), "inline").activation_offload_layers == 8);
  CHECK(parse_plan(plan_to_json(plan), "json").activation_offload_layers == 8);
  CHECK_FALSE(plan_problem(plan, model, cluster));
  CHECK(plan_to_inline(parse_plan("tp=1,dp=8,gbs=64", "x")).find("activation_offload") ==
        std::string::npos);
  CHECK(plan_problem(parse_plan("tp=1,pp=2,dp=8,gbs=64,activation_offload_layers=4", "x"), model,
                     cluster)
            ->find("needs pp = 1") != std::string::npos);
  CHECK(plan_problem(parse_plan("tp=1,pp=1,dp=8,gbs=64,activation_offload_layers=32", "x"), model,
                     cluster)
            ->find("must be below llama3-8b's 32 layers") != std::string::npos);
  CHECK_THROWS_WITH(parse_plan("tp=1,dp=8,gbs=64,activation_offload_layers=-1", "--plan"),
                    Catch::Contains("activation_offload_layers"));
}

TEST_CASE("Plan: fp8_recipe parses, round-trips, defaults by runtime and fits the GPU") {
  ModelSpec model = load_model_spec("llama3-8b");
  Plan mx = parse_plan("tp=1,dp=8,gbs=64,precision=fp8,fp8_recipe=mxfp8", "--plan");
  REQUIRE(mx.fp8_recipe.has_value());
  CHECK(*mx.fp8_recipe == Fp8Recipe::kMxfp8);
  CHECK(parse_plan(plan_to_inline(mx), "inline").fp8_recipe == mx.fp8_recipe);
  CHECK(parse_plan(plan_to_json(mx), "json").fp8_recipe == mx.fp8_recipe);
  CHECK(fp8_recipe_in_force(mx) == Fp8Recipe::kMxfp8);
  // MXFP8 needs Blackwell; blockwise Hopper or later (Transformer Engine's support checks).
  CHECK_FALSE(plan_problem(mx, model, load_cluster_spec("dgx-b200:1")));
  CHECK(plan_problem(mx, model, load_cluster_spec("dgx-h100:1"))->find("needs Blackwell") !=
        std::string::npos);
  Plan block = parse_plan("tp=1,dp=8,gbs=64,precision=fp8,fp8_recipe=blockwise", "--plan");
  CHECK_FALSE(plan_problem(block, model, load_cluster_spec("dgx-h100:1")));
  CHECK(gpu_fp8_recipe_problem(Fp8Recipe::kBlockwise, *find_gpu("L40S"))
            ->find("needs Hopper or later") != std::string::npos);
  CHECK_FALSE(gpu_fp8_recipe_problem(Fp8Recipe::kTensorwise, *find_gpu("L40S")));
  // Only fp8 plans have a recipe.
  CHECK(plan_problem(parse_plan("tp=1,dp=8,gbs=64,fp8_recipe=tensorwise", "x"), model,
                     load_cluster_spec("dgx-h100:1"))
            ->find("needs precision=fp8") != std::string::npos);
  CHECK_THROWS_WITH(parse_plan("tp=1,dp=8,gbs=64,precision=fp8,fp8_recipe=mx", "--plan"),
                    Catch::Contains("delayed, tensorwise, mxfp8, blockwise"));
  // Unnamed: Megatron's delayed, tensorwise where Megatron-Core refuses delayed (moe_act or
  // layernorm recompute) and under torchtitan (torchao's Float8 default).
  const Plan plain = parse_plan("tp=1,dp=8,gbs=64,precision=fp8", "x");
  CHECK_FALSE(plain.fp8_recipe.has_value());
  CHECK(plan_to_inline(plain).find("fp8_recipe") == std::string::npos);
  CHECK(fp8_recipe_in_force(plain) == Fp8Recipe::kDelayed);
  CHECK(fp8_recipe_in_force(parse_plan("tp=1,dp=8,gbs=64,precision=fp8,runtime=torchtitan", "x")) ==
        Fp8Recipe::kTensorwise);
  CHECK(fp8_recipe_in_force(parse_plan(
            "tp=1,dp=8,gbs=64,precision=fp8,recompute=selective,recompute_modules=layernorm",
            "x")) == Fp8Recipe::kTensorwise);
  CHECK(fp8_recipe_in_force(parse_plan(
            "tp=1,dp=8,gbs=64,precision=fp8,recompute=selective,runtime=megatron-lm", "x")) ==
        Fp8Recipe::kDelayed);
}

TEST_CASE("Plan: tp_comm_overlap parses, round-trips, defaults by runtime and needs SP") {
  // Absent: the runtime's default, on only where megatron-core runs tp > 1 with SP.
  Plan sp = parse_plan("tp=4,dp=2,gbs=8,sequence_parallel=true", "--plan");
  CHECK_FALSE(sp.tp_comm_overlap.has_value());
  CHECK(tp_comm_overlap_in_force(sp));
  CHECK_FALSE(tp_comm_overlap_in_force(parse_plan("tp=4,dp=2,gbs=8", "--plan")));
  CHECK_FALSE(tp_comm_overlap_in_force(parse_plan("tp=1,dp=8,gbs=8", "--plan")));
  CHECK_FALSE(tp_comm_overlap_in_force(
      parse_plan("tp=4,dp=2,gbs=8,sequence_parallel=true,runtime=megatron-lm", "--plan")));
  CHECK_FALSE(tp_comm_overlap_in_force(
      parse_plan("tp=4,dp=2,gbs=8,sequence_parallel=true,runtime=torchtitan", "--plan")));
  // Given: it wins, and survives both forms; an absent key stays absent.
  Plan off = parse_plan("tp=4,dp=2,gbs=8,sequence_parallel=true,tp_comm_overlap=false", "--plan");
  CHECK_FALSE(tp_comm_overlap_in_force(off));
  CHECK(parse_plan(plan_to_inline(off), "inline").tp_comm_overlap == std::optional<bool>(false));
  CHECK(parse_plan(plan_to_json(off), "json").tp_comm_overlap == std::optional<bool>(false));
  Plan on = parse_plan(R"({"tp": 4, "dp": 2, "gbs": 8, "sequence_parallel": true,
                           "tp_comm_overlap": true})",
                       "p.json");
  CHECK(on.tp_comm_overlap == std::optional<bool>(true));
  CHECK(parse_plan(plan_to_inline(on), "inline").tp_comm_overlap == std::optional<bool>(true));
  CHECK(plan_to_inline(sp).find("tp_comm_overlap") == std::string::npos);
  CHECK(plan_to_json(sp).find("tp_comm_overlap") == std::string::npos);
  CHECK_THROWS_WITH(parse_plan("tp=4,gbs=8,tp_comm_overlap=2", "--plan"),
                    Catch::Contains("/tp_comm_overlap"));
  // Megatron asserts sequence parallelism (arguments.py); tp = 1 has nothing to overlap.
  CHECK(problem("tp=4,dp=2,gbs=8,tp_comm_overlap=true") ==
        "tp_comm_overlap=true needs tp > 1 with sequence_parallel=true (this plan: tp=4, "
        "sequence_parallel=false); Megatron overlaps only sequence-parallel all-gathers and "
        "reduce-scatters");
  CHECK(problem("tp=1,dp=8,gbs=8,tp_comm_overlap=true").find("this plan: tp=1") !=
        std::string::npos);
  CHECK(problem("tp=4,dp=2,gbs=8,sequence_parallel=true,tp_comm_overlap=false").empty());
}

TEST_CASE("Plan: cuda_graphs parses, round-trips and follows Megatron-Core's graph asserts") {
  CHECK(parse_plan("tp=1,dp=8,gbs=8", "--plan").cuda_graphs == CudaGraphs::kNone);
  for (const std::string& name : cuda_graphs_names()) {
    Plan plan = parse_plan("dp=8,gbs=8,cuda_graphs=" + name, "--plan");
    CHECK(cuda_graphs_name(plan.cuda_graphs) == name);
    CHECK(parse_plan(plan_to_inline(plan), "inline").cuda_graphs == plan.cuda_graphs);
    CHECK(parse_plan(plan_to_json(plan), "json").cuda_graphs == plan.cuda_graphs);
  }
  CHECK(plan_to_inline(parse_plan("dp=8,gbs=8", "--plan")).find("cuda_graphs") ==
        std::string::npos);
  CHECK(
      parse_plan(R"({"dp": 8, "gbs": 8, "cuda_graphs": "full-iteration"})", "p.json").cuda_graphs ==
      CudaGraphs::kFullIteration);
  CHECK_THROWS_WITH(parse_plan("dp=8,gbs=8,cuda_graphs=full", "--plan"),
                    Catch::Contains("/cuda_graphs") && Catch::Contains("full-iteration"));
  // Dense model: whole layers and the full iteration graph; routers there are none.
  CHECK(problem("tp=2,dp=2,gbs=8,cuda_graphs=layers").empty());
  CHECK(problem("tp=2,dp=2,gbs=8,cuda_graphs=full-iteration").empty());
  CHECK(problem("tp=2,dp=2,gbs=8,cuda_graphs=moe-router") ==
        "cuda_graphs=moe-router graphs MoE routers, and " + test_model().name +
            " has no MoE layers (use layers or full-iteration)");
  // MoE: a whole-layer graph needs drop-and-pad's static shapes; dropless takes the router
  // scope or the full iteration.
  ModelSpec moe = test_model();
  moe.moe = MoeSpec{8, 2, 1024, 1};  // 8 experts, top 2, expert FFN 1024, every layer.
  ClusterSpec cluster = test_cluster(4);
  CHECK(problem("dp=4,ep=4,gbs=8,cuda_graphs=layers", moe, cluster)
            .rfind("cuda_graphs=layers needs static MoE shapes", 0) == 0);
  CHECK(problem("dp=4,ep=4,gbs=8,cuda_graphs=moe-router", moe, cluster).empty());
  CHECK(problem("dp=4,ep=4,gbs=8,cuda_graphs=full-iteration", moe, cluster).empty());
  moe.moe->capacity_factor = 1.0;
  CHECK(problem("dp=4,ep=4,gbs=8,cuda_graphs=layers", moe, cluster).empty());
}

TEST_CASE("Plan: recompute_num_layers parses, implies full, round-trips and is checked") {
  // Given alone it means full recompute of the first N layers of each chunk.
  Plan plan = parse_plan("pp=2,dp=4,gbs=8,recompute_num_layers=5", "--plan");
  CHECK(plan.recompute == Recompute::kFull);
  CHECK(plan.recompute_num_layers == 5);
  CHECK(parse_plan("pp=2,dp=4,gbs=8,recompute=full,recompute_num_layers=5", "--plan")
            .recompute_num_layers == 5);
  CHECK(parse_plan(R"({"pp": 2, "dp": 4, "gbs": 8, "recompute_num_layers": 5})", "p.json")
            .recompute_num_layers == 5);
  CHECK(plan_to_inline(plan).find(",recompute=full,recompute_num_layers=5") != std::string::npos);
  CHECK(plan_to_json(plan).find(R"("recompute_num_layers":5)") != std::string::npos);
  CHECK(parse_plan(plan_to_inline(plan), "inline").recompute_num_layers == 5);
  CHECK(parse_plan(plan_to_json(plan), "json").recompute_num_layers == 5);
  // Default: every layer (not written).
  Plan full = parse_plan("pp=2,dp=4,gbs=8,recompute=full", "--plan");
  CHECK(full.recompute_num_layers == 0);
  CHECK(plan_to_json(full).find("recompute_num_layers") == std::string::npos);
  // Which layers re-run: the first N of a chunk under it; every one under plain full or
  // selective recompute; none without.
  CHECK(layer_recomputed(plan, 0));
  CHECK(layer_recomputed(plan, 4));
  CHECK_FALSE(layer_recomputed(plan, 5));
  CHECK(layer_recomputed(full, 15));
  CHECK(layer_recomputed(parse_plan("dp=8,gbs=8,recompute=selective", "--plan"), 31));
  CHECK_FALSE(layer_recomputed(parse_plan("dp=8,gbs=8", "--plan"), 0));
  Plan plain = without_recompute(plan);
  CHECK(plain.recompute == Recompute::kNone);
  CHECK(plain.recompute_num_layers == 0);
  CHECK(plain.pp == 2);
  // Errors: another recompute, recompute_modules beside it, below 1, beyond the model.
  CHECK_THROWS_WITH(parse_plan("dp=8,gbs=8,recompute=selective,recompute_num_layers=2", "--plan"),
                    Catch::Contains("/recompute_num_layers") &&
                        Catch::Contains("recompute is selective (give recompute=full"));
  CHECK_THROWS_WITH(parse_plan("dp=8,gbs=8,recompute=none,recompute_num_layers=2", "--plan"),
                    Catch::Contains("recompute is none"));
  CHECK_THROWS_WITH(parse_plan("dp=8,gbs=8,recompute_modules=mlp,recompute_num_layers=2", "--plan"),
                    Catch::Contains("/recompute_num_layers"));
  CHECK_THROWS_WITH(parse_plan("dp=8,gbs=8,recompute_num_layers=0", "--plan"),
                    Catch::Contains("/recompute_num_layers"));
  CHECK(problem("dp=4,gbs=8,recompute_num_layers=32").empty());
  CHECK(problem("dp=4,gbs=8,recompute_num_layers=33") ==
        "recompute_num_layers=33 is more than m's 32 layers (it counts the layers of each "
        "pipeline chunk that full recompute re-runs)");
}

TEST_CASE("Plan: recompute_modules parses, implies selective, round-trips and is checked") {
  auto bit = recompute_module_bit;
  // Megatron's default under selective: core_attn alone.
  CHECK(parse_plan("dp=8,gbs=8,recompute=selective", "--plan").recompute_modules == 0);
  CHECK(recomputed_modules(parse_plan("dp=8,gbs=8,recompute=selective", "--plan")) ==
        bit(RecomputeModule::kCoreAttn));
  CHECK(recomputed_modules(parse_plan("dp=8,gbs=8", "--plan")) == 0);
  CHECK(recomputed_modules(parse_plan("dp=8,gbs=8,recompute=full", "--plan")) ==
        kAllRecomputeModules);
  // Given alone it means selective; inline ':'-separated, JSON an array.
  Plan plan = parse_plan("dp=8,gbs=8,recompute_modules=moe_act:layernorm", "--plan");
  CHECK(plan.recompute == Recompute::kSelective);
  CHECK(plan.recompute_modules ==
        (bit(RecomputeModule::kMoeAct) | bit(RecomputeModule::kLayernorm)));
  CHECK(recomputed_modules(plan) == plan.recompute_modules);  // core_attn not added.
  Plan json = parse_plan(
      R"({"dp": 8, "gbs": 8, "recompute": "selective", "recompute_modules": ["layernorm", "moe_act"]})",
      "p.json");
  CHECK(json.recompute_modules == plan.recompute_modules);
  CHECK(plan_to_inline(plan).find(",recompute=selective,recompute_modules=moe_act:layernorm") !=
        std::string::npos);
  CHECK(plan_to_json(plan).find(R"("recompute_modules":["moe_act","layernorm"])") !=
        std::string::npos);
  CHECK(parse_plan(plan_to_inline(plan), "inline").recompute_modules == plan.recompute_modules);
  CHECK(parse_plan(plan_to_json(plan), "json").recompute_modules == plan.recompute_modules);
  CHECK(plan_to_inline(parse_plan("dp=8,gbs=8,recompute=selective", "--plan"))
            .find("recompute_modules") == std::string::npos);
  // Every name round-trips.
  for (const std::string& name : recompute_module_names()) {
    Plan one = parse_plan("dp=8,gbs=8,recompute_modules=" + name, "--plan");
    CHECK(recompute_modules_text(one.recompute_modules, ":") == name);
  }
  // Errors: a contradicting recompute, an unknown or empty name, a non-string entry.
  CHECK_THROWS_WITH(parse_plan("dp=8,gbs=8,recompute=full,recompute_modules=moe_act", "--plan"),
                    Catch::Contains("/recompute_modules") &&
                        Catch::Contains("recompute is full (give recompute=selective"));
  CHECK_THROWS_WITH(parse_plan("dp=8,gbs=8,recompute_modules=moe_ac", "--plan"),
                    Catch::Contains("/recompute_modules/0") &&
                        Catch::Contains("unknown recompute module 'moe_ac'") &&
                        Catch::Contains("moe_act"));
  CHECK_THROWS_WITH(
      parse_plan("dp=8,gbs=8,recompute_modules=mlp:", "--plan"),
      Catch::Contains("/recompute_modules/1") && Catch::Contains("unknown recompute module ''"));
  CHECK_THROWS_WITH(parse_plan(R"({"dp": 8, "gbs": 8, "recompute_modules": []})", "p.json"),
                    Catch::Contains("give at least one module"));
  CHECK_THROWS_WITH(
      parse_plan(R"({"dp": 8, "gbs": 8, "recompute_modules": [3]})", "p.json"),
      Catch::Contains("/recompute_modules/0") && Catch::Contains("unknown recompute module 3"));
  // mla_up_proj needs MLA (Megatron-Core's assert); the others apply where the layer has them.
  CHECK(problem("dp=4,gbs=8,recompute_modules=mla_up_proj") ==
        "recompute_modules mla_up_proj needs multi-latent attention, which m does not have "
        "(leave it out)");
  CHECK(problem("dp=4,gbs=8,recompute_modules=moe:moe_act:layernorm:mlp").empty());
  ModelSpec mla = test_model();
  mla.mla = MlaSpec{1536, 512, 128, 64, 128};
  CHECK(problem("dp=4,gbs=8,recompute_modules=mla_up_proj", mla).empty());
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("Plan: pipeline_layout, inline with its commas, JSON, and what it implies") {
  ModelSpec model = test_model();
  model.num_layers = 80;
  // Megatron-Bridge's Llama 3 70B fp8 layout on 64 H100s (pp 8 x vpp 5), commas and all.
  const std::string layout = "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL";
  Plan plan = parse_plan(
      "tp=4,pp=8,dp=2,mbs=1,gbs=256,pipeline_layout=" + layout + ",sequence_parallel=true",
      "--plan");
  CHECK(plan.pipeline_layout == layout);
  CHECK(plan.sequence_parallel);  // The key after the layout's commas is read as a key.
  // Megatron takes vpp from the layout and interleaves.
  CHECK(plan.vpp == 5);
  CHECK(plan.schedule == ScheduleKind::kInterleaved1F1B);
  CHECK(stage_layer_counts(plan, model) == std::vector<int64_t>{10, 10, 10, 11, 10, 10, 10, 9});
  ClusterSpec cluster = load_cluster_spec("dgx-h100:8");
  CHECK(plan_problem(plan, model, cluster) == std::nullopt);
  CHECK(parse_plan(plan_to_inline(plan), "inline").pipeline_layout == layout);
  CHECK(parse_plan(plan_to_json(plan), "json").pipeline_layout == layout);
  // A stated schedule and vpp stay; a layout that disagrees with them is refused by name.
  Plan one_f_one_b =
      parse_plan("tp=4,pp=8,dp=2,gbs=256,schedule=1f1b,pipeline_layout=" + layout, "--plan");
  CHECK(one_f_one_b.vpp == 1);
  CHECK_THAT(*plan_problem(one_f_one_b, model, cluster),
             Catch::Contains("40 virtual stages, 5 per rank, and the plan runs 1 per rank"));
  // The other split keys are refused beside it, naming the key.
  CHECK_THROWS_WITH(
      parse_plan("pp=2,gbs=8,first_stage_layers=40,pipeline_layout=Et*40|t*40L", "--plan"),
      Catch::Contains("/pipeline_layout") && Catch::Contains("not both"));
  CHECK_THROWS_WITH(parse_plan(R"({"gbs": 8, "pipeline_layout": "Et*40|x*40L"})", "p.json"),
                    Catch::Contains("p.json: /pipeline_layout") &&
                        Catch::Contains("'x' at 6 is not a layout symbol"));
  // V-shaped schedules place chunks otherwise.
  Plan zbv =
      parse_plan("pp=2,gbs=8,schedule=zbv,vpp=2,pipeline_layout=Et*20|(t*20|)*2t*20L", "--plan");
  CHECK_THAT(*plan_problem(zbv, model, cluster), Catch::Contains("zbv places its chunks in a V"));
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("Plan: microbatch_group_size_per_vp_stage parses, round-trips and follows Megatron") {
  ModelSpec model = test_model();
  ClusterSpec cluster = load_cluster_spec("dgx-h100:4");
  // pp 4 x vpp 2 with 12 microbatches per replica (gbs 96 over dp 8): groups of 6.
  const std::string base = "tp=1,pp=4,dp=8,mbs=1,gbs=96,schedule=interleaved-1f1b,vpp=2";
  Plan plan = parse_plan(base + ",microbatch_group_size_per_vp_stage=6", "--plan");
  CHECK(plan.microbatch_group_size == 6);
  CHECK(microbatch_group_in_force(plan) == 6);
  CHECK(plan_problem(plan, model, cluster) == std::nullopt);
  CHECK(parse_plan(plan_to_inline(plan), "inline").microbatch_group_size == 6);
  CHECK(parse_plan(plan_to_json(plan), "json").microbatch_group_size == 6);
  // Not given: Megatron's default, pp, and no key written.
  Plan plain = parse_plan(base, "--plan");
  CHECK(plain.microbatch_group_size == 0);
  CHECK(microbatch_group_in_force(plain) == 4);
  CHECK(plan_to_inline(plain).find("microbatch_group") == std::string::npos);
  CHECK(plan_to_json(plain).find("microbatch_group") == std::string::npos);
  // 10 microbatches (gbs 80): not a multiple of pp, so only a group that leaves 0 or >= pp.
  const std::string ten = "tp=1,pp=4,dp=8,mbs=1,gbs=80,schedule=interleaved-1f1b,vpp=2";
  CHECK_THAT(*plan_problem(parse_plan(ten, "x"), model, cluster),
             Catch::Contains("multiple of pp=4; got 10"));
  CHECK(plan_problem(parse_plan(ten + ",microbatch_group_size_per_vp_stage=6", "x"), model,
                     cluster) == std::nullopt);  // 6, then 4.
  CHECK(plan_problem(parse_plan(ten + ",microbatch_group_size_per_vp_stage=10", "x"), model,
                     cluster) == std::nullopt);  // One group.
  CHECK_THAT(
      *plan_problem(parse_plan(ten + ",microbatch_group_size_per_vp_stage=7", "x"), model, cluster),
      Catch::Contains("last group of 3, fewer than pp=4"));
  CHECK_THAT(*plan_problem(parse_plan(ten + ",microbatch_group_size_per_vp_stage=12", "x"), model,
                           cluster),
             Catch::Contains("to the 10 microbatches per step"));
  // Only interleaving with virtual stages groups microbatches.
  CHECK_THAT(
      *plan_problem(parse_plan("tp=1,pp=4,dp=8,gbs=96,microbatch_group_size_per_vp_stage=4", "x"),
                    model, cluster),
      Catch::Contains("runs 1f1b with vpp=1"));
  CHECK_THROWS_WITH(parse_plan(base + ",microbatch_group_size_per_vp_stage=0", "--plan"),
                    Catch::Contains("microbatch_group_size_per_vp_stage"));
}

}  // namespace
}  // namespace ppsim
