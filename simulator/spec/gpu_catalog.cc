#include "simulator/spec/gpu_catalog.h"

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
  gpus.push_back(make("B200", 2250, 2250, 4500, 75, 183359, 7700, 900, kPcieGen5,
                      "NVIDIA HGX B200 datasheet (per GPU, 1000 W): 4.5 / 9 PFLOPS BF16 / FP8 "
                      "with sparsity (2250 / 4500 dense), 75 FP32 (80 on GB200 at 1200 W), "
                      "180 GB HBM3e 7.7 TB/s, NVLink5 1.8 TB/s, PCIe Gen5 x16 128 GB/s "
                      "bidirectional; nvidia-smi 183359 MiB"));
  gpus.push_back(make("MI300X", 1307.4, 1307.4, 2614.9, 163.4, 196288, 5300, 448, kPcieGen5,
                      "AMD Instinct MI300X datasheet: 1307.4 TFLOPS BF16/FP16 dense, 2614.9 FP8 "
                      "dense, 163.4 FP32 vector, 192 GB HBM3 5.3 TB/s, 7 Infinity Fabric links x "
                      "128 GB/s bidirectional = 896 GB/s (448 per direction), PCIe Gen5 x16; "
                      "rocm-smi VRAM total 205822885888 bytes (196288 MiB)"));
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
  }
  return 0;
}

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog = build_catalog();
  return catalog;
}

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
  }
  return "unknown";
}

}  // namespace ppsim
