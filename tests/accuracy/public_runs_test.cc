// The shipped constants against ../shared/data/public-runs.csv (when shared/ is beside the
// clone): they are what `ppsim accuracy --fit` produces from it, the leave-one-source-out error
// stays under its bar, and simulate agrees with accuracy on every predictable row.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <set>

#include "simulator/accuracy/calibration.h"
#include "simulator/engine/engine.h"
#include "simulator/spec/csv_reader.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"

namespace ppsim {
namespace {

namespace fs = std::filesystem;

std::optional<std::vector<PublicRun>> public_runs() {
  const fs::path file = fs::path(PPSIM_SOURCE_DIR) / ".." / "shared" / "data" / "public-runs.csv";
  if (!fs::exists(file)) return std::nullopt;
  return read_public_runs(load_csv(file.string()));
}

TEST_CASE("Public runs: shipped constants are the fit's; leave-one-source-out under its bar") {
  std::optional<std::vector<PublicRun>> runs = public_runs();
  if (!runs) {
    WARN("skipped: ../shared/data/public-runs.csv is not beside the source tree");
    return;
  }
  AccuracyOptions options;
  LeaveOneSourceOut loso = leave_one_source_out(*runs, options, 0);
  const FitResult& fit = loso.full_fit;
  EfficiencyTable shipped;
  EfficiencyTable fitted = fit.efficiency;
  for (const FitParameter& parameter : fit_parameters()) {
    INFO(parameter.name);
    // Shipped values are the fit's printed to 4 significant digits.
    CHECK(parameter.field(shipped) == Approx(parameter.field(fitted)).epsilon(1e-3).margin(1e-12));
  }
  // Bars at the figures docs/accuracy.md reports (9.73% overall; the dense sources 4.8-8.6%):
  // a change that makes a held-out source worse fails here. The MoE source waits on issue 18.
  INFO("leave-one-source-out " << loso.mape_pct << "% over " << loso.rows << " rows");
  CHECK(loso.mape_pct <= 10.0);
  // Sources with a dense row; the mixture-of-experts rows wait on issue 18.
  std::set<std::string> dense_sources;
  for (const PublicRun& run : *runs) {
    if (run.predictable() && !run.model.is_moe()) dense_sources.insert(run.source_id);
  }
  for (const HeldOutSource& source : loso.per_source) {
    INFO(source.source_id << " " << source.mape_pct << "%");
    if (!dense_sources.count(source.source_id)) continue;
    CHECK(source.mape_pct <= 9.0);
  }
}

TEST_CASE("Public runs: simulate and accuracy give the same number on every row") {
  std::optional<std::vector<PublicRun>> runs = public_runs();
  if (!runs) {
    WARN("skipped: ../shared/data/public-runs.csv is not beside the source tree");
    return;
  }
  AccuracyOptions options;
  int64_t checked = 0;
  for (const PublicRun& run : *runs) {
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
