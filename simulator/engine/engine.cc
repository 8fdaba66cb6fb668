#include "simulator/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "simulator/engine/event_queue.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// An active transfer's bytes in flight.
struct Flow {
  TaskId task;
  double remaining;  // Bytes still to move.
  double rate;       // Current bytes/s.
  double cap;        // Route's rate cap, or infinity.
  RouteId route;
};

class Simulation {
 public:
  explicit Simulation(const TaskGraph& graph) : graph_(graph) {
    int32_t n = graph.num_tasks();
    timeline_.start.assign(n, 0.0);
    timeline_.end.assign(n, 0.0);
    timeline_.peak_memory.assign(graph.num_devices(), 0.0);
    memory_.assign(graph.num_devices(), 0.0);
    waiting_.assign(n, 0);
    // Successor lists in CSR form: explicit dependencies plus stream order.
    std::vector<int32_t> count(n + 1, 0);
    for (TaskId id = 0; id < n; ++id) {
      if (graph.stream_predecessor(id) >= 0) {
        ++count[graph.stream_predecessor(id) + 1];
        ++waiting_[id];
      }
    }
    for (const auto& [before, after] : graph.dependencies()) {
      ++count[before + 1];
      ++waiting_[after];
    }
    for (int32_t i = 0; i < n; ++i) count[i + 1] += count[i];
    successor_offset_ = count;
    successors_.resize(count[n]);
    std::vector<int32_t> fill(count.begin(), count.end() - 1);
    for (TaskId id = 0; id < n; ++id) {
      if (graph.stream_predecessor(id) >= 0) successors_[fill[graph.stream_predecessor(id)]++] = id;
    }
    for (const auto& [before, after] : graph.dependencies()) successors_[fill[before]++] = after;
    // Collective groups.
    group_size_.assign(graph.num_groups(), 0);
    group_arrived_.assign(graph.num_groups(), 0);
    group_pending_.assign(graph.num_groups(), 0);
    group_members_.resize(graph.num_groups());
    for (TaskId id = 0; id < n; ++id) {
      int32_t group = graph.task(id).group;
      if (group >= 0) {
        ++group_size_[group];
        group_members_[group].push_back(id);
      }
    }
    link_residual_.assign(graph.links().size(), 0.0);
    link_unfrozen_.assign(graph.links().size(), 0.0);
    link_flows_.assign(graph.links().size(), 0);
    queue_.reserve(static_cast<size_t>(n) + 64);
  }

