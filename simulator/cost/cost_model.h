// CostModel: seconds for each pass of an op (layer_ops.h) on one GPU.
//
// Without a measured profile (profile.h) every time is a roofline estimate from the GPU's
// datasheet and kernel datasheet (gpu_catalog.h), the runtime (spec/runtime.h) and one
// EfficiencyTable:
//
//   GEMM pass of shape (m, n, k) x batch at precision p:
//     tiles      = batch * (m / gemm_tile) * (n / gemm_tile)          output tiles
//     occupancy  = tiles / (tiles + gemm_half_tiles)                  fills the SMs
//     depth      = k / (k + gemm_half_k)                              main loop vs epilogue
//     efficiency = gemm_max(p) * occupancy * depth
//     gemm_max   = kernel_scale * kernels.gemm_bf16 (or kernels.gemm_fp8 / gemm_fp4 at the
//                  fp8 / fp4 peak; kernels.gemm_fp8_blockwise under the blockwise fp8 recipe)
//     compute    = flops / (peak(p) * efficiency)
//   attention pass (flash2 or fused kernel, AttentionKernel):
//     tiles      = batch_heads * q_tokens / attention_q_tile
//     blocks     = keys_per_call / attention_kv_block       key blocks one query tile sweeps
//     efficiency = [flash2_scale for flash2, kernel_scale for fused] * kernels.<kernel>_fwd|_bwd
//                  (triton: kTritonOverFlash2 * kernels.flash2_fwd|_bwd, no flash2_scale)
//                  * tiles / (tiles + gemm_half_tiles)
//                  * blocks / (blocks + attention_tile_overhead_fwd|_bwd)
//     (kernels.* are the long-sequence ceilings; the last factor is why attention is slower at
//     2K than at 16K and faster again in a cp ring's long chunks)
//     compute    = flops / (peak(bf16 or fp16) * efficiency)
//   attention pass (AttentionKernel::kUnfused, Megatron-LM's core attention): the QK^T and PV
//   batched
//     GEMMs over all b*heads*s*s scores as GEMM passes (four in backward), plus the softmax and
//     dropout as memory-bound passes (13 bytes per score forward, 19 backward; cost_model.cc).
//   fp8 GEMM pass: plus a memory-bound quantization of its activation operand (X forward, dY
//     in B), by the plan's recipe (gpu_catalog.h Fp8Recipe; quantize_cost below):
//       delayed     one cast kernel with its amax: read 2 bytes, write 1 per element; a grouped
//                   GEMM's experts in one multi-tensor kernel (Transformer Engine's
//                   multi_cast_transpose);
//       tensorwise  an amax kernel (read 2), a scale kernel and the cast (read 2, write 1): 5
//                   bytes, 3 kernels, per expert of a grouped GEMM (split_quantize quantizes
//                   each split on its own);
//       mxfp8       one kernel writing the row-wise and the column-wise copy, each with an E8M0
//                   scale per 32 elements: 2 + 2 x (1 + 1/32) = 4.0625 bytes, per expert;
//       blockwise   the same with an fp32 scale per 128 elements: 2 + 2 x (1 + 4/128) bytes.
//     Under sequence parallelism Transformer Engine (runtimes with quantized_gemm_inputs)
//     quantizes an all-gathered operand before its gather: the cast covers the 1/tp shard
//     (Op::input_gathered_over for X, grad_gathered_over for dY).
//     Delayed and tensorwise write one copy, plus the transposed one where the W pass needs
//     it: Transformer Engine (runtimes with quantized_gemm_inputs) on Hopper and Ada, whose fp8
//     GEMMs take only TN (its cast_transpose writes both: 4 bytes per element delayed, 6
//     tensorwise; Float8Quantizer::create_tensor allocates the transpose unless
//     nvte_is_non_tn_fp8_gemm_supported). Blackwell and torchao (which casts again in the
//     backward, runtime.h) write one.
//   nvfp4 GEMM pass: plus the NVFP4 quantization of its activation operand (X forward, dY in B):
//     an amax pass and a quantize pass that writes the row-wise copy for this GEMM and the
//     column-wise, Hadamard-rotated copy for the W pass, with their E4M3 block scales
//     (5.125 bytes per element, two kernels; cost_model.cc kNvfp4QuantizeBytes).
//   every pass:
//     memory     = bytes / (memory_bandwidth * memory_efficiency)
//     seconds    = (compute^r + memory^r)^(1/r) + kernels * kernel_gap
//   where kernel_gap is the runtime's (EfficiencyTable::runtimes).
//   where r = roofline_sharpness: a smooth roofline that tends to max(compute, memory) for
//   large r and charges ops near the ridge point for imperfect overlap of loads and math.
//   Memory-bound ops have compute = 0, so their time is memory + launches.
// A GEMM's B pass has shape (m, k, n) (dX[m,k], reducing over n) and its W pass (k, n, m)
// (dW[k,n], reducing over the m tokens), so a thin MoE expert has a slow W pass.
//
// Peaks: fp8 GEMMs run at the fp8 peak with kernels.gemm_fp8; on a GPU without fp8 tensor cores
// they run at the bf16 peak (and bf16 efficiency) and the cost carries a note saying so.
// nvfp4 GEMMs run at the fp4 peak with kernels.gemm_fp4, else as fp8 GEMMs with a note (a plan
// refuses nvfp4 on such GPUs, plan.h plan_problem; the fallback keeps hand-built ops total).
// bf16 falls back to fp16 (V100) and fp16 to bf16 the same way.
//
// With a profile attached (profile.h), measured times win over the roofline, pass by pass:
//   GEMM pass      profile.gemm(precision, pass shape)
//   attention      profile.attention(precision, backward, head_dim, pass FLOPs)
//   memory-bound   profile.memory("norm" for ops named *norm, else "elementwise", pass bytes)
//   seconds        measured + kernels * kernel_gap (launch gaps are not in a kernel's
//                  event time), with source kProfile.
// A pass the profile has no table for (fp8 without fp8 GEMMs, say) keeps the roofline.
//
// Thread-safety: a CostModel is immutable after construction; share it freely.
// Cost: op_cost is a few dozen flops and one pow per pass; layer_cost builds the op list on
// the stack (no heap allocation), so the planner can call it for thousands of plans.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "simulator/model/layer_ops.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/runtime.h"

