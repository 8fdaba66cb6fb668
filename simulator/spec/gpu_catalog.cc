#include "simulator/spec/gpu_catalog.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "simulator/spec/units.h"

namespace ppsim {
namespace {

// Conventions for every entry:
// - FLOP/s are dense (no 2:4 sparsity): half the datasheet's "with sparsity" figure.
// - memory_bytes is the capacity the driver reports (nvidia-smi memory.total in MiB, rocm-smi
//   "VRAM Total Memory"), not the marketing "GB": A100-80GB shows 81920 MiB = 80 GiB, H100-80GB
//   81559 MiB = 79.6 GiB, H200 143771 MiB = 140.4 GiB, L40S (ECC on) 46068 MiB = 45.0 GiB.
//   That is what a training job can allocate from, before the CUDA context and allocator take
//   their share. Values from the NVML table in "Why does an NVIDIA H100 80GB card offer
//   85.52 GB?" (thundergolfer.com/blog/nvidia-gpu-memory-capacity) and nvidia-smi/rocm-smi logs.
// - Link bandwidths are per direction: half of the datasheet's bidirectional NVLink/IF total,
//   and PCIe x16 at 16/32/64 GB/s for Gen3/4/5 (the datasheet's 32/64/128 GB/s bidirectional).
constexpr double tflops(double value) { return tflops_to_flops(value); }
constexpr double gBps(double value) { return gBps_to_bytes_per_s(value); }
constexpr double driver_mib(double mebibytes) { return mebibytes * kMiB; }

constexpr double kPcieGen3 = 16;  // GB/s per direction, x16.
constexpr double kPcieGen4 = 32;
constexpr double kPcieGen5 = 64;
constexpr double kPcieGen6 = 128;
// Grace superchips' host link: NVLink-C2C, 900 GB/s bidirectional between the Grace CPU and
// its two Blackwell GPUs (GB200/GB300 superchip datasheets), so 225 GB/s per GPU per direction
// when both copy at once, as activation and optimizer offload do.
constexpr double kGraceC2cPerGpu = 225;

GpuSpec make(std::string name, double bf16, double fp16, double fp8, double fp32, double memory_mib,
             double memory_GBps, double nvlink_GBps, double pcie_GBps, std::string source) {
  GpuSpec gpu;
  gpu.name = std::move(name);
  gpu.peak_bf16_flops = tflops(bf16);
  gpu.peak_fp16_flops = tflops(fp16);
  gpu.peak_fp8_flops = tflops(fp8);
  gpu.peak_fp32_flops = tflops(fp32);
  gpu.memory_bytes = driver_mib(memory_mib);
  gpu.memory_bandwidth = gBps(memory_GBps);
  gpu.nvlink_bandwidth = gBps(nvlink_GBps);
  gpu.pcie_bandwidth = gBps(pcie_GBps);
  gpu.source = std::move(source);
  return gpu;
}

// The dense FP4 peak (TFLOP/s) of a Blackwell entry, from the datasheet its source cites: what
// precision nvfp4 plans run their GEMMs against.
GpuSpec with_fp4(double fp4_tflops, GpuSpec gpu) {
  gpu.peak_fp4_flops = tflops(fp4_tflops);
  return gpu;
}

// Kernel datasheets per GPU generation (gpu_catalog.h KernelDatasheet): what published kernel
// benchmarks reach, as fractions of the dense peak. Arguments: gemm bf16, gemm fp8, FA2 fwd, FA2
// bwd, fused fwd, fused bwd, sources. Attention fractions are of the 16-bit peak for head_dim
// 128 (FLOPs counted causally, as layer_ops.h does) at long sequences: the ceilings that the
// cost model's per-tile overhead (cost_model.h attention_tile_overhead_*) lowers for short key
// ranges. Where a source gives one figure "at 2-16K", the ceiling is that figure over the
// overhead factor at 8K causal (32 key blocks: 0.950 forward, 0.891 backward). The fp4 GEMM
// fraction is 0 (no FP4 tensor cores) unless an entry sets it.
KernelDatasheet datasheet(double gemm_bf16, double gemm_fp8, double flash2_fwd, double flash2_bwd,
                          double fused_fwd, double fused_bwd, std::string source) {
  KernelDatasheet kernels;
  kernels.gemm_bf16 = gemm_bf16;
  kernels.gemm_fp8 = gemm_fp8;
  kernels.gemm_fp8_blockwise = gemm_fp8;  // Hopper's entries lower it (below).
  kernels.flash2_fwd = flash2_fwd;
  kernels.flash2_bwd = flash2_bwd;
  kernels.fused_fwd = fused_fwd;
  kernels.fused_bwd = fused_bwd;
  kernels.source = std::move(source);
  return kernels;
}

// Hopper's blockwise-scaled fp8 GEMMs over its per-tensor (row-scaled) ones: FBGEMM's CUTLASS
// kernels on one H100 at 500 W, "block gemm only" against "row gemm only", 870/1126, 828/1083
// and 828/1141 TFLOP/s at 8192^3, 65536 x 8192 x 7168 and 65536 x 3584 x 8192 (pytorch/FBGEMM
// pull request 2546): 0.73-0.77, mean 0.755. Megatron-LM's moe_perf baselines agree (H100,
// Transformer Engine's Float8BlockScaling: a Mixtral-like MoE layer 0.87x as long in fp8 as in
// bf16 where per-tensor fp8 GEMMs would make it ~0.7x; tests/data/kernels/
// megatron_moe_perf_h100.json).
constexpr double kHopperBlockwiseOverTensorwise = 0.755;

KernelDatasheet with_hopper_blockwise(KernelDatasheet kernels) {
  kernels.gemm_fp8_blockwise = kernels.gemm_fp8 * kHopperBlockwiseOverTensorwise;
  return kernels;
}

// Volta: no FlashAttention-2 (sm80+); PyTorch's memory-efficient SDPA (xformers cutlass kernels)
// stands in for both attention families.
const KernelDatasheet kVoltaKernels = datasheet(
    0.80, 0, 0.37, 0.28, 0.37, 0.28,
    "cuBLAS HGEMM on V100 SXM2 sustains ~100 of 125 TFLOP/s at 8192 (NVIDIA Deep Learning "
    "Performance guide, matmul background); xformers memory-efficient attention ~40-45 TFLOP/s "
    "forward, ~30 backward (xformers benchmark_mem_eff_attention, V100)");
// Ampere data-centre (A100): FA2 is this generation's fused kernel too.
const KernelDatasheet kAmpereKernels = datasheet(
    0.88, 0, 0.63, 0.50, 0.63, 0.50,
    "cuBLAS BF16 GEMM on A100 SXM ~270-285 of 312 TFLOP/s at 8192 (NVIDIA Deep Learning "
    "Performance guide; Megatron-LM SC'21 section 5 microbenchmarks); FlashAttention-2 causal "
    "head_dim 128 on A100 80GB: ~180-195 TFLOP/s forward, ~130-150 backward at 2-16K (Dao 2023, "
    "arXiv 2307.08691, figures 4-6)");
// Ampere/Ada workstation and inference cards: power-capped, smaller L2.
const KernelDatasheet kAdaKernels = datasheet(
    0.65, 0.60, 0.47, 0.39, 0.47, 0.39,
    "cuBLAS BF16 on L40S/A10 ~0.6-0.7 of the dense peak, L4 lower at its 72 W cap (NVIDIA "
    "Ada/Ampere tuning guides; public cuBLAS sweeps); FlashAttention-2 on sm86/sm89 ~0.45 "
    "forward (flash-attn README benchmarks, A10/RTX 4090)");
const KernelDatasheet kHopperKernels = with_hopper_blockwise(datasheet(
    0.76, 0.66, 0.35, 0.33, 0.65, 0.55,
    "cuBLASLt BF16 on H100 SXM ~720-780 of 989 TFLOP/s at 8192 and FP8 ~1250-1350 of 1979 (NVIDIA "
    "Transformer Engine and cuBLAS 12 GEMM sweeps, power-capped at 700 W); attention ceilings "
    "from the FlashAttention-3 paper's H100 SXM5 sweeps, head_dim 128, 512-16K tokens (Shah et "
    "al. 2024, arXiv 2407.08608, figures 5-6): FlashAttention-3 causal forward 292-616 TFLOP/s "
    "(ceiling 632), non-causal 467-648 (656), non-causal backward 316-561 (575); FlashAttention-2 "
    "causal forward 191-335 (343); causal backward measured on one H200 (tests/data/kernels): "
    "cuDNN fused attention (Transformer Engine's kernel) 0.37-0.51 of peak at 2K-16K (ceiling "
    "0.55), FlashAttention-2 0.21-0.31 (0.33); blockwise-scaled fp8 GEMMs 0.755 of the per-tensor "
    "rate (FBGEMM pull request 2546, H100)"));
// Hopper PCIe/NVL cards run lower clocks at 350-400 W.
const KernelDatasheet kHopperPcieKernels = with_hopper_blockwise(datasheet(
    0.70, 0.62, 0.33, 0.31, 0.60, 0.50,
    "H100 PCIe/NVL at 350-400 W: GEMM sweeps ~5-8% below SXM per TFLOP/s of peak (the peak "
    "already counts the lower boost clock); attention scaled the same from the SXM figures; "
    "blockwise-scaled fp8 GEMMs 0.755 of the per-tensor rate, as on SXM"));
// Blackwell's GEMM fractions, on Hopper's scale. The B200 benchmarks (cuBLASLt ~0.67-0.73 of
// the BF16 and FP8 peaks at 8192; block-scaled FP4 5,239 of 9,000 TFLOP/s at 8192^3, 0.58:
// cublasTest 13.3, deepseek-ai/DeepGEMM pull request 348) agree with OpenXLA's measured GEMM
// table (tests/data/kernels/xla_gemm.json, sm_100 at 1e11-5.5e11 FLOP/2: the cost model with
// 0.70 gives 1.005x the measured BF16 and 0.967x the FP8), but the same table runs sm_90 BF16
// GEMMs faster than Hopper's datasheet says (the cost model gives 0.921x). The in-step
// kernel_scale is fitted on Ampere and Hopper rows against Hopper's datasheet, so for the fitted
// scale to mean the same on Blackwell each fraction is put on Hopper's scale: times 0.921 over
// its own ratio (0.70 -> 0.642 BF16, 0.70 -> 0.667 FP8, 0.58 -> 0.532 FP4 at the BF16 ratio,
// the table having no FP4). Held-out Megatron-Bridge rows on B200 and GB200 (never fitted)
// were 8-17% too fast with the benchmarks' fractions (docs/accuracy.md, 2026-12-06). No
// Blackwell Ultra (B300, GB300) FP4 GEMM sweep is public; their entries take the same fraction
// of their larger FP4 peak, an assumption (docs/precision.md).
constexpr double kHopperOverXlaTable = 0.921;
constexpr double kBlackwellBf16OverXlaTable = 1.005;
constexpr double kBlackwellFp8OverXlaTable = 0.967;
const KernelDatasheet kBlackwellKernels = [] {
  const double bf16_scale = kHopperOverXlaTable / kBlackwellBf16OverXlaTable;
  KernelDatasheet kernels = datasheet(
      0.70 * bf16_scale, 0.70 * kHopperOverXlaTable / kBlackwellFp8OverXlaTable, 0.21, 0.19,
      0.68, 0.56,
      "cuBLASLt on B200 (1000 W) ~1.5-1.65 of 2.25 PFLOP/s BF16 and ~3.0-3.3 of 4.5 FP8 at 8192 "
      "(NVIDIA cuBLAS 12.8 release performance; SemiAnalysis B200 GEMM benchmarks, 2025) and "
      "block-scaled FP4 (NVFP4/MXF4) 5.24 of 9 PFLOP/s at 8192 (cublasTest 13.3, DeepGEMM pull "
      "request 348), put on Hopper's datasheet scale by OpenXLA's measured GEMM table (x 0.916 "
      "BF16 and FP4, x 0.952 FP8); FlashAttention-2 has no tcgen05 path and runs at about its "
      "H100 speed (~400-450 TFLOP/s forward); cuDNN 9.7+ fused attention ~1.4-1.5 PFLOP/s "
      "forward, ~1.1 backward (NVIDIA cuDNN Blackwell SDPA benchmarks; FlashAttention-4 talk, "
      "Hot Chips 2025)");
  kernels.gemm_fp4 = 0.58 * bf16_scale;
  return kernels;
}();
const KernelDatasheet kCdna3Kernels = datasheet(
    0.55, 0.50, 0.37, 0.28, 0.37, 0.28,
    "hipBLASLt BF16 on MI300X ~650-750 of 1307 TFLOP/s at 8192 (SemiAnalysis, MI300X vs H100 "
    "training, Dec 2024; AMD ROCm 6.2 GEMM tables); CK FlashAttention-2 ~400-450 TFLOP/s "
    "forward, ~300 backward (ROCm flash-attention README benchmarks)");

KernelDatasheet kernels_for(const std::string& name) {
  auto starts = [&name](std::string_view prefix) { return name.rfind(prefix, 0) == 0; };
  if (starts("V100")) return kVoltaKernels;
  if (starts("A100")) return kAmpereKernels;
  if (starts("A10") || starts("L4")) return kAdaKernels;
  if (starts("H100-PCIe") || starts("H100-NVL")) return kHopperPcieKernels;
  if (starts("H100") || starts("H200") || starts("GH")) return kHopperKernels;
  if (starts("B") || starts("GB")) return kBlackwellKernels;
  if (starts("MI3")) return kCdna3Kernels;
  return kAmpereKernels;
}

std::vector<GpuSpec> build_catalog() {
  std::vector<GpuSpec> gpus;
  // Arguments: name, dense TFLOP/s bf16, fp16, fp8, fp32; driver MiB; memory, NVLink and PCIe
  // GB/s (per direction); citation.
  gpus.push_back(make("V100-SXM-32GB", 0, 125, 0, 15.7, 32510, 900, 150, kPcieGen3,
                      "NVIDIA Tesla V100 datasheet (SXM2 32GB): 125 TFLOPS FP16 tensor, no "
                      "BF16/FP8, 15.7 FP32, 900 GB/s HBM2, NVLink2 300 GB/s; nvidia-smi "
                      "32510 MiB (32480-32768 depending on driver)"));
  gpus.push_back(make("A100-SXM-40GB", 312, 312, 0, 19.5, 40960, 1555, 300, kPcieGen4,
                      "NVIDIA A100 datasheet (SXM4 40GB): 312 TFLOPS BF16/FP16 dense, 19.5 FP32, "
                      "1555 GB/s HBM2, NVLink3 600 GB/s, PCIe Gen4; nvidia-smi 40960 MiB"));
  gpus.push_back(make("A100-SXM-80GB", 312, 312, 0, 19.5, 81920, 2039, 300, kPcieGen4,
                      "NVIDIA A100 datasheet (SXM4 80GB): 312 TFLOPS BF16/FP16 dense, 19.5 FP32, "
                      "2039 GB/s HBM2e, NVLink3 600 GB/s, PCIe Gen4; nvidia-smi 81920 MiB"));
  gpus.push_back(make("A100-PCIe-80GB", 312, 312, 0, 19.5, 81920, 1935, 300, kPcieGen4,
                      "NVIDIA A100 datasheet (PCIe 80GB): 312 TFLOPS BF16/FP16 dense, 19.5 FP32, "
                      "1935 GB/s HBM2e, NVLink bridge 600 GB/s (2 GPUs), PCIe Gen4; "
                      "nvidia-smi 81920 MiB"));
  gpus.push_back(make("A10", 125, 125, 0, 31.2, 23028, 600, 0, kPcieGen4,
                      "NVIDIA A10 datasheet: 125 TFLOPS BF16/FP16 dense, 31.2 FP32, 24 GB GDDR6 "
                      "600 GB/s, no NVLink, PCIe Gen4; nvidia-smi 23028 MiB (ECC on)"));
  gpus.push_back(make("L4", 121, 121, 242.5, 30.3, 23034, 300, 0, kPcieGen4,
                      "NVIDIA L4 datasheet: 242 / 485 TFLOPS BF16 / FP8 with sparsity (121 / "
                      "242.5 dense), 30.3 FP32, 24 GB GDDR6 300 GB/s, PCIe Gen4 x16 64 GB/s "
                      "bidirectional; nvidia-smi 23034 MiB (ECC on)"));
  gpus.push_back(make("L40S", 362.05, 362.05, 733, 91.6, 46068, 864, 0, kPcieGen4,
                      "NVIDIA L40S datasheet: 362.05 TFLOPS BF16/FP16 dense, 733 FP8 dense, "
                      "91.6 FP32, 48 GB GDDR6 864 GB/s, no NVLink, PCIe Gen4 x16 64 GB/s "
                      "bidirectional; nvidia-smi 46068 MiB (ECC on)"));
  gpus.push_back(
      make("H100-SXM-80GB", 989.4, 989.4, 1978.9, 67, 81559, 3350, 450, kPcieGen5,
           "NVIDIA H100 datasheet (SXM5): 1979 / 3958 TFLOPS BF16 / FP8 with "
           "sparsity (989.4 / 1978.9 dense, glennklockwood.com/garden/processors/h100), "
           "67 FP32, 3.35 TB/s HBM3, NVLink4 900 GB/s, PCIe Gen5; nvidia-smi 81559 MiB"));
  // Meta's Grand Teton H100 (torchtitan's published benchmarks ran on it): the SXM part with
  // 96 GB of HBM2e at 2.4 TB/s, under a 500 W power limit. Its peak lies "between SXM and NVL"
  // and is not published (torchtitan docs/performance.md, 2024-08), so the SXM peaks stand, and
  // the kernel fractions are the 700 W part's: what the lower clocks cost is not modelled.
  // Driver-visible memory at the 80 GB parts' share of their nominal size (81559 / 81920 MiB).
  gpus.push_back(make("H100-SXM-96GB", 989.4, 989.4, 1978.9, 67, 97871, 2400, 450, kPcieGen5,
                      "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md (Grand "
                      "Teton: each H100 'equipped with 96GB HBM2e with 2.4 TB/sec peak memory "
                      "bandwidth', 'the default 500W power limit'); SXM5 peaks and NVLink4 as "
                      "H100-SXM-80GB"));
  gpus.push_back(make("H100-PCIe-80GB", 756, 756, 1513, 51, 81559, 2000, 300, kPcieGen5,
                      "NVIDIA H100 datasheet (PCIe): 756 TFLOPS BF16/FP16 dense, 1513 FP8 dense, "
                      "51 FP32, 2.0 TB/s HBM2e, NVLink bridge 600 GB/s, PCIe Gen5; "
                      "nvidia-smi 81559 MiB"));
  gpus.push_back(make("H100-NVL-94GB", 835, 835, 1671, 60, 95830, 3900, 300, kPcieGen5,
                      "NVIDIA H100 NVL datasheet (per GPU): 835 TFLOPS BF16/FP16 dense, 1671 FP8 "
                      "dense, 60 FP32, 94 GB HBM3 3.9 TB/s, NVLink bridge 600 GB/s, PCIe Gen5; "
                      "nvidia-smi 95830 MiB"));
  gpus.push_back(make("H200-SXM-141GB", 989.4, 989.4, 1978.9, 67, 143771, 4800, 450, kPcieGen5,
                      "NVIDIA H200 datasheet (SXM): same Hopper die and peaks as H100 SXM "
                      "(989.4 BF16 / 1978.9 FP8 dense, 67 FP32), 141 GB HBM3e 4.8 TB/s, "
                      "NVLink4 900 GB/s, PCIe Gen5; nvidia-smi 143771 MiB"));
  gpus.push_back(
      with_fp4(9000, make("B200", 2250, 2250, 4500, 75, 183359, 7700, 900, kPcieGen5,
                          "NVIDIA HGX B200 datasheet (per GPU, 1000 W): 4.5 / 9 PFLOPS BF16 / FP8 "
                          "with sparsity (2250 / 4500 dense), 75 FP32 (80 on GB200 at 1200 W), "
                          "180 GB HBM3e 7.7 TB/s, NVLink5 1.8 TB/s, PCIe Gen5 x16 128 GB/s "
                          "bidirectional; nvidia-smi 183359 MiB")));
  // Rack-scale Blackwell: the per-GPU figures of the NVL72 rack datasheets (rack totals / 72).
  // Their NVLink domain is the whole rack (cluster nvlink_domain_gpus: 72), not the tray.
  gpus.push_back(with_fp4(
      10000, make("GB200", 2500, 2500, 5000, 80, 186 * 1e3 / 1.048576, 8000, 900, kGraceC2cPerGpu,
                  "NVIDIA GB200 NVL72 datasheet (per rack of 72 GPUs at 1200 W): FP4 1,440 / "
                  "FP8 720 / BF16 360 PFLOPS with sparsity (per GPU dense: 10 / 5 / 2.5 "
                  "PFLOPS), 80 FP32 per GPU, 13.4 TB HBM3e 576 TB/s (186 GB, 8 TB/s per "
                  "GPU), NVLink5 130 TB/s (1.8 TB/s per GPU, 900 per direction), host link "
                  "NVLink-C2C 900 GB/s per Grace and its two GPUs; memory is the datasheet "
                  "capacity, not yet an nvidia-smi reading")));
  gpus.push_back(with_fp4(
      13500, make("B300", 2250, 2250, 4500, 75, 288 * 1e3 / 1.048576, 8000, 900, kPcieGen6,
                  "NVIDIA HGX B300 datasheet (8 Blackwell Ultra GPUs): FP4 144 PFLOPS sparse "
                  "/ 108 dense, FP8 72 / BF16 36 PFLOPS with sparsity (per GPU dense: 13.5 "
                  "FP4, 4.5 FP8, 2.25 BF16, as B200), 2.1 TB HBM3e (288 GB per GPU) 8 TB/s "
                  "per GPU, NVLink5 1.8 TB/s per GPU, PCIe Gen6 (ConnectX-8); memory is the "
                  "datasheet capacity, not yet an nvidia-smi reading")));
  gpus.push_back(with_fp4(
      15000, make("GB300", 2500, 2500, 5000, 75, 288 * 1e3 / 1.048576, 8000, 900, kGraceC2cPerGpu,
                  "NVIDIA GB300 NVL72 datasheet (per rack of 72 Blackwell Ultra GPUs): FP4 "
                  "1,440 PFLOPS sparse / 1,080 dense, FP8 720 / BF16 360 PFLOPS with sparsity "
                  "(per GPU dense: 15 FP4, 5 FP8, 2.5 BF16), 20.7 TB HBM3e 576 TB/s (288 GB, "
                  "8 TB/s per GPU), NVLink5 130 TB/s (900 GB/s per GPU per direction), host "
                  "link NVLink-C2C 900 GB/s per Grace and its two GPUs; memory is the datasheet "
                  "capacity, not yet an nvidia-smi reading")));
  gpus.push_back(make("MI300X", 1307.4, 1307.4, 2614.9, 163.4, 196288, 5300, 448, kPcieGen5,
                      "AMD Instinct MI300X datasheet: 1307.4 TFLOPS BF16/FP16 dense, 2614.9 FP8 "
                      "dense, 163.4 FP32 vector, 192 GB HBM3 5.3 TB/s, 7 Infinity Fabric links x "
                      "128 GB/s bidirectional = 896 GB/s (448 per direction), PCIe Gen5 x16; "
                      "rocm-smi VRAM total 205822885888 bytes (196288 MiB)"));
  for (GpuSpec& gpu : gpus) gpu.kernels = kernels_for(gpu.name);
  return gpus;
}

}  // namespace

double GpuSpec::peak_flops(Precision precision) const {
  switch (precision) {
    case Precision::kBf16:
      return peak_bf16_flops;
    case Precision::kFp16:
      return peak_fp16_flops;
    case Precision::kFp8:
      return peak_fp8_flops;
    case Precision::kNvfp4:
      return peak_fp4_flops;
  }
  return 0;
}

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog = build_catalog();
  return catalog;
}

