// ReplicaClasses: which data-parallel replicas a step simulates, and whom each stands for.
//
// Two replicas are identical when every stage's worker is on the same node group and runs at
// the same speed (its slowest GPU's, straggler_effects.h), they get the same number of
// microbatches (plan.h's replica shares), and neither has a worker on a node a link fault
// touches (such a replica is a class of its own: the fault slows its routes after the build,
// found by the hop each route stands for, task_graph.h Route::hop_links). Identical replicas
// form a class; the class's first replica, its representative, is
// simulated and stands for the rest with a weight (its class size) on the links it shares with
// them (network_model.h). One slow GPU makes two classes: its replica, and the other dp - 1.
//
// Why this is exact: the replicas of a class meet the others only through the data-parallel
// collectives, whose members move in lockstep over the multiset of their links (task_graph.h);
// a class member's ring hop is counted on its own node's links (every node carries as many
// crossings out as in), so every link of a class carries what its canonical link carries.
// Tests hold a step with classes to the step with every replica simulated, byte for byte.
//
// Every replica is simulated (no classes) when the caller asks for it (--all-replicas), when a
// worker spans nodes or a node's workers have different representatives (the link symmetry
// fails: network_model.h replicas_symmetric), or when every class would hold one replica.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/model/worker_layout.h"
#include "simulator/spec/plan.h"

namespace ppsim {

struct ReplicaClasses {
  // Per replica, its class's representative; empty when every replica is simulated.
  std::vector<int32_t> representative;
  // The simulated replicas, in replica order (the representatives, or every replica).
  std::vector<int32_t> simulated;
  // Per simulated replica: how many replicas it stands for (1 when every replica is simulated).
  std::vector<int32_t> weight;
  // Per simulated replica: the replicas it stands for (members()).
  std::vector<std::vector<int32_t>> members_;

  bool all_simulated() const { return representative.empty(); }
  int32_t count() const { return static_cast<int32_t>(simulated.size()); }
  // The simulated replica that stands for `replica` (its index in `simulated`).
  int32_t simulated_of(int32_t replica) const;
  // The replicas simulated replica `simulated_index` stands for, in replica order.
  const std::vector<int32_t>& members(int32_t simulated_index) const {
    return members_[simulated_index];
  }
  // "127 + 1": the class sizes, for reports.
  std::string sizes_text() const;
};

// The classes of `plan`'s replicas on `layout` under per-GPU speeds `gpu_speed` (empty: all 1).
// A replica with a worker on one of `singled_out_nodes` (global node indices) is a class of
// its own. `deduplicate` false simulates every replica.
ReplicaClasses replica_classes(const Plan& plan, const WorkerLayout& layout,
                               const std::vector<double>& gpu_speed,
                               const std::vector<int64_t>& singled_out_nodes, bool deduplicate);

}  // namespace ppsim
