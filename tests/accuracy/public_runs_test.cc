// configs/accuracy/public-runs.csv (shipped in the repository, so this runs on a clean clone):
// simulate agrees with accuracy on every predictable row. The fit against the same file is
// public_runs_fit_test.
#include <catch2/catch.hpp>

#include "simulator/accuracy/calibration.h"
#include "simulator/engine/engine.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

TEST_CASE("Public runs: simulate and accuracy give the same number on every row") {
  std::vector<PublicRun> runs = testing::shipped_public_runs();
  AccuracyOptions options;
  int64_t checked = 0;
  for (const PublicRun& run : runs) {
    if (!run.predictable()) continue;
    INFO("row " << run.row_id);
    RowAccuracy row = predict_run(run, options.efficiency, options.collective);
    Plan plan = parse_plan(plan_to_json(run.plan), "round trip");
    Step step = build_step(run.model, run.cluster, plan, StepOptions{});
    Timeline timeline = simulate_graph(step.lowered.graph);
    StepMetrics metrics = compute_metrics(run.model, run.cluster, plan, step, timeline);
    CHECK(metrics.tokens_per_s / static_cast<double>(run.num_gpus) ==
          row.predicted_tokens_per_s_per_gpu);
    ++checked;
  }
  CHECK(checked >= 180);
}

}  // namespace
}  // namespace ppsim
