// The planner's time-to-train objective (and the cost objective when the search has a training
// run): simulates a plan's step, then times the whole run (time_to_train.h).
//
//   time-to-train  objective = the run's expected wall days.
//   cost           objective = the run's expected cost_usd (wall time x the price of the plan's
//                  GPUs; planner.h's cost objective, for a whole run instead of a step).
//   bound          from a lower bound b on the step time: steps x b x e^(R/M) days (or that x
//                  the plan's dollars per second), R the restart without the checkpoint load, M
//                  the plan's MTBF (planner.h has why it is a bound).
//
// Thread-safety: immutable; evaluate() may run on several threads at once.
#pragma once

#include <memory>

#include "simulator/planner/plan_evaluator.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/training_spec.h"
#include "simulator/step/step.h"

namespace ppsim {

// `training` is copied. cost: rank by the run's dollars instead of its days.
std::unique_ptr<PlanEvaluator> make_time_to_train_evaluator(const ModelSpec& model,
                                                            const ClusterSpec& cluster,
                                                            const StepOptions& step,
                                                            const TrainingSpec& training,
                                                            bool cost);

// A lower bound on the run's wall time, seconds, given a lower bound on the plan's step time.
double wall_time_bound(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                       const TrainingSpec& training, double step_time_bound_s);

}  // namespace ppsim
