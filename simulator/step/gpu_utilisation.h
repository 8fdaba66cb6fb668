// GpuTypeUse: how busy each GPU type of a (heterogeneous) plan was in a simulated step, so a
// user sees whether the stages sized to each type keep both types working.
//
// Per GPU type (catalog name), over the plan's workers on that type (a worker is one pipeline
// rank of one replica: tp x cp GPUs that compute in lockstep; simulated workers stand for their
// identical replicas):
//   count              the plan's GPUs of this type
//   compute_s          mean over its workers of the seconds their compute stream ran F, B, I
//                      and W tasks (the exposed TP/EP/CP communication inside them included,
//                      as in stages[].busy_s)
//   idle_s             iteration_time_s - compute_s: waiting in the bubble, for gradient
//                      reduction, or on the optimizer
//   busy_fraction      compute_s / iteration_time_s
//   peak_memory_bytes  the largest stage peak (stages[].peak_memory_bytes) among its stages
//   capacity_bytes     the type's GPU memory
// Types come in the order of their first pipeline stage.
#pragma once

#include <string>
#include <vector>

#include "simulator/engine/timeline.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

struct GpuTypeUse {
  std::string gpu;
  int64_t count = 0;
  double busy_fraction = 0;
  double compute_s = 0;
  double idle_s = 0;
  double peak_memory_bytes = 0;
  double capacity_bytes = 0;
};

// `stage_peak_bytes[r]`: stage r's peak memory per GPU (as StepMetrics reports it).
// REQUIRES: `timeline` simulated step.lowered.graph.
std::vector<GpuTypeUse> gpu_type_use(const ClusterSpec& cluster, const Step& step,
                                     const Timeline& timeline,
                                     const std::vector<double>& stage_peak_bytes);

}  // namespace ppsim