namespace ppsim {

// Where a time came from.
enum class CostSource {
  kRoofline,  // Datasheet peak x EfficiencyTable (the default; no measurement).
  kProfile,   // A measured profile entry (ppsim profile), interpolated (profile.h).
};

// FlashAttention-1's algorithm in pre-MLIR Triton (AttentionKernel::kTriton) against
// FlashAttention-2's datasheet on the same GPU, forward and backward alike. Published, not
// fitted: the FlashAttention-2 paper (Dao 2023, arXiv 2307.08691, abstract) puts
// FlashAttention at 25-40% of the A100's peak and FlashAttention-2 at 50-73%; the datasheet
// holds long-sequence ceilings, so the ceilings' ratio, 40 / 73. The Triton port's own header
// (flash-attn flash_attn_triton.py, as llm-foundry copies it) finds it "overall slightly
// slower" than FlashAttention's CUDA kernels (forward faster, backward slower). Only
// llm-foundry's MPT tables ran it among the published rows, so fitting it would make a
// per-source constant; flash2_scale, fitted on flash-attn 2 rows, does not apply to it.
inline constexpr double kTritonOverFlash2 = 0.55;

// Every constant of the roofline that is not a property of one GPU, in one place so a
// profile or a calibration on published runs can replace it. A GPU's own ceilings (large-GEMM
// and attention-kernel fractions of its peak) are its KernelDatasheet (gpu_catalog.h, from
// published kernel benchmarks, one per GPU generation); a runtime's host overheads are
// `runtimes` below, indexed by Runtime (spec/runtime.h).
//
// Calibration (docs/accuracy.md): the constants marked "fitted" come from `ppsim accuracy
// --fit` on configs/accuracy/public-runs.csv, which minimises the mean over sources of each
// source's MAPE (sources weighted equally, not rows) by coordinate descent inside the bounds
// below; `ppsim accuracy` reports how well that procedure predicts a source it did not see
// (leave one source out). Nothing is per row or per source.
struct EfficiencyTable {
  // Fraction of the datasheet GEMM and fused-attention rates (KernelDatasheet) a training step
  // sustains: the benchmarks run one kernel in a loop, a step interleaves thousands with NCCL
  // kernels that take SMs and power, and clocks drop under sustained tensor-core load. Fitted
  // on GEMM-bound rows (no public row runs the fused attention kernels inside the fit), bound
  // [0.6, 1.1]. It holds for attention too: NeMo's Llama-2-7B context-parallel table (H100,
  // 4K-1M tokens) publishes 318 tokens/s/GPU at 1M, about 0.28 of the bf16 peak in a step
  // that is ~97% attention, well under the kernels' benchmark ceilings (docs/accuracy.md).
  double kernel_scale = 0.8338;
  // FlashAttention-2 as the eager runtimes call it (flash-attn 2, SDPA's flash backend: GQA,
  // mixed head dims, padding, and the step's interference), against its benchmark
  // table: applied to flash2 only, the kernel family the rows it is fitted on use, so it
  // cannot leak into the fused kernels of megatron-core (which take kernel_scale). Fitted,
  // bound [0.4, 1.2].
  double flash2_scale = 0.6016;
  // Output tile edge, elements: cuBLAS/CUTLASS bf16 kernels on Ampere and Hopper use 128x128
  // or 128x256 tiles per thread block.
  double gemm_tile = 128;
  // Output tiles at which occupancy is one half. A GEMM with fewer tiles than SMs (108 on
  // A100, 132 on H100) leaves SMs idle; split-K and stream-K recover part of that. 32, about a
  // quarter of a wave, puts 1024^3 on H100 near the ~30-45% of peak that such shapes reach.
  // Kept at the microbenchmark value (not fitted): it trades against the kernel gap (both slow
  // small GEMMs) and the published runs cannot tell them apart.
  double gemm_half_tiles = 32;
  // Reduction depth at which the main loop and the prologue/epilogue take equal time: about
  // one 64-deep k-slice per tile. Kept, as gemm_half_tiles; it matters only for thin k.
  double gemm_half_k = 64;
  // Query rows per attention work tile (block_m = 128 in FA2/FA3 for head_dim 128).
  double attention_q_tile = 128;
  // Keys per block of a flash-style kernel's inner loop (block_n = 128 in FA3 for head_dim 128).
  double attention_kv_block = 128;
  // Each query tile also loads Q, rescales and writes O (backward: reads O and dO, writes dQ,
  // and its key blocks' dK/dV partials), worth this many key blocks of the inner loop. From
  // kernel sweeps, not fitted on runs: the FlashAttention-3 paper's H100 causal forward (Shah
  // et al. 2024, arXiv 2407.08608, figure 5: 423, 521, 579, 602, 616 TFLOP/s at 1K-16K) gives
  // 1.7, its FA2 curve 1.6; causal backward on one H200 (tests/data/kernels/h200_attention.json:
  // cuDNN 0.366-0.514 and FA2 0.208-0.307 of peak at 2K-16K) gives 3.9 for both kernels (the
  // paper's non-causal backward, without the diagonal's masked half, 3.3).
  double attention_tile_overhead_fwd = 1.7;
  double attention_tile_overhead_bwd = 3.9;
  // HBM: copy and STREAM-triad kernels reach about 0.9 of the datasheet (e.g. 3.0-3.1 of
  // 3.35 TB/s on H100 SXM). Measured value, kept.
  double memory = 0.90;
  // r of the smooth roofline (header formula): r = 3 costs 26% extra at the ridge point and
  // 4% once one side is twice the other. A shape parameter; kept.
  double roofline_sharpness = 3;
  // Host overheads per runtime (spec/runtime.h RuntimeOverheads: kernel gap, per-microbatch
  // dispatch, per-step host time). Fitted for runtimes with published rows (bounds: gap
  // [0.5, 12] us, microbatch [0, 5] ms, step [0, 0.5] s); the others keep runtime.h's priors.
  std::array<RuntimeOverheads, kRuntimeCount> runtimes = shipped_runtime_overheads();

