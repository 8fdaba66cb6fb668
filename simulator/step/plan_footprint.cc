#include "simulator/step/plan_footprint.h"

#include <algorithm>
#include <map>
#include <utility>

namespace ppsim {

int64_t PlanFootprint::gpus() const {
  int64_t total = 0;
  for (const GroupFootprint& group : groups) total += group.gpus;
  return total;
}

int64_t PlanFootprint::hosts() const {
  int64_t total = 0;
  for (const GroupFootprint& group : groups) total += group.hosts;
  return total;
}

int64_t PlanFootprint::nics() const {
  int64_t total = 0;
  for (const GroupFootprint& group : groups) total += group.nics;
  return total;
}

PlanFootprint plan_footprint(const ClusterSpec& cluster, const Plan& plan) {
  // The plan's GPUs as ranges of global GPU indices: stage r takes tp*cp*dp contiguous GPUs,
  // in cluster order or at the next free GPUs of its placed group (worker_layout.h's numbering),
  // computed here without the per-GPU tables, as the planner's bounds call this per candidate.
  std::vector<int64_t> group_first;
  int64_t first = 0;
  for (const NodeGroup& group : cluster.nodes) {
    group_first.push_back(first);
    first += group.num_gpus();
  }
  const int64_t per_stage = plan.tp * plan.cp * plan.dp;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // [begin, end).
  if (plan.placement.empty()) {
    ranges.emplace_back(0, per_stage * plan.pp);
  } else {
    std::vector<int64_t> next(cluster.nodes.size(), 0);
    for (int64_t r = 0; r < plan.pp; ++r) {
      int64_t g = plan.placement[r];
      ranges.emplace_back(group_first[g] + next[g], group_first[g] + next[g] + per_stage);
      next[g] += per_stage;
    }
  }
  // GPUs used per node: whole nodes counted at once, boundary nodes through the map.
  PlanFootprint footprint;
  footprint.groups.resize(cluster.nodes.size());
  std::map<std::pair<size_t, int64_t>, int64_t> partial;  // (group, node in group) -> GPUs.
  auto add_nodes = [&](size_t g, int64_t nodes, int64_t used_each) {
    const NodeGroup& group = cluster.nodes[g];
    const int64_t hosts = (used_each + group.gpus_per_host() - 1) / group.gpus_per_host();
    GroupFootprint& share = footprint.groups[g];
    share.gpus += nodes * used_each;
    share.hosts += nodes * hosts;
    share.nics += nodes * (group.nic.per_gpu ? used_each : hosts);
  };
  for (const auto& [begin, end] : ranges) {
    for (size_t g = 0; g < cluster.nodes.size(); ++g) {
      const int64_t lo = std::max(begin, group_first[g]) - group_first[g];
      const int64_t hi =
          std::min(end, group_first[g] + cluster.nodes[g].num_gpus()) - group_first[g];
      if (hi <= lo) continue;
      const int64_t n = cluster.nodes[g].gpus_per_node;
      int64_t first_node = lo / n;
      int64_t last_node = (hi - 1) / n;
      if (first_node == last_node) {
        partial[{g, first_node}] += hi - lo;
        continue;
      }
      partial[{g, first_node}] += (first_node + 1) * n - lo;
      partial[{g, last_node}] += hi - last_node * n;
      if (last_node - first_node > 1) add_nodes(g, last_node - first_node - 1, n);
    }
  }
  for (const auto& [node, used] : partial) add_nodes(node.first, 1, used);
  return footprint;
}

}  // namespace ppsim
