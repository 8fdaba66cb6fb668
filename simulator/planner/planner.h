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
//   ──> rank by (objective, canonical_before); then, best first, the simplest plan
//       (plan_complexity) within (1 + min_gain) of the best remaining objective takes the next
//       place, so offload, recompute or a more complex schedule ranks first only when it gains
//       more than min_gain (the bound threshold is widened by the same factor, so every plan
//       that could take a place is simulated); explain each of the top plans.
// The memory screen keeps SearchSpace::memory_margin of each GPU free.
//
// Dominance rules. Each drops a fitting plan X only when a *fitting* twin Y (same shape, same
// sequence parallelism) exists that the simulator cannot rank behind X: every task of Y lasts
// no longer than X's and Y's graph is X's, so Y's step is no slower (the makespan is a longest
// path, non-decreasing in task durations), and Y comes first in canonical order on a tie.
//   lighter recompute     Y has less recompute (none < selective < full; full of N layers per
//                         chunk < of M > N < of every layer; selective and partial full do
//                         not compare): recompute only adds forward work (and, for full, its
//                         TP collectives) inside backward tasks;
//   ZeRO-2 = ZeRO-1 time  Y is ZeRO-1 and X ZeRO-2: the simulator runs both the same way
//                         (reduce-scatter, sharded update, parameter all-gather); ZeRO-2 only
//                         changes memory;
//   one data-parallel rank  dp*cp == 1 (and one expert data-parallel rank, Plan::expert_dp) and
//                           Y is ZeRO-0: sharding over one rank changes no task.
// Twins compare only at the same optimizer offload fraction. Offload is no rule: the GPU's and
// the host's parts of a split update run side by side (optimizer_offload.h), so a small
// fraction is not provably slower than none. Offload plans meet the bound instead, whose
// optimizer term is the larger of the GPU's part and the host's Adam plus copy back: where a
// plan without offload fits, offload plans lose on that bound and are never simulated.
// Likewise only twins with the same activation_offload_layers compare: the planner proposes
// activation offload only where the plan without it does not fit (plan_candidates.h), and its
// copies' exposed time is in the chunk prices the bound is built from.
// The bound makes the search exact: a plan that is not simulated has a bound above the top-th
// best objective, so its own objective is too. tests/planner/planner_test.cc checks the planner's
// best against simulating every plan of small spaces.
//
// Objectives (lower is better; each evaluator also gives a bound from the time bound):
//   time  iteration_time_s.
//   cost  dollars per step = iteration_time_s x sum over the plan's GPUs of price_per_gpu_hour
//         / 3600 (cluster spec, per node group); with a training run (PlannerOptions::training,
//         `plan --train-tokens`), the run's expected cost_usd = wall time x the same price
//         (time_to_train.h).
//   time-to-train  the run's expected wall days (time_to_train.h: steps x step time, checkpoints,
//         failures and restarts of the plan's GPUs, hosts and NICs). A plan with more GPUs fails
//         more often and writes the same checkpoint over the same storage, so it can lose to a
//         smaller one. Bound: T >= e^(R/M) x steps x step time (checkpoint_restart.h: each
//         segment of s seconds costs M e^(R/M)(e^(s/M) - 1) >= e^(R/M) s), with R the restart
//         without the checkpoint load and M the plan's MTBF; the cost objective with a run uses
//         the same bound times its price.
//   p90   the 90th percentile of the step time under the cluster's straggler model
//         (ClusterSpec::stragglers), by seeded Monte-Carlo (p90_evaluator.h). Stragglers only
//         slow tasks down, so the time bound stays a bound for any percentile. time and cost
//         rank the nominal cluster.
//
// Determinism: candidates are screened and simulated by index into vectors; batch boundaries do
// not depend on the thread count; ties break by canonical_before(). The result is the same for
// any thread count (tests check 1 vs 2).
// Several processes (PlannerOptions::split, work_split.h): every process enumerates and
// screens all shapes (cheap, and identical everywhere); each batch's candidates are shared out
// by index, and what decides the search (simulated or not, fits, objective, bound, shares
// taken) is exchanged after each batch, so every process takes the same next threshold and
// ends with the same ranking as one process. Process 0 then simulates again the returned plans
// that other processes simulated (at most `top`), for their metrics; on the other processes
// the returned plans' metrics, dollars_per_step and why are not meaningful (only process 0
// reports).
// Thread-safety: search_plans() may be called from one thread at a time per PlanScreen; it
// starts its own pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "simulator/engine/work_split.h"
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
// `training` (not owned; may be null) is the run the time-to-train objective (which REQUIRES
// it) and the cost objective time.
std::unique_ptr<PlanEvaluator> make_evaluator(Objective objective, const ModelSpec& model,
                                              const ClusterSpec& cluster, const StepOptions& step,
                                              uint64_t seed,
                                              const TrainingSpec* training = nullptr);

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

// Default PlannerOptions::min_gain, 1%: offload, recompute or a more complex schedule must buy
// more than this to rank first. ppsim's absolute step-time error on published runs is about
// 5.7% (docs/accuracy.md); between two plans that share every kernel but one feature most of it
// cancels, and what remains is the error in that feature's own cost (an offloaded Adam's host
// time, a recompute's forward, a schedule's bubble), a share of a share of the step. A gain of
// 1% or less is within it; the example, offload for 0.001%, is far below (docs/plan.md).
inline constexpr double kDefaultMinGain = 0.01;

// How much machinery a plan adds, compared lexicographically (smaller is simpler): optimizer
// offload fraction, activation-offloaded layers, recompute (none < selective < full), schedule
// (one-chunk 1F1B and GPipe < interleaved < backward-splitting zero-bubble < V-shaped), chunks
// per rank.
std::tuple<double, int64_t, int, int, int64_t> plan_complexity(const Plan& plan);

struct PlannerOptions {
  SearchSpace space;
  Objective objective = Objective::kTime;
  int64_t top = 10;         // Plans to return (the search is exact for all of them).
  int threads = 0;          // 0 = one per hardware thread.
  uint64_t seed = 0;        // For Monte-Carlo evaluators.
  StepOptions step;         // How candidates are simulated (the `simulate` defaults).
  int64_t batch_size = 32;  // Candidates simulated per batch; fixed, so results do not
                            // depend on the thread count.
  // Smallest relative gain in the objective for which a plan with more machinery ranks above a
  // simpler one (plan_complexity below): within (1 + min_gain) x the best remaining objective
  // the simplest plan ranks first (ties go to the simpler plan). Default kDefaultMinGain; 0
  // ranks by the objective alone.
  double min_gain = kDefaultMinGain;
  std::function<void(const SearchProgress&)> progress;  // Optional.
  // The processes sharing the simulations (null: this one alone). Not owned; must outlive the
  // search, and every process of the split runs the same search.
  const WorkSplit* split = nullptr;
  // The training run (`plan --train-tokens`): every returned plan gets its time to train, and
  // the time-to-train and cost objectives rank by it. No batch ramp (the plan search has none).
  std::optional<TrainingSpec> training;
};

// A ranked, simulated plan.
struct RankedPlan {
  Plan plan;
  StepMetrics metrics;
  double objective = 0;         // As the evaluator scores it.
  double dollars_per_step = 0;  // iteration_time_s x plan_dollars_per_second (0: no prices).
  double time_bound_s = 0;      // The screen's replayed lower bound on its step time.
  std::string why;              // What sets it apart among the returned plans.
  std::optional<TimeToTrain> time_to_train;  // With PlannerOptions::training.
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
