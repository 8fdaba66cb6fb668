// The runtime plan key: names, traits, parsing in both plan forms, errors, and what it changes.
#include "simulator/spec/runtime.h"

#include <catch2/catch.hpp>

#include "simulator/cost/cost_model.h"
#include "simulator/model/activation_memory.h"
#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/plan.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

TEST_CASE("Runtime: names, the default and the attention kernel each runs") {
  CHECK(runtime_names() == std::vector<std::string>{"megatron-core", "megatron-lm", "deepspeed",
                                                    "torchtitan", "pytorch-fsdp"});
  CHECK(kDefaultRuntime == Runtime::kMegatronCore);
  for (Runtime runtime : all_runtimes()) {
    INFO(runtime_name(runtime));
    CHECK(find_runtime(runtime_name(runtime)) == runtime);
    CHECK(std::string(runtime_traits(runtime).source).size() > 40);  // Every row cites a source.
    CHECK(runtime_traits(runtime).overheads.kernel_gap_s > 0);
  }
  CHECK(runtime_traits(Runtime::kMegatronLm).attention == AttentionKernel::kUnfused);
  CHECK(runtime_traits(Runtime::kMegatronCore).attention == AttentionKernel::kFused);
  CHECK(runtime_traits(Runtime::kTorchtitan).attention == AttentionKernel::kFlash2);
  CHECK_FALSE(find_runtime("megatron"));
}

TEST_CASE("Runtime: the plan key in JSON and inline, with the attention override") {
  Plan plan = parse_plan("tp=2,gbs=8,runtime=megatron-lm", "test");
  CHECK(plan.runtime == Runtime::kMegatronLm);
  CHECK(attention_kernel(plan) == AttentionKernel::kUnfused);
  plan = parse_plan(R"({"gbs": 8, "runtime": "megatron-lm", "attention": "flash2"})", "test");
  CHECK(attention_kernel(plan) == AttentionKernel::kFlash2);
  CHECK(plan_to_inline(plan) ==
        "tp=1,pp=1,dp=1,mbs=1,gbs=8,schedule=1f1b,runtime=megatron-lm,"
        "attention=flash2");
  plan = parse_plan("gbs=8,runtime=pytorch-fsdp,attention=triton", "test");
  CHECK(attention_kernel(plan) == AttentionKernel::kTriton);
  CHECK(plan_to_inline(plan).find(",attention=triton") != std::string::npos);
  CHECK(find_attention_kernel("triton") == AttentionKernel::kTriton);
  CHECK(attention_kernel_names().size() == 4);
  Plan back = parse_plan(plan_to_json(plan), "round trip");
  CHECK(back.runtime == plan.runtime);
  CHECK(back.attention == plan.attention);
  // The default is spelled out in JSON and left out inline.
  Plan plain = parse_plan("gbs=8", "test");
  CHECK(plain.runtime == Runtime::kMegatronCore);
  CHECK(plan_to_json(plain).find("\"runtime\":\"megatron-core\"") != std::string::npos);
  CHECK(plan_to_inline(plain).find("runtime") == std::string::npos);
}

TEST_CASE("Runtime: an unknown runtime or kernel is a clear error naming the key") {
  try {
    parse_plan("gbs=8,runtime=megatorn-core", "plan.json");
    FAIL("no error");
  } catch (const InputError& error) {
    std::string message = error.what();
    CHECK_THAT(message, Catch::Contains("runtime"));
    CHECK_THAT(message, Catch::Contains("megatron-core"));
  }
  CHECK_THROWS_AS(parse_plan(R"({"gbs": 8, "attention": "flash9"})", "plan.json"), InputError);
}

TEST_CASE("Runtime: the unfused kernel saves the score matrix; the flash kernels do not") {
  ModelSpec model = testing::llama2_7b_shape();
  Plan fused = parse_plan("tp=1,gbs=8", "test");
  Plan unfused = parse_plan("tp=1,gbs=8,runtime=megatron-lm", "test");
  CHECK(activation_config(fused, model).flash_attention);
  CHECK_FALSE(activation_config(unfused, model).flash_attention);
  CHECK(layer_activation_bytes(model, activation_config(unfused, model), 0).total() >
        layer_activation_bytes(model, activation_config(fused, model), 0).total());
}

