#include "simulator/step/update_tasks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "simulator/cost/collective_timing.h"
#include "simulator/cost/optimizer_step_cost.h"
#include "simulator/model/parameter_bytes.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// Parameters per gradient bucket of a chunk, as the plan's runtime buckets them (runtime.h).
double bucket_parameters(const Plan& plan, const ChunkPrice& chunk) {
  return gradient_bucket_parameters(
      plan.runtime, plan.dp, zero_stage_in_force(plan), gradient_bytes_per_param(plan),
      chunk.parameters.total() / static_cast<double>(std::max<int64_t>(1, chunk.layers)));
}

// One gradient bucket of a chunk: its parameters, whether they are routed experts' (reduced
// over the expert data-parallel group, Plan::expert_dp) and the fraction of the chunk's last
// weight-gradient task after which it is ready.
struct GradientBucket {
  double parameters = 0;
  bool expert = false;
  double ready_fraction = 1;
};

// A chunk's buckets in the order they become ready. Megatron-Core keeps dense and expert
// gradients in separate buffers, each bucketed alike and filled as the backward runs, so
// bucket k of K of either is ready (k+1)/K of the way through (dense first on a tie).
std::vector<GradientBucket> gradient_buckets(const Plan& plan, const ChunkPrice& chunk) {
  const double size = bucket_parameters(plan, chunk);
  std::vector<GradientBucket> buckets;
  for (bool expert : {false, true}) {
    const double parameters = expert ? chunk.parameters.expert : chunk.parameters.dense;
    if (parameters <= 0) continue;
    const int64_t count = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(parameters / size)));
    for (int64_t k = 0; k < count; ++k) {
      buckets.push_back({std::min(size, parameters - k * size), expert,
                         static_cast<double>(k + 1) / static_cast<double>(count)});
    }
  }
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const GradientBucket& a, const GradientBucket& b) {
                     return a.ready_fraction < b.ready_fraction;
                   });
  return buckets;
}

}  // namespace

UpdateTasks::UpdateTasks(const ClusterSpec& cluster, const Plan& plan, const StepOptions& options,
                         Step& step, NetworkModel* network, StepPrices& prices)
    : cluster_(cluster),
      plan_(plan),
      options_(options),
      step_(step),
      network_(network),
      prices_(prices),
      last_sync_(step.layout_worker.size(), -1) {}

void UpdateTasks::after_backward(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                                 int32_t chunk, TaskId last_weight_gradient) {
  gradient_sync(graph, info, worker, chunk, last_weight_gradient);
  if (offloaded_fraction(plan_) > 0)
    offload_gradients(graph, info, worker, chunk, last_weight_gradient);
}

// Each bucket is ready its ready_fraction of the way through the chunk's last weight-gradient
// task: a chain of delays on the worker's timer stream, from when that task could start.
// Returns the delays, bucket by bucket.
std::vector<TaskId> UpdateTasks::bucket_ready_delays(TaskGraph& graph, std::vector<TaskInfo>& info,
                                                     int32_t worker, int32_t chunk,
                                                     TaskId last_weight_gradient,
                                                     const std::vector<double>& ready_fractions) {
  TaskId before = graph.stream_predecessor(last_weight_gradient);
  const Task& weight_task = graph.task(last_weight_gradient);
  double backward_seconds = weight_task.work / graph.stream(weight_task.stream).speed;
  std::vector<TaskId> delays;
  double previous = 0;
  for (double fraction : ready_fractions) {
    Task delay;
    delay.kind = TaskKind::kTransfer;
    delay.stream = timer_stream(graph, worker);
    delay.latency = backward_seconds * (fraction - previous);
    previous = fraction;
    TaskId delay_id = graph.add_task(delay);
    info.resize(graph.num_tasks());
    info[delay_id] =
        TaskInfo{worker, ActionKind::kGradientSync, chunk, -1, TaskInfo::Role::kBucketReady};
    if (delays.empty()) graph.add_dependency(before >= 0 ? before : last_weight_gradient, delay_id);
    delays.push_back(delay_id);
  }
  return delays;
}

