#include "simulator/step/time_to_train.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "simulator/engine/engine.h"
#include "simulator/spec/error.h"
#include "simulator/spec/units.h"
#include "simulator/step/plan_footprint.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"

namespace ppsim {
namespace {

TrainingPhase make_phase(const ModelSpec& model, const Plan& plan, int64_t tokens, bool ramp) {
  TrainingPhase phase;
  phase.plan = plan;
  phase.plan.training.reset();
  phase.tokens = tokens;
  phase.tokens_per_step = plan.global_batch_size * effective_seq_length(plan, model);
  phase.steps = (tokens + phase.tokens_per_step - 1) / phase.tokens_per_step;
  phase.ramp = ramp;
  return phase;
}

bool same_step(const Plan& a, const Plan& b, const ModelSpec& model) {
  return a.global_batch_size == b.global_batch_size &&
         effective_seq_length(a, model) == effective_seq_length(b, model);
}

}  // namespace

std::vector<TrainingPhase> training_phases(const ModelSpec& model, const ClusterSpec& cluster,
                                           const Plan& plan, const TrainingSpec& training) {
  std::vector<TrainingPhase> phases;
  int64_t left = training.tokens;
  for (size_t i = 0; i < training.batch_ramp.size(); ++i) {
    const BatchPhase& ramp = training.batch_ramp[i];
    const std::string path = fmt::format("/training/batch_ramp/{}", i);
    if (!plan.replica_microbatches.empty()) {
      throw InputError("training", path,
                       "a batch ramp changes the global batch, which replica_microbatches fixes; "
                       "give one or the other");
    }
    Plan phase_plan = plan;
    phase_plan.global_batch_size = ramp.global_batch_size;
    if (ramp.seq_length) phase_plan.seq_length = *ramp.seq_length;
    if (std::optional<std::string> problem = plan_problem(phase_plan, model, cluster)) {
      throw InputError("training", path,
                       fmt::format("this phase's plan ({}) cannot run: {}",
                                   plan_to_inline(phase_plan), *problem));
    }
    phases.push_back(make_phase(model, phase_plan, ramp.tokens, true));
    left -= ramp.tokens;
  }
  PPSIM_CHECK(left >= 0, "the ramp holds more tokens than the run (parse_training_spec checks)");
  if (left > 0 || phases.empty()) phases.push_back(make_phase(model, plan, left, false));
  return phases;
}

std::vector<std::string> simulate_phases(const ModelSpec& model, const ClusterSpec& cluster,
                                         const StepOptions& options, double plan_step_time_s,
                                         std::vector<TrainingPhase>& phases) {
  std::vector<std::string> warnings;
  const Plan* main = nullptr;
  for (const TrainingPhase& phase : phases) {
    if (!phase.ramp) main = &phase.plan;
  }
  for (size_t i = 0; i < phases.size(); ++i) {
    TrainingPhase& phase = phases[i];
    if (!phase.ramp || (main != nullptr && same_step(phase.plan, *main, model))) {
      phase.step_time_s = plan_step_time_s;
      continue;
    }
    Step step = build_step(model, cluster, phase.plan, options);
    Timeline timeline = simulate_graph(step.lowered.graph);
    StepMetrics metrics = compute_metrics(model, cluster, phase.plan, step, timeline);
    phase.step_time_s = metrics.iteration_time_s;
    if (!metrics.fits) {
      warnings.push_back(fmt::format("batch ramp phase {} ({}) does not fit in memory", i,
                                     plan_to_inline(phase.plan)));
    }
  }
  return warnings;
}

TimeToTrain time_to_train(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                          const TrainingSpec& training, std::vector<TrainingPhase> phases) {
  TimeToTrain result;
  result.phases = std::move(phases);
  result.tokens = training.tokens;
  for (const TrainingPhase& phase : result.phases) {
    result.steps += phase.steps;
    result.compute_s += static_cast<double>(phase.steps) * phase.step_time_s;
  }
  result.step_time_s = result.steps > 0 ? result.compute_s / static_cast<double>(result.steps) : 0;

  PlanFootprint footprint = plan_footprint(cluster, plan);
  result.gpus = footprint.gpus();
  result.checkpoint = checkpoint_cost(model, cluster, plan, footprint);
  result.failure_rate = job_failure_rate(cluster, footprint);
  result.restart_s = cluster.reliability.restart.total() + result.checkpoint.load_s;

  const double rate = result.failure_rate.total();
  const double mtbf = rate > 0 ? 1 / rate : std::numeric_limits<double>::infinity();
  const double delta = result.checkpoint.blocking_s;
  result.interval_rule = training.interval_rule;
  double interval = 0;
  switch (training.interval_rule) {
    case IntervalRule::kDaly:
      interval = daly_interval(delta, mtbf);
      break;
    case IntervalRule::kYoung:
      interval = std::isinf(mtbf) ? mtbf : young_interval(delta, mtbf);
      break;
    case IntervalRule::kSteps:
      interval = static_cast<double>(training.interval_steps) * result.step_time_s;
      break;
  }
  if (interval < result.step_time_s) {
    result.notes.push_back(
        fmt::format("the {} interval ({:.3g} s) is shorter than a step; checkpointing every step",
                    interval_rule_name(training.interval_rule), interval));
    interval = result.step_time_s;
  }
  const double write_window = result.checkpoint.async ? result.checkpoint.save_s - delta : 0;
  if (result.checkpoint.async && interval < write_window) {
    result.notes.push_back(fmt::format(
        "async checkpoints: interval raised from {:.1f} s to the {:.1f} s a checkpoint takes to "
        "reach storage (the next one waits for it)",
        interval, write_window));
    interval = write_window;
  }
  result.interval_s = interval;

  CheckpointRestartRun& run = result.run;
  run.work_s = result.compute_s;
  run.interval_s = interval;
  run.checkpoint_s = delta;
  run.restart_s = result.restart_s + write_window;
  run.failure_rate = rate;
  result.checkpoint_count = checkpoint_count(run);
  result.wall_s = expected_wall_time(run);
  result.goodput = result.wall_s > 0 ? result.compute_s / result.wall_s : 1;
  result.expected_failures = result.wall_s * rate;
  if (result.expected_failures > 0 && std::isfinite(result.wall_s)) {
    result.lost_s =
        (result.wall_s - result.compute_s - static_cast<double>(result.checkpoint_count) * delta) /
        result.expected_failures;
  }
  result.gpu_hours = result.wall_s * static_cast<double>(result.gpus) / kHour;
  double dollars_per_hour = 0;
  bool priced = true;
  for (size_t g = 0; g < cluster.nodes.size(); ++g) {
    if (footprint.groups[g].gpus == 0) continue;
    priced = priced && cluster.nodes[g].price_per_gpu_hour > 0;
    dollars_per_hour +=
        static_cast<double>(footprint.groups[g].gpus) * cluster.nodes[g].price_per_gpu_hour;
  }
  if (priced) result.cost_usd = result.wall_s / kHour * dollars_per_hour;
  if (!std::isfinite(result.wall_s)) {
    result.notes.push_back(fmt::format(
        "the run never finishes in expectation: a segment of {:.3g} s between checkpoints is "
        "many MTBFs ({:.3g} s) long",
        interval + delta, mtbf));
  }
  return result;
}

void add_wall_percentiles(TimeToTrain& result, int64_t iterations, uint64_t seed) {
  if (!std::isfinite(result.wall_s) || result.expected_failures > kMaxMonteCarloFailures) {
    result.notes.push_back(fmt::format(
        "Monte-Carlo over failures skipped: {:.3g} expected failures per run (limit {:.0e})",
        result.expected_failures, kMaxMonteCarloFailures));
    return;
  }
  result.wall_percentiles = wall_time_percentiles(result.run, iterations, seed);
}

TimeToTrain plan_time_to_train(const ModelSpec& model, const ClusterSpec& cluster,
                               const StepOptions& options, const Plan& plan,
                               const TrainingSpec& training, double plan_step_time_s) {
  std::vector<TrainingPhase> phases = training_phases(model, cluster, plan, training);
  std::vector<std::string> warnings =
      simulate_phases(model, cluster, options, plan_step_time_s, phases);
  TimeToTrain result = time_to_train(model, cluster, plan, training, std::move(phases));
  result.notes.insert(result.notes.begin(), warnings.begin(), warnings.end());
  return result;
}

}  // namespace ppsim
