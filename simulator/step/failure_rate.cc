#include "simulator/step/failure_rate.h"

namespace ppsim {

FailureRate job_failure_rate(const ClusterSpec& cluster, const PlanFootprint& footprint) {
  FailureRate rate;
  for (size_t g = 0; g < cluster.nodes.size(); ++g) {
    const NodeReliability& reliability = cluster.nodes[g].reliability;
    const GroupFootprint& share = footprint.groups[g];
    rate.gpu += static_cast<double>(share.gpus) * reliability.gpu_failure_rate;
    rate.node += static_cast<double>(share.hosts) * reliability.node_failure_rate;
    rate.nic += static_cast<double>(share.nics) * reliability.nic_failure_rate;
  }
  return rate;
}

}  // namespace ppsim