// Buckets of chunk `chunk`'s gradient reduction on `worker`'s dp stream: dense ones over the
// dp*cp group, routed experts' over the expert data-parallel group.
void UpdateTasks::gradient_sync(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                                int32_t chunk, TaskId last_weight_gradient) {
  if (zero_stage_in_force(plan_) == 3 || options_.ideal_links) return;
  const ChunkPrice& cost = prices_.of(worker, chunk);
  const std::vector<GradientBucket> buckets = gradient_buckets(plan_, cost);
  if (std::none_of(buckets.begin(), buckets.end(), [&](const GradientBucket& b) {
        return sync_group_size(b.expert) > 1;
      }))
    return;
  const NodeGroup& group =
      cluster_.nodes[step_.layout.workers[step_.layout_worker[worker]].node_group];
  Collective kind =
      zero_stage_in_force(plan_) >= 1 ? Collective::kReduceScatter : Collective::kAllReduce;
  std::vector<double> fractions;
  for (const GradientBucket& bucket : buckets) fractions.push_back(bucket.ready_fraction);
  std::vector<TaskId> ready =
      bucket_ready_delays(graph, info, worker, chunk, last_weight_gradient, fractions);
  const bool offload = offloaded_fraction(plan_) > 0;
  for (size_t k = 0; k < buckets.size(); ++k) {
    // A bucket whose group is one rank (experts with ep*etp = tp*dp*cp) has nothing to reduce.
    if (sync_group_size(buckets[k].expert) <= 1) {
      if (offload) reduced_buckets_[{worker, chunk}].push_back(ready[k]);
      continue;
    }
    double bytes = buckets[k].parameters * gradient_bytes_per_param(plan_);
    Task task = collective_task(graph, worker, kind, bytes, buckets[k].expert, group);
    // One collective group per (stage, chunk, bucket): the replicas' reductions of that bucket.
    const auto key = std::make_tuple(step_.layout.workers[step_.layout_worker[worker]].stage,
                                     chunk, static_cast<int64_t>(k));
    auto sync_group = sync_groups_.find(key);
    if (sync_group == sync_groups_.end())
      sync_group = sync_groups_.emplace(key, graph.new_group()).first;
    task.group = sync_group->second;
    TaskId id = graph.add_task(task);
    info.resize(graph.num_tasks());
    info[id] =
        TaskInfo{worker, ActionKind::kGradientSync, chunk, -1, TaskInfo::Role::kGradientReduce};
    task_bytes_.emplace_back(id, bytes);
    graph.add_dependency(ready[k], id);
    last_sync_[worker] = id;
    if (offload) reduced_buckets_[{worker, chunk}].push_back(id);
  }
}

// Ranks of the group that reduces a bucket's gradients (and gathers its parameters).
int64_t UpdateTasks::sync_group_size(bool expert) const {
  return expert ? plan_.expert_dp() : plan_.dp * plan_.cp;
}

// Optimizer offload: each bucket's share of the offloaded gradients goes to the host over the
// worker's PCIe (device-to-host) stream once the bucket is reduced, or ready when there is no
// reduction task (one data-parallel rank, ZeRO-3, ideal links).
void UpdateTasks::offload_gradients(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                                    int32_t chunk, TaskId last_weight_gradient) {
  const ChunkPrice& cost = prices_.of(worker, chunk);
  const std::vector<GradientBucket> buckets = gradient_buckets(plan_, cost);
  std::vector<TaskId> ready = reduced_buckets_[{worker, chunk}];
  if (ready.empty()) {
    // gradient_sync added no reduction for this chunk: the buckets' ready times alone.
    std::vector<double> fractions;
    for (const GradientBucket& bucket : buckets) fractions.push_back(bucket.ready_fraction);
    ready = bucket_ready_delays(graph, info, worker, chunk, last_weight_gradient, fractions);
  }
  PPSIM_CHECK(ready.size() == buckets.size());
  WorkerOffload& offload = worker_offload(worker);
  for (size_t k = 0; k < buckets.size(); ++k) {
    // The GPU offloads the gradients of the parameters it updates: its shard under ZeRO >= 1.
    const double shard_scale =
        zero_stage_in_force(plan_) >= 1
            ? 1.0 / static_cast<double>(sync_group_size(buckets[k].expert))
            : 1.0;
    double parameters = buckets[k].parameters * shard_scale;
    Task copy;
    copy.kind = TaskKind::kTransfer;
    copy.stream = offload_stream(graph, worker, d2h_streams_, "pcie_d2h");
    copy.latency = offloaded_fraction(plan_) * parameters *
                   gradient_bytes_per_param(plan_) / offload.split.pcie_bytes_per_s;
    TaskId id = graph.add_task(copy);
    info.resize(graph.num_tasks());
    info[id] = TaskInfo{worker, ActionKind::kGradientSync, chunk, -1, TaskInfo::Role::kOffloadD2H};
    graph.add_dependency(ready[k], id);
    offload.d2h.push_back(id);
  }
}

