#include "simulator/model/optimizer_offload.h"

#include <algorithm>
#include <limits>

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

HostMemoryReport host_memory_per_node(const ClusterSpec& cluster, const WorkerLayout& layout,
                                      const std::vector<double>& host_bytes_per_gpu) {
  PPSIM_CHECK(static_cast<int32_t>(host_bytes_per_gpu.size()) == layout.stages);
  std::vector<double> bytes(layout.node_group_of_node.size(), 0.0);
  std::vector<int64_t> gpus(layout.node_group_of_node.size(), 0);
  for (const WorkerSlot& slot : layout.workers) {
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
      bytes[layout.node_of_gpu[g]] += host_bytes_per_gpu[slot.stage];
      ++gpus[layout.node_of_gpu[g]];
    }
  }
  HostMemoryReport report;
  double least_headroom = std::numeric_limits<double>::infinity();
  for (size_t n = 0; n < bytes.size(); ++n) {
    if (gpus[n] == 0) continue;
    NodeHostMemory node;
    node.node = static_cast<int32_t>(n);
    node.node_group = layout.node_group_of_node[n];
    node.gpus = gpus[n];
    node.bytes = bytes[n];
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