  const RuntimeOverheads& overheads(Runtime runtime) const {
    return runtimes[static_cast<size_t>(runtime)];
  }
  RuntimeOverheads& overheads(Runtime runtime) { return runtimes[static_cast<size_t>(runtime)]; }

  // The shipped per-runtime overheads: the fit's values where it had rows, else the priors.
  static std::array<RuntimeOverheads, kRuntimeCount> shipped_runtime_overheads();
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
  double fwd = 0;            // Forward pass.
  double b = 0;              // Input-gradient pass, without recompute.
  double w = 0;              // Weight-gradient pass.
  double recompute = 0;      // Forward work re-run inside backward (ops marked recomputed); the
                             // simulator runs it just before B, inside the same backward task.
  int roofline_ops = 0;      // Ops whose times came from the roofline...
  int profile_ops = 0;       // ...and from a profile.
  int extrapolated_ops = 0;  // Of the profile ops, those with a pass outside the measured range.
  // The same by pass (forward, input gradient, weight gradient; passes without kernels are not
  // counted), for reports that say how much of a step was measured.
  int roofline_passes = 0;
  int profile_passes = 0;
  int extrapolated_passes = 0;  // Of the profile passes, those outside the measured range.
  std::string_view note;        // The first op's note, if any (e.g. the fp8 fallback).

