// The planner's p90 objective: the 90th-percentile step time of a plan under the cluster's
// straggler model (cluster spec "stragglers" plus plan's --straggler / --jitter flags), by
// seeded Monte-Carlo (monte_carlo.h).
//
//   draws      kP90PlanIterations iterations per simulated plan when the model is stochastic
//              (jitter or a flapping link), else 1 (every iteration is the same step); the
//              planner simulates only the candidates its bounds cannot rule out, so the cost is
//              paid on the survivors alone.
//   p90        nearest rank: with 20 draws, the 18th fastest.
//   metrics    the reported step (iteration_time_s, breakdown) is iteration 0 under the faults.
//   bound      the nominal step-time bound: faults only slow tasks down (speed and bandwidth
//              factors <= 1, jitter slowdowns >= 1, added latency >= 0), so every iteration,
//              hence every percentile, is at least the nominal step time.
// `time` and `cost` rank the nominal cluster (the straggler model is not applied); p90 is the
// objective that plans for stragglers.
//
// Thread-safety: immutable; evaluate() may run on several threads at once.
#pragma once

#include <cstdint>
#include <memory>

#include "simulator/planner/plan_evaluator.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

// Draws per plan for a stochastic model: enough for the 90th percentile to be an order
// statistic of its own (the 18th of 20) while keeping a search's survivors cheap; the estimate's
// spread at 20 draws is wide, so compare close plans with `simulate --iterations 1000`.
inline constexpr int64_t kP90PlanIterations = 20;

std::unique_ptr<PlanEvaluator> make_p90_evaluator(const ModelSpec& model,
                                                  const ClusterSpec& cluster,
                                                  const StepOptions& step, uint64_t seed);

}  // namespace ppsim
