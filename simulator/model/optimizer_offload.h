// Optimizer offload as Deep Optimizer States runs it (Maurya et al., 2024): one GPU's Adam
// update split between the GPU and its host, the PCIe traffic and host time of the host's part,
// and the host memory the offloaded states take on each node. docs/offload.md tells the story.
//
// One GPU updates `shard` parameters: all it holds, or its 1/(dp*cp) under ZeRO >= 1. With the
// plan's offload fraction f (offloaded_fraction(plan); 0 without offload):
//   GPU part   (1 - f) * shard parameters, updated at HBM speed as without offload
//              (kStepAdamBytesPerParameter bytes each); their 12 optimizer bytes stay on the GPU.
//   host part  f * shard parameters:
//     d2h      their main gradients (4 bytes each, 2 for fp16 plans), copied bucket by bucket as the backward
//              makes them ready (after the bucket's data-parallel reduction), over the GPU's own
//              PCIe link, overlapped with the backward;
//     CPU Adam on the node's CPUs, whose rate (NodeGroup::cpu_adam_parameters_per_s) is shared
//              evenly by the plan's GPUs on that node: they all update at the end of the step;
//     h2d      the updated bf16 parameters (2 bytes each), after the host's Adam.
//   host memory per GPU: f * shard * (12 + 4) bytes (12 + 2 for fp16): fp32 master weights, Adam m and v,
//   and the gradient buffer the d2h copies land in. A node holds the sum over the plan's GPUs on it.
// Not modelled: PCIe switches shared by two GPUs (each GPU gets its own link's bandwidth), the
// NICs' traffic through the same switches, subgroup pipelining of CPU Adam with the h2d copy
// (DeepSpeed's sub_group_size): the host part runs d2h -> Adam -> h2d in sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/engine/task_graph.h"
#include "simulator/model/worker_layout.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// Bytes per offloaded parameter on the host: fp32 master + m + v (12), plus a buffer for the
// main gradient (gradient_bytes_per_param, parameter_bytes.h: 4 bytes, 2 for fp16 plans).
inline constexpr double kHostOptimizerBytesPerParam = 12;
// Bytes per offloaded parameter over PCIe: the main gradient down (gradient_bytes_per_param),
// the bf16 parameter up (Megatron and DeepSpeed copy the main gradient and return the model
// weight).
inline constexpr double kOffloadHostToDeviceBytesPerParam = 2;
// PCIe per direction when the GPU spec has none: Gen4 x16 (REFERENCE.md: 64 GB/s bidirectional).
inline constexpr double kDefaultPcieBytesPerS = 25e9;

// The split of one GPU's optimizer update.
struct OffloadSplit {
  double fraction = 0;                   // f, in [0, 1].
  double gpu_parameters = 0;             // (1 - f) * shard: updated on the GPU.
  double host_parameters = 0;            // f * shard: updated on the host.
  double d2h_bytes = 0;                  // Gradients down: host_parameters * 4 (2 fp16).
  double h2d_bytes = 0;                  // Parameters up: host_parameters * 2.
  double host_bytes = 0;                 // Host memory: host_parameters * (12 + 4 or 2).
  double pcie_bytes_per_s = 0;           // The GPU's PCIe link, per direction.
  double cpu_adam_parameters_per_s = 0;  // This GPU's share of its node's CPU Adam rate.

  double d2h_seconds() const { return host_parameters > 0 ? d2h_bytes / pcie_bytes_per_s : 0; }
  double h2d_seconds() const { return host_parameters > 0 ? h2d_bytes / pcie_bytes_per_s : 0; }
  double cpu_adam_seconds() const {
    return host_parameters > 0 ? host_parameters / cpu_adam_parameters_per_s : 0;
  }
};

// One simulated worker's offload: its split (per GPU; the worker's tp x cp GPUs are alike) and
// the tasks the step builder added for it (update_tasks.h), for reports.
struct WorkerOffload {
  OffloadSplit split;
  std::vector<TaskId> d2h;  // Gradient copies, one per bucket, in order.
  TaskId cpu_adam = -1;     // The host's Adam.
  TaskId h2d = -1;          // The updated parameters' copy back.
  TaskId gpu_update = -1;   // The GPU's own part of the update (the optimizer task).
};

// REQUIRES: shard_parameters >= 0, gpus_sharing_host >= 1.
OffloadSplit offload_split(const Plan& plan, const NodeGroup& group, double shard_parameters,
                           int64_t gpus_sharing_host);

// The PCIe bandwidth per direction of a node group's GPU (its spec, else the default).
double pcie_bytes_per_s(const NodeGroup& group);

// The plan's GPUs on each node of the cluster (global node index; 0 for unused nodes).
std::vector<int64_t> plan_gpus_per_node(const WorkerLayout& layout);

// Host memory of one node the plan uses.
struct NodeHostMemory {
  int32_t node = 0;           // Global node index (node groups in cluster order).
  int32_t node_group = 0;     // Index into cluster.nodes.
  int64_t gpus = 0;           // The plan's GPUs on it.
  double bytes = 0;           // Offloaded optimizer states and gradient buffers of those GPUs.
  double capacity_bytes = 0;  // NodeGroup::host_memory_bytes.
};

struct HostMemoryReport {
  std::vector<NodeHostMemory> nodes;  // Nodes holding any of the plan's GPUs, in node order.
  double peak_bytes = 0;              // Largest node's bytes.
  bool fits = true;                   // Every node's bytes <= its capacity.
  int32_t worst_node = -1;            // Least headroom (first on ties); -1 without nodes.
  double over_bytes = 0;              // max(0, bytes - capacity) of worst_node.
};

// The pipeline stages of each node's GPUs in the layout's order (its workers, then their GPUs),
// for the nodes holding any: what host_memory_per_node sums. Nodes whose sequences match sum
// alike, so each distinct sequence is kept once (a 16,384-GPU layout has a few per stage).
struct NodeStages {
  std::vector<int32_t> nodes;                  // Global node indices, in node order.
  std::vector<int32_t> sequence;               // Per entry of `nodes`: its entry of `sequences`.
  std::vector<std::vector<int32_t>> sequences;
  // Nodes alike for host memory (one sequence, one node group: the same bytes and capacity),
  // in the order of their first node: what host_memory_fit reads instead of every node.
  struct Class {
    int32_t first_node = 0;
    int32_t sequence = 0;    // Entry of `sequences`.
    int32_t node_group = 0;  // Index into cluster.nodes.
  };
  std::vector<Class> classes;
};
NodeStages node_stages(const WorkerLayout& layout);

// Per node: the sum of host_bytes_per_gpu[stage] over the plan's GPUs on it (a worker's GPUs
// all hold their stage's bytes), added in the layout's order. REQUIRES: one entry per
// pipeline stage; `stages` is node_stages(layout) (the planner's screen keeps one per layout,
// PlanScreen::placement).
HostMemoryReport host_memory_per_node(const ClusterSpec& cluster, const WorkerLayout& layout,
                                      const std::vector<double>& host_bytes_per_gpu);
HostMemoryReport host_memory_per_node(const ClusterSpec& cluster, const WorkerLayout& layout,
                                      const NodeStages& stages,
                                      const std::vector<double>& host_bytes_per_gpu);
// The same verdict without the per-node list (`nodes` empty; peak, fits, worst node and excess
// the same bits), one class of alike nodes at a time: what the planner's screen asks per plan.
HostMemoryReport host_memory_fit(const ClusterSpec& cluster, const NodeStages& stages,
                                 const std::vector<double>& host_bytes_per_gpu);

}  // namespace ppsim
