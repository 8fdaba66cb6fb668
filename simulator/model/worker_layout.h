// WorkerLayout: which GPUs, node and GPU type each pipeline worker of a plan occupies.
//
// A worker is one pipeline rank of one data-parallel replica: its tp x cp GPUs, which run in
// lockstep. GPUs are numbered as Megatron-LM orders ranks: tp fastest, then cp, then dp, then pp
// (global rank = t + tp*(c + cp*(d + dp*r))). Without a placement, stage r takes the cluster's
// GPUs [r*tp*cp*dp, (r+1)*tp*cp*dp) in order (node groups one after another); with
// plan.placement, the stages placed on a node group fill that group's GPUs in stage order.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

struct WorkerSlot {
  int32_t stage = 0;      // Pipeline rank.
  int32_t replica = 0;    // Data-parallel replica.
  int64_t first_gpu = 0;  // Global GPU index of its first GPU.
  int64_t num_gpus = 1;   // tp * cp.
  int32_t node = 0;       // Global node index of its first GPU.
  int32_t node_group = 0; // Index into cluster.nodes.
  // Nodes its GPUs sit on (more than 1 with cp across nodes). Each of them sends its own GPUs'
  // share of the worker's inter-node traffic on its own NICs, alike; the network model routes
  // one node's share over the first node's links as their representative.
  int32_t nodes = 1;

  bool spans_nodes() const { return nodes > 1; }  // Its GPUs do not all sit on one node.
};

struct WorkerLayout {
  int32_t stages = 1;
  int32_t replicas = 1;
  std::vector<WorkerSlot> workers;  // Index replica * stages + stage.
  std::vector<int32_t> node_of_gpu; // Global GPU -> global node.
  std::vector<int32_t> node_group_of_node;

  const WorkerSlot& at(int32_t replica, int32_t stage) const {
    return workers[static_cast<size_t>(replica) * stages + stage];
  }
};

// REQUIRES: plan_problem(plan, model, cluster) is nullopt.
WorkerLayout build_worker_layout(const Plan& plan, const ClusterSpec& cluster);

}  // namespace ppsim