TEST_CASE("Kernel datasheets: each GPU generation has its own, from published benchmarks") {
  const KernelDatasheet h100 = find_gpu("H100-SXM-80GB")->kernels;
  const KernelDatasheet b200 = find_gpu("B200")->kernels;
  const KernelDatasheet a100 = find_gpu("A100-SXM-80GB")->kernels;
  for (const KernelDatasheet* k : {&h100, &b200, &a100}) {
    CHECK(k->gemm_bf16 > 0.5);
    CHECK(k->gemm_bf16 < 0.95);
    CHECK(k->source.size() > 40);
  }
  // FlashAttention-2 was written for Ampere: it reaches a smaller share of Hopper's peak than
  // FA3/cuDNN does (Shah et al. 2024), and has no Blackwell path.
  CHECK(h100.flash2_fwd < h100.fused_fwd);
  CHECK(b200.flash2_fwd < h100.flash2_fwd);
  CHECK(a100.flash2_fwd == a100.fused_fwd);
  // B200 is not Hopper scaled: its own GEMM fractions.
  CHECK(b200.gemm_bf16 != h100.gemm_bf16);
  // The runtime picks the kernel: the same attention op is faster under megatron-core (fused)
  // than under torchtitan (FA2) on H100, and the same under both on A100.
  const Op op = [] {
    OpShape shape;
    shape.micro_batch_size = 1;
    shape.seq_length = 4096;
    for (const Op& candidate : layer_ops(testing::llama2_7b_shape(), shape, 0)) {
      if (candidate.op_class == OpClass::kAttention) return candidate;
    }
    return Op{};
  }();
  REQUIRE(op.op_class == OpClass::kAttention);
  GpuSpec hopper = *find_gpu("H100-SXM-80GB");
  CostModel core(hopper, EfficiencyTable{}, nullptr, Runtime::kMegatronCore);
  CostModel titan(hopper, EfficiencyTable{}, nullptr, Runtime::kTorchtitan);
  CHECK(core.op_cost(op).fwd.seconds < titan.op_cost(op).fwd.seconds);
  CostModel ampere_core(*find_gpu("A100-SXM-80GB"), EfficiencyTable{}, nullptr,
                        Runtime::kMegatronCore, AttentionKernel::kFlash2);
  CostModel ampere_fused(*find_gpu("A100-SXM-80GB"), EfficiencyTable{}, nullptr,
                         Runtime::kMegatronCore, AttentionKernel::kFused);
  // On Ampere both families are the same kernel (equal datasheets); in a step the eager
  // runtimes' FA2 calls carry flash2_scale, the fused kernel kernel_scale (cost_model.h).
  CHECK(ampere_fused.op_cost(op).fwd.seconds < ampere_core.op_cost(op).fwd.seconds);
  EfficiencyTable no_flash2_loss;
  no_flash2_loss.flash2_scale = 1;
  no_flash2_loss.kernel_scale = 1;
  CostModel ampere_flash2_at_1(*find_gpu("A100-SXM-80GB"), no_flash2_loss, nullptr,
                               Runtime::kMegatronCore, AttentionKernel::kFlash2);
  CostModel ampere_fused_at_1(*find_gpu("A100-SXM-80GB"), no_flash2_loss, nullptr,
                              Runtime::kMegatronCore, AttentionKernel::kFused);
  CHECK(ampere_flash2_at_1.op_cost(op).fwd.seconds == ampere_fused_at_1.op_cost(op).fwd.seconds);
}

TEST_CASE("Runtime: gradient buckets as each runtime's defaults make them") {
  // Megatron DDP: max(40M, 1M x dp) parameters.
  CHECK(gradient_bucket_parameters(Runtime::kMegatronCore, 8, 1, 4, 2e8) == 40e6);
  CHECK(gradient_bucket_parameters(Runtime::kMegatronLm, 128, 0, 4, 2e8) == 128e6);
  // DeepSpeed: reduce_bucket_size 5e8 elements.
  CHECK(gradient_bucket_parameters(Runtime::kDeepSpeed, 64, 2, 4, 2e8) == 5e8);
  // PyTorch: FSDP reduce-scatters per unit (a layer); DDP buckets 25 MiB of gradients.
  CHECK(gradient_bucket_parameters(Runtime::kPytorchFsdp, 64, 2, 4, 2e8) == 2e8);
  CHECK(gradient_bucket_parameters(Runtime::kTorchtitan, 64, 0, 4, 2e8) ==
        Approx(25.0 * 1024 * 1024 / 4));
  CHECK(gradient_bucket_parameters(Runtime::kTorchtitan, 64, 0, 2, 2e8) ==
        Approx(25.0 * 1024 * 1024 / 2));
}

}  // namespace
}  // namespace ppsim
