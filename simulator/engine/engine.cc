#include "simulator/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "simulator/engine/event_queue.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// An active transfer's bytes in flight (a slot of Simulation::flows_, reused once it drains).
struct Flow {
  TaskId task = -1;        // -1: the slot is free.
  RouteId route = -1;
  double remaining = 0;    // Bytes still to move at time `since`.
  double rate = 0;         // Bytes/s since `since`.
  double cap = kInfinity;  // Route's rate cap.
  double since = 0;        // When `remaining` was last brought up to date.
  uint32_t version = 0;    // Bumped whenever the rate changes; its kFlowEnd event carries it.
  uint32_t seen = 0;       // Component search mark (Simulation::epoch_).
  bool frozen = false;     // Progressive filling: the rate is final.
};

}  // namespace

PreparedGraph::PreparedGraph(const TaskGraph& graph) : structure_(std::make_unique<Structure>()) {
  Structure& s = *structure_;
  const int32_t n = graph.num_tasks();
  s.tasks = n;
  s.devices = graph.num_devices();
  s.routes = graph.num_routes();
  s.groups = graph.num_groups();
  s.links = static_cast<int32_t>(graph.links().size());
  s.waiting.assign(n, 0);
  // Successor lists in CSR form: explicit dependencies plus stream order.
  std::vector<int32_t> count(n + 1, 0);
  for (TaskId id = 0; id < n; ++id) {
    if (graph.stream_predecessor(id) >= 0) {
      ++count[graph.stream_predecessor(id) + 1];
      ++s.waiting[id];
    }
  }
  for (const auto& [before, after] : graph.dependencies()) {
    ++count[before + 1];
    ++s.waiting[after];
  }
  for (int32_t i = 0; i < n; ++i) count[i + 1] += count[i];
  s.successor_offset = count;
  s.successors.resize(count[n]);
  std::vector<int32_t> fill(count.begin(), count.end() - 1);
  for (TaskId id = 0; id < n; ++id) {
    if (graph.stream_predecessor(id) >= 0) s.successors[fill[graph.stream_predecessor(id)]++] = id;
  }
  for (const auto& [before, after] : graph.dependencies()) s.successors[fill[before]++] = after;
  // Per task, what the event loop reads, without touching the graph's larger records.
  s.device.resize(n);
  s.group.resize(n);
  s.compute.resize(n);
  s.alloc_bytes.resize(n);
  s.free_bytes.resize(n);
  for (TaskId id = 0; id < n; ++id) {
    const Task& task = graph.task(id);
    s.device[id] = graph.stream(task.stream).device;
    s.group[id] = task.group;
    s.compute[id] = task.kind == TaskKind::kCompute ? 1 : 0;
    s.alloc_bytes[id] = task.alloc_bytes;
    s.free_bytes[id] = task.free_bytes;
  }
  // Collective groups, members in CSR form.
  const int32_t groups = s.groups;
  s.group_size.assign(groups, 0);
  s.group_offset.assign(groups + 1, 0);
  for (TaskId id = 0; id < n; ++id) {
    if (graph.task(id).group >= 0) ++s.group_offset[graph.task(id).group + 1];
  }
  for (int32_t g = 0; g < groups; ++g) {
    s.group_size[g] = s.group_offset[g + 1];
    s.group_offset[g + 1] += s.group_offset[g];
  }
  s.group_members.resize(s.group_offset[groups]);
  std::vector<int32_t> group_fill(s.group_offset.begin(), s.group_offset.end() - 1);
  for (TaskId id = 0; id < n; ++id) {
    if (graph.task(id).group >= 0) {
      PPSIM_CHECK(graph.task(id).kind == TaskKind::kTransfer,
                  "a collective group holds a compute task");
      s.group_members[group_fill[graph.task(id).group]++] = id;
    }
  }
  // Routes flattened: links and weights side by side, in CSR form; each group's lockstep
  // route (header) after the graph's routes, as route num_routes() + group.
  s.route_offset.assign(1, 0);
  for (RouteId r = 0; r < graph.num_routes(); ++r) {
    const Route& route = graph.route(r);
    for (size_t j = 0; j < route.links.size(); ++j) {
      s.route_link.push_back(route.links[j]);
      s.route_weight.push_back(route.weights.empty() ? 1.0 : route.weights[j]);
    }
    s.route_offset.push_back(static_cast<int32_t>(s.route_link.size()));
  }
  s.group_work.assign(groups, 0.0);
  std::vector<int32_t> union_position(graph.links().size(), -1);
  for (int32_t g = 0; g < groups; ++g) {
    // The members' links, each once, weighted by how many member crossings it carries, in
    // the order the members (task order) first cross them.
    size_t first = s.route_link.size();
    for (int32_t i = s.group_offset[g]; i < s.group_offset[g + 1]; ++i) {
      const Task& task = graph.task(s.group_members[i]);
      if (task.work <= 0) continue;
      PPSIM_CHECK(task.route >= 0, "a collective member with bytes has no route");
      s.group_work[g] = std::max(s.group_work[g], task.work);
      for (int32_t j = s.route_offset[task.route]; j < s.route_offset[task.route + 1]; ++j) {
        LinkId link = s.route_link[j];
        if (union_position[link] < 0) {
          union_position[link] = static_cast<int32_t>(s.route_link.size());
          s.route_link.push_back(link);
          s.route_weight.push_back(0.0);
        }
        s.route_weight[union_position[link]] += s.route_weight[j];
      }
    }
    for (size_t j = first; j < s.route_link.size(); ++j) union_position[s.route_link[j]] = -1;
    s.route_offset.push_back(static_cast<int32_t>(s.route_link.size()));
  }
  s.link_capacity.resize(s.links);
  for (int32_t l = 0; l < s.links; ++l) s.link_capacity[l] = graph.links()[l].capacity;
}

