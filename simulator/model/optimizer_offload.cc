#include "simulator/model/optimizer_offload.h"

#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <utility>

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
    if (!slot.spans_nodes()) {
      gpus[slot.node] += slot.num_gpus;
      continue;
    }
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
      ++gpus[layout.node_of_gpu[g]];
    }
  }
  return gpus;
}

namespace {

// Orders stage sequences, so a node's run of stages finds its entry without being copied.
struct SequenceLess {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

// Per entry of stages.sequences: the bytes of its GPUs, added in the layout's order.
std::vector<double> sequence_bytes(const NodeStages& stages,
                                   const std::vector<double>& host_bytes_per_gpu) {
  std::vector<double> bytes_of;
  bytes_of.reserve(stages.sequences.size());
  for (const std::vector<int32_t>& sequence : stages.sequences) {
    double bytes = 0;
    for (int32_t stage : sequence) bytes += host_bytes_per_gpu[stage];
    bytes_of.push_back(bytes);
  }
  return bytes_of;
}

// Peak, fits, worst node and excess over the classes of alike nodes (`bytes_of`: per sequence).
HostMemoryReport verdict(const ClusterSpec& cluster, const NodeStages& stages,
                         const std::vector<double>& bytes_of) {
  HostMemoryReport report;
  double least_headroom = std::numeric_limits<double>::infinity();
  // Alike nodes have one headroom, so the first node with the least is the first node of the
  // first class (in first-node order) that has it.
  for (const NodeStages::Class& alike : stages.classes) {
    const double bytes = bytes_of[alike.sequence];
    const double capacity = cluster.nodes[alike.node_group].host_memory_bytes;
    report.peak_bytes = std::max(report.peak_bytes, bytes);
    if (bytes > capacity) report.fits = false;
    const double headroom = capacity - bytes;
    if (headroom < least_headroom) {
      least_headroom = headroom;
      report.worst_node = alike.first_node;
      report.over_bytes = std::max(0.0, -headroom);
    }
  }
  return report;
}

}  // namespace

NodeStages node_stages(const WorkerLayout& layout) {
  // Each node's stages in one array (offsets per node), filled in the layout's order.
  const size_t num_nodes = layout.node_group_of_node.size();
  // A worker on one node is one run of its GPUs there; one across nodes goes GPU by GPU.
  std::vector<int32_t> offset(num_nodes + 1, 0);
  for (const WorkerSlot& slot : layout.workers) {
    if (!slot.spans_nodes()) {
      offset[slot.node + 1] += static_cast<int32_t>(slot.num_gpus);
      continue;
    }
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
      ++offset[layout.node_of_gpu[g] + 1];
    }
  }
  for (size_t n = 0; n < num_nodes; ++n) offset[n + 1] += offset[n];
  std::vector<int32_t> stages_of_nodes(offset.back());
  std::vector<int32_t> next(offset.begin(), offset.end() - 1);
  for (const WorkerSlot& slot : layout.workers) {
    if (!slot.spans_nodes()) {
      int32_t& at = next[slot.node];
      std::fill_n(stages_of_nodes.begin() + at, slot.num_gpus, slot.stage);
      at += static_cast<int32_t>(slot.num_gpus);
      continue;
    }
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
      stages_of_nodes[next[layout.node_of_gpu[g]]++] = slot.stage;
    }
  }
  NodeStages stages;
  std::map<std::vector<int32_t>, int32_t, SequenceLess> index;
  std::map<std::pair<int32_t, int32_t>, int32_t> classes;  // (sequence, node group) -> class.
  for (size_t n = 0; n < num_nodes; ++n) {
    if (offset[n] == offset[n + 1]) continue;
    const std::span<const int32_t> run(stages_of_nodes.data() + offset[n],
                                       stages_of_nodes.data() + offset[n + 1]);
    auto it = index.find(run);
    if (it == index.end()) {
      it = index.emplace(std::vector<int32_t>(run.begin(), run.end()),
                         static_cast<int32_t>(stages.sequences.size()))
               .first;
      stages.sequences.push_back(it->first);
    }
    const int32_t node = static_cast<int32_t>(n);
    const int32_t group = layout.node_group_of_node[n];
    stages.nodes.push_back(node);
    stages.sequence.push_back(it->second);
    auto added = classes.emplace(std::make_pair(it->second, group),
                                 static_cast<int32_t>(stages.classes.size()));
    if (added.second) stages.classes.push_back({node, it->second, group});
  }
  return stages;
}

HostMemoryReport host_memory_per_node(const ClusterSpec& cluster, const WorkerLayout& layout,
                                      const std::vector<double>& host_bytes_per_gpu) {
  return host_memory_per_node(cluster, layout, node_stages(layout), host_bytes_per_gpu);
}

HostMemoryReport host_memory_fit(const ClusterSpec& cluster, const NodeStages& stages,
                                 const std::vector<double>& host_bytes_per_gpu) {
  return verdict(cluster, stages, sequence_bytes(stages, host_bytes_per_gpu));
}

HostMemoryReport host_memory_per_node(const ClusterSpec& cluster, const WorkerLayout& layout,
                                      const NodeStages& stages,
                                      const std::vector<double>& host_bytes_per_gpu) {
  PPSIM_CHECK(static_cast<int32_t>(host_bytes_per_gpu.size()) == layout.stages);
  const std::vector<double> bytes_of = sequence_bytes(stages, host_bytes_per_gpu);
  HostMemoryReport report = verdict(cluster, stages, bytes_of);
  report.nodes.reserve(stages.nodes.size());
  for (size_t i = 0; i < stages.nodes.size(); ++i) {
    NodeHostMemory node;
    node.node = stages.nodes[i];
    node.node_group = layout.node_group_of_node[node.node];
    node.gpus = static_cast<int64_t>(stages.sequences[stages.sequence[i]].size());
    node.bytes = bytes_of[stages.sequence[i]];
    node.capacity_bytes = cluster.nodes[node.node_group].host_memory_bytes;
    report.nodes.push_back(node);
  }
  return report;
}

}  // namespace ppsim
