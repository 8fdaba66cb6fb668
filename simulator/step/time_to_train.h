// Time to train: from one simulated step to the whole run's wall time, GPU-hours and cost, with
// checkpoints, failures and restarts (docs/time-to-train.md).
//
//   phases        the batch ramp's phases (training_spec.h), each with the plan at its global
//                 batch (and sequence length), then the rest of the tokens at the plan's batch;
//                 steps = ceil(tokens / (global batch x sequence)) per phase, each phase's step
//                 simulated on its own (simulate_phases)
//   compute_s     W = sum over phases of steps x step time;  step_time_s = W / steps
//   checkpoint    checkpoint_cost.h: bytes per rank and in all, save, blocking part, load
//   failures      the job's rate (failure_rate.h) over its footprint (plan_footprint.h)
//   restart_s     R = detection + rescheduling + init (cluster "reliability") + the checkpoint's
//                 load time
//   interval_s    compute between checkpoints, tau: Daly's or Young's optimum for the blocking
//                 cost delta and the job's MTBF (checkpoint_restart.h), or a given number of
//                 steps x step_time_s; at least one step; infinite (no checkpoint) without
//                 failures. Async checkpoints: also at least save_s - blocking_s, as the next
//                 checkpoint waits for the last to be written.
//   wall_s        the expected wall time T of checkpoint_restart.h with W, tau, delta, the MTBF
//                 and R (async checkpoints: R + save_s - blocking_s, as a failure while a
//                 checkpoint is still being written falls back to the one before: on average the
//                 write window more per failure)
//   goodput       W / T;  expected failures = T x rate;  lost_s = (T - W - count x delta) /
//                 expected failures (-> (tau + delta)/2 + R when tau << MTBF)
//   gpu_hours     T x the plan's GPUs / 3600;  cost_usd = T x sum of its GPUs' price_per_gpu_hour
//                 / 3600, when every group it uses has a price
//   percentiles   with --iterations: seeded Monte-Carlo over failure arrivals
//                 (failure_monte_carlo.h), p50 and p90 of T
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/spec/training_spec.h"
#include "simulator/step/checkpoint_cost.h"
#include "simulator/step/checkpoint_restart.h"
#include "simulator/step/failure_monte_carlo.h"
#include "simulator/step/failure_rate.h"
#include "simulator/step/step.h"

namespace ppsim {

// One stretch of the run at one global batch.
struct TrainingPhase {
  Plan plan;                    // The plan at this phase's batch and sequence length.
  int64_t tokens = 0;           // Tokens trained in it.
  int64_t tokens_per_step = 0;  // global_batch_size x sequence length.
  int64_t steps = 0;            // ceil(tokens / tokens_per_step).
  double step_time_s = 0;       // Its simulated step time (simulate_phases).
  bool ramp = false;            // A batch_ramp entry (else the plan's own batch).
};

// The phases of `training` for `plan` (its step times still 0). Throws InputError naming
// "training" and the ramp entry when a phase's plan is impossible (plan_problem's reason).
std::vector<TrainingPhase> training_phases(const ModelSpec& model, const ClusterSpec& cluster,
                                           const Plan& plan, const TrainingSpec& training);

// Sets each phase's step time: `plan_step_time_s` (already simulated: the step of `plan`
// itself) for phases at the plan's own batch and sequence, a simulated step for the others.
// Returns a warning per ramp phase whose step does not fit in memory.
std::vector<std::string> simulate_phases(const ModelSpec& model, const ClusterSpec& cluster,
                                         const StepOptions& options, double plan_step_time_s,
                                         std::vector<TrainingPhase>& phases);

struct TimeToTrain {
  std::vector<TrainingPhase> phases;
  int64_t steps = 0;       // Optimizer steps of the run.
  int64_t tokens = 0;      // Tokens asked for (the last step of a phase may overshoot).
  double step_time_s = 0;  // compute_s / steps (the plan's step time without a ramp).
  double compute_s = 0;    // W.
  CheckpointCost checkpoint;
  IntervalRule interval_rule = IntervalRule::kDaly;
  double interval_s = 0;  // tau; infinity when no checkpoint is taken.
  int64_t checkpoint_count = 0;
  FailureRate failure_rate;  // Per second.
  double restart_s = 0;      // R (without the async write window).
  double expected_failures = 0;
  double lost_s = 0;   // Wall time lost per failure (rework + restart); 0 without failures.
  double wall_s = 0;   // Expected wall time T.
  double goodput = 1;  // W / T.
  int64_t gpus = 0;    // The plan's GPUs.
  double gpu_hours = 0;
  std::optional<double> cost_usd;  // When every node group the plan uses has a price.
  std::optional<WallTimePercentiles> wall_percentiles;  // With --iterations.
  CheckpointRestartRun run;                             // The model's inputs (for the Monte-Carlo).
  std::vector<std::string> notes;  // Caveats for the report (an interval raised, ...).
};

// The run's expectation. REQUIRES: phases from training_phases() with their step times set.
TimeToTrain time_to_train(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                          const TrainingSpec& training, std::vector<TrainingPhase> phases);

// Monte-Carlo draws beyond this many expected failures per run are not taken (a note says so).
inline constexpr double kMaxMonteCarloFailures = 1e6;

// Adds p50/p90 of the wall time over `iterations` seeded draws (failure_monte_carlo.h).
void add_wall_percentiles(TimeToTrain& result, int64_t iterations, uint64_t seed);

// The plan's time to train with its step simulated at `plan_step_time_s`: phases, their steps,
// the expectation. Warnings (ramp steps that do not fit) go to result.notes.
TimeToTrain plan_time_to_train(const ModelSpec& model, const ClusterSpec& cluster,
                               const StepOptions& options, const Plan& plan,
                               const TrainingSpec& training, double plan_step_time_s);

}  // namespace ppsim