  Timeline run() {
    for (TaskId id = 0; id < graph_.num_tasks(); ++id) {
      if (waiting_[id] == 0) ready(id);
    }
    while (!queue_.empty()) {
      Event event = queue_.pop();
      ++timeline_.events;
      now_ = event.time;
      switch (event.type) {
        case EventType::kTaskEnd: finish(event.id); break;
        case EventType::kFlowStart: start_flow(event.id); break;
        case EventType::kFlowCheck:
          if (event.version == flow_version_) drain_flows();
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
    int32_t group = graph_.task(id).group;
    if (group < 0) {
      begin(id);
      return;
    }
    if (++group_arrived_[group] == group_size_[group]) {
      for (TaskId member : group_members_[group]) begin(member);
    }
  }

  void begin(TaskId id) {
    const Task& task = graph_.task(id);
    timeline_.start[id] = now_;
    int32_t device = graph_.stream(task.stream).device;
    memory_[device] += task.alloc_bytes;
    timeline_.peak_memory[device] = std::max(timeline_.peak_memory[device], memory_[device]);
    if (task.kind == TaskKind::kCompute) {
      queue_.push(now_ + task.work / graph_.stream(task.stream).speed, EventType::kTaskEnd, id);
    } else {
      // A transfer: latency first, then (if it has bytes) a flow; a group ends with its last.
      if (task.group >= 0) ++group_pending_[task.group];
      queue_.push(now_ + task.latency, EventType::kFlowStart, id);
    }
  }

  // A task (or, for a transfer in a group, the task's own part) is done.
  void finish(TaskId id) {
    const Task& task = graph_.task(id);
    if (task.kind == TaskKind::kTransfer && task.group >= 0) {
      if (--group_pending_[task.group] > 0) return;
      for (TaskId member : group_members_[task.group]) end(member);
      return;
    }
    end(id);
  }

  void end(TaskId id) {
    const Task& task = graph_.task(id);
    timeline_.end[id] = now_;
    timeline_.makespan = std::max(timeline_.makespan, now_);
    memory_[graph_.stream(task.stream).device] -= task.free_bytes;
    waiting_[id] = -1;
    ++ended_count_;
    for (int32_t i = successor_offset_[id]; i < successor_offset_[id + 1]; ++i) {
      TaskId next = successors_[i];
      if (--waiting_[next] == 0) ready(next);
    }
  }

  void start_flow(TaskId id) {
    const Task& task = graph_.task(id);
    if (task.work <= 0) {
      finish(id);
      return;
    }
    settle_flows();
    const Route& route = graph_.route(task.route);
    double cap = route.rate_cap > 0 ? route.rate_cap : kInfinity;
    PPSIM_CHECK(!route.links.empty() || cap < kInfinity, "a transfer route needs links or a cap");
    flows_.push_back(Flow{id, task.work, 0.0, cap, task.route});
    reschedule_flows();
  }

  // Moves every active flow forward to now_ at its current rate.
  void settle_flows() {
    double elapsed = now_ - flows_time_;
    if (elapsed > 0) {
      for (Flow& flow : flows_) flow.remaining -= flow.rate * elapsed;
    }
    flows_time_ = now_;
  }

  void drain_flows() {
    settle_flows();
    std::vector<TaskId> done;
    auto finished = [](const Flow& flow) { return flow.remaining <= 1e-9 * std::max(1.0, flow.rate); };
    for (const Flow& flow : flows_) {
      if (finished(flow)) done.push_back(flow.task);
    }
    flows_.erase(std::remove_if(flows_.begin(), flows_.end(), finished), flows_.end());
    reschedule_flows();
    for (TaskId id : done) finish(id);
  }

  // Max-min fair rates by progressive filling, then the next completion check.
  void reschedule_flows() {
    ++flow_version_;
    if (flows_.empty()) return;
    const std::vector<Link>& links = graph_.links();
    touched_links_.clear();
    for (Flow& flow : flows_) {
      flow.rate = 0;
      const Route& route = graph_.route(flow.route);
      for (size_t j = 0; j < route.links.size(); ++j) {
        LinkId link = route.links[j];
        if (link_flows_[link] == 0) {
          touched_links_.push_back(link);
          link_residual_[link] = links[link].capacity;
          link_unfrozen_[link] = 0;
        }
        ++link_flows_[link];
        link_unfrozen_[link] += route.weights.empty() ? 1.0 : route.weights[j];
      }
    }
    frozen_.assign(flows_.size(), 0);
    size_t unfrozen = flows_.size();
    while (unfrozen > 0) {
      double delta = kInfinity;
      for (LinkId link : touched_links_) {
        if (link_flows_[link] > 0) delta = std::min(delta, link_residual_[link] / link_unfrozen_[link]);
      }
      for (size_t i = 0; i < flows_.size(); ++i) {
        if (!frozen_[i]) delta = std::min(delta, flows_[i].cap - flows_[i].rate);
      }
      PPSIM_CHECK(delta < kInfinity);
      for (size_t i = 0; i < flows_.size(); ++i) {
        if (frozen_[i]) continue;
        flows_[i].rate += delta;
        const Route& route = graph_.route(flows_[i].route);
        for (size_t j = 0; j < route.links.size(); ++j) {
          link_residual_[route.links[j]] -= delta * (route.weights.empty() ? 1.0 : route.weights[j]);
        }
      }
      for (size_t i = 0; i < flows_.size(); ++i) {
        if (frozen_[i]) continue;
        const Route& route = graph_.route(flows_[i].route);
        bool saturated = flows_[i].cap < kInfinity &&
                         flows_[i].cap - flows_[i].rate <= 1e-12 * flows_[i].cap;
        for (LinkId link : route.links) {
          saturated = saturated || link_residual_[link] <= 1e-12 * links[link].capacity;
        }
        if (saturated) {
          frozen_[i] = 1;
          --unfrozen;
          for (size_t j = 0; j < route.links.size(); ++j) {
            --link_flows_[route.links[j]];
            link_unfrozen_[route.links[j]] -= route.weights.empty() ? 1.0 : route.weights[j];
          }
        }
      }
    }
    double next = kInfinity;
    for (const Flow& flow : flows_) next = std::min(next, now_ + flow.remaining / flow.rate);
    queue_.push(next, EventType::kFlowCheck, 0, flow_version_);
  }

  const TaskGraph& graph_;
  Timeline timeline_;
  EventQueue queue_;
  double now_ = 0;
  int32_t ended_count_ = 0;
  std::vector<int32_t> waiting_;  // Unended predecessors; -1 once the task has ended.
  std::vector<int32_t> successor_offset_;
  std::vector<TaskId> successors_;
  std::vector<double> memory_;
  std::vector<int32_t> group_size_, group_arrived_, group_pending_;
  std::vector<std::vector<TaskId>> group_members_;
  std::vector<Flow> flows_;
  double flows_time_ = 0;
  uint32_t flow_version_ = 0;
  std::vector<double> link_residual_;
  std::vector<double> link_unfrozen_;  // Sum of unfrozen flows' weights on each link.
  std::vector<int32_t> link_flows_;     // Unfrozen flows on each link (marks touched links).
  std::vector<LinkId> touched_links_;
  std::vector<uint8_t> frozen_;
};

}  // namespace

Timeline simulate_graph(const TaskGraph& graph) { return Simulation(graph).run(); }

}  // namespace ppsim
