// PlanEvaluator: how the planner scores one plan for its objective (time, cost or p90; the
// objectives are defined in planner.h's header). planner.cc gives the time and cost evaluators
// and make_evaluator(); p90_evaluator.h the Monte-Carlo one.
#pragma once

#include <string>
#include <vector>

#include "simulator/spec/plan.h"
#include "simulator/step/step_metrics.h"

namespace ppsim {

enum class Objective { kTime, kCost, kP90 };

// "time", "cost", "p90".
std::string objective_name(Objective objective);
const std::vector<std::string>& objective_names();

// A simulated plan and its score.
struct Evaluation {
  StepMetrics metrics;
  double objective = 0;  // Lower is better; units per objective (seconds or dollars).
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