// A per-worker stream of offload work (created on first use): PCIe copies one way, host Adam.
StreamId UpdateTasks::offload_stream(TaskGraph& graph, int32_t worker,
                                     std::vector<StreamId>& streams, const char* name) {
  if (streams.empty()) streams.assign(step_.layout_worker.size(), -1);
  if (streams[worker] < 0)
    streams[worker] = graph.add_stream(worker, fmt::format("w{}/{}", worker, name));
  return streams[worker];
}

// The worker's offload record with its split (created on first use).
WorkerOffload& UpdateTasks::worker_offload(int32_t worker) {
  if (step_.offload.empty()) step_.offload.resize(step_.layout_worker.size());
  WorkerOffload& offload = step_.offload[worker];
  if (offload.split.pcie_bytes_per_s > 0) return offload;
  int32_t layout_index = step_.layout_worker[worker];
  const WorkerSlot& slot = step_.layout.workers[layout_index];
  const double shard = updated_parameters(prices_.worker_parameters(worker), plan_);
  if (gpus_per_node_.empty()) gpus_per_node_ = plan_gpus_per_node(step_.layout);
  offload.split = offload_split(plan_, cluster_.nodes[slot.node_group], shard,
                                std::max<int64_t>(1, gpus_per_node_[slot.node]));
  return offload;
}

// The per-worker stream of bucket-ready delays (created on first use).
StreamId UpdateTasks::timer_stream(TaskGraph& graph, int32_t worker) {
  if (timer_streams_.empty()) timer_streams_.assign(step_.layout_worker.size(), -1);
  if (timer_streams_[worker] < 0) {
    timer_streams_[worker] = graph.add_stream(worker, fmt::format("w{}/bucket_ready", worker));
  }
  return timer_streams_[worker];
}

// One member's share of a data-parallel collective (over the dense or the expert group), as a
// transfer on its dp stream.
Task UpdateTasks::collective_task(TaskGraph& graph, int32_t worker, Collective kind, double bytes,
                                  bool expert, const NodeGroup& group) {
  const ChunkPricer& pricer = prices_.pricer();
  CollectiveGroup collective = collective_group(
      sync_group_size(expert),
      expert ? pricer.expert_dp_ranks_per_node(group) : pricer.dp_ranks_per_node(group), group);
  CollectiveCost cost = collective_cost(kind, bytes, collective, options_.collective);
  const WorkerSlot& slot = step_.layout.workers[step_.layout_worker[worker]];
  Task task;
  task.kind = TaskKind::kTransfer;
  task.stream = dp_stream(graph, worker);
  task.latency = cost.latency;
  if (collective.num_nodes() > 1) {
    // One node's share of a worker spread over several (worker_layout.h WorkerSlot::nodes).
    task.work = cost.inter_bytes * slot.num_gpus / slot.nodes;
    task.route = inter_node_route(graph, worker);
    // Without phase overlap the intra-node phases add to the inter-node one.
    if (!options_.collective.overlap_phases) task.latency += cost.intra_seconds;
  } else {
    task.work = cost.intra_bytes * slot.num_gpus;
    task.route = intra_node_route(graph, worker);
  }
  // A measured collective of this group shape sets the time the flow takes alone.
  const ProfileTable* profile = profile_for_gpu(options_.profile, group.gpu);
  PassCost measured{cost.seconds};  // Modelled unless the profile has this group shape.
  if (profile) measured = collective_time(kind, bytes, collective, options_.collective, profile);
  prices_.count_comm(measured);
  if (measured.source == CostSource::kProfile) {
    CalibratedTransfer calibrated =
        calibrate_transfer(graph, task.route, task.latency, task.work, measured.seconds);
    task.latency = calibrated.latency;
    task.work = calibrated.bytes;
  }
  return task;
}