PreparedGraph::~PreparedGraph() = default;
PreparedGraph::PreparedGraph(PreparedGraph&&) noexcept = default;
PreparedGraph& PreparedGraph::operator=(PreparedGraph&&) noexcept = default;

namespace {

class Simulation {
 public:
  // REQUIRES: `graph` is the one `prepared` was made from, or differs from it only as
  // simulate_graph(prepared, graph) allows (engine.h).
  Simulation(const PreparedGraph::Structure& prepared, const TaskGraph& graph)
      : graph_(graph),
        waiting_(prepared.waiting),
        successor_offset_(prepared.successor_offset),
        successors_(prepared.successors),
        device_(prepared.device),
        group_(prepared.group),
        compute_(prepared.compute),
        alloc_bytes_(prepared.alloc_bytes),
        free_bytes_(prepared.free_bytes),
        group_size_(prepared.group_size),
        group_offset_(prepared.group_offset),
        group_members_(prepared.group_members),
        group_work_(prepared.group_work),
        route_offset_(prepared.route_offset),
        route_link_(prepared.route_link),
        route_weight_(prepared.route_weight),
        link_capacity_(prepared.link_capacity) {
    PPSIM_CHECK(graph.num_tasks() == prepared.tasks && graph.num_devices() == prepared.devices &&
                    graph.num_routes() == prepared.routes &&
                    graph.num_groups() == prepared.groups &&
                    static_cast<int32_t>(graph.links().size()) == prepared.links,
                "a graph simulated on another graph's prepared structure");
    const int32_t n = graph.num_tasks();
    timeline_.start.assign(n, 0.0);
    timeline_.end.assign(n, 0.0);
    timeline_.peak_memory.assign(graph.num_devices(), 0.0);
    memory_.assign(graph.num_devices(), 0.0);
    // What a run may change: a compute task's duration at its stream's speed, a transfer's
    // latency, a route's rate cap (and so a group's: its members' narrowest).
    duration_.resize(n);
    for (TaskId id = 0; id < n; ++id) {
      const Task& task = graph.task(id);
      duration_[id] = task.kind == TaskKind::kCompute
                          ? task.work / graph.stream(task.stream).speed
                          : task.latency;
    }
    const int32_t groups = graph.num_groups();
    group_arrived_.assign(groups, 0);
    route_cap_.reserve(graph.num_routes() + groups);
    for (RouteId r = 0; r < graph.num_routes(); ++r) {
      const double cap = graph.route(r).rate_cap;
      route_cap_.push_back(cap > 0 ? cap : kInfinity);
    }
    group_latency_.assign(groups, 0.0);
    for (int32_t g = 0; g < groups; ++g) {
      double cap = kInfinity;
      for (int32_t i = group_offset_[g]; i < group_offset_[g + 1]; ++i) {
        const Task& task = graph.task(group_members_[i]);
        group_latency_[g] = std::max(group_latency_[g], task.latency);
        if (task.work > 0) cap = std::min(cap, route_cap_[task.route]);
      }
      route_cap_.push_back(cap);
    }
    const size_t links = link_capacity_.size();
    link_residual_.assign(links, 0.0);
    link_unfrozen_.assign(links, 0.0);
    link_unfrozen_flows_.assign(links, 0);
    link_seen_.assign(links, 0);
    link_dirty_.assign(links, 0);
    link_flows_.resize(links);
    queue_.reserve(static_cast<size_t>(n) + 64);
  }

