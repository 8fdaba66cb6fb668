// Calibration (--fit) and the leave-one-source-out headline: definitions checked by recomputing
// them from predict_run, determinism across thread counts, and simulate == accuracy.
#include "simulator/accuracy/calibration.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "simulator/accuracy/accuracy.h"
#include "simulator/engine/engine.h"
#include "simulator/spec/csv_reader.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

std::vector<PublicRun> three_runs() {
  return read_public_runs(load_csv(testing::test_data("accuracy/three_runs.csv")));
}

TEST_CASE("Calibration: the fitted constants, their bounds and the priors") {
  std::set<std::string> names;
  for (const FitParameter& parameter : fit_parameters()) {
    INFO(parameter.name);
    CHECK(parameter.lower < parameter.upper);
    CHECK(names.insert(parameter.name).second);
    EfficiencyTable table;
    double value = parameter.field(table);
    CHECK(value >= parameter.lower);
    CHECK(value <= parameter.upper);
  }
  // Two global scales and three overheads per runtime.
  CHECK(fit_parameters().size() == 2 + 3 * static_cast<size_t>(kRuntimeCount));
  EfficiencyTable prior = prior_constants(EfficiencyTable{});
  CHECK(prior.kernel_scale == 1);
  CHECK(prior.flash2_scale == 1);
  CHECK(prior.overheads(Runtime::kMegatronLm).kernel_gap_s ==
        runtime_traits(Runtime::kMegatronLm).overheads.kernel_gap_s);
}

TEST_CASE(
    "Calibration: leave-one-source-out predicts each source with constants fitted without it") {
  std::vector<PublicRun> runs = three_runs();
  AccuracyOptions options;
  LeaveOneSourceOut loso = leave_one_source_out(runs, options, 1);
  REQUIRE(loso.per_source.size() == 3);
  double row_sum = 0, source_sum = 0, worst = 0;
  for (const HeldOutSource& source : loso.per_source) {
    INFO(source.source_id);
    // The held-out constants are exactly a fit on the other sources...
    std::vector<std::string> others;
    for (const HeldOutSource& other : loso.per_source) {
      if (other.source_id != source.source_id) others.push_back(other.source_id);
    }
    FitResult without = fit_constants(runs, options, others, 1);
    CHECK(without.efficiency.kernel_scale == source.efficiency.kernel_scale);
    CHECK(without.efficiency.flash2_scale == source.efficiency.flash2_scale);
    // ...and the held-out error is predict_run's with them.
    double sum = 0;
    int64_t rows = 0;
    for (const PublicRun& run : runs) {
      if (run.source_id != source.source_id) continue;
      RowAccuracy row = predict_run(run, source.efficiency, options.collective);
      sum += std::abs(*row.error_pct);
      ++rows;
    }
    CHECK(source.rows == rows);
    CHECK(source.mape_pct == Approx(sum / rows));
    row_sum += sum;
    source_sum += source.mape_pct;
    worst = std::max(worst, source.mape_pct);
  }
  CHECK(loso.rows == 3);
  CHECK(loso.mape_pct == Approx(row_sum / 3));
  CHECK(loso.source_mape_pct == Approx(source_sum / 3));
  CHECK(loso.worst_source_mape_pct == Approx(worst));
  // The fit on every source does not end worse than it started.
  CHECK(loso.full_fit.objective_pct <= loso.full_fit.prior_objective_pct);
  CHECK(loso.full_fit.sources == std::vector<std::string>{"S01", "S10", "S11"});
}

TEST_CASE("Calibration: the result does not depend on the thread count") {
  std::vector<PublicRun> runs = three_runs();
  LeaveOneSourceOut one = leave_one_source_out(runs, AccuracyOptions{}, 1);
  LeaveOneSourceOut two = leave_one_source_out(runs, AccuracyOptions{}, 2);
  CHECK(one.mape_pct == two.mape_pct);
  CHECK(one.full_fit.efficiency.kernel_scale == two.full_fit.efficiency.kernel_scale);
  CHECK(one.full_fit.evaluations == two.full_fit.evaluations);
  CHECK(fitted_constants_text(one.full_fit) == fitted_constants_text(two.full_fit));
}

TEST_CASE("simulate and accuracy give the same number for the same inputs") {
  // Every fact accuracy uses is in the plan's documented keys: the plan, written as JSON and
  // read back as `ppsim simulate --plan` reads it, simulates to the row's prediction exactly.
  AccuracyOptions options;
  for (const PublicRun& run : three_runs()) {
    INFO(run.row_id);
    REQUIRE(run.predictable());
    RowAccuracy row = predict_run(run, options.efficiency, options.collective);
    Plan plan = parse_plan(plan_to_json(run.plan), "round trip");
    Plan inline_plan = parse_plan(plan_to_inline(run.plan), "round trip");
    CHECK(plan_to_json(inline_plan) == plan_to_json(run.plan));
    Step step = build_step(run.model, run.cluster, plan, StepOptions{});
    Timeline timeline = simulate_graph(step.lowered.graph);
    StepMetrics metrics = compute_metrics(run.model, run.cluster, plan, step, timeline);
    CHECK(metrics.tokens_per_s / static_cast<double>(run.num_gpus) ==
          row.predicted_tokens_per_s_per_gpu);
  }
}

}  // namespace
}  // namespace ppsim
