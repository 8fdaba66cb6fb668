#include "simulator/model/worker_layout.h"

#include "simulator/spec/error.h"

namespace ppsim {

WorkerLayout build_worker_layout(const Plan& plan, const ClusterSpec& cluster) {
  WorkerLayout layout;
  layout.stages = static_cast<int32_t>(plan.pp);
  layout.replicas = static_cast<int32_t>(plan.dp);
  // Global GPU and node numbering, node group by node group.
  std::vector<int64_t> group_first_gpu;
  int64_t total_nodes = 0, total_gpus = 0;
  for (const NodeGroup& group : cluster.nodes) {
    total_nodes += group.count;
    total_gpus += group.count * group.gpus_per_node;
  }
  layout.node_group_of_node.reserve(total_nodes);
  layout.node_of_gpu.reserve(total_gpus);
  int64_t gpu = 0;
  int32_t node = 0;
  for (size_t g = 0; g < cluster.nodes.size(); ++g) {
    const NodeGroup& group = cluster.nodes[g];
    group_first_gpu.push_back(gpu);
    for (int64_t n = 0; n < group.count; ++n, ++node) {
      layout.node_group_of_node.push_back(static_cast<int32_t>(g));
      for (int64_t i = 0; i < group.gpus_per_node; ++i, ++gpu) layout.node_of_gpu.push_back(node);
    }
  }
  int64_t per_stage = plan.tp * plan.cp * plan.dp;
  int64_t per_worker = plan.tp * plan.cp;
  std::vector<int64_t> group_next(cluster.nodes.size(), 0);
  std::vector<int64_t> stage_first(plan.pp);
  for (int64_t r = 0; r < plan.pp; ++r) {
    if (plan.placement.empty()) {
      stage_first[r] = r * per_stage;
    } else {
      int64_t g = plan.placement[r];
      stage_first[r] = group_first_gpu[g] + group_next[g];
      group_next[g] += per_stage;
    }
  }
  layout.workers.resize(plan.pp * plan.dp);
  for (int32_t d = 0; d < plan.dp; ++d) {
    for (int32_t r = 0; r < plan.pp; ++r) {
      WorkerSlot& slot = layout.workers[static_cast<size_t>(d) * plan.pp + r];
      slot.stage = r;
      slot.replica = d;
      slot.first_gpu = stage_first[r] + d * per_worker;
      slot.num_gpus = per_worker;
      PPSIM_CHECK(slot.first_gpu + per_worker <= static_cast<int64_t>(layout.node_of_gpu.size()));
      slot.node = layout.node_of_gpu[slot.first_gpu];
      slot.node_group = layout.node_group_of_node[slot.node];
      slot.nodes = layout.node_of_gpu[slot.first_gpu + per_worker - 1] - slot.node + 1;
    }
  }
  return layout;
}

}  // namespace ppsim
