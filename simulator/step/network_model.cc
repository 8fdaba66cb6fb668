#include "simulator/step/network_model.h"

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {

bool NetworkModel::replicas_symmetric(const WorkerLayout& layout,
                                      const std::vector<int32_t>& representative) {
  size_t nodes = layout.node_group_of_node.size();
  std::vector<int32_t> canonical(nodes, -1), count(nodes, 0), node_class(nodes, -1);
  for (const WorkerSlot& slot : layout.workers) {
    if (slot.spans_nodes()) return false;
    // A node's links are one class's: its workers' replicas share a representative.
    int32_t represented_by = representative[slot.replica];
    if (node_class[slot.node] < 0) node_class[slot.node] = represented_by;
    if (node_class[slot.node] != represented_by) return false;
    int32_t image = layout.at(represented_by, slot.stage).node;
    if (canonical[slot.node] < 0) canonical[slot.node] = image;
    if (canonical[slot.node] != image) return false;
    ++count[slot.node];
  }
  for (size_t n = 0; n < nodes; ++n) {
    if (canonical[n] >= 0 && count[n] != count[canonical[n]]) return false;
  }
  return true;
}

NetworkModel::NetworkModel(const ClusterSpec& cluster, const WorkerLayout& layout,
                           TaskGraph& graph, const CollectiveEfficiency& efficiency,
                           const std::vector<int32_t>& representative)
    : cluster_(cluster), layout_(layout), efficiency_(efficiency) {
  first_link_ = static_cast<LinkId>(graph.links().size());
  for (size_t node = 0; node < layout.node_group_of_node.size(); ++node) {
    const NodeGroup& group = cluster.nodes[layout.node_group_of_node[node]];
    double nic = group.nic.per_gpu ? group.nic.link.bandwidth * group.gpus_per_node
                                   : group.nic.link.bandwidth;
    nic *= efficiency.inter_bandwidth;
    auto add = [&graph, node](double capacity, LinkRole role) {
      return graph.add_link(capacity, role, static_cast<int32_t>(node), -1);
    };
    nic_out_.push_back(add(nic, LinkRole::kNicOut));
    nic_in_.push_back(add(nic, LinkRole::kNicIn));
    if (cluster.oversubscription > 1) {
      double fabric = nic / cluster.oversubscription;
      fabric_up_.push_back(add(fabric, LinkRole::kFabricUp));
      fabric_down_.push_back(add(fabric, LinkRole::kFabricDown));
    }
  }
  for (size_t w = 0; w < layout.workers.size(); ++w) {
    const WorkerSlot& slot = layout.workers[w];
    const NodeGroup& group = cluster.nodes[slot.node_group];
    double nvlink = group.intra_node.bandwidth * efficiency.intra_bandwidth * slot.num_gpus;
    const int32_t worker = static_cast<int32_t>(w);
    nvlink_out_.push_back(graph.add_link(nvlink, LinkRole::kIntraOut, -1, worker));
    nvlink_in_.push_back(graph.add_link(nvlink, LinkRole::kIntraIn, -1, worker));
  }
  // Link classes under the replica symmetry (identity when every replica is simulated).
  size_t count = graph.links().size() - first_link_;
  canonical_.resize(count);
  for (size_t i = 0; i < count; ++i) canonical_[i] = first_link_ + static_cast<LinkId>(i);
  if (!representative.empty()) {
    PPSIM_CHECK(replicas_symmetric(layout, representative));
    std::vector<int32_t> canonical_node(layout.node_group_of_node.size(), -1);
    for (const WorkerSlot& slot : layout.workers) {
      canonical_node[slot.node] = layout.at(representative[slot.replica], slot.stage).node;
    }
    auto map_node_links = [&](const std::vector<LinkId>& per_node) {
      for (size_t n = 0; n < per_node.size(); ++n) {
        if (canonical_node[n] >= 0) canonical_[per_node[n] - first_link_] = per_node[canonical_node[n]];
      }
    };
    map_node_links(nic_out_);
    map_node_links(nic_in_);
    map_node_links(fabric_up_);
    map_node_links(fabric_down_);
    for (size_t w = 0; w < layout.workers.size(); ++w) {
      const WorkerSlot& slot = layout.workers[w];
      // Index of (stage, the representative): workers are replica-major.
      int32_t image = representative[slot.replica] * layout.stages + slot.stage;
      canonical_[nvlink_out_[w] - first_link_] = nvlink_out_[image];
      canonical_[nvlink_in_[w] - first_link_] = nvlink_in_[image];
    }
  }
  class_size_.assign(count, 0);
  for (LinkId link : canonical_) class_size_[link - first_link_] += 1;
}

bool NetworkModel::same_node(int32_t from, int32_t to) const {
  const WorkerSlot& a = layout_.workers[from];
  const WorkerSlot& b = layout_.workers[to];
  return a.node == b.node && !a.spans_nodes() && !b.spans_nodes();
}

double NetworkModel::latency(int32_t from, int32_t to) const {
  const NodeGroup& group = cluster_.nodes[layout_.workers[from].node_group];
  return same_node(from, to) ? group.intra_node.latency : group.nic.link.latency;
}

void NetworkModel::add_node_links(int32_t from_node, int32_t to_node,
                                  std::vector<LinkId>& out) const {
  out.push_back(nic_out_[from_node]);
  if (!fabric_up_.empty()) {
    out.push_back(fabric_up_[from_node]);
    out.push_back(fabric_down_[to_node]);
  }
  out.push_back(nic_in_[to_node]);
}

void NetworkModel::add_links_between(int32_t from, int32_t to, std::vector<LinkId>& out) const {
  if (same_node(from, to)) {
    out.push_back(nvlink_out_[from]);
    out.push_back(nvlink_in_[to]);
    return;
  }
  add_node_links(layout_.workers[from].node, layout_.workers[to].node, out);
}

double NetworkModel::rail_cap(int32_t worker) const {
  const WorkerSlot& slot = layout_.workers[worker];
  const NodeGroup& group = cluster_.nodes[slot.node_group];
  if (!group.nic.per_gpu) return 0;
  return group.nic.link.bandwidth * efficiency_.inter_bandwidth * slot.num_gpus;
}

std::vector<double> NetworkModel::weights(
    const std::vector<LinkId>& route, const std::vector<LinkId>& twin_links) const {
  std::vector<double> result;
  bool all_one = true;
  for (LinkId link : route) {
    double crossings = 0;
    for (LinkId other : twin_links) crossings += canonical(other) == link ? 1 : 0;
    double weight = std::max(1.0, crossings / class_size_[link - first_link_]);
    all_one = all_one && weight == 1.0;
    result.push_back(weight);
  }
  if (all_one) result.clear();
  return result;
}

RouteId NetworkModel::route(TaskGraph& graph, int32_t from, int32_t to,
                            const std::vector<std::pair<int32_t, int32_t>>& twins) {
  std::vector<LinkId> links;
  add_links_between(from, to, links);
  for (LinkId& link : links) link = canonical(link);
  std::vector<LinkId> twin_links;
  for (const auto& [a, b] : twins) add_links_between(a, b, twin_links);
  double cap = same_node(from, to) ? 0 : rail_cap(from);
  return graph.add_route(links, cap, weights(links, twin_links));
}

RouteId NetworkModel::node_route(TaskGraph& graph, int32_t worker, int32_t from_node,
                                 int32_t to_node,
                                 const std::vector<std::pair<int32_t, int32_t>>& twin_nodes,
                                 int32_t hop_to_node) {
  std::vector<LinkId> links;
  add_node_links(from_node, to_node, links);
  for (LinkId& link : links) link = canonical(link);
  std::vector<LinkId> twin_links;
  for (const auto& [a, b] : twin_nodes) add_node_links(a, b, twin_links);
  std::vector<LinkId> hop;
  if (hop_to_node >= 0) add_node_links(from_node, hop_to_node, hop);
  return graph.add_route(links, rail_cap(worker), weights(links, twin_links), std::move(hop));
}

}  // namespace ppsim