// The worker's ring hop across nodes. With every replica simulated: from its node to the ring's
// next node of its stage. With replica classes: out of and back into its own node, the twins
// its class's members' nodes: a ring's members move in lockstep (task_graph.h), so only the
// multiset of links they cross matters, and every node of the ring sends as many hops as it
// receives (the layout is symmetric, replica_classes.h), so the two count the same crossings.
RouteId UpdateTasks::inter_node_route(TaskGraph& graph, int32_t worker) {
  int32_t layout_index = step_.layout_worker[worker];
  auto it = inter_routes_.find(layout_index);
  if (it != inter_routes_.end()) return it->second;
  const WorkerLayout& layout = step_.layout;
  int32_t stage = layout.workers[layout_index].stage;
  int32_t node = layout.workers[layout_index].node;
  // Distinct nodes of the stage's replicas, in replica order: the ring (once per stage: every
  // worker of the stage shares it).
  // (node, next node), sorted by node.
  std::vector<std::pair<int32_t, int32_t>>& ring_next = ring_next_[stage];
  if (ring_next.empty()) {
    std::vector<int32_t> ring;
    std::vector<char> seen(layout.node_group_of_node.size(), 0);
    for (int32_t d = 0; d < layout.replicas; ++d) {
      int32_t member = layout.at(d, stage).node;
      if (!seen[member]) ring.push_back(member);
      seen[member] = 1;
    }
    for (size_t i = 0; i < ring.size(); ++i) {
      ring_next.emplace_back(ring[i], ring[(i + 1) % ring.size()]);
    }
    std::sort(ring_next.begin(), ring_next.end());
  }
  auto at = std::lower_bound(ring_next.begin(), ring_next.end(), node,
                             [](const auto& entry, int32_t key) { return entry.first < key; });
  PPSIM_CHECK(at != ring_next.end() && at->first == node);
  int32_t next = at->second;
  RouteId route;
  if (step_.classes.all_simulated()) {
    route = network_->node_route(graph, layout_index, node, next, {{node, next}});
  } else {
    std::vector<std::pair<int32_t, int32_t>> twins;
    for (int32_t d : step_.classes.members(worker / layout.stages)) {
      int32_t member = layout.at(d, stage).node;
      twins.emplace_back(member, member);
    }
    // The hop it stands for, node -> next, is what a link fault between the two slows.
    route = network_->node_route(graph, layout_index, node, node, twins, next);
  }
  inter_routes_.emplace(layout_index, route);
  return route;
}

// Within one node, over NVLink: to the next replica of the same stage (the ring) with every
// replica simulated; with replica classes out of and back into the worker itself, its class's
// members its twins (inter_node_route says why).
RouteId UpdateTasks::intra_node_route(TaskGraph& graph, int32_t worker) {
  int32_t layout_index = step_.layout_worker[worker];
  auto it = intra_routes_.find(layout_index);
  if (it != intra_routes_.end()) return it->second;
  const WorkerSlot& slot = step_.layout.workers[layout_index];
  RouteId route = -1;
  if (step_.classes.all_simulated()) {
    int32_t next = ((slot.replica + 1) % step_.layout.replicas) * step_.layout.stages + slot.stage;
    route = network_->route(graph, layout_index, next, {{layout_index, next}});
  } else {
    std::vector<std::pair<int32_t, int32_t>> twins;
    for (int32_t d : step_.classes.members(worker / step_.layout.stages)) {
      int32_t member = d * step_.layout.stages + slot.stage;
      twins.emplace_back(member, member);
    }
    route = network_->route(graph, layout_index, layout_index, twins);
  }
  intra_routes_.emplace(layout_index, route);
  return route;
}

// Collective group ids: one per (stage, chunk, bucket) across replicas.
int32_t UpdateTasks::group_id(TaskGraph& graph, const std::string& key) {
  auto it = groups_.find(key);
  if (it != groups_.end()) return it->second;
  return groups_.emplace(key, graph.new_group()).first->second;
}