  Timeline run() {
    for (TaskId id = 0; id < graph_.num_tasks(); ++id) {
      if (waiting_[id] == 0) ready(id);
    }
    for (;;) {
      // Rates change once per instant: after every event at `now_` has been handled.
      if ((!dirty_links_.empty() || !dirty_flows_.empty()) &&
          (queue_.empty() || queue_.top_time() > now_)) {
        reschedule_flows();
      }
      if (queue_.empty()) break;
      Event event = queue_.pop();
      ++timeline_.events;
      PPSIM_CHECK(std::isfinite(event.time), "an event at a non-finite simulated time");
      now_ = event.time;
      switch (event.type) {
        case EventType::kTaskEnd: finish(event.id); break;
        case EventType::kFlowStart: start_flow(event.id); break;
        case EventType::kFlowEnd:
          if (flows_[event.id].task >= 0 && flows_[event.id].version == event.version) {
            end_flow(event.id);
          }
          break;
      }
    }
    if (ended_count_ != graph_.num_tasks()) {
      TaskId stuck = first_unended();
      PPSIM_CHECK(false, fmt::format("{} of {} tasks never ran (first stuck: task {} on stream "
                                     "'{}'): the task graph has a cycle or a collective waits on "
                                     "itself",
                                     graph_.num_tasks() - ended_count_, graph_.num_tasks(), stuck,
                                     graph_.stream(graph_.task(stuck).stream).name));
    }
    return std::move(timeline_);
  }

 private:
  TaskId first_unended() const {
    for (TaskId id = 0; id < graph_.num_tasks(); ++id) {
      if (waiting_[id] >= 0) return id;
    }
    return 0;
  }

  // All predecessors have ended.
  void ready(TaskId id) {
    const int32_t group = group_[id];
    if (group < 0) {
      begin(id);
      return;
    }
    if (++group_arrived_[group] == group_size_[group]) {
      for (int32_t i = group_offset_[group]; i < group_offset_[group + 1]; ++i) {
        begin(group_members_[i]);
      }
      // One lockstep flow for the whole group, after its slowest member's latency.
      queue_.push(now_ + group_latency_[group], EventType::kFlowStart,
                  group_members_[group_offset_[group]]);
    }
  }

  void begin(TaskId id) {
    timeline_.start[id] = now_;
    int32_t device = device_[id];
    memory_[device] += alloc_bytes_[id];
    timeline_.peak_memory[device] = std::max(timeline_.peak_memory[device], memory_[device]);
    if (compute_[id]) {
      queue_.push(now_ + duration_[id], EventType::kTaskEnd, id);
    } else if (group_[id] < 0) {
      // A transfer: latency first, then (if it has bytes) a flow. A group's flow: ready().
      queue_.push(now_ + duration_[id], EventType::kFlowStart, id);
    }
  }

  // A task is done; a group member's flow is the group's, so the whole group is.
  void finish(TaskId id) {
    const int32_t group = group_[id];
    if (group >= 0) {
      for (int32_t i = group_offset_[group]; i < group_offset_[group + 1]; ++i) {
        end(group_members_[i]);
      }
      return;
    }
    end(id);
  }

  void end(TaskId id) {
    timeline_.end[id] = now_;
    timeline_.makespan = std::max(timeline_.makespan, now_);
    memory_[device_[id]] -= free_bytes_[id];
    waiting_[id] = -1;
    ++ended_count_;
    for (int32_t i = successor_offset_[id]; i < successor_offset_[id + 1]; ++i) {
      TaskId next = successors_[i];
      if (--waiting_[next] == 0) ready(next);
    }
  }

  void start_flow(TaskId id) {
    const Task& task = graph_.task(id);
    const bool grouped = task.group >= 0;
    const double work = grouped ? group_work_[task.group] : task.work;
    if (work <= 0) {
      finish(id);
      return;
    }
    const RouteId route = grouped ? graph_.num_routes() + task.group : task.route;
    const double cap = route_cap_[route];
    PPSIM_CHECK(route_offset_[route + 1] > route_offset_[route] || cap < kInfinity,
                "a transfer route needs links or a cap");
    int32_t slot;
    if (free_flows_.empty()) {
      slot = static_cast<int32_t>(flows_.size());
      flows_.emplace_back();
    } else {
      slot = free_flows_.back();
      free_flows_.pop_back();
    }
    Flow& flow = flows_[slot];
    flow.task = id;
    flow.route = route;
    flow.remaining = work;
    flow.rate = 0;
    flow.cap = cap;
    flow.since = now_;
    ++flow.version;  // Invalidates any kFlowEnd left from the slot's previous flow.
    for (int32_t j = route_offset_[route]; j < route_offset_[route + 1]; ++j) {
      link_flows_[route_link_[j]].push_back(slot);
    }
    dirty_flows_.push_back(slot);
  }

