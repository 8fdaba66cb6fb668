// NetworkModel: the cluster's links in a TaskGraph, and routes between pipeline workers.
//
// Links (per direction, capacities at NCCL's achievable fraction of the datasheet, from
// CollectiveEfficiency in collective_cost.h):
// - per node: nic_out and nic_in, the node's NICs together (gpus_per_node x per-GPU NIC, or the
//   node total when NICs are shared);
// - per node, when the fabric is oversubscribed (ratio o > 1): fabric_up and fabric_down of
//   nic capacity / o;
// - per worker: nvlink_out and nvlink_in, its GPUs' intra-node bandwidth (intra_node.bandwidth
//   x its GPU count).
// A route between two workers on one node crosses the sender's nvlink_out and the receiver's
// nvlink_in; across nodes it crosses nic_out, (fabric_up, fabric_down,) nic_in, and each flow
// is capped by the worker's own NIC rails (its GPUs' NICs) when NICs are per GPU.
// Twins: when identical replicas are simulated once per replica class (each class's first
// replica, its representative, stands for the class: replica_classes.h), every link is mapped
// to its class under the replica symmetry (node n -> the node where the representative of n's
// replicas has its worker of the same stage; worker (r, d) -> (r, representative of d)), the
// route runs over canonical links, and each canonical link's weight is the number of twin flows
// crossing its class divided by the class size: the load one link of the class carries, by
// symmetry. One class of all replicas is the symmetric case (replica 0 stands for all).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "simulator/cost/collective_cost.h"
#include "simulator/engine/task_graph.h"
#include "simulator/model/worker_layout.h"
#include "simulator/spec/cluster_spec.h"

namespace ppsim {

class NetworkModel {
 public:
  // Adds the links to `graph`. REQUIRES: `layout` was built for `cluster`.
  // `representative`: per replica, the replica that stands for it (empty: every replica is
  // simulated); REQUIRES replicas_symmetric(layout, representative) when not empty.
  NetworkModel(const ClusterSpec& cluster, const WorkerLayout& layout, TaskGraph& graph,
               const CollectiveEfficiency& efficiency = {},
               const std::vector<int32_t>& representative = {});

  // True when no worker spans nodes, every node's workers have one representative, and they
  // are the images of that representative's workers on one node with as many workers (the
  // symmetry that makes simulating the representatives alone exact). `representative` has one
  // entry per replica.
  static bool replicas_symmetric(const WorkerLayout& layout,
                                 const std::vector<int32_t>& representative);

  // A route from worker `from` to worker `to` (indices into layout.workers). `twins` lists the
  // worker pairs whose flows are identical to this one (it includes (from, to) itself).
  RouteId route(TaskGraph& graph, int32_t from, int32_t to,
                const std::vector<std::pair<int32_t, int32_t>>& twins);
  // A route between two nodes for one worker's rails (inter-node collective phases).
  // `hop_to_node` >= 0: the route stands for the hop from `from_node` to that node
  // (Route::hop_links).
  RouteId node_route(TaskGraph& graph, int32_t worker, int32_t from_node, int32_t to_node,
                     const std::vector<std::pair<int32_t, int32_t>>& twin_nodes,
                     int32_t hop_to_node = -1);

  // One-way latency between two workers: intra-node link latency, or NIC latency.
  double latency(int32_t from, int32_t to) const;
  bool same_node(int32_t from, int32_t to) const;
  const CollectiveEfficiency& efficiency() const { return efficiency_; }

 private:
  // Append the links a flow crosses to `out` (no list per twin: a route may have hundreds).
  void add_links_between(int32_t from, int32_t to, std::vector<LinkId>& out) const;
  void add_node_links(int32_t from_node, int32_t to_node, std::vector<LinkId>& out) const;
  double rail_cap(int32_t worker) const;
  // Per link of `route`: its crossings by the twins (`twin_links`: every twin's links, one
  // list) over its class's size, at least 1; empty when all are 1.
  std::vector<double> weights(const std::vector<LinkId>& route,
                              const std::vector<LinkId>& twin_links) const;
  LinkId canonical(LinkId link) const { return canonical_[link - first_link_]; }

  const ClusterSpec& cluster_;
  const WorkerLayout& layout_;
  CollectiveEfficiency efficiency_;
  std::vector<LinkId> nic_out_, nic_in_, fabric_up_, fabric_down_;  // Per node.
  std::vector<LinkId> nvlink_out_, nvlink_in_;                      // Per worker.
  LinkId first_link_ = 0;
  std::vector<LinkId> canonical_;     // Per link (offset by first_link_): its class's canonical link.
  std::vector<double> class_size_;    // Per link (offset): links in its class (canonical links).
};

}  // namespace ppsim
