// torchtitan's async TP (the plan's tp_comm_overlap under runtime torchtitan) against the
// speedups torchtitan published for it: benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md
// (pytorch/torchtitan, June 2025; Grand Teton H100s, 96 GB HBM2e at 500 W, torch.compile).
// Llama 3 70B on 256 GPUs (FSDP 32, TP 8, full AC, local batch 16) and Llama 3 8B on 64 GPUs
// (FSDP 8, TP 8, per-op SAC, local batch 12), bf16 and float8 tensorwise; the float8 rowwise
// rows are left out (the table notes their vanilla-TP baseline as a known slowdown, and ppsim
// runs torchtitan's fp8 as tensorwise). ppsim simulates the same plans on DGX H100s; a
// speedup is a ratio of two steps on the same machine, so the machines' differences mostly
// cancel. The 8B plan's op-level SAC runs as ppsim's selective (docs/accuracy.md "Known limits").
#include <catch2/catch.hpp>
#include <string>

#include "simulator/engine/engine.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/plan.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"

namespace ppsim {
namespace {

double step_seconds(const std::string& model_name, const std::string& cluster_name,
                    const std::string& plan_text) {
  const ModelSpec model = load_model_spec(model_name);
  const ClusterSpec cluster = load_cluster_spec(cluster_name);
  const Plan plan = parse_plan(plan_text, "test");
  REQUIRE_FALSE(plan_problem(plan, model, cluster));
  Step step = build_step(model, cluster, plan, StepOptions{});
  Timeline timeline = simulate_graph(step.lowered.graph);
  return compute_metrics(model, cluster, plan, step, timeline).iteration_time_s;
}

struct Published {
  const char* model;
  const char* cluster;
  const char* plan;
  const char* precision;
  double speedup;  // Async TP tokens/s over vanilla TP tokens/s.
};

TEST_CASE("Async TP: torchtitan's published speedups on Llama 3 70B and 8B") {
  const std::string common = ",seq=8192,sequence_parallel=true,zero_stage=3,runtime=torchtitan";
  const Published cases[] = {
      {"llama3-70b", "dgx-h100:32", "tp=8,dp=32,mbs=16,gbs=512,recompute=full", "bf16",
       652.4 / 597.3},
      {"llama3-70b", "dgx-h100:32", "tp=8,dp=32,mbs=16,gbs=512,recompute=full", "fp8",
       942.4 / 809.8},
      {"llama3-8b", "dgx-h100:8", "tp=8,dp=8,mbs=12,gbs=96,recompute=selective", "bf16",
       4809.4 / 4378},
      {"llama3-8b", "dgx-h100:8", "tp=8,dp=8,mbs=12,gbs=96,recompute=selective", "fp8",
       5570.1 / 5078.1},
  };
  double total_gap = 0;
  for (const Published& c : cases) {
    const std::string plan = std::string(c.plan) + common + ",precision=" + c.precision;
    const double vanilla = step_seconds(c.model, c.cluster, plan + ",tp_comm_overlap=false");
    const double async = step_seconds(c.model, c.cluster, plan + ",tp_comm_overlap=true");
    const double speedup = vanilla / async;
    INFO(c.model << " " << c.precision << ": ppsim " << speedup << ", published " << c.speedup);
    CHECK(speedup > 1);
    // ppsim's per-case speedups are 1.125, 1.160, 1.142, 1.148 against 1.092, 1.164, 1.099,
    // 1.097 (2026-12-07): within 0.06 each, and no more than 0.04 apart on average.
    CHECK(std::abs(speedup - c.speedup) < 0.06);
    total_gap += std::abs(speedup - c.speedup);
  }
  CHECK(total_gap / 4 < 0.04);
  // Off is torchtitan's default: the plan without the key runs vanilla TP.
  const std::string plan = std::string(cases[0].plan) + common;
  CHECK(step_seconds("llama3-70b", "dgx-h100:32", plan) ==
        step_seconds("llama3-70b", "dgx-h100:32", plan + ",tp_comm_overlap=false"));
}

}  // namespace
}  // namespace ppsim
