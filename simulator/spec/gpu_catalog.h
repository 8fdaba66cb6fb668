// The built-in GPU table: peak dense FLOP/s per dtype, memory and link bandwidths.
//
// Values are vendor datasheet figures (dense, no 2:4 sparsity), cited per entry in
// gpu_catalog.cc. A cluster spec may override any field per node group ("gpu_overrides").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ppsim {

// GEMM precision of a plan. kNvfp4 is Transformer Engine's NVFP4BlockScaling recipe (Megatron-Core
// --fp4-format e2m1 --fp4-recipe nvfp4): E2M1 values with an E4M3 scale per 16 elements and an
// fp32 scale per tensor, on Blackwell's FP4 tensor cores.
enum class Precision { kBf16, kFp16, kFp8, kNvfp4 };

// How an fp8 plan scales its fp8 tensors (Megatron-Core --fp8-recipe; Transformer Engine's
// recipes; torchao's Float8 and MX recipes under torchtitan). What each costs is the cost
// model's (cost_model.h "fp8 GEMM pass"):
//   kDelayed     one scale per tensor from the amax history of past steps (DelayedScaling):
//                the cast kernel records the amax; a grouped GEMM's experts cast in one
//                multi-tensor kernel. Megatron-Core refuses it with moe_act or layernorm
//                recompute (transformer_config.py).
//   kTensorwise  one scale per tensor from its own amax (Float8CurrentScaling, Megatron-Bridge's
//                FP8-CS, torchao's "tensorwise"): an amax kernel, a scale kernel and the cast,
//                per tensor and per expert.
//   kMxfp8       E8M0 scales per 32 elements (MXFP8BlockScaling, Megatron-Bridge's FP8-MX):
//                Blackwell only; row-wise and column-wise copies in one kernel per expert.
//   kBlockwise   fp32 scales per 1x128 activation and 128x128 weight block (Float8BlockScaling,
//                DeepSeek-V3's recipe): Hopper and later; both copies in one kernel per expert.
enum class Fp8Recipe { kDelayed, kTensorwise, kMxfp8, kBlockwise };

// Fractions of the datasheet peak that published kernel benchmarks reach on one GPU: the
// roofline's large-shape ceilings (cost/cost_model.h), used when no measured profile is given.
// Each catalog entry cites its measurements (gpu_catalog.cc); a cluster spec may override them
// ("gpu_overrides": gemm_bf16_efficiency, ...).
struct KernelDatasheet {
  double gemm_bf16 = 0;  // Large bf16/fp16 GEMMs (8192-class, cuBLAS/cuBLASLt), of that peak.
  double gemm_fp8 = 0;   // Large fp8 GEMMs (cuBLASLt / Transformer Engine), of the fp8 peak.
  double gemm_fp4 = 0;   // Large block-scaled fp4 GEMMs (NVFP4, cuBLASLt), of the fp4 peak.
  // Large fp8 GEMMs under the blockwise recipe (Fp8Recipe::kBlockwise: fp32 scales per 1x128
  // and 128x128 block), of the fp8 peak. Hopper's tensor cores take no block scales, so the
  // kernel rescales its fp32 accumulator every 128-deep k slice on the CUDA cores; Blackwell
  // runs the recipe on its MXFP8 block-scaled MMA (Transformer Engine), at gemm_fp8.
  double gemm_fp8_blockwise = 0;
  // Attention at head_dim 128, of the bf16 peak, per kernel family (runtime.h
  // AttentionKernel): FlashAttention-2, and the generation's fused kernel (FlashAttention-3 /
  // cuDNN on Hopper, cuDNN on Blackwell, FA2 on Ampere). Long-sequence ceilings: the cost
  // model lowers them for short key ranges (cost_model.h attention_tile_overhead_*).
  double flash2_fwd = 0;
  double flash2_bwd = 0;
  double fused_fwd = 0;
  double fused_bwd = 0;
  std::string source;  // The benchmarks the fractions come from.
};

// One GPU model. Bandwidths are per direction unless the name says otherwise.
struct GpuSpec {
  std::string name;             // Catalog key, e.g. "H100-SXM-80GB".
  double peak_bf16_flops = 0;   // Dense BF16 tensor-core FLOP/s; 0 when unsupported.
  double peak_fp16_flops = 0;   // Dense FP16 tensor-core FLOP/s.
  double peak_fp8_flops = 0;    // Dense FP8 tensor-core FLOP/s; 0 when unsupported.
  double peak_fp32_flops = 0;   // Non-tensor FP32 FLOP/s (optimizer, CPU-side math).
  double peak_fp4_flops = 0;    // Dense FP4 tensor-core FLOP/s (Blackwell); 0 when none.
  double memory_bytes = 0;      // HBM/GDDR capacity, bytes.
  double memory_bandwidth = 0;  // HBM bandwidth, bytes/s.
  double nvlink_bandwidth = 0;  // GPU-to-GPU NVLink/IF per direction, bytes/s; 0 = none.
  double pcie_bandwidth = 0;    // Host link per direction, bytes/s.
  std::string source;           // Datasheet citation.
  KernelDatasheet kernels;      // What its kernels reach (above).

  // Peak dense FLOP/s for a GEMM precision; 0 when the GPU has no such tensor cores.
  double peak_flops(Precision precision) const;
};

// Every GPU in the table, in a fixed order.
const std::vector<GpuSpec>& gpu_catalog();

// Looks up a GPU by catalog name; nullopt when unknown.
std::optional<GpuSpec> find_gpu(const std::string& name);

// Whether a GPU is Blackwell (compute capability 10.0) or later: the catalog's parts with FP4
// tensor cores (B200, GB200, B300, GB300).
bool blackwell_or_later(const GpuSpec& gpu);

// Whether a GPU is Hopper (compute capability 9.0) or later: the catalog's H100, H200 and
// GH200 parts and the Blackwell ones.
bool hopper_or_later(const GpuSpec& gpu);

// Whether the GPU's fp8 GEMMs take only the TN layout (both operands K-major), so a tensor the
// weight-gradient GEMM reads along the other axis needs a transposed fp8 copy: Hopper and Ada.
// Blackwell runs any layout (Transformer Engine nvte_is_non_tn_fp8_gemm_supported: compute
// capability 10.x or 13.0+).
bool fp8_gemm_needs_tn(const GpuSpec& gpu);

// Names of all catalog GPUs (for "expected one of" and "did you mean").
std::vector<std::string> gpu_names();

std::string precision_name(Precision precision);
// Every precision's name, in enum order ("bf16", "fp16", "fp8", "nvfp4").
const std::vector<std::string>& precision_names();
// The precision a name spells; nullopt when none does.
std::optional<Precision> find_precision(const std::string& name);

}  // namespace ppsim
