// CostModel: seconds for each pass of an op (layer_ops.h) on one GPU.
//
// Until measured profiles exist (profile.h, a later issue) every time is a roofline estimate
// from the GPU's datasheet (gpu_catalog.h) and one EfficiencyTable:
//
//   GEMM pass of shape (m, n, k) x batch at precision p:
//     tiles      = batch * (m / gemm_tile) * (n / gemm_tile)          output tiles
//     occupancy  = tiles / (tiles + gemm_half_tiles)                  fills the SMs
//     depth      = k / (k + gemm_half_k)                              main loop vs epilogue
//     efficiency = gemm_max(p) * arch * occupancy * depth
//     compute    = flops / (peak(p) * efficiency)
//   attention pass (flash):
//     tiles      = batch_heads * q_tokens / attention_q_tile
//     efficiency = attention_fwd|attention_bwd * arch * tiles / (tiles + gemm_half_tiles)
//     compute    = flops / (peak(bf16 or fp16) * efficiency)
//   where arch = hopper_gemm_scale | hopper_attention_scale on Hopper and Blackwell GPUs, else 1.
//   attention pass (unfused, EfficiencyTable::flash_attention false): the QK^T and PV batched
//     GEMMs over all b*heads*s*s scores as GEMM passes (four in backward), plus the softmax and
//     dropout as memory-bound passes (13 bytes per score forward, 19 backward; cost_model.cc).
//   fp8 GEMM pass: plus a memory-bound cast of its activation operand (X forward, dY in B;
//     3 bytes per element, one kernel).
//   every pass:
//     memory     = bytes / (memory_bandwidth * memory_efficiency)
//     seconds    = (compute^r + memory^r)^(1/r) + kernels * kernel_overhead
//   where r = roofline_sharpness: a smooth roofline that tends to max(compute, memory) for
//   large r and charges ops near the ridge point for imperfect overlap of loads and math.
//   Memory-bound ops have compute = 0, so their time is memory + launches.
// A GEMM's B pass has shape (m, k, n) (dX[m,k], reducing over n) and its W pass (k, n, m)
// (dW[k,n], reducing over the m tokens), so a thin MoE expert has a slow W pass.
//
// Peaks: fp8 GEMMs run at the fp8 peak with gemm_max_fp8; on a GPU without fp8 tensor cores
// they run at the bf16 peak (and bf16 efficiency) and the cost carries a note saying so.
// bf16 falls back to fp16 (V100) and fp16 to bf16 the same way.
//
// With a profile attached (profile.h), measured times win over the roofline, pass by pass:
//   GEMM pass      profile.gemm(precision, pass shape)
//   attention      profile.attention(precision, backward, head_dim, pass FLOPs)
//   memory-bound   profile.memory("norm" for ops named *norm, else "elementwise", pass bytes)
//   seconds        measured + kernels * kernel_overhead (launch gaps are not in a kernel's
//                  event time), with source kProfile.
// A pass the profile has no table for (fp8 without fp8 GEMMs, say) keeps the roofline.
//
// Thread-safety: a CostModel is immutable after construction; share it freely.
// Cost: op_cost is a few dozen flops and one pow per pass; layer_cost builds the op list on
// the stack (no heap allocation), so the planner can call it for thousands of plans.
#pragma once

#include <cstdint>
#include <string_view>

#include "simulator/model/layer_ops.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/model_spec.h"