  void end_flow(int32_t slot) {
    Flow& flow = flows_[slot];
    TaskId task = flow.task;
    for (int32_t j = route_offset_[flow.route]; j < route_offset_[flow.route + 1]; ++j) {
      LinkId link = route_link_[j];
      std::vector<int32_t>& on_link = link_flows_[link];
      on_link.erase(std::find(on_link.begin(), on_link.end(), slot));
      mark_dirty(link);
    }
    flow.task = -1;
    free_flows_.push_back(slot);
    finish(task);
  }

  void mark_dirty(LinkId link) {
    if (link_dirty_[link]) return;
    link_dirty_[link] = 1;
    dirty_links_.push_back(link);
  }

  // Recomputes the rates of every flow connected (through shared links) to a flow that started
  // or ended at now_: each connected component on its own, by progressive filling. Components
  // nothing touched keep their rates and their scheduled ends.
  void reschedule_flows() {
    ++epoch_;
    for (int32_t slot : dirty_flows_) {
      if (flows_[slot].task >= 0 && flows_[slot].seen != epoch_) fill_component(slot, -1);
    }
    for (LinkId link : dirty_links_) {
      link_dirty_[link] = 0;
      if (link_seen_[link] != epoch_ && !link_flows_[link].empty()) fill_component(-1, link);
    }
    dirty_flows_.clear();
    dirty_links_.clear();
  }

  // Collects the component reached from flow `slot` (or from link `link`) into component_flows_
  // and component_links_, then gives its flows max-min fair rates.
  void fill_component(int32_t slot, LinkId link) {
    component_flows_.clear();
    component_links_.clear();
    auto visit_flow = [this](int32_t f) {
      if (flows_[f].seen == epoch_) return;
      flows_[f].seen = epoch_;
      component_flows_.push_back(f);
    };
    auto visit_link = [this](LinkId l) {
      if (link_seen_[l] == epoch_) return;
      link_seen_[l] = epoch_;
      component_links_.push_back(l);
    };
    if (slot >= 0) visit_flow(slot);
    if (link >= 0) visit_link(link);
    // Breadth first over flows and links alternately, until neither list grows.
    size_t next_flow = 0, next_link = 0;
    while (next_flow < component_flows_.size() || next_link < component_links_.size()) {
      for (; next_flow < component_flows_.size(); ++next_flow) {
        RouteId route = flows_[component_flows_[next_flow]].route;
        for (int32_t j = route_offset_[route]; j < route_offset_[route + 1]; ++j) {
          visit_link(route_link_[j]);
        }
      }
      for (; next_link < component_links_.size(); ++next_link) {
        for (int32_t f : link_flows_[component_links_[next_link]]) visit_flow(f);
      }
    }
    // Bring every flow's bytes up to now_ at its old rate, then fill.
    for (int32_t f : component_flows_) {
      Flow& flow = flows_[f];
      if (now_ > flow.since) flow.remaining -= flow.rate * (now_ - flow.since);
      flow.since = now_;
      old_rate_.push_back(flow.rate);
      flow.rate = 0;
      flow.frozen = false;
    }
    for (LinkId l : component_links_) {
      link_residual_[l] = link_capacity_[l];
      link_unfrozen_[l] = 0;
      link_unfrozen_flows_[l] = 0;
    }
    for (int32_t f : component_flows_) {
      RouteId route = flows_[f].route;
      for (int32_t j = route_offset_[route]; j < route_offset_[route + 1]; ++j) {
        link_unfrozen_[route_link_[j]] += route_weight_[j];
        ++link_unfrozen_flows_[route_link_[j]];
      }
    }
    // Progressive filling: raise every unfrozen flow by the largest common step that saturates
    // no link (a link's residual shared by its unfrozen flows' weights) and no cap; freeze the
    // flows that cross a saturated link or reached their cap; repeat. A link's residual drops by
    // step x (sum of its unfrozen weights), so twin flows that stand for k identical ones (a
    // weight of k) load it exactly as the k flows would.
    size_t unfrozen = component_flows_.size();
    while (unfrozen > 0) {
      double delta = kInfinity;
      for (LinkId l : component_links_) {
        if (link_unfrozen_flows_[l] > 0) delta = std::min(delta, link_residual_[l] / link_unfrozen_[l]);
      }
      for (int32_t f : component_flows_) {
        if (!flows_[f].frozen) delta = std::min(delta, flows_[f].cap - flows_[f].rate);
      }
      PPSIM_CHECK(delta < kInfinity);
      for (int32_t f : component_flows_) {
        if (!flows_[f].frozen) flows_[f].rate += delta;
      }
      for (LinkId l : component_links_) {
        if (link_unfrozen_flows_[l] > 0) link_residual_[l] -= delta * link_unfrozen_[l];
      }
      for (int32_t f : component_flows_) {
        Flow& flow = flows_[f];
        if (flow.frozen) continue;
        bool saturated = flow.cap < kInfinity && flow.cap - flow.rate <= 1e-12 * flow.cap;
        for (int32_t j = route_offset_[flow.route]; !saturated && j < route_offset_[flow.route + 1];
             ++j) {
          LinkId l = route_link_[j];
          saturated = link_residual_[l] <= 1e-12 * link_capacity_[l];
        }
        if (saturated) frozen_now_.push_back(f);
      }
      for (int32_t f : frozen_now_) {
        Flow& flow = flows_[f];
        flow.frozen = true;
        --unfrozen;
        for (int32_t j = route_offset_[flow.route]; j < route_offset_[flow.route + 1]; ++j) {
          link_unfrozen_[route_link_[j]] -= route_weight_[j];
          --link_unfrozen_flows_[route_link_[j]];
        }
      }
      frozen_now_.clear();
    }
    // A flow whose rate is unchanged keeps its scheduled end; the others get a new one.
    for (size_t i = 0; i < component_flows_.size(); ++i) {
      int32_t f = component_flows_[i];
      Flow& flow = flows_[f];
      if (flow.rate == old_rate_[i]) continue;
      ++flow.version;
      const double end = now_ + flow.remaining / flow.rate;
      // Guard: a flow ends in the finite future (or now), so simulated time always moves on.
      PPSIM_CHECK(std::isfinite(end) && end >= now_,
                  fmt::format("flow end at t={} s from now {} s", end, now_));
      queue_.push(end, EventType::kFlowEnd, f, flow.version);
    }
    old_rate_.clear();
  }

