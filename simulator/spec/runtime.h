// Runtime: the training code base a plan runs on, and the facts about it that change a step's
// time or memory. The plan key "runtime" (inline "runtime=...") names it; simulate, plan,
// memory, accuracy and the exporters all read it from the plan, so a run is described the same
// way everywhere (docs/runtimes.md).
//
// Per runtime (one row of kRuntimeTable in runtime.cc, each with its source):
//   name             megatron-core (the default), megatron-lm, deepspeed, torchtitan, pytorch-fsdp
//   attention        the attention kernel it runs by default (AttentionKernel below); the plan
//                    key "attention" overrides it
//   exporter         the launcher format `ppsim export` writes for it ("megatron", "deepspeed",
//                    "torchtitan"; none for pytorch-fsdp)
//   host overheads   kernel_gap (device idle time between consecutive kernels), per-microbatch
//                    dispatch and per-step host time: priors here, refit by `ppsim accuracy --fit`
//                    (cost/cost_model.h, EfficiencyTable::runtimes) for runtimes with published
//                    rows
//   fsdp_fp32_shards under ZeRO-3 (FSDP), the sharded parameters are fp32 and are the
//                    optimizer's master copy (PyTorch FSDP1 FlatParameter and FSDP2 DTensor
//                    shards under a bf16 MixedPrecision policy): 4 + 4 + 8 = 16 bytes per
//                    parameter over the shard group, not Megatron/DeepSpeed's 2 + 4 + 4 + 8 = 18
//   overlaps_tp_backward  the backward's tensor-parallel collectives run asynchronously under
//                    its GEMMs (Megatron's TP linears) rather than blocking (cost/chunk_price.h)
//   blocking_p2p     non-interleaved pipelines wait for each batched send/recv before the next
//                    compute (Megatron's p2p_communication and DeepSpeed's pipe engine), where
//                    torch.distributed.pipelining waits only on receives
//   gathered_layers  unsharded layers a ZeRO-3 rank holds at once: the one computing and the
//                    prefetched next (FSDP's forward/backward prefetch of one unit)
//   zero3_gathers_modules  ZeRO-3 gathers module by module, not layer by layer: DeepSpeed
//                    fetches each submodule's parameters as it runs and prefetches the next
//                    ones in its trace only while fewer than stage3_max_live_parameters are live
//                    (kDeepSpeedMaxLiveParameters), releasing each after use; its gradients are
//                    produced and reduced parameter by parameter (memory_model.h)
//   moe_host_sync    every MoE layer's forward reads its per-expert token counts on the host
//                    (Megatron-Core's TEGroupedMLP hands Transformer Engine's GroupedLinear its
//                    m_splits as a Python list: tokens_per_expert.tolist()), so the host never
//                    keeps a lead over an MoE layer and its kernels' issue time adds to the
//                    device time (cost/chunk_price.h "host"). Charged for token drop too, though
//                    drop-and-pad builds those counts on the host without a sync: the published
//                    token-drop runs (whole-layer CUDA graphs, so device-bound) are about 1.6x
//                    slower than ppsim's device time, and this charge makes up most of it until
//                    the missing device work is found (docs/moe.md "Host"). CUDA graphs
//                    (plan.h CudaGraphs) take graphed kernels off the host
//
// Thread-safety: pure functions over a constant table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/schedule_kind.h"