bool blackwell_or_later(const GpuSpec& gpu) { return gpu.peak_fp4_flops > 0; }

bool hopper_or_later(const GpuSpec& gpu) {
  auto starts = [&gpu](std::string_view prefix) { return gpu.name.rfind(prefix, 0) == 0; };
  return blackwell_or_later(gpu) || starts("H100") || starts("H200") || starts("GH");
}

bool fp8_gemm_needs_tn(const GpuSpec& gpu) { return !blackwell_or_later(gpu); }

std::optional<GpuSpec> find_gpu(const std::string& name) {
  for (const GpuSpec& gpu : gpu_catalog()) {
    if (gpu.name == name) return gpu;
  }
  return std::nullopt;
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const GpuSpec& gpu : gpu_catalog()) names.push_back(gpu.name);
  return names;
}

std::string precision_name(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kNvfp4:
      return "nvfp4";
  }
  return "unknown";
}

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {
      precision_name(Precision::kBf16), precision_name(Precision::kFp16),
      precision_name(Precision::kFp8), precision_name(Precision::kNvfp4)};
  return names;
}

std::optional<Precision> find_precision(const std::string& name) {
  const std::vector<std::string>& names = precision_names();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return std::nullopt;
  return static_cast<Precision>(it - names.begin());
}

}  // namespace ppsim
