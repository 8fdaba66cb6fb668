// PlanFootprint: the hardware a plan occupies, per node group: its GPUs, the hosts they sit in
// and those hosts' NICs. What can fail under the job, which nodes write its checkpoints, and
// what it pays for.
//
// GPUs are the plan's tp*pp*dp*cp GPUs as worker_layout.h places them. A node (NVLink domain)
// the plan touches counts ceil(used GPUs / GPUs per host) hosts (a rack-scale domain of 72 GB200
// holds 18 hosts of 4). NICs: with one NIC per GPU (nic.per_gpu), one per used GPU; else one per
// used host.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// The plan's share of one node group.
struct GroupFootprint {
  int64_t gpus = 0;   // GPUs of the plan in this group.
  int64_t hosts = 0;  // Hosts (servers) holding them.
  int64_t nics = 0;   // NICs of those GPUs or hosts.
};

struct PlanFootprint {
  std::vector<GroupFootprint> groups;  // One per cluster node group, in order.
  int64_t gpus() const;
  int64_t hosts() const;
  int64_t nics() const;
};

// REQUIRES: plan_problem(plan, model, cluster) is nullopt (the plan's GPUs exist).
PlanFootprint plan_footprint(const ClusterSpec& cluster, const Plan& plan);

}  // namespace ppsim