// The step's optimizer step on `worker` (see the header).
TaskId UpdateTasks::optimizer_step(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                                   StreamId compute_stream, TaskId after) {
  int32_t layout_index = step_.layout_worker[worker];
  const WorkerSlot& slot = step_.layout.workers[layout_index];
  const NodeGroup& group = cluster_.nodes[slot.node_group];
  const ParameterSplit parameters = prices_.worker_parameters(worker);
  const double shard = updated_parameters(parameters, plan_);
  Task task;
  task.kind = TaskKind::kCompute;
  task.stream = compute_stream;
  // With offload the GPU updates only its (1 - f) part (optimizer_offload.h).
  double gpu_parameters =
      offloaded_fraction(plan_) > 0 ? worker_offload(worker).split.gpu_parameters : shard;
  task.work = adam_step_seconds(gpu_parameters, group.gpu, options_.efficiency.memory,
                                profile_for_gpu(options_.profile, group.gpu));
  // The framework's per-step host work (cost_model.h): host time, so a slow GPU's speed
  // factor does not stretch it (work is divided by the stream's speed).
  task.work += options_.efficiency.overheads(plan_.runtime).step_overhead_s *
               graph.stream(compute_stream).speed;
  TaskId id = graph.add_task(task);
  info.resize(graph.num_tasks());
  info[id] = TaskInfo{worker, ActionKind::kOptimizerStep, -1, -1, TaskInfo::Role::kOptimizer};
  task_bytes_.emplace_back(id, shard * kStepAdamBytesPerParameter);
  if (after >= 0) graph.add_dependency(after, id);
  if (TaskId sync = last_sync(worker); sync >= 0) graph.add_dependency(sync, id);
  TaskId barrier = id;
  TaskId host_done =
      offloaded_fraction(plan_) > 0 ? host_update(graph, info, worker, after, id) : -1;
  // The distributed optimizer's updated parameters are all-gathered (bf16): the dense ones over
  // dp*cp, then the routed experts' over their own group.
  const int zero = zero_stage_in_force(plan_);
  if (zero >= 1 && zero < 3 && !options_.ideal_links) {
    for (bool expert : {false, true}) {
      const double gathered = expert ? parameters.expert : parameters.dense;
      if (sync_group_size(expert) <= 1 || gathered <= 0) continue;
      Task gather = collective_task(graph, worker, Collective::kAllGather,
                                    gathered * kStepParameterBytes, expert, group);
      gather.group = group_id(graph, fmt::format("{}/{}", expert ? "expert_gather" : "gather",
                                                 slot.stage));
      TaskId gather_id = graph.add_task(gather);
      info.resize(graph.num_tasks());
      info[gather_id] =
          TaskInfo{worker, ActionKind::kOptimizerStep, -1, -1, TaskInfo::Role::kParamGather};
      task_bytes_.emplace_back(gather_id, gathered * kStepParameterBytes);
      graph.add_dependency(barrier, gather_id);  // The update, then the dense gather.
      if (host_done >= 0) graph.add_dependency(host_done, gather_id);
      barrier = gather_id;
    }
  }
  return barrier;
}

// Optimizer offload's host part: CPU Adam once every gradient copy and the worker's last
// compute task have ended (gradient clipping needs all gradients), then the parameters' copy
// back. Returns the copy.
TaskId UpdateTasks::host_update(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                                TaskId after, TaskId gpu_update) {
  WorkerOffload& offload = worker_offload(worker);
  offload.gpu_update = gpu_update;
  Task adam;
  adam.kind = TaskKind::kTransfer;  // Host time: a delay the GPU's speed factor does not scale.
  adam.stream = offload_stream(graph, worker, host_streams_, "cpu_adam");
  adam.latency = offload.split.cpu_adam_seconds();
  TaskId adam_id = graph.add_task(adam);
  info.resize(graph.num_tasks());
  info[adam_id] = TaskInfo{worker, ActionKind::kOptimizerStep, -1, -1, TaskInfo::Role::kCpuAdam};
  if (after >= 0) graph.add_dependency(after, adam_id);
  for (TaskId copy : offload.d2h) graph.add_dependency(copy, adam_id);
  if (TaskId sync = last_sync(worker); sync >= 0) graph.add_dependency(sync, adam_id);
  Task copy;
  copy.kind = TaskKind::kTransfer;
  copy.stream = offload_stream(graph, worker, h2d_streams_, "pcie_h2d");
  copy.latency = offload.split.h2d_seconds();
  TaskId copy_id = graph.add_task(copy);
  info.resize(graph.num_tasks());
  info[copy_id] = TaskInfo{worker, ActionKind::kOptimizerStep, -1, -1, TaskInfo::Role::kOffloadH2D};
  graph.add_dependency(adam_id, copy_id);
  offload.cpu_adam = adam_id;
  offload.h2d = copy_id;
  return copy_id;
}

// The per-worker data-parallel stream (created on first use).
StreamId UpdateTasks::dp_stream(TaskGraph& graph, int32_t worker) {
  if (dp_streams_.empty()) dp_streams_.assign(step_.layout_worker.size(), -1);
  if (dp_streams_[worker] < 0) {
    dp_streams_[worker] = graph.add_stream(worker, fmt::format("w{}/dp", worker));
  }
  return dp_streams_[worker];
}

}  // namespace ppsim
