#include "simulator/network_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/error.h"

namespace ppsim {

NetworkModel::NetworkModel(const ClusterSpec& cluster, const WorkerLayout& layout,
                           TaskGraph& graph, const CollectiveEfficiency& efficiency)
    : cluster_(cluster), layout_(layout), efficiency_(efficiency) {
  for (size_t node = 0; node < layout.node_group_of_node.size(); ++node) {
    const NodeGroup& group = cluster.nodes[layout.node_group_of_node[node]];
    double nic = group.nic.per_gpu ? group.nic.link.bandwidth * group.gpus_per_node
                                   : group.nic.link.bandwidth;
    nic *= efficiency.inter_bandwidth;
    nic_out_.push_back(graph.add_link(nic, fmt::format("node{}/nic_out", node)));
    nic_in_.push_back(graph.add_link(nic, fmt::format("node{}/nic_in", node)));
    if (cluster.oversubscription > 1) {
      double fabric = nic / cluster.oversubscription;
      fabric_up_.push_back(graph.add_link(fabric, fmt::format("node{}/fabric_up", node)));
      fabric_down_.push_back(graph.add_link(fabric, fmt::format("node{}/fabric_down", node)));
    }
  }
  for (size_t w = 0; w < layout.workers.size(); ++w) {
    const WorkerSlot& slot = layout.workers[w];
    const NodeGroup& group = cluster.nodes[slot.node_group];
    double nvlink = group.intra_node.bandwidth * efficiency.intra_bandwidth * slot.num_gpus;
    nvlink_out_.push_back(graph.add_link(nvlink, fmt::format("worker{}/intra_out", w)));
    nvlink_in_.push_back(graph.add_link(nvlink, fmt::format("worker{}/intra_in", w)));
  }
}

bool NetworkModel::same_node(int32_t from, int32_t to) const {
  const WorkerSlot& a = layout_.workers[from];
  const WorkerSlot& b = layout_.workers[to];
  return a.node == b.node && !a.spans_nodes && !b.spans_nodes;
}

double NetworkModel::latency(int32_t from, int32_t to) const {
  const NodeGroup& group = cluster_.nodes[layout_.workers[from].node_group];
  return same_node(from, to) ? group.intra_node.latency : group.nic.link.latency;
}

std::vector<LinkId> NetworkModel::node_links(int32_t from_node, int32_t to_node) const {
  std::vector<LinkId> links{nic_out_[from_node]};
  if (!fabric_up_.empty()) {
    links.push_back(fabric_up_[from_node]);
    links.push_back(fabric_down_[to_node]);
  }
  links.push_back(nic_in_[to_node]);
  return links;
}

std::vector<LinkId> NetworkModel::links_between(int32_t from, int32_t to) const {
  if (same_node(from, to)) return {nvlink_out_[from], nvlink_in_[to]};
  return node_links(layout_.workers[from].node, layout_.workers[to].node);
}

double NetworkModel::rail_cap(int32_t worker) const {
  const WorkerSlot& slot = layout_.workers[worker];
  const NodeGroup& group = cluster_.nodes[slot.node_group];
  if (!group.nic.per_gpu) return 0;
  return group.nic.link.bandwidth * efficiency_.inter_bandwidth * slot.num_gpus;
}

namespace {

// Weight per link of `links`: how many of the twin link lists contain it (at least 1).
std::vector<double> twin_weights(const std::vector<LinkId>& links,
                                 const std::vector<std::vector<LinkId>>& twin_links) {
  std::vector<double> weights;
  bool any = false;
  for (LinkId link : links) {
    double count = 0;
    for (const std::vector<LinkId>& other : twin_links) {
      count += std::count(other.begin(), other.end(), link) > 0 ? 1 : 0;
    }
    weights.push_back(std::max(1.0, count));
    any = any || count > 1;
  }
  if (!any) weights.clear();
  return weights;
}

}  // namespace

RouteId NetworkModel::route(TaskGraph& graph, int32_t from, int32_t to,
                            const std::vector<std::pair<int32_t, int32_t>>& twins) {
  std::vector<LinkId> links = links_between(from, to);
  std::vector<std::vector<LinkId>> twin_links;
  for (const auto& [a, b] : twins) twin_links.push_back(links_between(a, b));
  double cap = same_node(from, to) ? 0 : rail_cap(from);
  return graph.add_route(links, cap, twin_weights(links, twin_links));
}

RouteId NetworkModel::node_route(TaskGraph& graph, int32_t worker, int32_t from_node,
                                 int32_t to_node,
                                 const std::vector<std::pair<int32_t, int32_t>>& twin_nodes) {
  std::vector<LinkId> links = node_links(from_node, to_node);
  std::vector<std::vector<LinkId>> twin_links;
  for (const auto& [a, b] : twin_nodes) twin_links.push_back(node_links(a, b));
  return graph.add_route(links, rail_cap(worker), twin_weights(links, twin_links));
}

}  // namespace ppsim
