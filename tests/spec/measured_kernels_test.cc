// The Hopper kernel datasheet (gpu_catalog.cc, from published H100 benchmarks) against
// attention kernels measured on one H200 (tests/data/kernels/h200_attention.json,
// tools/measure/attention.py): the roofline's attention fractions must stay within 15% of
// what FlashAttention-2 and cuDNN fused attention ran at 4K-8K tokens.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/spec/gpu_catalog.h"

namespace ppsim {
namespace {

nlohmann::json measured_points() {
  std::ifstream in(std::string(PPSIM_TEST_DATA) + "/kernels/h200_attention.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in).at("points");
}

// Mean fraction of the bf16 peak over the 4K-8K points of one kernel and pass (causal FLOPs:
// forward 2 * 2 * b*h * s^2 * d / 2, backward 2.5x).
double measured_fraction(const nlohmann::json& points, const std::string& kernel, bool backward) {
  const double peak = find_gpu("H200-SXM-141GB")->peak_bf16_flops;
  double sum = 0;
  int count = 0;
  for (const nlohmann::json& p : points) {
    const double s = p.at("seq");
    if (p.at("kernel") != kernel || s < 4096 || s > 8192) continue;
    const double forward = 2.0 * 2 * p.at("batch").get<double>() * p.at("heads").get<double>() *
                           s * s * p.at("head_dim").get<double>() / 2;
    const double flops = backward ? 2.5 * forward : forward;
    const double seconds = p.at(backward ? "bwd_us" : "fwd_us").get<double>() * 1e-6;
    sum += flops / seconds / peak;
    ++count;
  }
  REQUIRE(count == 2);
  return sum / count;
}

TEST_CASE("Measured kernels: the Hopper attention datasheet is within 15% of an H200's") {
  const GpuSpec h200 = *find_gpu("H200-SXM-141GB");
  const KernelDatasheet& hopper = h200.kernels;
  const nlohmann::json points = measured_points();
  // Measured: FlashAttention-2 0.323 forward, 0.267 backward; cuDNN 0.604 and 0.450.
  CHECK(hopper.flash2_fwd == Approx(measured_fraction(points, "flash2", false)).epsilon(0.15));
  CHECK(hopper.flash2_bwd == Approx(measured_fraction(points, "flash2", true)).epsilon(0.15));
  CHECK(hopper.fused_fwd == Approx(measured_fraction(points, "cudnn", false)).epsilon(0.15));
  CHECK(hopper.fused_bwd == Approx(measured_fraction(points, "cudnn", true)).epsilon(0.15));
  // The fused kernel is the faster family, as the datasheet orders them.
  CHECK(measured_fraction(points, "cudnn", false) > measured_fraction(points, "flash2", false));
  CHECK(measured_fraction(points, "cudnn", true) > measured_fraction(points, "flash2", true));
}

}  // namespace
}  // namespace ppsim