  double backward() const { return recompute + b + w; }
  double total() const { return fwd + backward(); }
};

// The peak a GEMM of some precision runs at on this GPU.
struct PeakFlops {
  double flops = 0;                   // FLOP/s.
  Precision used = Precision::kBf16;  // The tensor-core precision actually used.
  std::string_view note;              // Set when `used` differs from the request.
};

// Kernels the host launches from Python to quantize one GEMM pass's activation operand at
// `precision`: one fp8 cast call (whatever the recipe launches inside it, from C++), two for
// nvfp4 (amax, then quantize), none at 16 bits; a grouped GEMM under a per-expert recipe makes
// that call once per local expert (chunk_price.h host_launches). The MoE host time counts
// these (chunk_price.h "host").
int quantize_kernels(Precision precision);

// What quantizing one GEMM pass's activation operand costs on the device (header, "fp8 GEMM
// pass" and "nvfp4 GEMM pass"), for GEMMs that run at `used`.
struct QuantizeCost {
  int kernels = 0;               // Per quantized tensor.
  bool per_expert = false;       // A grouped GEMM quantizes each expert's rows on their own.
  double bytes_per_element = 0;  // HBM bytes read and written per element.
};
// `transposed_copy`: the cast also writes the transposed copy (Transformer Engine's runtimes on
// a GPU whose fp8 GEMMs take only TN, gpu_catalog.h fp8_gemm_needs_tn; per-tensor recipes).
QuantizeCost quantize_cost(Precision used, Fp8Recipe recipe, bool transposed_copy);

class ProfileTable;

class CostModel {
 public:
  // REQUIRES: gpu has a positive bf16 or fp16 peak and memory bandwidth.
  explicit CostModel(GpuSpec gpu, EfficiencyTable efficiency = {});
  // The same, with measured times from `profile` (null: roofline only, as above), for a step
  // run by `runtime` (its kernel gap) with attention kernel `attention` (the runtime's when
  // nullopt; plan.h attention_kernel). The profile prices attention only from samples of that
  // kernel (profile.h profile_attention_impls), else the roofline keeps it; with
  // `attention_stand_in` (validate, whose executor runs the profiler's unfused attention in
  // place of the plan's kernel) the unfused kernel's samples price it whatever the kernel.
  // REQUIRES: `profile` outlives the CostModel.
  CostModel(GpuSpec gpu, EfficiencyTable efficiency, const ProfileTable* profile,
            Runtime runtime = kDefaultRuntime,
            std::optional<AttentionKernel> attention = std::nullopt,
            bool attention_stand_in = false);

  const GpuSpec& gpu() const { return gpu_; }
  const EfficiencyTable& efficiency() const { return efficiency_; }
  const ProfileTable* profile() const { return profile_; }
  Runtime runtime() const { return runtime_; }
  AttentionKernel attention_kernel() const { return attention_; }
  // Whether its profile measured attention, but not with the impls that price this kernel
  // (constructor): its attention passes keep the roofline.
  bool attention_unprofiled() const;
  // Seconds each kernel launch adds: the runtime's kernel gap.
  double kernel_gap() const { return kernel_gap_; }

  // Tensor-core peak for `precision`, after the fallbacks in the header.
  const PeakFlops& peak(Precision precision) const;

  // Compute efficiency (fraction of peak) of one GEMM pass of this shape, before the
  // roofline combines it with memory time. Increases with every dimension. An fp8 GEMM under
  // the blockwise recipe runs at the datasheet's gemm_fp8_blockwise (gpu_catalog.h).
  double gemm_efficiency(const GemmShape& shape, Precision precision,
                         Fp8Recipe recipe = Fp8Recipe::kDelayed) const;
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
  // Megatron's unfused core attention (AttentionKernel::kUnfused), from the
  // attention op's shape: its GEMMs at gemm_efficiency, its softmax and dropout by bytes.
  OpCost unfused_attention(const Op& op) const;
  // The profile's time for one pass, when it has a table for it; `gemm` is the pass's shape.
  void apply_profile(const Op& op, const GemmShape& gemm, bool backward, double flops, double bytes,
                     int kernels, PassCost& cost) const;

  GpuSpec gpu_;
  EfficiencyTable efficiency_;
  PeakFlops peaks_[4];                     // Indexed by Precision.
  const ProfileTable* profile_ = nullptr;  // Not owned; null without a profile.
  Runtime runtime_ = kDefaultRuntime;
  AttentionKernel attention_ = AttentionKernel::kFused;
  // The profile attention impls that price attention passes (constructor); string literals.
  std::vector<std::string_view> profile_attention_impls_;
  double kernel_gap_ = 0;
};

std::string_view cost_source_name(CostSource source);

}  // namespace ppsim
