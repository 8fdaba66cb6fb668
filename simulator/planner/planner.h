// Planner: finds the best parallel plans for a model on a cluster.
//
//   enumerate shapes (plan_candidates.h) ──> per shape, every knob variant:
//     screen memory exactly (plan_screen.h) ──> drop what does not fit
//     ──> dominance rules (below) ──> lower bound on the objective (plan_screen.h)
//   ──> simulate in order of increasing (cheap) bound, in fixed batches on a thread pool: each
//       candidate's replayed bound is computed first and it is simulated only if that bound does
//       not exceed the top-th best objective found before its batch; stop at the first batch
//       whose smallest cheap bound exceeds it
//       (a simulated candidate whose replicas land on GPUs of different speeds is also
//       simulated with proportional batch shares, replica_shares.h, and keeps them when its
//       objective improves; heterogeneous space only)
//   ──> rank by (objective, canonical_before) and explain each of the top plans.
//
// Dominance rules. Each drops a fitting plan X only when a *fitting* twin Y (same shape, same
// sequence parallelism) exists that the simulator cannot rank behind X: every task of Y lasts
// no longer than X's and Y's graph is X's, so Y's step is no slower (the makespan is a longest
// path, non-decreasing in task durations), and Y comes first in canonical order on a tie.
//   lighter recompute     Y has less recompute (none < selective < full): recompute only adds
//                         forward work (and, for full, its TP collectives) inside backward tasks;
//   ZeRO-2 = ZeRO-1 time  Y is ZeRO-1 and X ZeRO-2: the simulator runs both the same way
//                         (reduce-scatter, sharded update, parameter all-gather); ZeRO-2 only
//                         changes memory;
//   one data-parallel rank  dp*cp == 1 and Y is ZeRO-0: sharding over one rank changes no task.
// Twins compare only at the same optimizer offload fraction. Offload is no rule: the GPU's and
// the host's parts of a split update run side by side (optimizer_offload.h), so a small
// fraction is not provably slower than none. Offload plans meet the bound instead, whose
// optimizer term is the larger of the GPU's part and the host's Adam plus copy back: where a
// plan without offload fits, offload plans lose on that bound and are never simulated.
// The bound makes the search exact: a plan that is not simulated has a bound above the top-th
// best objective, so its own objective is too. tests/planner/planner_test.cc checks the planner's best
// against simulating every plan of small spaces.
//
// Objectives (lower is better; each evaluator also gives a bound from the time bound):
//   time  iteration_time_s.
//   cost  dollars per step = iteration_time_s x sum over the plan's GPUs of price_per_gpu_hour
//         / 3600 (cluster spec, per node group).
//   p90   the 90th percentile of the step time under the cluster's straggler model
//         (ClusterSpec::stragglers), by seeded Monte-Carlo (p90_evaluator.h). Stragglers only
//         slow tasks down, so the time bound stays a bound for any percentile. time and cost
//         rank the nominal cluster.
//
// Determinism: candidates are screened and simulated by index into vectors; batch boundaries do
// not depend on the thread count; ties break by canonical_before(). The result is the same for
// any thread count (tests check 1 vs 2).
// Thread-safety: search_plans() may be called from one thread at a time per PlanScreen; it
// starts its own pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simulator/planner/plan_candidates.h"
#include "simulator/planner/plan_evaluator.h"
#include "simulator/planner/plan_screen.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"

namespace ppsim {

// The evaluator of `objective`, simulating with `step` options. `seed` seeds Monte-Carlo draws.
std::unique_ptr<PlanEvaluator> make_evaluator(Objective objective, const ModelSpec& model,
                                              const ClusterSpec& cluster, const StepOptions& step,
                                              uint64_t seed);

// Dollars per second of the GPUs `plan` occupies (0 when their groups carry no price).
double plan_dollars_per_second(const ClusterSpec& cluster, const Plan& plan);

// A fitting twin that dominates a plan, and the rule (one of the header's) that says so.
struct Dominance {
  size_t twin = 0;        // Index into the twins given.
  const char* rule = "";  // "lighter recompute fits", ...
};

// The first of `twins` (knob variants of x's shape; fits[i] says whether twin i fits) that
// dominates `x` by the rules above, or nullopt. x itself may be among the twins.
std::optional<Dominance> find_dominating_twin(const Plan& x, const std::vector<Plan>& twins,
                                              const std::vector<bool>& fits);

// Progress of a running search, reported between batches on the calling thread.
struct SearchProgress {
  std::string phase;  // "screening" (done/total shapes) or "simulating" (done/total candidates).
  int64_t done = 0;
  int64_t total = 0;
};

struct PlannerOptions {
  SearchSpace space;
  Objective objective = Objective::kTime;
  int64_t top = 10;         // Plans to return (the search is exact for all of them).
  int threads = 0;          // 0 = one per hardware thread.
  uint64_t seed = 0;        // For Monte-Carlo evaluators.
  StepOptions step;         // How candidates are simulated (the `simulate` defaults).
  int64_t batch_size = 32;  // Candidates simulated per batch; fixed, so results do not
                            // depend on the thread count.
  std::function<void(const SearchProgress&)> progress;  // Optional.
};

// A ranked, simulated plan.
struct RankedPlan {
  Plan plan;
  StepMetrics metrics;
  double objective = 0;         // As the evaluator scores it.
  double dollars_per_step = 0;  // iteration_time_s x plan_dollars_per_second (0: no prices).
  double time_bound_s = 0;      // The screen's replayed lower bound on its step time.
  std::string why;              // What sets it apart among the returned plans.
};

// Plans dropped by one dominance rule.
struct RuleCount {
  std::string rule;
  int64_t dropped = 0;
};

struct SearchStats {
  int64_t shapes = 0;       // Shapes enumerated.
  int64_t considered = 0;   // Plans (shape x knobs) in the space, all valid for plan_problem().
  int64_t unsimulable = 0;  // Of those, plans whose schedule the simulator's lowering cannot run
                            // (ShapeScreen::deadlocks); left out of everything below.
  int64_t fitting = 0;      // Of those, fitting in memory (the screen; exact).
  int64_t dominated = 0;    // Fitting plans dropped by the dominance rules.
  std::vector<RuleCount> rules;  // Per rule, in the order of the header.
  int64_t candidates = 0;        // Fitting plans left for the bound-ordered simulation.
  int64_t bounded_out = 0;       // Candidates not simulated: a bound above the top-th best.
  int64_t simulated = 0;         // Candidates simulated.
};

// The plan closest to fitting, when none fits.
struct ClosestPlan {
  Plan plan;
  MemoryScreen memory;
};

struct PlanSearchResult {
  std::vector<RankedPlan> plans;  // Best first, at most `top`; all fit.
  SearchStats stats;
  std::optional<ClosestPlan> closest;  // Set when no plan fits (and the space is not empty).
  std::string objective_note;          // The evaluator's note().
};

// Searches `options.space` for `model` on `cluster`.
// REQUIRES: options.space.global_batch_size > 0; options.top >= 1.
PlanSearchResult search_plans(const ModelSpec& model, const ClusterSpec& cluster,
                              const PlannerOptions& options);

// The same, with a caller-supplied screen (reused across searches) and evaluator.
PlanSearchResult search_plans(const PlanScreen& screen, const PlanEvaluator& evaluator,
                              const PlannerOptions& options);

}  // namespace ppsim
