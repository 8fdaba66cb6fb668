// TaskGraph: the step as activities on resources with explicit dependencies (SimGrid's model).
//
// Resources:
// - Streams: in-order queues (a GPU's compute stream, a communication stream). A task starts
//   when every dependency has ended and the task before it on its stream has ended.
// - Links: shared bandwidth (NVLink, a NIC direction, a fabric uplink). A transfer task's bytes
//   flow over a route of links; flows that share a link share its bandwidth max-min fairly.
// Tasks of one collective carry the same group id: they start together (when the last of them
// is ready) and move their bytes in lockstep, as a ring does (each step of NCCL's ring waits
// for its slowest hop): after the members' largest latency, one flow of the members' bytes
// (the largest) crosses every member's links at once (a link crossed by k members carries k
// times its rate), capped by the lowest member cap; all members end when it drains. Only the
// multiset of links the members cross matters, not which member crosses which.
// Memory: a task allocates alloc_bytes on its stream's device when it starts and frees
// free_bytes when it ends, so peak memory per device comes from the timeline.
//
// Invariant: a task's stream predecessor is the task added to that stream just before it.
// Not thread-safe; build once, then simulate (simulate() takes it by const reference).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ppsim {

using TaskId = int32_t;
using StreamId = int32_t;
using LinkId = int32_t;
using RouteId = int32_t;

enum class TaskKind : uint8_t {
  kCompute,   // Runs `work` seconds at speed 1, divided by its stream's speed factor.
  kTransfer,  // Waits `latency`, then moves `work` bytes over `route` at the shared rate.
};

struct Task {
  TaskKind kind = TaskKind::kCompute;
  StreamId stream = 0;
  double work = 0;          // Compute: seconds at speed 1. Transfer: bytes.
  double latency = 0;       // Transfer: seconds before the first byte moves (alpha).
  RouteId route = -1;       // Transfer with bytes > 0: the links it crosses.
  int32_t group = -1;       // Collective group: members move in lockstep (header); -1 = none.
  double alloc_bytes = 0;   // Allocated on the stream's device at start.
  double free_bytes = 0;    // Freed on the stream's device at end.
  int32_t label = -1;       // The builder's tag for reports (e.g. an action index); unused here.
};

struct Stream {
  int32_t device = 0;  // The GPU (or GPU group) whose memory its tasks allocate.
  double speed = 1;    // Compute speed factor: 0.5 runs at half speed (a straggler).
  std::string name;    // For traces, e.g. "gpu3/compute".
};

// What a link is in the cluster, for faults injected after the graph is built
// (straggler_effects.h): a slow inter-node path is found by the NIC links its routes cross.
enum class LinkRole : uint8_t { kOther, kIntraOut, kIntraIn, kNicOut, kNicIn, kFabricUp, kFabricDown };

struct Link {
  double capacity = 0;  // Bytes/s shared max-min fairly by the flows crossing it. > 0.
  std::string name;     // A kOther link's name; a cluster link's is made from its role (below).
  LinkRole role = LinkRole::kOther;
  int32_t node = -1;    // Global node of a NIC or fabric link (nic_out: the sender's); -1 otherwise.
  int32_t worker = -1;  // The worker of an intra-node link; -1 otherwise.
};

// What a link is called in messages: its name, or for a cluster link its role and owner, e.g.
// "node2/nic_out", "worker5/intra_in" (made on demand: a 16,384-GPU step has tens of thousands).
std::string link_label(const Link& link);

struct Route {
  std::vector<LinkId> links;  // Links crossed; may be empty (then only rate_cap limits it).
  double rate_cap = 0;        // Upper bound on one flow's rate, bytes/s; 0 = no cap.
  // Per link: how many identical flows this one stands for there (>= 1). Used when identical
  // data-parallel replicas are simulated once per class: a flow whose twins share a NIC loads
  // it k times.
  // Empty means 1 on every link.
  std::vector<double> weights;
  // The real links of the hop this route stands for, where `links` are not them (replica
  // classes count a ring hop on its sender's own links: replica_classes.h); empty: `links`.
  // The engine never reads it; faults on a link between two nodes find routes by it.
  std::vector<LinkId> hop_links;
};

class TaskGraph {
 public:
  StreamId add_stream(int32_t device, std::string name, double speed = 1);
  LinkId add_link(double capacity, std::string name);
  // A cluster link: `role` with its node (NIC, fabric) or worker (intra-node); the other -1.
  LinkId add_link(double capacity, LinkRole role, int32_t node, int32_t worker);
  // REQUIRES: weights empty or one per link, each >= 1; hop_links existing links.
  RouteId add_route(std::vector<LinkId> links, double rate_cap = 0,
                    std::vector<double> weights = {}, std::vector<LinkId> hop_links = {});
  // Room for `tasks` tasks in all, so a graph built to a known size grows without copies.
  void reserve_tasks(int64_t tasks);
  int64_t reserved_tasks() const { return static_cast<int64_t>(tasks_.capacity()); }
  // A new collective group id for add_task's Task::group.
  int32_t new_group() { return num_groups_++; }
  // REQUIRES: task.stream, task.route and task.group refer to existing objects.
  TaskId add_task(const Task& task);
  // `after` cannot start before `before` has ended. Duplicate edges are allowed.
  void add_dependency(TaskId before, TaskId after);

  int32_t num_tasks() const { return static_cast<int32_t>(tasks_.size()); }
  int32_t num_streams() const { return static_cast<int32_t>(streams_.size()); }
  int32_t num_devices() const { return num_devices_; }
  int32_t num_groups() const { return num_groups_; }
  const Task& task(TaskId id) const { return tasks_[id]; }
  Task& mutable_task(TaskId id) { return tasks_[id]; }
  const Stream& stream(StreamId id) const { return streams_[id]; }
  Stream& mutable_stream(StreamId id) { return streams_[id]; }
  const std::vector<Link>& links() const { return links_; }
  std::vector<Link>& mutable_links() { return links_; }
  const Route& route(RouteId id) const { return routes_[id]; }
  Route& mutable_route(RouteId id) { return routes_[id]; }
  int32_t num_routes() const { return static_cast<int32_t>(routes_.size()); }
  // Explicit dependency edges (before, after), in insertion order.
  const std::vector<std::pair<TaskId, TaskId>>& dependencies() const { return dependencies_; }
  // The task before `id` on its stream, or -1.
  TaskId stream_predecessor(TaskId id) const { return stream_predecessor_[id]; }

  // A dependency cycle (including stream order) as its path of task labels produced by
  // `describe`, or nullopt when the graph is acyclic. Uses Boost.Graph.
  std::optional<std::string> find_cycle(
      const std::function<std::string(TaskId)>& describe) const;

 private:
  std::vector<Task> tasks_;
  std::vector<Stream> streams_;
  std::vector<Link> links_;
  std::vector<Route> routes_;
  std::vector<std::pair<TaskId, TaskId>> dependencies_;
  std::vector<TaskId> stream_predecessor_;
  std::vector<TaskId> stream_last_;
  int32_t num_devices_ = 0;
  int32_t num_groups_ = 0;
};

}  // namespace ppsim
