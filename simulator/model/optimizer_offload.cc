#include "simulator/model/optimizer_offload.h"

#include <algorithm>
#include <limits>
#include <map>

#include "simulator/model/parameter_bytes.h"
#include "simulator/spec/error.h"

namespace ppsim {

double pcie_bytes_per_s(const NodeGroup& group) {
  return group.gpu.pcie_bandwidth > 0 ? group.gpu.pcie_bandwidth : kDefaultPcieBytesPerS;
}

OffloadSplit offload_split(const Plan& plan, const NodeGroup& group, double shard_parameters,
                           int64_t gpus_sharing_host) {
  PPSIM_CHECK(shard_parameters >= 0 && gpus_sharing_host >= 1);
  OffloadSplit split;
  split.fraction = offloaded_fraction(plan);
  split.host_parameters = split.fraction * shard_parameters;
  split.gpu_parameters = shard_parameters - split.host_parameters;
  split.d2h_bytes = split.host_parameters * gradient_bytes_per_param(plan);
  split.h2d_bytes = split.host_parameters * kOffloadHostToDeviceBytesPerParam;
  split.host_bytes =
      split.host_parameters * (kHostOptimizerBytesPerParam + gradient_bytes_per_param(plan));
  split.pcie_bytes_per_s = pcie_bytes_per_s(group);
  split.cpu_adam_parameters_per_s =
      group.cpu_adam_parameters_per_s / static_cast<double>(gpus_sharing_host);
  return split;
}

std::vector<int64_t> plan_gpus_per_node(const WorkerLayout& layout) {
  std::vector<int64_t> gpus(layout.node_group_of_node.size(), 0);
  for (const WorkerSlot& slot : layout.workers) {
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
      ++gpus[layout.node_of_gpu[g]];
    }
  }
  return gpus;
}

NodeStages node_stages(const WorkerLayout& layout) {
  std::vector<std::vector<int32_t>> per_node(layout.node_group_of_node.size());
  for (const WorkerSlot& slot : layout.workers) {
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
      per_node[layout.node_of_gpu[g]].push_back(slot.stage);
    }
  }
  NodeStages stages;
  std::map<std::vector<int32_t>, int32_t> index;
  for (size_t n = 0; n < per_node.size(); ++n) {
    if (per_node[n].empty()) continue;
    auto [it, added] =
        index.emplace(std::move(per_node[n]), static_cast<int32_t>(stages.sequences.size()));
    if (added) stages.sequences.push_back(it->first);
    stages.nodes.push_back(static_cast<int32_t>(n));
    stages.sequence.push_back(it->second);
  }
  return stages;
}

HostMemoryReport host_memory_per_node(const ClusterSpec& cluster, const WorkerLayout& layout,
                                      const std::vector<double>& host_bytes_per_gpu) {
  return host_memory_per_node(cluster, layout, node_stages(layout), host_bytes_per_gpu);
}

HostMemoryReport host_memory_per_node(const ClusterSpec& cluster, const WorkerLayout& layout,
                                      const NodeStages& stages,
                                      const std::vector<double>& host_bytes_per_gpu) {
  PPSIM_CHECK(static_cast<int32_t>(host_bytes_per_gpu.size()) == layout.stages);
  std::vector<double> sequence_bytes;
  for (const std::vector<int32_t>& sequence : stages.sequences) {
    double bytes = 0;
    for (int32_t stage : sequence) bytes += host_bytes_per_gpu[stage];
    sequence_bytes.push_back(bytes);
  }
  HostMemoryReport report;
  report.nodes.reserve(stages.nodes.size());
  double least_headroom = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < stages.nodes.size(); ++i) {
    NodeHostMemory node;
    node.node = stages.nodes[i];
    node.node_group = layout.node_group_of_node[node.node];
    node.gpus = static_cast<int64_t>(stages.sequences[stages.sequence[i]].size());
    node.bytes = sequence_bytes[stages.sequence[i]];
    node.capacity_bytes = cluster.nodes[node.node_group].host_memory_bytes;
    report.peak_bytes = std::max(report.peak_bytes, node.bytes);
    if (node.bytes > node.capacity_bytes) report.fits = false;
    double headroom = node.capacity_bytes - node.bytes;
    if (headroom < least_headroom) {
      least_headroom = headroom;
      report.worst_node = node.node;
      report.over_bytes = std::max(0.0, -headroom);
    }
    report.nodes.push_back(node);
  }
  return report;
}

}  // namespace ppsim
