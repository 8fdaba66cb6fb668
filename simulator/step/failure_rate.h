// Reliability model: how often a plan's job is interrupted.
//
// Synchronous training stops when any GPU, host or NIC under it fails (the Llama 3 report:
// "a single GPU failure may require a restart of the entire job"). With independent,
// exponentially distributed failures the job's failures are a Poisson process whose rate is
// the sum of its components' rates (reliability_spec.h has the per-component defaults):
//   rate = sum over node groups of  gpus x gpu_rate + hosts x node_rate + nics x nic_rate
// over the plan's footprint (plan_footprint.h). The job's MTBF is 1 / rate.
#pragma once

#include "simulator/spec/cluster_spec.h"
#include "simulator/step/plan_footprint.h"

namespace ppsim {

// Failures per second of a job, by kind of component.
struct FailureRate {
  double gpu = 0;   // Its GPUs' failures per second.
  double node = 0;  // Its hosts'.
  double nic = 0;   // Its NICs' (cables and switch ports included).
  double total() const { return gpu + node + nic; }
};

FailureRate job_failure_rate(const ClusterSpec& cluster, const PlanFootprint& footprint);

}  // namespace ppsim
