// compare_step and the validate report: error sign and tolerance, per-type means, folding,
// the JSON fields scripts read.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "simulator/engine/engine.h"
#include "simulator/report/validation_report.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

struct Fixture {
  Step step;
  Timeline predicted;
  Fixture() {
    Plan plan = load_plan("pp=2,dp=1,mbs=1,gbs=4,schedule=1f1b");
    StepOptions options;
    options.deduplicate_replicas = false;
    step = build_step(testing::tiny_dense_model(), testing::uniform_cluster("H100-SXM-80GB", 1),
                      plan, options);
    predicted = simulate_graph(step.lowered.graph);
  }
  // A measurement that took `factor` times the prediction, every task.
  MeasuredStep measured(double factor, bool folded = false) const {
    MeasuredStep m;
    m.folded = folded;
    m.device = "test";
    Timeline t = predicted;
    for (double& x : t.start) x *= factor;
    for (double& x : t.end) x *= factor;
    t.makespan *= factor;
    m.iterations = {t, t, t};
    m.measured.assign(step.lowered.graph.num_tasks(), true);
    if (folded) {
      for (TaskId id = 0; id < step.lowered.graph.num_tasks(); ++id) {
        m.measured[id] = step.lowered.graph.task(id).kind == TaskKind::kCompute;
      }
    }
    m.peak_memory_bytes = {1e9, 2e9};
    return m;
  }
};

TEST_CASE("compare_step: error is (predicted - measured) / measured, checked against tolerance") {
  Fixture f;
  ValidationSettings settings;
  settings.backend = "cpu";
  settings.tolerance_pct = 10;
  ValidationResult exact = compare_step(f.step, f.predicted, f.measured(1.0), settings);
  CHECK(exact.error_pct == Approx(0).margin(1e-9));
  CHECK_FALSE(exact.over_tolerance);
  ValidationResult slow = compare_step(f.step, f.predicted, f.measured(2.0), settings);
  CHECK(slow.measured_step_s == Approx(2 * f.predicted.makespan));
  CHECK(slow.error_pct == Approx(-50));
  CHECK(slow.over_tolerance);
  CHECK(slow.measured_peak_memory_bytes == 2e9);
  std::vector<std::string> types;
  for (const ActionTypeComparison& row : slow.actions) {
    types.push_back(row.type);
    REQUIRE(row.measured_s);
    CHECK(*row.measured_s == Approx(2 * row.predicted_s));
    CHECK(*row.error_pct == Approx(-50));
  }
  CHECK(types == std::vector<std::string>{"F", "B", "send", "optimizer"});
  CHECK_THAT(validation_report_text(slow, "inputs"), Catch::Contains("# FAILED: |error| 50.0%"));
  CHECK_THAT(validation_report_text(exact, "inputs"), Catch::Contains("# OK"));
}

TEST_CASE("compare_step: folded sends are not measured and the step is the replay") {
  Fixture f;
  ValidationSettings settings;
  ValidationResult folded = compare_step(f.step, f.predicted, f.measured(1.0, true), settings);
  CHECK(folded.folded);
  REQUIRE_FALSE(folded.notes.empty());
  for (const ActionTypeComparison& row : folded.actions) {
    CHECK(row.measured_s.has_value() == (row.type != "send"));
  }
  auto json = nlohmann::json::parse(validation_report_json(folded));
  CHECK(json["folded"] == true);
  CHECK(json["actions"]["send"]["measured_s"].is_null());
  for (const char* key : {"predicted_step_s", "measured_step_s", "error_pct", "actions",
                          "predicted_peak_memory_bytes", "measured_peak_memory_bytes", "backend",
                          "iterations", "folded", "executed"}) {
    CHECK(json.contains(key));
  }
}

}  // namespace
}  // namespace ppsim
