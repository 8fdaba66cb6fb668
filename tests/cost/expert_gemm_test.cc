// The roofline's expert (grouped) GEMMs against one H200's measured kernels
// (tests/data/kernels/h200_expert_gemm.json, tools/measure/expert_gemm.py): per-expert token
// counts from 64 to 4096 for Qwen3-30B-A3B's thin experts and DeepSeek-V3's wide ones.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/cost/cost_model.h"
#include "simulator/model/layer_ops.h"
#include "simulator/spec/gpu_catalog.h"

namespace ppsim {
namespace {

struct Point {
  std::string shape;
  double k, n, experts, tokens_per_expert, grouped_s;
};

std::vector<Point> measured_points() {
  std::ifstream in(std::string(PPSIM_TEST_DATA) + "/kernels/h200_expert_gemm.json");
  REQUIRE(in.good());
  nlohmann::json json = nlohmann::json::parse(in);
  std::vector<Point> points;
  for (const nlohmann::json& p : json.at("points")) {
    points.push_back({p.at("shape"), p.at("k"), p.at("n"), p.at("experts"),
                      p.at("tokens_per_expert"), p.at("grouped_us").get<double>() * 1e-6});
  }
  REQUIRE(points.size() == 28);
  return points;
}

// The roofline's device time for one forward of the experts' GEMM: the datasheet curve alone
// (kernel_scale 1, as a microbenchmark runs), launch gaps left out (the measurement replays a
// CUDA graph).
double model_seconds(const Point& p) {
  EfficiencyTable efficiency;
  efficiency.kernel_scale = 1;
  CostModel model(*find_gpu("H200-SXM-141GB"), efficiency);
  Op op;
  op.name = "moe_expert_up";
  op.op_class = OpClass::kGemm;
  op.gemm = {p.tokens_per_expert, p.n, p.k, p.experts};
  op.flops_fwd = op.flops_b = op.flops_w = 2 * p.tokens_per_expert * p.n * p.k * p.experts;
  op.bytes_fwd = op.bytes_b = op.bytes_w =
      2 * (p.tokens_per_expert * p.k + p.k * p.n + p.tokens_per_expert * p.n) * p.experts;
  op.kernels_fwd = op.kernels_b = op.kernels_w = 1;
  return model.op_cost(op).fwd.seconds - model.kernel_gap();
}

TEST_CASE("Expert GEMMs: within 0.65-1.0x of the measured H200 kernel from 256 tokens per "
          "expert") {
  for (const Point& p : measured_points()) {
    INFO(p.shape << " at " << p.tokens_per_expert << " tokens per expert");
    const double ratio = model_seconds(p) / p.grouped_s;
    // Known and kept: below 256 tokens per expert the roofline's tile model is up to 2.2x
    // optimistic on thin experts (k 768: measured 111 TFLOP/s at 64 tokens, the model 240);
    // from 256 it is 0.69-0.98 of the measured time, about the datasheet's own margin.
    CHECK(ratio > 0.4);
    if (p.tokens_per_expert >= 256) {
      CHECK(ratio >= 0.65);
      CHECK(ratio <= 1.0);
    }
  }
}

TEST_CASE("Expert GEMMs: efficiency falls with fewer tokens per expert, measured and modelled") {
  std::map<std::string, std::pair<double, double>> last;  // Shape -> (measured, model) FLOP/s.
  for (const Point& p : measured_points()) {
    if (p.tokens_per_expert > 1024) continue;  // Flat (and noisy) past a full wave.
    const double flops = 2 * p.tokens_per_expert * p.n * p.k * p.experts;
    const std::pair<double, double> rate{flops / p.grouped_s, flops / model_seconds(p)};
    auto it = last.find(p.shape);
    if (it != last.end()) {
      INFO(p.shape << " at " << p.tokens_per_expert << " tokens per expert");
      CHECK(rate.first > it->second.first);
      CHECK(rate.second > it->second.second);
    }
    last[p.shape] = rate;
  }
  CHECK(last.size() == 4);
}

}  // namespace
}  // namespace ppsim
