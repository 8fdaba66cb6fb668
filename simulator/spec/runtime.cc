#include "simulator/spec/runtime.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace ppsim {
namespace {

// Host-overhead priors, seconds. Runtimes with published rows are refit by `ppsim accuracy
// --fit` (docs/accuracy.md) and the fitted values ship in EfficiencyTable::runtimes; these are
// the starting points and what a runtime without rows keeps.
// Fields: runtime, name, attention, exporter, overheads {kernel gap, microbatch, step},
// fsdp_fp32_shards, gathered_layers, overlaps_tp_backward, blocking_p2p, source.
constexpr std::array<RuntimeTraits, kRuntimeCount> kRuntimeTable = {{
    {Runtime::kMegatronCore,
     "megatron-core",
     AttentionKernel::kFused,
     "megatron",
     {2e-6, 0.15e-3, 0.030},
     false,
     2,
     true,
     true,
     "Megatron-Core with Transformer Engine (--transformer-impl transformer_engine, the default "
     "since core 0.5; NeMo and Megatron-Bridge run it): TE DotProductAttention dispatches to "
     "cuDNN fused attention / FlashAttention-3 on Hopper and cuDNN on Blackwell; the host runs "
     "ahead of the device, so Nsight traces of Megatron GPT steps show 1-3 us between kernels"},
    {Runtime::kMegatronLm,
     "megatron-lm",
     AttentionKernel::kUnfused,
     "megatron",
     {3e-6, 0.3e-3, 0.050},
     false,
     2,
     true,
     true,
     "Megatron-LM 2020-2023 (before Transformer Engine; the SC'21 and sequence-parallel papers' "
     "code, and forks such as sail-sg/zero-bubble-pipeline-parallelism): core attention unfused "
     "(--use-flash-attn off by default), fused scale-mask-softmax and bias-GeLU CUDA kernels, "
     "apex fused LayerNorm"},
    {Runtime::kDeepSpeed,
     "deepspeed",
     AttentionKernel::kFlash2,
     "deepspeed",
     {5e-6, 0.5e-3, 0.060},
     false,
     2,
     true,
     true,
     "DeepSpeed / Megatron-DeepSpeed: eager PyTorch modules, flash-attn 2 "
     "(--use-flash-attn-v2), the engine's forward/backward hooks and ZeRO bucketing on the host"},
    {Runtime::kTorchtitan,
     "torchtitan",
     AttentionKernel::kFlash2,
     "torchtitan",
     {5e-6, 0.5e-3, 0.050},
     true,
     2,
     false,
     false,
     "torchtitan (PyTorch FSDP2, DTensor TP, torch.distributed.pipelining): eager modules unless "
     "torch.compile is on; attention through F.scaled_dot_product_attention, whose flash backend "
     "is FlashAttention-2; FSDP2 pre/post-forward hooks per module"},
    {Runtime::kPytorchFsdp,
     "pytorch-fsdp",
     AttentionKernel::kFlash2,
     "",
     {5e-6, 0.5e-3, 0.050},
     true,
     2,
     false,
     false,
     "PyTorch FSDP (FSDP1 FlatParameter; MosaicML Composer/llm-foundry, HF Accelerate): eager "
     "modules, flash-attn 2 or Triton flash attention (llm-foundry attn_impl flash/triton); no "
     "launcher file ppsim writes"},
}};

constexpr std::array<const char*, 3> kAttentionNames = {"unfused", "flash2", "fused"};

}  // namespace

const RuntimeTraits& runtime_traits(Runtime runtime) {
  return kRuntimeTable[static_cast<size_t>(runtime)];
}

std::string runtime_name(Runtime runtime) { return runtime_traits(runtime).name; }

const std::vector<std::string>& runtime_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const RuntimeTraits& traits : kRuntimeTable) out.emplace_back(traits.name);
    return out;
  }();
  return names;
}

const std::vector<Runtime>& all_runtimes() {
  static const std::vector<Runtime> runtimes = [] {
    std::vector<Runtime> out;
    for (const RuntimeTraits& traits : kRuntimeTable) out.push_back(traits.runtime);
    return out;
  }();
  return runtimes;
}

std::optional<Runtime> find_runtime(const std::string& name) {
  for (const RuntimeTraits& traits : kRuntimeTable) {
    if (name == traits.name) return traits.runtime;
  }
  return std::nullopt;
}

double gradient_bucket_parameters(Runtime runtime, int64_t dp, int zero_stage,
                                  double gradient_bytes, double layer_parameters) {
  constexpr double kMegatronMinimum = 40e6,
                   kMegatronPerRank = 1e6;  // distributed_data_parallel_config.py
  constexpr double kDeepSpeedBucket = 5e8;  // DeepSpeed zero config defaults
  constexpr double kTorchDdpBucketBytes = 25.0 * 1024 * 1024;  // torch DDP bucket_cap_mb
  switch (runtime) {
    case Runtime::kMegatronCore:
    case Runtime::kMegatronLm:
      return std::max(kMegatronMinimum, kMegatronPerRank * static_cast<double>(dp));
    case Runtime::kDeepSpeed:
      return kDeepSpeedBucket;
    case Runtime::kTorchtitan:
    case Runtime::kPytorchFsdp:
      if (zero_stage >= 1) return std::max(1.0, layer_parameters);
      return kTorchDdpBucketBytes / gradient_bytes;
  }
  return kMegatronMinimum;
}

std::string attention_kernel_name(AttentionKernel kernel) {
  return kAttentionNames[static_cast<size_t>(kernel)];
}

const std::vector<std::string>& attention_kernel_names() {
  static const std::vector<std::string> names(kAttentionNames.begin(), kAttentionNames.end());
  return names;
}

std::optional<AttentionKernel> find_attention_kernel(const std::string& name) {
  for (size_t i = 0; i < kAttentionNames.size(); ++i) {
    if (name == kAttentionNames[i]) return static_cast<AttentionKernel>(i);
  }
  return std::nullopt;
}

}  // namespace ppsim
