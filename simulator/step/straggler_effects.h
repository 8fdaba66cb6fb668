// Straggler effects: how each fault of a StragglerModel changes a step's task graph.
//
//   gpu / node     Speed factors per global GPU (their product when several faults hit one GPU),
//                  handed to build_step as StepOptions::gpu_speed: a worker runs at its slowest
//                  GPU's speed (its tp x cp GPUs are in lockstep), so every compute task of it,
//                  its optimizer step and the gradient-bucket delays stretch by 1/factor.
//   link A-B       Applied to the built graph: every route that leaves node A's NIC and enters
//                  node B's (or B's and A's) -- pipeline sends and data-parallel ring hops --
//                  gets a rate cap of factor x the rate a flow would have on it alone (the
//                  narrowest of its links and its NIC-rail cap), and every transfer on such a
//                  route waits extra_latency longer. Collectives costed inside compute tasks
//                  (TP on NVLink, and EP all-to-all, CP ring or ZeRO-3 gathers when they cross
//                  nodes) are not slowed: they are not flows in the graph (a limit, documented
//                  in docs/stragglers.md).
//   flapping link  Slow during the first duty x period of every period of simulated time,
//                  counted from the first iteration's start; an iteration takes the state in
//                  force when it starts and keeps it to its end (exact when the period is long
//                  against a step; the report warns when it is not).
//   jitter         Each compute action's (F, B, I, W) own compute time -- its duration less the
//                  communication exposed inside it -- is multiplied by a slowdown s >= 1:
//                    lognormal:SIGMA     s = max(1, exp(SIGMA * Z)), Z standard normal: a
//                                        lognormal of median 1 clamped at 1, so half the actions
//                                        run undisturbed and the rest form a lognormal tail;
//                    uniform:MAX         s = 1 + MAX * U, U uniform on [0, 1);
//                    exponential:MEAN    s = 1 + E, E exponential with mean MEAN.
//                  Jitter never speeds an action up: the cost model's time is the undisturbed
//                  kernel time, and the planner's lower bounds stay bounds under stragglers.
//                  Draws come from SeededRandom::stream(seed, iteration) in task order, so an
//                  iteration's draws do not depend on the iteration count.
// Replicas: slow GPUs, nodes and links leave replica classes (replica_classes.h: the slow GPU's
// replica, or the replicas on a slow link's two nodes, simulated beside one representative of
// the rest); with jitter every replica is simulated (its draws are per task).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/seeded_random.h"
#include "simulator/spec/straggler_spec.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

// Speed factor per global GPU from the gpu and node faults; empty when there are none.
std::vector<double> straggler_gpu_speed(const StragglerModel& model, const ClusterSpec& cluster);

// Per pipeline stage of `plan`: the speed of its slowest GPU over all replicas (a stage runs at
// its slowest worker's pace, and data-parallel replicas wait for each other), from the
// cluster's gpu and node faults; all 1 without them. Layer balance divides a stage's seconds
// per layer by it, as it does for a slower GPU type. REQUIRES: plan_problem(plan, ...) nullopt.
std::vector<double> stage_straggler_speed(const ClusterSpec& cluster, const Plan& plan);

// `base` with the model's GPU speeds multiplied in, its link faults' nodes singled out
// (StepOptions::singled_out_nodes) and, with jitter, replica deduplication off. REQUIRES: validate_straggler_model(model, cluster) passed.
StepOptions straggler_step_options(const StepOptions& base, const StragglerModel& model,
                                   const ClusterSpec& cluster);

// Whether link fault `straggler` is slow in an iteration starting at `start_s` seconds.
bool link_fault_active(const Straggler& straggler, double start_s);

// Whether apply_iteration_faults can change a graph under `model` (jitter or a link fault);
// slow GPUs and nodes act at build time (straggler_step_options), so without these every
// iteration simulates the graph as built.
bool has_iteration_faults(const StragglerModel& model);

// Applies the link faults active at `start_s` and the jitter draws of `iteration` to `graph`,
// a copy of `step`'s graph. It changes only compute tasks' work, transfers' latency and routes'
// rate caps, so `step`'s graph prepared once (engine.h PreparedGraph) serves every iteration. REQUIRES: `step` was built with straggler_step_options(.., model, ..)
// (or with a model that differs only in link faults or jitter).
void apply_iteration_faults(TaskGraph& graph, const Step& step, const StragglerModel& model,
                            uint64_t seed, int64_t iteration, double start_s);

// The slowdown one jitter draw gives (>= 1), from `random`'s next draws.
double jitter_slowdown(const JitterSpec& jitter, SeededRandom& random);

}  // namespace ppsim
