// Tests for the built-in GPU table (simulator/spec/gpu_catalog.h).
#include "simulator/spec/gpu_catalog.h"

#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "simulator/spec/units.h"

namespace ppsim {
namespace {

const std::vector<std::string> kRequiredGpus = {
    "V100-SXM-32GB", "A100-SXM-40GB",  "A100-SXM-80GB",  "A10",  "L4",     "L40S",
    "H100-SXM-80GB", "H100-PCIe-80GB", "H200-SXM-141GB", "B200", "MI300X",
};

GpuSpec require_gpu(const std::string& name) {
  std::optional<GpuSpec> gpu = find_gpu(name);
  INFO("GPU " << name);
  REQUIRE(gpu.has_value());
  return *gpu;
}

TEST_CASE("GpuCatalog: every required GPU is present") {
  for (const std::string& name : kRequiredGpus) {
    INFO("GPU " << name);
    CHECK(find_gpu(name).has_value());
  }
}

TEST_CASE("GpuCatalog: names are unique and gpu_names follows the catalog order") {
  std::set<std::string> seen;
  for (const GpuSpec& gpu : gpu_catalog()) {
    INFO("GPU " << gpu.name);
    CHECK(seen.insert(gpu.name).second);
  }
  std::vector<std::string> names = gpu_names();
  REQUIRE(names.size() == gpu_catalog().size());
  for (size_t i = 0; i < names.size(); ++i) CHECK(names[i] == gpu_catalog()[i].name);
}

TEST_CASE("GpuCatalog: every entry has a source and positive figures") {
  for (const GpuSpec& gpu : gpu_catalog()) {
    INFO("GPU " << gpu.name);
    CHECK_FALSE(gpu.name.empty());
    CHECK_FALSE(gpu.source.empty());
    CHECK(gpu.peak_fp16_flops > 0);
    CHECK(gpu.peak_fp32_flops > 0);
    CHECK(gpu.peak_fp32_flops < gpu.peak_fp16_flops);
    CHECK(gpu.memory_bytes > gib_to_bytes(8));
    CHECK(gpu.memory_bandwidth > 0);
    CHECK(gpu.pcie_bandwidth > 0);
    CHECK(gpu.nvlink_bandwidth >= 0);
  }
}

TEST_CASE("GpuCatalog: Grand Teton's H100 is the SXM part on 96 GB of HBM2e at 2.4 TB/s") {
  const GpuSpec sxm = require_gpu("H100-SXM-80GB");
  const GpuSpec teton = require_gpu("H100-SXM-96GB");
  CHECK(teton.memory_bandwidth == Approx(2.4e12));
  CHECK(teton.memory_bytes == Approx(sxm.memory_bytes * 96 / 80));
  CHECK(teton.peak_bf16_flops == sxm.peak_bf16_flops);
  CHECK(teton.peak_fp8_flops == sxm.peak_fp8_flops);
  CHECK(teton.nvlink_bandwidth == sxm.nvlink_bandwidth);
  CHECK(teton.kernels.gemm_bf16 == sxm.kernels.gemm_bf16);
  CHECK(teton.kernels.fused_bwd == sxm.kernels.fused_bwd);
}

TEST_CASE("GpuCatalog: H100 SXM dense BF16 peak is 989 TFLOP/s") {
  GpuSpec h100 = require_gpu("H100-SXM-80GB");
  CHECK(h100.peak_bf16_flops == Approx(989e12).epsilon(0.01));
  CHECK(h100.peak_flops(Precision::kBf16) == h100.peak_bf16_flops);
  CHECK(h100.peak_flops(Precision::kFp16) == h100.peak_fp16_flops);
  CHECK(h100.peak_flops(Precision::kFp8) == h100.peak_fp8_flops);
  // NVLink4 is 900 GB/s bidirectional: 450 GB/s per direction.
  CHECK(h100.nvlink_bandwidth == Approx(450e9));
  CHECK(h100.memory_bandwidth == Approx(3.35e12));
}

TEST_CASE("GpuCatalog: FP8 peak is twice BF16 wherever FP8 is supported") {
  int with_fp8 = 0;
  for (const GpuSpec& gpu : gpu_catalog()) {
    if (gpu.peak_fp8_flops == 0) continue;
    ++with_fp8;
    INFO("GPU " << gpu.name);
    // 2% covers the L40S datasheet, whose 362.05 BF16 and 733 FP8 are 2.02x apart.
    CHECK(gpu.peak_fp8_flops == Approx(2 * gpu.peak_bf16_flops).epsilon(0.02));
  }
  CHECK(with_fp8 >= 6);  // L4, L40S, H100 SXM and PCIe, H200, B200, MI300X.
  CHECK(require_gpu("A100-SXM-80GB").peak_flops(Precision::kFp8) == 0);
}

TEST_CASE("GpuCatalog: V100 has FP16 tensor cores but no BF16 or FP8") {
  GpuSpec v100 = require_gpu("V100-SXM-32GB");
  CHECK(v100.peak_bf16_flops == 0);
  CHECK(v100.peak_flops(Precision::kBf16) == 0);
  CHECK(v100.peak_flops(Precision::kFp8) == 0);
  CHECK(v100.peak_flops(Precision::kFp16) == Approx(125e12));
}

TEST_CASE("GpuCatalog: memory is the driver-reported capacity in binary units") {
  CHECK(require_gpu("A100-SXM-80GB").memory_bytes == gib_to_bytes(80));
  CHECK(require_gpu("A100-SXM-40GB").memory_bytes == gib_to_bytes(40));
  CHECK(require_gpu("H100-SXM-80GB").memory_bytes == Approx(gib_to_bytes(79.65)).epsilon(0.001));
  CHECK(require_gpu("H200-SXM-141GB").memory_bytes == Approx(gib_to_bytes(140.4)).epsilon(0.001));
}

TEST_CASE("GpuCatalog: unknown names are not found") {
  CHECK_FALSE(find_gpu("H100").has_value());
  CHECK_FALSE(find_gpu("h100-sxm-80gb").has_value());
  CHECK_FALSE(find_gpu("").has_value());
}

TEST_CASE("GpuCatalog: precision names") {
  CHECK(precision_name(Precision::kBf16) == "bf16");
  CHECK(precision_name(Precision::kFp16) == "fp16");
  CHECK(precision_name(Precision::kFp8) == "fp8");
  CHECK(precision_name(Precision::kNvfp4) == "nvfp4");
  CHECK(precision_names() == std::vector<std::string>{"bf16", "fp16", "fp8", "nvfp4"});
  for (const std::string& name : precision_names()) {
    REQUIRE(find_precision(name).has_value());
    CHECK(precision_name(*find_precision(name)) == name);
  }
  CHECK_FALSE(find_precision("fp4").has_value());
  CHECK_FALSE(find_precision("NVFP4").has_value());
}

TEST_CASE("GpuCatalog: nvfp4 GEMMs run at the Blackwell FP4 peak, which Hopper lacks") {
  // Dense FP4 per GPU from the datasheets gpu_catalog.cc cites: B200 9, GB200 10, B300 13.5,
  // GB300 15 PFLOP/s.
  const std::pair<const char*, double> fp4[] = {
      {"B200", 9000}, {"GB200", 10000}, {"B300", 13500}, {"GB300", 15000}};
  for (const auto& [name, tflops] : fp4) {
    INFO(name);
    GpuSpec gpu = *find_gpu(name);
    CHECK(gpu.peak_flops(Precision::kNvfp4) == Approx(tflops * 1e12));
    // cuBLASLt's block-scaled FP4 GEMM on B200, 5,239 of 9,000 TFLOP/s at 8192^3, on Hopper's
    // datasheet scale as the BF16 fraction is (gpu_catalog.cc kBlackwellKernels: 0.70 -> BF16).
    CHECK(gpu.kernels.gemm_fp4 ==
          Approx(5239.0 / 9000 * gpu.kernels.gemm_bf16 / 0.70).margin(0.005));
    CHECK(gpu.kernels.gemm_fp4 == Approx(0.532).margin(0.001));
  }
  CHECK(find_gpu("H100-SXM-80GB")->peak_flops(Precision::kNvfp4) == 0);
  CHECK(find_gpu("H100-SXM-80GB")->kernels.gemm_fp4 == 0);
  CHECK(find_gpu("A100-SXM-80GB")->peak_flops(Precision::kNvfp4) == 0);
}

TEST_CASE("GpuCatalog: blockwise fp8 GEMMs at 0.755 of the per-tensor rate on Hopper only") {
  // FBGEMM's H100 sweep (pytorch/FBGEMM pull request 2546): block-scaled over row-scaled fp8
  // GEMMs 870/1126, 828/1083 and 828/1141 TFLOP/s, mean 0.755.
  const double ratios[] = {870.40 / 1125.51, 828.34 / 1082.75, 828.31 / 1141.38};
  const double mean = (ratios[0] + ratios[1] + ratios[2]) / 3;
  for (const char* name : {"H100-SXM-80GB", "H100-PCIe-80GB", "H100-NVL-94GB", "H200-SXM-141GB"}) {
    INFO(name);
    const GpuSpec gpu = *find_gpu(name);
    CHECK(gpu.kernels.gemm_fp8_blockwise == Approx(gpu.kernels.gemm_fp8 * mean).epsilon(0.002));
  }
  // Blackwell runs the recipe on its MXFP8 block-scaled MMA (Transformer Engine).
  for (const char* name : {"B200", "GB200", "B300", "GB300"}) {
    INFO(name);
    CHECK(find_gpu(name)->kernels.gemm_fp8_blockwise == find_gpu(name)->kernels.gemm_fp8);
  }
}

}  // namespace
}  // namespace ppsim