namespace ppsim {

// Where a time came from.
enum class CostSource {
  kRoofline,  // Datasheet peak x EfficiencyTable (the default; no measurement).
  kProfile,   // A measured profile entry (ppsim profile), interpolated (profile.h).
};

// Every efficiency constant of the roofline, in one place so a profile or a calibration on
// published runs can replace it. Fractions are of the datasheet figure.
//
// Calibration (docs/accuracy.md): the constants marked "fitted" were fitted together, by
// coordinate descent on the mean absolute percentage error of `ppsim accuracy` over the train
// half of the published runs (../shared/data/public-runs.csv, split by a hash of row_id), then
// checked on the test half: MAPE 4.5% train, 5.5% test. Each stays inside the range its
// measurements allow (the bounds below); no constant is per row or per source. The others keep
// their measured or datasheet values.
struct EfficiencyTable {
  // Large bf16/fp16 GEMMs (>= 4096 on every side): published cuBLAS sweeps reach about 70-80%
  // of the dense peak on H100 SXM (about 700-800 of 989 TFLOP/s; the card runs clock-limited
  // at its power cap) and 80-90% on A100 (250-280 of 312). Fitted: 0.72 (was 0.75), bound
  // [0.4, 0.92]; below the sweeps because eager frameworks lose some of it between kernels
  // that the roofline cannot see (allocator, syncs, stream waits).
  double gemm_max_bf16 = 0.72;
  // Large fp8 GEMMs reach a lower fraction of their doubled peak (about 1.2-1.4 of 1.98
  // PFLOP/s on H100 in public cuBLASLt sweeps) and pay for scaling (the casts are costed
  // separately, cost_model.cc); 0.65. Not fitted: one training row uses fp8, too few to
  // identify it (docs/accuracy.md).
  double gemm_max_fp8 = 0.65;
  // Output tile edge, elements: cuBLAS/CUTLASS bf16 kernels on Ampere and Hopper use 128x128
  // or 128x256 tiles per thread block.
  double gemm_tile = 128;
  // Output tiles at which occupancy is one half. A GEMM with fewer tiles than SMs (108 on
  // A100, 132 on H100) leaves SMs idle; split-K and stream-K recover part of that. 32, about a
  // quarter of a wave, puts 1024^3 on H100 near the ~30-45% of peak that such shapes reach.
  // Kept at the microbenchmark value: fitted freely it trades against kernel_overhead (both
  // slow small GEMMs) and the published runs cannot tell them apart.
  double gemm_half_tiles = 32;
  // Reduction depth at which the main loop and the prologue/epilogue take equal time: about
  // one 64-deep k-slice per tile. Kept, as gemm_half_tiles; it matters only for thin k.
  double gemm_half_k = 64;
  // Flash attention, causal, head_dim 64-128: FlashAttention-2 reaches 50-73% of peak forward
  // on A100 (Dao 2023) and less causal; backward kernels run slower than forward. The runs
  // that use flash attention (torchtitan's SDPA, llm-foundry's Triton/flash kernels with
  // ALiBi) reach less: fitted 0.47 forward (was 0.60) and 0.27 backward (was 0.50), as
  // fractions of the bf16 peak of the 2.5x-forward backward FLOPs (layer_ops.h).
  double attention_fwd = 0.47;
  double attention_bwd = 0.27;
  // Query rows per attention work tile (block_m = 128 in FA2/FA3 for head_dim 128).
  double attention_q_tile = 128;
  // HBM: copy and STREAM-triad kernels reach about 0.9 of the datasheet (e.g. 3.0-3.1 of
  // 3.35 TB/s on H100 SXM). Fitted: 0.90 (was 0.80), at its upper bound 0.90.
  double memory = 0.90;
  // r of the smooth roofline (header formula): r = 3 costs 26% extra at the ridge point and
  // 4% once one side is twice the other. A shape parameter; kept.
  double roofline_sharpness = 3;
  // Seconds each kernel launch adds: the gap between consecutive kernels on the device
  // timeline, 1-3 us when the host runs ahead (Megatron) and more when eager PyTorch is
  // host-bound (CUDA launch 4-6 us plus Python dispatch). Fitted: 5.7 us (was 2 us), bound
  // [1, 10] us.
  double kernel_overhead = 5.7e-6;
  // Which attention kernel the framework runs: fused flash attention (the default: PyTorch
  // SDPA, flash-attn, Transformer Engine), or false for Megatron-LM's unfused core attention
  // of 2020-2023 (--use-flash-attn off): QK^T and PV as batched GEMMs over the full s x s
  // scores (the causal mask does not skip work), a fused scale-mask-softmax and a dropout,
  // whose outputs are saved for backward (activation_memory.h counts them). A kernel choice
  // rather than an efficiency; it lives here because the cost model and the memory model of a
  // step both follow it (step_builder.cc passes it to the activation sizes).
  bool flash_attention = true;
  // Framework overheads a real step pays beyond its kernels (step_builder.cc adds them).
  // Per step, on the optimizer task: gradient-norm clipping, loss scaling, zero_grad,
  // logging, the data loader's hand-off, all host-bound. Fitted: 52 ms (was 0), bound
  // [0, 2] s; PyTorch-profiler traces of Megatron and FSDP steps show tens of ms between the
  // last backward kernel and the next step's first forward.
  double step_overhead = 0.052;
  // Per microbatch pass, on every forward and every backward task of a chunk: the
  // framework's Python dispatch of the chunk, pipeline p2p setup, FSDP pre/post hooks.
  // Fitted: 0.28 ms (was 0), bound [0, 20] ms.
  double microbatch_overhead = 0.28e-3;
  // Hopper and Blackwell GPUs (H100, H200, B200: names starting H1, H2, GH, B1, B2, GB) reach a
  // smaller fraction of their datasheet peak than Ampere: the peak assumes warpgroup MMA at
  // the boost clock, while dense GEMMs run power-capped (H100 SXM cuBLAS sustains about
  // 600-750 of 989 TFLOP/s against A100's 270-290 of 312, a ratio of 0.75-0.85), and
  // attention kernels written for Ampere's mma.sync (FlashAttention-2, Triton flash
  // attention) reach about 35% of the H100 peak (Dao 2023; Shah et al. 2024,
  // FlashAttention-3, section 1) against 50-70% on A100 (a ratio of 0.5-0.7). These scale
  // gemm_max_* and attention_* on those GPUs. Fitted: 0.79 and 0.58 (were 1), inside those
  // ratios. Blackwell is assumed to behave as Hopper (no B200 row in the published runs).
  double hopper_gemm_scale = 0.79;
  double hopper_attention_scale = 0.58;
};

// The time of one pass of one op.
struct PassCost {
  double seconds = 0;
  CostSource source = CostSource::kRoofline;
  bool extrapolated = false;  // kProfile outside the measured range (profile.h).
};

struct OpCost {
  PassCost fwd;  // Forward.
  PassCost b;    // Input gradient.
  PassCost w;    // Weight gradient.
  // Why the time differs from the request, e.g. "fp8 unsupported: bf16 peak"; empty if none.
  std::string_view note;
};

// The seconds of an op list (a layer, the embedding or the head) on one GPU, one microbatch.
struct LayerCost {
  double fwd = 0;         // Forward pass.
  double b = 0;           // Input-gradient pass, without recompute.
  double w = 0;           // Weight-gradient pass.
  double recompute = 0;   // Forward work re-run inside backward (ops marked recomputed); the
                          // simulator runs it just before B, inside the same backward task.
  int roofline_ops = 0;   // Ops whose times came from the roofline...
  int profile_ops = 0;    // ...and from a profile.
  int extrapolated_ops = 0;  // Of the profile ops, those with a pass outside the measured range.
  // The same by pass (forward, input gradient, weight gradient; passes without kernels are not
  // counted), for reports that say how much of a step was measured.
  int roofline_passes = 0;
  int profile_passes = 0;
  int extrapolated_passes = 0;  // Of the profile passes, those outside the measured range.
  std::string_view note;  // The first op's note, if any (e.g. the fp8 fallback).