namespace ppsim {

enum class Runtime { kMegatronCore, kMegatronLm, kDeepSpeed, kTorchtitan, kPytorchFsdp };
inline constexpr int kRuntimeCount = 5;
inline constexpr Runtime kDefaultRuntime = Runtime::kMegatronCore;

// Which attention kernel runs.
enum class AttentionKernel {
  kUnfused,  // Megatron-LM's core attention: QK^T and PV batched GEMMs over the full s x s
             // scores, a fused scale-mask-softmax and a dropout, all saved for backward.
  kFlash2,   // FlashAttention-2 (flash-attn 2.x, PyTorch SDPA's flash backend):
             // written for Ampere's mma.sync, so it reaches a smaller share of Hopper/Blackwell.
  kFused,    // The GPU generation's own fused kernel through Transformer Engine: cuDNN fused
             // attention / FlashAttention-3 on Hopper, cuDNN on Blackwell, FA2 on Ampere.
  kTriton,   // FlashAttention-1's algorithm in pre-MLIR Triton (flash-attn's flash_attn_triton.py,
             // copied into llm-foundry as attn_impl: triton for ALiBi's bias): 0.55 of
             // FlashAttention-2's datasheet (cost_model.h kTritonOverFlash2).
};

// Host (CPU) time an eager PyTorch runtime spends per kernel it launches: the Python module
// code, the ATen dispatcher, autograd recording and cudaLaunchKernel. PyTorch's CUDA Graphs
// post ("Accelerating PyTorch with CUDA Graphs", 2021) puts eager launch overhead at several
// microseconds of CPU per kernel, and Python-level MoE dispatch code (Megatron's token
// dispatcher and router: many small tensor ops with index bookkeeping per kernel) costs a
// few times that; 20 us is the prior, not fitted (MoE rows are outside the fit). It matters
// only where the host cannot run ahead of the GPU: an MoE layer that reads its token counts
// on the host every forward (RuntimeTraits::moe_host_sync, chunk_price.h "host").
inline constexpr double kHostSecondsPerKernel = 20e-6;

// DeepSpeed's stage3_max_live_parameters default (deepspeed/runtime/zero/config.py). After
// fetching a module, its PartitionedParameterCoordinator prefetches the next parameters of the
// trace while it has fetched fewer than min(this - live, stage3_prefetch_bucket_size = 5e7)
// elements, so it takes the next parameter whole unless 1e9 or more are already live: a
// module of 1e9 parameters or more runs with nothing prefetched beside it.
inline constexpr double kDeepSpeedMaxLiveParameters = 1e9;

// What `recompute=selective` keeps on a runtime (model/activation_memory.h).
enum class SelectiveRecompute {
  kModules,   // Megatron's selective recompute: the plan's recompute_modules (core_attn unless
              // given), each a whole module re-run inside its own checkpoint.
  kOpPolicy,  // torchtitan's selective op AC (activation_checkpoint.mode = "selective",
              // selective_ac_option = "op"): a per-op save list inside each block's checkpoint
              // (model/op_sac.h). Its memory; its time is still priced as core_attn's re-run
              // (op_sac.h "Time").
};

// Per-runtime host overheads (priors; EfficiencyTable carries the values a step uses).
struct RuntimeOverheads {
  double kernel_gap_s = 0;           // Between consecutive kernels on the device timeline.
  double microbatch_overhead_s = 0;  // Per forward and per backward task of a chunk.
  double step_overhead_s = 0;        // Per step, on the optimizer task.
};

struct RuntimeTraits {
  Runtime runtime = kDefaultRuntime;
  const char* name = "";
  AttentionKernel attention = AttentionKernel::kFused;
  const char* exporter = "";   // Export format that writes this runtime's launcher; "" none.
  RuntimeOverheads overheads;  // Priors (header).
  bool fsdp_fp32_shards = false;
  int gathered_layers = 2;
  bool overlaps_tp_backward = true;
  bool blocking_p2p = true;
  bool moe_host_sync = false;
  // Under fp8 or nvfp4, each linear keeps its input quantized (the W pass's column-wise copy,
  // 1 or 0.5625 bytes per element) instead of the bf16 tensor: Transformer Engine's Linear,
  // LayerNormLinear and GroupedLinear save the quantized inputmat for the weight gradient
  // (transformer_engine/pytorch/module/linear.py _Linear.forward). torchao's Float8Linear
  // saves the high-precision input and casts again in the backward (torchao/float8/
  // float8_linear.py matmul_with_hp_or_float8_args). model/activation_memory.h.
  bool quantized_gemm_inputs = false;
  // Under pipeline parallelism, FSDP (ZeRO-2 or -3) keeps each stage's parameters gathered
  // from the first forward to the last backward and its gradients unsharded, accumulated in
  // fp32, until the last microbatch: torchtitan sets reshard_after_forward=False when pp is on
  // (parallelize.py, "to avoid per-microbatch all-gathers") and torch.distributed.pipelining
  // turns off FSDP2's gradient sync and reshard-after-backward for all but the last microbatch
  // (stage.py backward_maybe_with_nosync), FSDP2 accumulating the unsharded gradient in its
  // fp32 reduce_dtype (unsharded_accumulated_grad). The step then runs as Megatron's
  // distributed optimizer does (plan.h zero_stage_in_force).
  bool fsdp_unsharded_under_pp = false;
  // Bytes per logit element the loss's backward holds beside the saved fp32 probabilities
  // (activation_memory.h loss_working_bytes): Megatron's fused vocab-parallel cross entropy
  // works in place on its saved fp32 softmax, one bf16 copy; torchtitan's
  // cross_entropy(pred.float(), labels) keeps log_softmax's fp32 output and its backward holds
  // the incoming and the outgoing fp32 gradient at once (4 + 4).
  double loss_working_bytes_per_logit = 2;
  // What selective recompute keeps (SelectiveRecompute above): torchtitan's only selective
  // form besides every-k-th-layer checkpointing (plan.h recompute_num_layers) is its op policy.
  SelectiveRecompute selective_recompute = SelectiveRecompute::kModules;
  bool zero3_gathers_modules = false;  // (header)
  const char* source = "";  // Where the row's facts come from.
};

const RuntimeTraits& runtime_traits(Runtime runtime);
std::string runtime_name(Runtime runtime);
const std::vector<std::string>& runtime_names();
std::optional<Runtime> find_runtime(const std::string& name);
const std::vector<Runtime>& all_runtimes();

// Parameters per data-parallel gradient reduction (one reduce-scatter or all-reduce task), as
// each runtime buckets gradients:
//   megatron-core, megatron-lm  max(40M, 1M x dp) (DistributedDataParallelConfig bucket_size)
//   deepspeed                   5e8 (reduce_bucket_size / allreduce_bucket_size defaults)
//   torchtitan, pytorch-fsdp    with FSDP sharding (zero_stage >= 1) one FSDP unit, a layer
//                               (`layer_parameters`); plain DDP 25 MiB of gradients
//                               (bucket_cap_mb = 25) / `gradient_bytes` per parameter
double gradient_bucket_parameters(Runtime runtime, int64_t dp, int zero_stage,
                                  double gradient_bytes, double layer_parameters);

// ---------------------------------------------------------------------------------------------
// What each runtime can run: the one table the planner (planner/plan_candidates.h) searches
// within and `ppsim export` checks a plan against (docs/export.md prints it, one row per
// runtime, each with the launcher source that shows it; runtime_support.h checks plans against
// it). A plan that needs a feature its
// runtime lacks would launch a different step from the one ppsim simulated, or not launch.
//
// How a runtime offloads optimizer states to the host.
enum class OffloadForm {
  kNone,  // No optimizer offload.
  // Any fraction of the optimizer states and update on the host, the rest on the GPU
  // (Megatron-Core HybridDeviceOptimizer, --optimizer-offload-fraction); needs the distributed
  // optimizer (ZeRO >= 1: --use-precision-aware-optimizer raises without it).
  kAnyFraction,
  // ZeRO-Offload: the whole optimizer under ZeRO 1-3; a partial "ratio" only under ZeRO-3
  // (DeepSpeed zero/config.py: "Partial offloading only supported for ZeRO Stage 3").
  kWholeOrPartialAtZero3,
  // FSDP's CPUOffloadPolicy: parameters, gradients and optimizer states of the whole model on
  // the host (fraction 1 only), and only where FSDP shards (ZeRO >= 2 over dp*cp > 1): without
  // FSDP the flag does nothing.
  kWholeWithFsdp,
};

// Whether a runtime runs sequence-parallel TP collectives under the GEMMs they feed or drain
// (plan key tp_comm_overlap), and whether it does so unless told not to.
enum class TpCommOverlap {
  kNone,      // Never.
  kOptional,  // When the plan says so (torchtitan's async TP: enable_async_tensor_parallel).
  kDefault,   // Unless the plan says not (Megatron-Core's --tp-comm-overlap in its recipes).
};

// A runtime's capabilities. Bit sets are indexed by the enum value (bit 1 << value).
struct RuntimeSupport {
  bool tensor_parallel = true;    // tp > 1.
  bool pipeline = true;           // pp > 1.
  uint32_t schedules = 0;         // Pipeline schedules it runs when pp > 1 (ScheduleKind bits).
  bool context_parallel = true;   // Ring-attention cp > 1.
  bool expert_parallel = true;    // ep > 1.
  bool expert_tp_any = true;      // Any expert tensor-parallel degree; else only 1 or tp.
  uint32_t zero_stages = 0;       // ZeRO stages (bits 0-3) with dp*cp > 1 ranks to shard over.
  uint32_t zero_stages_pipelined = 0;  // The same when pp > 1.
  // ZeRO-0 (no sharding) with dp*cp > 1 only without other parallelism (torchtitan applies DDP
  // only to pure data parallelism: "DDP has not supported > 1D parallelism").
  bool replicated_only_pure_dp = false;
  OffloadForm offload = OffloadForm::kNone;
  bool uneven_layers = true;              // Per-stage layer counts that differ.
  bool sequence_parallel_optional = true;  // tp > 1 without sequence parallelism.
  // ep > 1 with tp > 1 needs sequence parallelism (Megatron's model_parallel_config.py).
  bool expert_tp_needs_sequence_parallel = false;
  uint32_t precisions = 0;                 // Precision bits (gpu_catalog.h order: bf16, fp16, fp8).
  // Sequence-parallel TP collectives overlapped with their GEMMs (plan key tp_comm_overlap,
  // plan.h tp_comm_overlap_in_force): Megatron-Core's --tp-comm-overlap (Transformer Engine's
  // userbuffers), on by default; torchtitan's async TP (inductor's micro-pipelined TP), when
  // the plan says so.
  TpCommOverlap tp_comm_overlap = TpCommOverlap::kNone;
  // CUDA graph capture of training steps (plan key cuda_graphs: Megatron-Core's
  // --cuda-graph-impl; plan.h CudaGraphs).
  bool cuda_graphs = false;
  // Selective recompute of modules other than the attention core (plan key recompute_modules:
  // Megatron-Core's --recompute-modules; plan.h RecomputeModule).
  bool recompute_modules = false;
  // Gradients reduced in the training dtype rather than fp32 under bf16 (plan key
  // grad_reduce_in_fp32=false: Megatron-Core's --grad-reduce-in-bf16).
  bool half_gradient_reduce = false;
  // Saved activations of some layers kept in host memory (plan key activation_offload_layers:
  // Megatron-Core's --cpu-offloading-num-layers).
  bool activation_offload = false;
  // fp8 recipes it runs (plan key fp8_recipe; plan.h Fp8Recipe bits).
  uint32_t fp8_recipes = 0;
  // Hybrid models' Mamba-2 layers (ModelSpec::hybrid_layer_pattern 'M'; Megatron-Core's
  // hybrid model, pretrain_hybrid.py).
  bool mamba_layers = false;
  // Interleaved microbatch groups other than pp (plan key microbatch_group_size_per_vp_stage:
  // Megatron-Core's --microbatch-group-size-per-virtual-pipeline-stage).
  bool microbatch_groups = false;
  const char* source = "";                 // Launcher source files that show each fact.
};

const RuntimeSupport& runtime_support(Runtime runtime);

// The checks of a plan against this table: runtime_support.h.

std::string attention_kernel_name(AttentionKernel kernel);  // "unfused", "flash2", ...
const std::vector<std::string>& attention_kernel_names();
std::optional<AttentionKernel> find_attention_kernel(const std::string& name);

}  // namespace ppsim
