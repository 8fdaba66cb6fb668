// PlanEvaluator: how the planner scores one plan for its objective (time, cost, p90 or
// time-to-train; the objectives are defined in planner.h's header). planner.cc gives the time,
// cost and time-to-train evaluators and make_evaluator(); p90_evaluator.h the Monte-Carlo one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "simulator/spec/plan.h"
#include "simulator/step/step_metrics.h"
#include "simulator/step/time_to_train.h"

namespace ppsim {

enum class Objective { kTime, kCost, kP90, kTimeToTrain };

// "time", "cost", "p90", "time-to-train".
std::string objective_name(Objective objective);
const std::vector<std::string>& objective_names();

// A simulated plan and its score.
struct Evaluation {
  StepMetrics metrics;
  double objective = 0;  // Lower is better; units per objective (seconds, dollars or days).
  std::optional<TimeToTrain> time_to_train;  // The whole run, when the search has a training run.
};

// Scores plans for one objective. Implementations are immutable and thread-safe.
class PlanEvaluator {
 public:
  virtual ~PlanEvaluator() = default;
  // Builds and simulates the step (or several, for a distribution). REQUIRES: a valid plan.
  virtual Evaluation evaluate(const Plan& plan) const = 0;
  // A lower bound on evaluate(plan).objective given a lower bound on the nominal step time.
  virtual double objective_bound(const Plan& plan, double step_time_bound_s) const = 0;
  // One line for the report header: what is ranked and any caveat.
  virtual std::string note() const = 0;
};

}  // namespace ppsim
