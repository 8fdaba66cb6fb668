// configs/accuracy/public-runs.csv (shipped in the repository, so this runs on a clean clone):
// simulate agrees with accuracy on every predictable row. The fit against the same file is
// public_runs_fit_test. The held-out files (configs/accuracy/held-out/) are read whole.
#include <catch2/catch.hpp>

#include "simulator/accuracy/calibration.h"
#include "simulator/engine/engine.h"
#include "simulator/spec/csv_reader.h"
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

TEST_CASE("Held-out runs: every row of the shipped held-out files can be predicted") {
  // configs/accuracy/held-out/ (never fitted; its README): a row the reader could not turn into
  // a model, cluster and plan would drop out of the check silently.
  const std::string folder = std::string(PPSIM_SOURCE_DIR) + "/configs/accuracy/held-out/";
  for (const auto& [file, rows] : std::vector<std::pair<std::string, size_t>>{
           {"megatron-bridge-nemo-dense.csv", 98},
           {"nemo-long-sequence-b200.csv", 8},
           {"torchtitan-h100-2024-12.csv", 18},
           {"megatron-bridge-moe.csv", 159}}) {
    INFO(file);
    const std::vector<PublicRun> runs = read_public_runs(load_csv(folder + file));
    CHECK(runs.size() == rows);
    for (const PublicRun& run : runs) {
      INFO("row " << run.row_id << ": " << run.reason);
      CHECK(run.predictable());
    }
  }
}

}  // namespace
}  // namespace ppsim
