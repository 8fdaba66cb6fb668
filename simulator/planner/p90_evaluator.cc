#include "simulator/planner/p90_evaluator.h"

#include <fmt/format.h>

#include "simulator/step/monte_carlo.h"

namespace ppsim {
namespace {

class P90Evaluator : public PlanEvaluator {
 public:
  P90Evaluator(const ModelSpec& model, const ClusterSpec& cluster, const StepOptions& step,
               uint64_t seed)
      : model_(model), cluster_(cluster), step_(step), seed_(seed) {}

  Evaluation evaluate(const Plan& plan) const override {
    MonteCarloOptions options;
    options.iterations = cluster_.stragglers.stochastic() ? kP90PlanIterations : 1;
    options.seed = seed_;
    MonteCarloResult result =
        run_monte_carlo(model_, cluster_, plan, step_, cluster_.stragglers, options);
    Evaluation evaluation;
    evaluation.metrics = compute_metrics(model_, cluster_, plan, result.step, result.timeline);
    evaluation.objective = result.percentiles.p90;
    return evaluation;
  }

  double objective_bound(const Plan&, double step_time_bound_s) const override {
    return step_time_bound_s;
  }

  std::string note() const override {
    const StragglerModel& model = cluster_.stragglers;
    if (model.empty()) {
      return fmt::format(
          "objective p90: 90th percentile step time under the cluster's straggler model; "
          "cluster '{}' has none (add \"stragglers\" or --straggler/--jitter), so the step is "
          "deterministic and p90 = the simulated iteration time",
          cluster_.name);
    }
    std::string faults;
    for (const Straggler& straggler : model.stragglers) {
      faults += (faults.empty() ? "" : ", ") + straggler_text(straggler);
    }
    if (model.jitter) faults += (faults.empty() ? "" : ", ") + jitter_text(*model.jitter);
    if (!model.stochastic()) {
      return fmt::format(
          "objective p90: step time under the fixed stragglers {} (no jitter or "
          "flapping: every iteration is the same step)",
          faults);
    }
    return fmt::format(
        "objective p90: 90th percentile step time over {} seeded Monte-Carlo "
        "iterations (seed {}) under stragglers {}",
        kP90PlanIterations, seed_, faults);
  }

 private:
  const ModelSpec& model_;
  const ClusterSpec& cluster_;
  StepOptions step_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<PlanEvaluator> make_p90_evaluator(const ModelSpec& model,
                                                  const ClusterSpec& cluster,
                                                  const StepOptions& step, uint64_t seed) {
  return std::make_unique<P90Evaluator>(model, cluster, step, seed);
}

}  // namespace ppsim
