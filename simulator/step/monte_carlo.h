// Monte-Carlo over training steps under a straggler model: N iterations, each with its own
// jitter draws and flapping-link phase, their step-time percentiles, and what each fault costs.
//
//   iteration k    starts at t_k = sum of the step times of iterations 0..k-1 (simulated time,
//                  for flapping links) and draws its jitter from SeededRandom::stream(seed, k)
//                  (straggler_effects.h); the step is built once, its graph copied and faulted
//                  per iteration.
//   percentiles    nearest rank over the N step times: p-th = sorted[ceil(p/100 x N) - 1]
//                  (p50, p90, p99; with N = 1 all three are the one step time).
//   fault cost     leave-one-out, averaged over iterations with common random numbers:
//                    cost_i = mean_k ( T_all(k) - T_all_but_i(k) )
//                  where T_all_but_i reruns the same iterations (same seed, same draws per task)
//                  with fault i removed: the step time removing that fault alone would save.
//                  Jitter counts as one fault. Costs of faults that interact need not add up
//                  to T_all - T_none (two slow GPUs on one stage cost little each, much together).
// Deterministic: the same inputs and seed give the same numbers; the draws of iteration k do
// not depend on N, so percentiles converge as N grows.
//
// Several processes (options.split, work_split.h): the iterations of every run (the step times,
// then each fault's leave-one-out) are shared out by index and exchanged, so every process
// gets the same step times, percentiles and fault costs as one process; iteration 0's step and
// timeline are simulated by process 0 only (the others keep an empty timeline and graph). With
// a flapping link the iterations run in order, so every process runs them all.
//
// Thread-safety: pure functions (each call builds its own steps; with options.threads != 1 it
// runs its iterations on its own ThreadPool).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/engine/timeline.h"
#include "simulator/engine/work_split.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/spec/straggler_spec.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

struct MonteCarloOptions {
  int64_t iterations = 1;    // N >= 1.
  uint64_t seed = 0;         // --seed; default 0, so output is deterministic without one.
  bool fault_costs = false;  // Also compute each fault's leave-one-out cost (N more steps each).
  // Threads the iterations run on (0 = one per hardware thread). Iterations are independent
  // unless a link flaps (then iteration k starts where k - 1 ended, so they run in order); the
  // numbers do not depend on the thread count.
  int threads = 1;
  // The processes sharing the iterations (null: this one alone). Not owned; must outlive the
  // call, and every process of the split makes the same call.
  const WorkSplit* split = nullptr;
};

struct StepPercentiles {
  double p50 = 0;  // Seconds.
  double p90 = 0;
  double p99 = 0;
};

// What one injected fault cost.
struct FaultCost {
  std::string fault;        // Its flag text, e.g. "gpu=3:0.5" or "jitter=lognormal:0.05".
  std::string description;  // straggler_description() / jitter_description().
  double cost_s = 0;        // Mean step time with all faults minus with all but this one.
};

struct MonteCarloResult {
  // Iteration 0's step, its graph with iteration 0's faults applied (its graph is empty on a
  // process of a split other than 0).
  Step step;
  Timeline timeline;  // Iteration 0's timeline (the report's breakdown comes from it); process 0.
  std::vector<double> step_times_s;  // Per iteration, in iteration order.
  StepPercentiles percentiles;
  double mean_s = 0;
  std::vector<FaultCost> fault_costs;  // Per fault in model order, then jitter (when asked).
  // Caveats for the report header, e.g. a flapping period shorter than a step.
  std::vector<std::string> warnings;
};

// The nearest-rank p-th percentile (0 < p <= 100) of `values`. REQUIRES: values non-empty.
double nearest_rank_percentile(std::vector<double> values, double p);

// Runs options.iterations steps of `plan` under `stragglers` (`base` as simulate would build
// without stragglers). REQUIRES: a valid plan; validate_straggler_model(stragglers, cluster).
MonteCarloResult run_monte_carlo(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan, const StepOptions& base,
                                 const StragglerModel& stragglers,
                                 const MonteCarloOptions& options);

}  // namespace ppsim
