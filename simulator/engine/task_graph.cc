#include "simulator/engine/task_graph.h"

#include <fmt/format.h>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {

StreamId TaskGraph::add_stream(int32_t device, std::string name, double speed) {
  PPSIM_CHECK(device >= 0 && speed > 0);
  streams_.push_back({device, speed, std::move(name)});
  stream_last_.push_back(-1);
  num_devices_ = std::max(num_devices_, device + 1);
  return static_cast<StreamId>(streams_.size() - 1);
}

LinkId TaskGraph::add_link(double capacity, std::string name) {
  PPSIM_CHECK(capacity > 0, name);
  links_.push_back({capacity, std::move(name)});
  return static_cast<LinkId>(links_.size() - 1);
}

LinkId TaskGraph::add_link(double capacity, LinkRole role, int32_t node, int32_t worker) {
  Link link;
  link.capacity = capacity;
  link.role = role;
  link.node = node;
  link.worker = worker;
  PPSIM_CHECK(capacity > 0, link_label(link));
  links_.push_back(std::move(link));
  return static_cast<LinkId>(links_.size() - 1);
}

std::string link_label(const Link& link) {
  switch (link.role) {
    case LinkRole::kOther: return link.name;
    case LinkRole::kIntraOut: return fmt::format("worker{}/intra_out", link.worker);
    case LinkRole::kIntraIn: return fmt::format("worker{}/intra_in", link.worker);
    case LinkRole::kNicOut: return fmt::format("node{}/nic_out", link.node);
    case LinkRole::kNicIn: return fmt::format("node{}/nic_in", link.node);
    case LinkRole::kFabricUp: return fmt::format("node{}/fabric_up", link.node);
    case LinkRole::kFabricDown: return fmt::format("node{}/fabric_down", link.node);
  }
  return link.name;
}

RouteId TaskGraph::add_route(std::vector<LinkId> links, double rate_cap,
                             std::vector<double> weights, std::vector<LinkId> hop_links) {
  for (LinkId link : links) PPSIM_CHECK(link >= 0 && link < static_cast<LinkId>(links_.size()));
  for (LinkId link : hop_links) {
    PPSIM_CHECK(link >= 0 && link < static_cast<LinkId>(links_.size()));
  }
  PPSIM_CHECK(weights.empty() || weights.size() == links.size());
  for (double weight : weights) PPSIM_CHECK(weight >= 1);
  routes_.push_back({std::move(links), rate_cap, std::move(weights), std::move(hop_links)});
  return static_cast<RouteId>(routes_.size() - 1);
}

void TaskGraph::reserve_tasks(int64_t tasks) {
  tasks_.reserve(static_cast<size_t>(tasks));
  stream_predecessor_.reserve(static_cast<size_t>(tasks));
}

TaskId TaskGraph::add_task(const Task& task) {
  PPSIM_CHECK(task.stream >= 0 && task.stream < num_streams());
  PPSIM_CHECK(task.group < num_groups_);
  PPSIM_CHECK(task.work >= 0 && task.latency >= 0);
  if (task.kind == TaskKind::kTransfer && task.work > 0) {
    PPSIM_CHECK(task.route >= 0 && task.route < static_cast<RouteId>(routes_.size()));
  }
  TaskId id = static_cast<TaskId>(tasks_.size());
  tasks_.push_back(task);
  stream_predecessor_.push_back(stream_last_[task.stream]);
  stream_last_[task.stream] = id;
  return id;
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  PPSIM_CHECK(before >= 0 && before < num_tasks() && after >= 0 && after < num_tasks());
  dependencies_.emplace_back(before, after);
}

namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

// Records the first back edge a depth-first search meets, with the tree parents to rebuild it.
struct CycleVisitor : boost::default_dfs_visitor {
  std::vector<int32_t>* parent;
  std::optional<std::pair<int32_t, int32_t>>* first_back_edge;
  void tree_edge(Graph::edge_descriptor edge, const Graph& graph) const {
    (*parent)[boost::target(edge, graph)] = static_cast<int32_t>(boost::source(edge, graph));
  }
  void back_edge(Graph::edge_descriptor edge, const Graph& graph) const {
    if (*first_back_edge) return;
    *first_back_edge = std::make_pair(static_cast<int32_t>(boost::source(edge, graph)),
                                      static_cast<int32_t>(boost::target(edge, graph)));
  }
};

}  // namespace

std::optional<std::string> TaskGraph::find_cycle(
    const std::function<std::string(TaskId)>& describe) const {
  Graph graph(tasks_.size());
  for (TaskId id = 0; id < num_tasks(); ++id) {
    if (stream_predecessor_[id] >= 0) boost::add_edge(stream_predecessor_[id], id, graph);
  }
  for (const auto& [before, after] : dependencies_) boost::add_edge(before, after, graph);
  std::vector<int32_t> parent(tasks_.size(), -1);
  std::optional<std::pair<int32_t, int32_t>> back_edge;
  CycleVisitor visitor;
  visitor.parent = &parent;
  visitor.first_back_edge = &back_edge;
  boost::depth_first_search(graph, boost::visitor(visitor));
  if (!back_edge) return std::nullopt;
  // The cycle: to -> ... -> from (tree path) -> to.
  std::vector<int32_t> path;
  for (int32_t node = back_edge->first; node != back_edge->second && node >= 0;
       node = parent[node]) {
    path.push_back(node);
  }
  path.push_back(back_edge->second);
  std::reverse(path.begin(), path.end());
  std::string text;
  for (int32_t node : path) text += describe(node) + " -> ";
  return text + describe(back_edge->second);
}

}  // namespace ppsim