  double backward() const { return recompute + b + w; }
  double total() const { return fwd + backward(); }
};

// The peak a GEMM of some precision runs at on this GPU.
struct PeakFlops {
  double flops = 0;                   // FLOP/s.
  Precision used = Precision::kBf16;  // The tensor-core precision actually used.
  std::string_view note;              // Set when `used` differs from the request.
};

class ProfileTable;

class CostModel {
 public:
  // REQUIRES: gpu has a positive bf16 or fp16 peak and memory bandwidth.
  explicit CostModel(GpuSpec gpu, EfficiencyTable efficiency = {});
  // The same, with measured times from `profile` (null: roofline only, as above).
  // REQUIRES: `profile` outlives the CostModel.
  CostModel(GpuSpec gpu, EfficiencyTable efficiency, const ProfileTable* profile);

  const GpuSpec& gpu() const { return gpu_; }
  const EfficiencyTable& efficiency() const { return efficiency_; }
  const ProfileTable* profile() const { return profile_; }

  // Tensor-core peak for `precision`, after the fallbacks in the header.
  const PeakFlops& peak(Precision precision) const;

  // Compute efficiency (fraction of peak) of one GEMM pass of this shape, before the
  // roofline combines it with memory time. Increases with every dimension.
  double gemm_efficiency(const GemmShape& shape, Precision precision) const;
  // Compute efficiency of a flash-attention pass of this shape.
  double attention_efficiency(const AttentionShape& shape, bool backward) const;

  // Seconds of each pass of `op`.
  OpCost op_cost(const Op& op) const;

  // Sum over an op list.
  LayerCost cost(const OpList& ops) const;
  // layer_ops / embedding_ops / head_ops, costed. No heap allocation.
  LayerCost layer_cost(const ModelSpec& model, const OpShape& shape, int64_t layer_index) const;
  LayerCost embedding_cost(const ModelSpec& model, const OpShape& shape) const;
  LayerCost head_cost(const ModelSpec& model, const OpShape& shape) const;

 private:
  PassCost pass(const Op& op, double flops, double bytes, int kernels, double efficiency) const;
  // Megatron's unfused core attention (EfficiencyTable::flash_attention false), from the
  // attention op's shape: its GEMMs at gemm_efficiency, its softmax and dropout by bytes.
  OpCost unfused_attention(const Op& op) const;
  // The profile's time for one pass, when it has a table for it; `gemm` is the pass's shape.
  void apply_profile(const Op& op, const GemmShape& gemm, bool backward, double flops,
                     double bytes, int kernels, PassCost& cost) const;

  GpuSpec gpu_;
  EfficiencyTable efficiency_;
  PeakFlops peaks_[3];  // Indexed by Precision.
  // EfficiencyTable's hopper_* scales when the GPU is Hopper or newer, else 1.
  double gemm_scale_ = 1;
  double attention_scale_ = 1;
  const ProfileTable* profile_ = nullptr;  // Not owned; null without a profile.
};

std::string_view cost_source_name(CostSource source);

}  // namespace ppsim
