#include "simulator/planner/time_to_train_evaluator.h"

#include <fmt/format.h>

#include <cmath>

#include "simulator/engine/engine.h"
#include "simulator/step/failure_rate.h"
#include "simulator/step/plan_footprint.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"
#include "simulator/step/time_to_train.h"

namespace ppsim {
namespace {

constexpr double kSecondsPerDay = 86400;

class TimeToTrainEvaluator : public PlanEvaluator {
 public:
  TimeToTrainEvaluator(const ModelSpec& model, const ClusterSpec& cluster, const StepOptions& step,
                       const TrainingSpec& training, bool cost)
      : model_(model), cluster_(cluster), step_(step), training_(training), cost_(cost) {}

  Evaluation evaluate(const Plan& plan) const override {
    Evaluation evaluation;
    Step step = build_step(model_, cluster_, plan, step_);
    Timeline timeline = simulate_graph(step.lowered.graph);
    evaluation.metrics = compute_metrics(model_, cluster_, plan, step, timeline);
    evaluation.time_to_train = plan_time_to_train(model_, cluster_, step_, plan, training_,
                                                  evaluation.metrics.iteration_time_s);
    const TimeToTrain& run = *evaluation.time_to_train;
    evaluation.objective = cost_ ? run.cost_usd.value_or(0) : run.wall_s / kSecondsPerDay;
    return evaluation;
  }

  double objective_bound(const Plan& plan, double step_time_bound_s) const override {
    double wall = wall_time_bound(model_, cluster_, plan, training_, step_time_bound_s);
    if (!cost_) return wall / kSecondsPerDay;
    // The plan's GPUs' price, as time_to_train's cost_usd counts it.
    PlanFootprint footprint = plan_footprint(cluster_, plan);
    double dollars_per_hour = 0;
    for (size_t g = 0; g < cluster_.nodes.size(); ++g) {
      dollars_per_hour +=
          static_cast<double>(footprint.groups[g].gpus) * cluster_.nodes[g].price_per_gpu_hour;
    }
    return wall * dollars_per_hour / 3600;
  }

  std::string note() const override {
    if (cost_) {
      return fmt::format(
          "objective cost: expected dollars of the whole run of {} tokens = expected wall time "
          "(checkpoints, failures, restarts) x the plan's GPUs' price_per_gpu_hour / 3600",
          training_.tokens);
    }
    return fmt::format(
        "objective time-to-train: expected wall days of {} tokens (steps x step time, "
        "{} checkpoints, failures and restarts of the plan's GPUs, hosts and NICs)",
        training_.tokens, interval_rule_name(training_.interval_rule));
  }

 private:
  const ModelSpec& model_;
  const ClusterSpec& cluster_;
  StepOptions step_;
  TrainingSpec training_;
  bool cost_;
};

}  // namespace

std::unique_ptr<PlanEvaluator> make_time_to_train_evaluator(const ModelSpec& model,
                                                            const ClusterSpec& cluster,
                                                            const StepOptions& step,
                                                            const TrainingSpec& training,
                                                            bool cost) {
  return std::make_unique<TimeToTrainEvaluator>(model, cluster, step, training, cost);
}

double wall_time_bound(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                       const TrainingSpec& training, double step_time_bound_s) {
  int64_t left = training.tokens;
  for (const BatchPhase& phase : training.batch_ramp) left -= phase.tokens;
  const int64_t per_step = plan.global_batch_size * effective_seq_length(plan, model);
  const int64_t steps = (left + per_step - 1) / per_step;
  const double rate = job_failure_rate(cluster, plan_footprint(cluster, plan)).total();
  return static_cast<double>(steps) * step_time_bound_s *
         std::exp(cluster.reliability.restart.total() * rate);
}

}  // namespace ppsim
