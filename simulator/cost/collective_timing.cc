#include "simulator/cost/collective_timing.h"

#include <algorithm>
#include <limits>

#include "simulator/cost/profile_table.h"
#include "simulator/spec/error.h"

namespace ppsim {

CollectiveGroup collective_group(int64_t size, int64_t per_node, const NodeGroup& nodes) {
  CollectiveGroup group;
  group.size = size;
  group.ranks_per_node = std::max<int64_t>(1, std::min(per_node, size));
  while (group.size % group.ranks_per_node != 0) --group.ranks_per_node;
  group.intra = nodes.intra_node;
  group.inter = {nodes.nic_bandwidth_per_gpu(), nodes.nic.link.latency};
  return group;
}

PassCost collective_time(Collective kind, double bytes, const CollectiveGroup& group,
                         const CollectiveEfficiency& efficiency, const ProfileTable* profile,
                         bool ideal_links) {
  PassCost cost;
  if (ideal_links || group.size <= 1 || bytes <= 0) return cost;
  // A profile measured NCCL's all-to-all, not a deduplicating dispatcher's.
  if (profile && group.cross_node_share == 1 && group.intra_node_share == 1) {
    if (std::optional<ProfileEstimate> measured =
            profile->collective(kind, group.size, group.ranks_per_node, bytes)) {
      cost.seconds = measured->seconds;
      cost.source = CostSource::kProfile;
      cost.extrapolated = measured->extrapolated;
      return cost;
    }
  }
  cost.seconds = collective_cost(kind, bytes, group, efficiency).seconds;
  return cost;
}

double transfer_seconds_alone(const TaskGraph& graph, RouteId route, double latency,
                              double bytes) {
  if (route < 0 || bytes <= 0) return latency;
  const Route& r = graph.route(route);
  double rate = r.rate_cap > 0 ? r.rate_cap : std::numeric_limits<double>::infinity();
  for (LinkId link : r.links) rate = std::min(rate, graph.links()[link].capacity);
  PPSIM_CHECK(rate > 0 && rate < std::numeric_limits<double>::infinity(),
              "a route with bytes has no finite capacity");
  return latency + bytes / rate;
}

CalibratedTransfer calibrate_transfer(const TaskGraph& graph, RouteId route, double latency,
                                      double bytes, double measured) {
  PPSIM_CHECK(measured > 0, "a measured transfer takes time");
  double modelled = transfer_seconds_alone(graph, route, latency, route < 0 ? 0 : bytes);
  if (modelled <= 0) return {measured, 0};  // Nothing to scale: all of it becomes latency.
  double scale = measured / modelled;
  return {latency * scale, route < 0 ? 0 : bytes * scale};
}

}  // namespace ppsim
