#include "simulator/step/gpu_utilisation.h"

#include <algorithm>

namespace ppsim {

std::vector<GpuTypeUse> gpu_type_use(const ClusterSpec& cluster, const Step& step,
                                     const Timeline& timeline,
                                     const std::vector<double>& stage_peak_bytes) {
  const TaskGraph& graph = step.lowered.graph;
  std::vector<double> busy(step.layout_worker.size(), 0.0);
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskInfo& info = step.lowered.info[id];
    if (info.worker >= 0 && is_compute_action(info)) {
      busy[info.worker] += timeline.end[id] - timeline.start[id];
    }
  }
  std::vector<GpuTypeUse> types;
  std::vector<int64_t> workers;  // Simulated workers per type.
  auto type_index = [&](const std::string& name) {
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i].gpu == name) return i;
    }
    types.push_back(GpuTypeUse{name});
    workers.push_back(0);
    return types.size() - 1;
  };
  // Stage order first, so types appear in the order of their first stage.
  for (int32_t r = 0; r < step.layout.stages; ++r) {
    for (int32_t d = 0; d < step.layout.replicas; ++d) {
      const WorkerSlot& slot = step.layout.at(d, r);
      const GpuSpec& gpu = cluster.nodes[slot.node_group].gpu;
      GpuTypeUse& type = types[type_index(gpu.name)];
      type.count += slot.num_gpus;
      type.capacity_bytes = gpu.memory_bytes;
      if (r < static_cast<int32_t>(stage_peak_bytes.size())) {
        type.peak_memory_bytes = std::max(type.peak_memory_bytes, stage_peak_bytes[r]);
      }
    }
  }
  // Every replica's workers in replica order, each a class's through its representative: the
  // same sum, term by term, as with every replica simulated.
  for (int32_t d = 0; d < step.layout.replicas; ++d) {
    int32_t simulated = step.classes.simulated_of(d);
    for (int32_t r = 0; r < step.layout.stages; ++r) {
      const WorkerSlot& slot = step.layout.at(d, r);
      size_t i = type_index(cluster.nodes[slot.node_group].gpu.name);
      types[i].compute_s += busy[simulated * step.layout.stages + r];
      ++workers[i];
    }
  }
  for (size_t i = 0; i < types.size(); ++i) {
    GpuTypeUse& type = types[i];
    if (workers[i] > 0) type.compute_s /= static_cast<double>(workers[i]);
    type.idle_s = std::max(0.0, timeline.makespan - type.compute_s);
    type.busy_fraction = timeline.makespan > 0 ? type.compute_s / timeline.makespan : 0;
  }
  return types;
}

}  // namespace ppsim