  const TaskGraph& graph_;
  Timeline timeline_;
  EventQueue queue_;
  double now_ = 0;
  int32_t ended_count_ = 0;
  std::vector<int32_t> waiting_;  // Unended predecessors; -1 once the task has ended.
  // The prepared structure (engine.h PreparedGraph::Structure says what each holds), as spans:
  // one indirection in the event loop, where a reference to a vector costs two.
  std::span<const int32_t> successor_offset_;
  std::span<const TaskId> successors_;
  std::span<const int32_t> device_;
  std::span<const int32_t> group_;
  std::span<const uint8_t> compute_;
  std::span<const double> alloc_bytes_;
  std::span<const double> free_bytes_;
  std::span<const int32_t> group_size_;
  std::span<const int32_t> group_offset_;
  std::span<const TaskId> group_members_;
  std::span<const double> group_work_;
  std::span<const int32_t> route_offset_;
  std::span<const LinkId> route_link_;
  std::span<const double> route_weight_;
  std::span<const double> link_capacity_;
  std::vector<double> duration_;   // Per task: compute seconds at its speed, or latency.
  std::vector<double> memory_;
  std::vector<int32_t> group_arrived_;
  std::vector<double> group_latency_;  // Per group: its slowest member's latency.
  std::vector<double> route_cap_;      // Per route (groups' after): its rate cap, or infinity.
  std::vector<Flow> flows_;
  std::vector<int32_t> free_flows_;
  std::vector<std::vector<int32_t>> link_flows_;  // Per link: the active flows crossing it.
  std::vector<double> link_residual_;
  std::vector<double> link_unfrozen_;        // Sum of unfrozen flows' weights on each link.
  std::vector<int32_t> link_unfrozen_flows_;  // Unfrozen flows on each link.
  std::vector<uint32_t> link_seen_;
  std::vector<uint8_t> link_dirty_;
  std::vector<LinkId> dirty_links_;    // Links whose flow set changed at now_.
  std::vector<int32_t> dirty_flows_;   // Flows that started at now_.
  uint32_t epoch_ = 0;                 // Component search pass.
  std::vector<int32_t> component_flows_;
  std::vector<LinkId> component_links_;
  std::vector<double> old_rate_;
  std::vector<int32_t> frozen_now_;
};

}  // namespace

Timeline simulate_graph(const TaskGraph& graph) {
  return simulate_graph(PreparedGraph(graph), graph);
}

Timeline simulate_graph(const PreparedGraph& prepared, const TaskGraph& graph) {
  return Simulation(prepared.structure(), graph).run();
}

}  // namespace ppsim
