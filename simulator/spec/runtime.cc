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
// fsdp_fp32_shards, gathered_layers, overlaps_tp_backward, blocking_p2p, moe_host_sync,
// quantized_gemm_inputs, fsdp_unsharded_under_pp, loss_working_bytes_per_logit,
// selective_recompute, zero3_gathers_modules, source.
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
     true,
     true,
     false,
     2,
     SelectiveRecompute::kModules,
     false,
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
     false,
     true,
     false,
     2,
     SelectiveRecompute::kModules,
     false,
     "Megatron-LM 2020-2023 (before Transformer Engine; the SC'21 and sequence-parallel papers' "
     "code, and forks such as sail-sg/zero-bubble-pipeline-parallelism): core attention unfused "
     "(--use-flash-attn off by default), fused scale-mask-softmax and bias-GeLU CUDA kernels, "
     "apex fused LayerNorm; fp8 through Transformer Engine's linears"},
    {Runtime::kDeepSpeed,
     "deepspeed",
     AttentionKernel::kFlash2,
     "deepspeed",
     {5e-6, 0.5e-3, 0.060},
     false,
     2,
     true,
     true,
     false,
     true,
     false,
     2,
     SelectiveRecompute::kModules,
     true,
     "DeepSpeed / Megatron-DeepSpeed: eager PyTorch modules, flash-attn 2 "
     "(--use-flash-attn-v2), the engine's forward/backward hooks and ZeRO bucketing on the host; "
     "fp8 from Transformer Engine layers in the model code"},
    {Runtime::kTorchtitan,
     "torchtitan",
     AttentionKernel::kFlash2,
     "torchtitan",
     {5e-6, 0.5e-3, 0.050},
     true,
     2,
     false,
     false,
     false,
     false,
     true,
     8,
     SelectiveRecompute::kOpPolicy,
     false,
     "torchtitan (PyTorch FSDP2, DTensor TP, torch.distributed.pipelining): eager modules unless "
     "torch.compile is on; attention through F.scaled_dot_product_attention, whose flash backend "
     "is FlashAttention-2; FSDP2 pre/post-forward hooks per module; fp8 through torchao's "
     "Float8Linear; with pp, FSDP2 keeps parameters gathered (parallelize.py "
     "reshard_after_forward=False) and gradients unsharded in fp32 until the last microbatch "
     "(torch.distributed.pipelining stage.py backward_maybe_with_nosync); the loss is "
     "cross_entropy(pred.flatten(0, 1).float(), labels) (train.py / components/loss.py); "
     "selective AC is the op policy (parallelize_llama.py _save_list at 9dec370, "
     "distributed/activation_checkpoint.py SelectiveAC today)"},
    {Runtime::kPytorchFsdp,
     "pytorch-fsdp",
     AttentionKernel::kFlash2,
     "",
     {5e-6, 0.5e-3, 0.050},
     true,
     2,
     false,
     false,
     false,
     true,
     false,
     2,
     SelectiveRecompute::kModules,
     false,
     "PyTorch FSDP (FSDP1 FlatParameter; MosaicML Composer/llm-foundry, HF Accelerate): eager "
     "modules, flash-attn 2 (attention=triton for llm-foundry's attn_impl: triton); no "
     "launcher file ppsim writes; fp8 through Transformer Engine (llm-foundry amp_fp8: te.Linear "
     "under fp8_autocast)"},
}};

constexpr uint32_t bit(ScheduleKind kind) { return 1u << static_cast<unsigned>(kind); }
constexpr uint32_t bit(Precision precision) { return 1u << static_cast<unsigned>(precision); }
constexpr uint32_t bit(Fp8Recipe recipe) { return 1u << static_cast<unsigned>(recipe); }
// bf16, fp16 and fp8; nvfp4 (Transformer Engine's NVFP4BlockScaling) only Megatron-Core runs.
constexpr uint32_t kAllPrecisions = bit(Precision::kBf16) | bit(Precision::kFp16) |
                                    bit(Precision::kFp8);
constexpr uint32_t kMegatronSchedules = bit(ScheduleKind::kOneFOneB) |
                                        bit(ScheduleKind::kInterleaved1F1B);
constexpr uint32_t kAllFp8Recipes = bit(Fp8Recipe::kDelayed) | bit(Fp8Recipe::kTensorwise) |
                                    bit(Fp8Recipe::kMxfp8) | bit(Fp8Recipe::kBlockwise);

// What each runtime runs (runtime.h), in Runtime order. docs/export.md prints this table.
constexpr std::array<RuntimeSupport, kRuntimeCount> kSupportTable = {{
    // megatron-core
    {true, true, kMegatronSchedules, true, true, true, 0b1111, 0b1111, false,
     OffloadForm::kAnyFraction, true, true, true, kAllPrecisions | bit(Precision::kNvfp4),
     TpCommOverlap::kDefault, true, true, true, true, kAllFp8Recipes, true, true,
     "NVIDIA/Megatron-LM: megatron/core/pipeline_parallel/schedules.py get_forward_backward_func "
     "(no pipelining, 1F1B without interleaving, interleaved with virtual stages: no GPipe, no "
     "zero-bubble or V schedule; forward_backward_pipelining_with_interleaving takes "
     "microbatch_group_size_per_vp_stage in [pp, m]); "
     "megatron/core/transformer/pipeline_parallel_layer_layout.py (any layer split); megatron/training/arguments.py (--use-distributed-optimizer, "
     "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads|optim_grads_params, "
     "--context-parallel-size, --expert-tensor-parallel-size); "
     "megatron/core/model_parallel_config.py (sequence parallelism with ep and tp; "
     "--tp-comm-overlap, Transformer Engine's userbuffers, asserts sequence parallelism); "
     "megatron/core/transformer/transformer_config.py (--cuda-graph-impl local, "
     "transformer_engine, full_iteration; --cuda-graph-modules; --recompute-modules; --fp4-format "
     "e2m1 --fp4-recipe "
     "nvfp4, Transformer Engine >= 2.7's NVFP4BlockScaling, megatron/core/fp4_utils.py); "
     "megatron/core/optimizer/__init__.py "
     "(HybridDeviceOptimizer with --optimizer-offload-fraction; --use-precision-aware-optimizer "
     "raises without the distributed optimizer; --grad-reduce-in-bf16); "
     "megatron/core/model_parallel_config.py cpu_offloading_num_layers (--cpu-offloading-num-"
     "layers; transformer_config.py refuses it with pp > 1, recompute or per-layer CUDA graphs); "
     "transformer_config.py fp8_recipe tensorwise|delayed|mxfp8|blockwise (--fp8-recipe); "
     "pretrain_hybrid.py and megatron/core/ssm/mamba_mixer.py (Mamba-2 layers of hybrid "
     "models)"},
    // megatron-lm
    {true, true, kMegatronSchedules, false, false, false, 0b0011, 0b0011, false,
     OffloadForm::kNone, false, true, true, kAllPrecisions, TpCommOverlap::kNone, false, false,
     false, false, bit(Fp8Recipe::kDelayed), false, false,
     "Megatron-LM 2020-2023 (core_r0.3 and before): megatron/schedules.py (1F1B and interleaved "
     "only, microbatches in groups of the pipeline size), --num-layers divisible by the pipeline "
     "size (arguments.py), the distributed "
     "optimizer as its only sharding; context parallelism, MoE expert parallelism, Megatron-FSDP, "
     "optimizer CPU offload and --tp-comm-overlap (Transformer Engine userbuffers) came with "
     "Megatron-Core 0.4 and later; bf16 forces fp32 gradient accumulation and all-reduce "
     "(arguments.py); fp8 through Transformer Engine's DelayedScaling only (--fp8-format, "
     "--fp8-amax-history-len)"},
    // deepspeed
    {true, true, bit(ScheduleKind::kOneFOneB), false, true, false, 0b1111, 0b0011, false,
     OffloadForm::kWholeOrPartialAtZero3, false, true, false, kAllPrecisions,
     TpCommOverlap::kNone, false, false, true, false, bit(Fp8Recipe::kDelayed), false, false,
     "microsoft/DeepSpeed: deepspeed/runtime/pipe/schedule.py (TrainSchedule, 1F1B, one stage per "
     "rank); deepspeed/runtime/pipe/engine.py (\"ZeRO-2 and ZeRO-3 are incompatible with pipeline "
     "parallelism\"); deepspeed/runtime/pipe/module.py (partition_method parameters|uniform|type: "
     "no per-stage layer counts); deepspeed/runtime/zero/config.py (\"Partial offloading only "
     "supported for ZeRO Stage 3.\"); deepspeed/moe/layer.py (enable_expert_tensor_parallelism: "
     "experts split over all of tp or none); no ring context parallelism (Ulysses all-to-all is "
     "another algorithm); deepspeed/runtime/config.py communication_data_type (the gradient "
     "reduction's dtype); fp8 only from Transformer Engine layers in the model code, under "
     "their default DelayedScaling"},
    // torchtitan
    {true, true,
     bit(ScheduleKind::kGpipe) | bit(ScheduleKind::kOneFOneB) |
         bit(ScheduleKind::kInterleaved1F1B) | bit(ScheduleKind::kZbH1) |
         bit(ScheduleKind::kZb1p) | bit(ScheduleKind::kZbv) | bit(ScheduleKind::kDualPipeV),
     true, true, false, 0b1101, 0b1101, true, OffloadForm::kWholeWithFsdp, true, false, false,
     bit(Precision::kBf16) | bit(Precision::kFp8), TpCommOverlap::kOptional, false, false, true,
     false, bit(Fp8Recipe::kTensorwise) | bit(Fp8Recipe::kMxfp8), false, false,
     "pytorch/torchtitan @ e347b1e5e: torchtitan/distributed/pipeline_parallel.py "
     "(get_schedule_class: GPipe, 1F1B, Interleaved1F1B, InterleavedZeroBubble = ZB1P, "
     "ZBVZeroBubble, DualPipeV; no ZB-H2/ZB-2P; module_fqns_per_model_part takes any split); "
     "torchtitan/models/llama3/infra/parallelize.py (FSDP2 fully_shard when dp_shard*cp > 1, "
     "reshard_after_forward never = ZeRO-2, always = ZeRO-3, no optimizer-only ZeRO-1; DDP only "
     "for pure data parallelism; enable_cpu_offload is FSDP's CPUOffloadPolicy, applied only "
     "with FSDP); torchtitan/config/job_config.py (expert_tensor_parallel_degree 1 or tp, "
     "mixed_precision_param bfloat16|float32, mixed_precision_reduce float32|bfloat16, TP always "
     "sequence-parallel; enable_async_tensor_parallel, which torchtitan/distributed/"
     "tensor_parallel.py maybe_enable_async_tp runs only with compile.enable and 'model' in "
     "compile.components); torchtitan/components/quantization (float8: torchao's tensorwise "
     "Float8Linear; mx: MXFP8 on Blackwell)"},
    // pytorch-fsdp
    {false, false, 0, false, false, false, 0b1101, 0b1101, false, OffloadForm::kWholeWithFsdp,
     true, true, false, kAllPrecisions, TpCommOverlap::kNone, false, false, true, false,
     bit(Fp8Recipe::kDelayed), false, false,
     "pytorch/pytorch torch/distributed/fsdp/fully_sharded_data_parallel.py: FSDP alone "
     "(ShardingStrategy NO_SHARD, SHARD_GRAD_OP = ZeRO-2, FULL_SHARD = ZeRO-3; no optimizer-only "
     "sharding; CPUOffload(offload_params=True) moves parameters, gradients and the optimizer "
     "step to the host; MixedPrecision reduce_dtype); no tensor, pipeline, context or expert "
     "parallelism of its own; fp8 from Transformer Engine layers under DelayedScaling (as "
     "llm-foundry's amp_fp8)"},
}};


constexpr std::array<const char*, 4> kAttentionNames = {"unfused", "flash2", "fused", "triton"};

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

const RuntimeSupport& runtime_support(Runtime runtime) {
  return kSupportTable[static_cast<size_t>(runtime)];
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
