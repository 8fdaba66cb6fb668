#include "simulator/step/step_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "simulator/cost/chunk_price.h"
#include "simulator/cost/collective_timing.h"
#include "simulator/cost/optimizer_step_cost.h"
#include "simulator/model/activation_memory.h"
#include "simulator/model/chunk_layout.h"
#include "simulator/spec/error.h"
#include "simulator/model/layer_ops.h"
#include "simulator/model/memory_model.h"
#include "simulator/model/model_stats.h"
#include "simulator/step/network_model.h"

namespace ppsim {
namespace {

// Megatron DDP bucket: max(40M, 1M x dp) parameters (distributed_data_parallel_config.py).
double bucket_parameters(int64_t dp) { return std::max(40e6, 1e6 * static_cast<double>(dp)); }

class StepCosts : public LoweringCosts {
 public:
  StepCosts(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
            const StepOptions& options, Step& step, NetworkModel* network)
      : model_(model), cluster_(cluster), plan_(plan), options_(options), step_(step),
        network_(network),
        pricer_(model, plan, options.efficiency, options.collective, options.profile,
                options.ideal_links) {
    MemoryOptions memory_options;
    memory_options.flash_attention = options.efficiency.flash_attention;
    memory_ = estimate_memory(model, cluster, plan, memory_options);
    layout_ = chunk_layout(plan, model);
    PPSIM_CHECK(layout_.num_chunks() == step.schedule.num_chunks());
  }

  ComputeSpec compute(int32_t worker, const Action& action) override {
    const ChunkPrice& cost = chunk_cost(worker, action.chunk);
    ComputeSpec spec;
    switch (action.kind) {
      case ActionKind::kForward:
        spec.seconds = cost.forward;
        spec.alloc_bytes = cost.activation_bytes;
        break;
      case ActionKind::kBackward:
        spec.seconds = cost.backward_input + cost.backward_weight;
        spec.free_bytes = cost.activation_bytes;
        break;
      case ActionKind::kBackwardInput:
        spec.seconds = cost.backward_input;
        spec.free_bytes = cost.activation_bytes - cost.weight_stash_bytes;
        break;
      case ActionKind::kBackwardWeight:
        spec.seconds = cost.backward_weight;
        spec.free_bytes = cost.weight_stash_bytes;
        break;
      default: PPSIM_CHECK(false, "not a compute action");
    }
    return spec;
  }

  TransferSpec transfer(TaskGraph& graph, int32_t from, int32_t to,
                        const Action& send) override {
    TransferSpec spec;
    if (options_.ideal_links) return spec;
    int32_t a = step_.layout_worker[from];
    int32_t b = step_.layout_worker[to];
    double seq = static_cast<double>(effective_seq_length(plan_, model_)) / plan_.cp;
    double tensor = plan_.micro_batch_size * seq * model_.hidden_size * kActivationElementBytes;
    // Per GPU: a 1/tp shard with sequence parallelism, the whole tensor without; x cp GPUs.
    double per_gpu = plan_.sequence_parallel ? tensor / plan_.tp : tensor;
    spec.bytes = per_gpu * plan_.tp * plan_.cp;
    spec.latency = network_->latency(a, b);
    // A measured sendrecv (one GPU to its peer, on one node or across two) sets the time.
    const NodeGroup& group = group_of(from);
    PassCost measured = collective_time(
        Collective::kSendRecv, per_gpu,
        collective_group(2, network_->same_node(a, b) ? 2 : 1, group), options_.collective,
        profile_for_gpu(options_.profile, group.gpu));
    count_comm(measured);
    auto key = std::make_pair(a, b);
    auto it = routes_.find(key);
    if (it == routes_.end()) {
      std::vector<std::pair<int32_t, int32_t>> twins;
      int32_t stage_a = step_.layout.workers[a].stage, stage_b = step_.layout.workers[b].stage;
      if (step_.simulated_replicas == 1) {
        for (int32_t d = 0; d < step_.layout.replicas; ++d) {
          twins.emplace_back(d * step_.layout.stages + stage_a, d * step_.layout.stages + stage_b);
        }
      } else {
        twins.emplace_back(a, b);
      }
      it = routes_.emplace(key, network_->route(graph, a, b, twins)).first;
    }
    spec.route = it->second;
    if (measured.source == CostSource::kProfile) {
      CalibratedTransfer calibrated =
          calibrate_transfer(graph, spec.route, spec.latency, spec.bytes, measured.seconds);
      spec.latency = calibrated.latency;
      spec.bytes = calibrated.bytes;
    }
    return spec;
  }

  TaskId step_action(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                     StreamId compute_stream, const Action& action, TaskId after) override {
    if (action.kind == ActionKind::kGradientSync) {
      gradient_sync(graph, info, worker, action.chunk, after);
      if (offloaded_fraction(plan_) > 0)
        offload_gradients(graph, info, worker, action.chunk, after);
      return -1;
    }
    return optimizer_step(graph, info, worker, compute_stream, after);
  }

  // The per-worker data-parallel stream (created on first use).
  StreamId dp_stream(TaskGraph& graph, int32_t worker) {
    if (dp_streams_.empty()) dp_streams_.assign(step_.layout_worker.size(), -1);
    if (dp_streams_[worker] < 0) {
      dp_streams_[worker] = graph.add_stream(worker, fmt::format("w{}/dp", worker));
    }
    return dp_streams_[worker];
  }

  const MemoryReport& memory() const { return memory_; }
  const CostProvenance& provenance() const { return provenance_; }
  // Step::task_bytes of the tasks this provider added.
  const std::map<TaskId, double>& task_bytes() const { return task_bytes_; }

  // Exposed communication inside a compute task of this action.
  double embedded_comm(int32_t worker, const Action& action) {
    const ChunkPrice& cost = chunk_cost(worker, action.chunk);
    if (action.kind == ActionKind::kForward) return cost.forward_comm;
    if (action.kind == ActionKind::kBackward || action.kind == ActionKind::kBackwardInput) {
      return cost.backward_comm;
    }
    return 0;
  }

 private:
  const NodeGroup& group_of(int32_t worker) const {
    return cluster_.nodes[step_.layout.workers[step_.layout_worker[worker]].node_group];
  }

  void count_comm(const PassCost& cost) {
    if (cost.seconds <= 0) return;
    if (cost.source == CostSource::kProfile) {
      ++provenance_.profile_comm;
      if (cost.extrapolated) ++provenance_.extrapolated_comm;
    } else {
      ++provenance_.modelled_comm;
    }
  }

  const ChunkPrice& chunk_cost(int32_t worker, int32_t chunk) {
    int32_t group = step_.layout.workers[step_.layout_worker[worker]].node_group;
    auto key = std::make_pair(group, chunk);
    auto it = chunk_costs_.find(key);
    if (it != chunk_costs_.end()) return it->second;
    return chunk_costs_.emplace(key, compute_chunk_cost(group, chunk)).first->second;
  }

  ChunkPrice compute_chunk_cost(int32_t group_index, int32_t chunk) {
    const NodeGroup& group = cluster_.nodes[group_index];
    auto model_it = cost_models_.find(group.gpu.name);
    if (model_it == cost_models_.end()) {
      model_it = cost_models_
                     .emplace(group.gpu.name,
                              CostModel(group.gpu, options_.efficiency,
                                        profile_for_gpu(options_.profile, group.gpu)))
                     .first;
    }
    ChunkPrice price = pricer_.chunk(model_it->second, group, layout_.chunk_first_layer[chunk],
                                     layout_.chunk_layers[chunk], chunk == 0,
                                     chunk == layout_.loss_chunk());
    provenance_.modelled_comm += price.comm.modelled;
    provenance_.profile_comm += price.comm.profile;
    provenance_.extrapolated_comm += price.comm.extrapolated;
    // Op passes once per (GPU type, chunk).
    if (counted_.insert({group.gpu.name, chunk}).second) {
      provenance_.roofline_passes += price.roofline_passes;
      provenance_.profile_passes += price.profile_passes;
      provenance_.extrapolated_passes += price.extrapolated_passes;
    }
    return price;
  }

  // Bucket k of K is ready (k+1)/K of the way through the chunk's last weight-gradient task: a
  // chain of K delays of W/K on the worker's timer stream, from when that task could start.
  // Returns the delays, bucket by bucket.
  std::vector<TaskId> bucket_ready_delays(TaskGraph& graph, std::vector<TaskInfo>& info,
                                          int32_t worker, int32_t chunk,
                                          TaskId last_weight_gradient, int64_t buckets) {
    TaskId before = graph.stream_predecessor(last_weight_gradient);
    const Task& weight_task = graph.task(last_weight_gradient);
    double backward_seconds = weight_task.work / graph.stream(weight_task.stream).speed;
    std::vector<TaskId> delays;
    for (int64_t k = 0; k < buckets; ++k) {
      Task delay;
      delay.kind = TaskKind::kTransfer;
      delay.stream = timer_stream(graph, worker);
      delay.latency = backward_seconds / buckets;
      TaskId delay_id = graph.add_task(delay);
      info.resize(graph.num_tasks());
      info[delay_id] =
          TaskInfo{worker, ActionKind::kGradientSync, chunk, -1, TaskInfo::Role::kBucketReady};
      if (k == 0) graph.add_dependency(before >= 0 ? before : last_weight_gradient, delay_id);
      delays.push_back(delay_id);
    }
    return delays;
  }

  // Buckets of chunk `chunk`'s gradient reduction on `worker`'s dp stream.
  void gradient_sync(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker, int32_t chunk,
                     TaskId last_weight_gradient) {
    int64_t group_size = plan_.dp * plan_.cp;
    if (group_size <= 1 || plan_.zero_stage == 3 || options_.ideal_links) return;
    const ChunkPrice& cost = chunk_cost(worker, chunk);
    double bucket = bucket_parameters(plan_.dp);
    int64_t buckets = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(cost.parameters / bucket)));
    const NodeGroup& group = group_of(worker);
    Collective kind = plan_.zero_stage >= 1 ? Collective::kReduceScatter : Collective::kAllReduce;
    std::vector<TaskId> ready =
        bucket_ready_delays(graph, info, worker, chunk, last_weight_gradient, buckets);
    for (int64_t k = 0; k < buckets; ++k) {
      TaskId delay_id = ready[k];
      double bytes = std::min(bucket, cost.parameters - k * bucket) * gradient_bytes_per_param(plan_.precision);
      Task task = collective_task(graph, worker, kind, bytes, group_size, group);
      task.group = group_id(graph, fmt::format("sync/{}/{}/{}", step_.layout.workers[step_.layout_worker[worker]].stage, chunk, k));
      TaskId id = graph.add_task(task);
      info.resize(graph.num_tasks());
      info[id] = TaskInfo{worker, ActionKind::kGradientSync, chunk, -1, TaskInfo::Role::kGradientReduce};
      record_bytes(id, bytes);
      graph.add_dependency(delay_id, id);
      last_sync_[worker] = id;
      reduced_buckets_[{worker, chunk}].push_back(id);
    }
  }

  // Optimizer offload: each bucket's share of the offloaded gradients goes to the host over the
  // worker's PCIe (device-to-host) stream once the bucket is reduced, or ready when there is no
  // reduction task (one data-parallel rank, ZeRO-3, ideal links).
  void offload_gradients(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                         int32_t chunk, TaskId last_weight_gradient) {
    const ChunkPrice& cost = chunk_cost(worker, chunk);
    double bucket = bucket_parameters(plan_.dp);
    int64_t buckets =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(cost.parameters / bucket)));
    std::vector<TaskId> ready = reduced_buckets_[{worker, chunk}];
    if (ready.empty()) {
      // gradient_sync added no reduction for this chunk: the buckets' ready times alone.
      ready = bucket_ready_delays(graph, info, worker, chunk, last_weight_gradient, buckets);
    }
    PPSIM_CHECK(static_cast<int64_t>(ready.size()) == buckets);
    WorkerOffload& offload = worker_offload(worker);
    // The GPU offloads the gradients of the parameters it updates: its shard under ZeRO >= 1.
    double shard_scale =
        plan_.zero_stage >= 1 ? 1.0 / static_cast<double>(plan_.dp * plan_.cp) : 1.0;
    for (int64_t k = 0; k < buckets; ++k) {
      double parameters = std::min(bucket, cost.parameters - k * bucket) * shard_scale;
      Task copy;
      copy.kind = TaskKind::kTransfer;
      copy.stream = offload_stream(graph, worker, d2h_streams_, "pcie_d2h");
      copy.latency = offloaded_fraction(plan_) * parameters * gradient_bytes_per_param(plan_.precision) /
                     offload.split.pcie_bytes_per_s;
      TaskId id = graph.add_task(copy);
      info.resize(graph.num_tasks());
      info[id] =
          TaskInfo{worker, ActionKind::kGradientSync, chunk, -1, TaskInfo::Role::kOffloadD2H};
      graph.add_dependency(ready[k], id);
      offload.d2h.push_back(id);
    }
  }

  // A per-worker stream of offload work (created on first use): PCIe copies one way, host Adam.
  StreamId offload_stream(TaskGraph& graph, int32_t worker, std::vector<StreamId>& streams,
                          const char* name) {
    if (streams.empty()) streams.assign(step_.layout_worker.size(), -1);
    if (streams[worker] < 0)
      streams[worker] = graph.add_stream(worker, fmt::format("w{}/{}", worker, name));
    return streams[worker];
  }

  // The worker's offload record with its split (created on first use).
  WorkerOffload& worker_offload(int32_t worker) {
    if (step_.offload.empty()) step_.offload.resize(step_.layout_worker.size());
    WorkerOffload& offload = step_.offload[worker];
    if (offload.split.pcie_bytes_per_s > 0) return offload;
    int32_t layout_index = step_.layout_worker[worker];
    const WorkerSlot& slot = step_.layout.workers[layout_index];
    double parameters = 0;
    for (int32_t c = 0; c < step_.schedule.num_chunks(); ++c) {
      if (step_.schedule.chunk_rank[c] == slot.stage)
        parameters += chunk_cost(worker, c).parameters;
    }
    double shard = plan_.zero_stage >= 1 ? parameters / (plan_.dp * plan_.cp) : parameters;
    if (gpus_per_node_.empty()) gpus_per_node_ = plan_gpus_per_node(step_.layout);
    offload.split = offload_split(plan_, cluster_.nodes[slot.node_group], shard,
                                  std::max<int64_t>(1, gpus_per_node_[slot.node]));
    return offload;
  }

  // The per-worker stream of bucket-ready delays (created on first use).
  StreamId timer_stream(TaskGraph& graph, int32_t worker) {
    if (timer_streams_.empty()) timer_streams_.assign(step_.layout_worker.size(), -1);
    if (timer_streams_[worker] < 0) {
      timer_streams_[worker] = graph.add_stream(worker, fmt::format("w{}/bucket_ready", worker));
    }
    return timer_streams_[worker];
  }

  // One member's share of a data-parallel collective, as a transfer on its dp stream.
  Task collective_task(TaskGraph& graph, int32_t worker, Collective kind, double bytes,
                       int64_t group_size, const NodeGroup& group) {
    CollectiveGroup collective = collective_group(group_size, pricer_.dp_ranks_per_node(group), group);
    CollectiveCost cost = collective_cost(kind, bytes, collective, options_.collective);
    const WorkerSlot& slot = step_.layout.workers[step_.layout_worker[worker]];
    Task task;
    task.kind = TaskKind::kTransfer;
    task.stream = dp_stream(graph, worker);
    task.latency = cost.latency;
    if (collective.num_nodes() > 1) {
      task.work = cost.inter_bytes * slot.num_gpus;
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
    count_comm(measured);
    if (measured.source == CostSource::kProfile) {
      CalibratedTransfer calibrated =
          calibrate_transfer(graph, task.route, task.latency, task.work, measured.seconds);
      task.latency = calibrated.latency;
      task.work = calibrated.bytes;
    }
    return task;
  }

  // The ring neighbour's node of the worker's stage, and its twins' node pairs.
  RouteId inter_node_route(TaskGraph& graph, int32_t worker) {
    int32_t layout_index = step_.layout_worker[worker];
    auto it = inter_routes_.find(layout_index);
    if (it != inter_routes_.end()) return it->second;
    const WorkerLayout& layout = step_.layout;
    int32_t stage = layout.workers[layout_index].stage;
    // Distinct nodes of the stage's replicas, in replica order: the ring.
    std::vector<int32_t> ring;
    for (int32_t d = 0; d < layout.replicas; ++d) {
      int32_t node = layout.at(d, stage).node;
      if (std::find(ring.begin(), ring.end(), node) == ring.end()) ring.push_back(node);
    }
    auto next = [&ring](int32_t node) {
      size_t i = std::find(ring.begin(), ring.end(), node) - ring.begin();
      return ring[(i + 1) % ring.size()];
    };
    std::vector<std::pair<int32_t, int32_t>> twins;
    if (step_.simulated_replicas == 1) {
      for (int32_t d = 0; d < layout.replicas; ++d) {
        int32_t node = layout.at(d, stage).node;
        twins.emplace_back(node, next(node));
      }
    } else {
      int32_t node = layout.workers[layout_index].node;
      twins.emplace_back(node, next(node));
    }
    int32_t node = layout.workers[layout_index].node;
    RouteId route = network_->node_route(graph, layout_index, node, next(node), twins);
    inter_routes_.emplace(layout_index, route);
    return route;
  }

  // Within one node: to the next replica of the same stage (ring), over NVLink.
  RouteId intra_node_route(TaskGraph& graph, int32_t worker) {
    int32_t layout_index = step_.layout_worker[worker];
    const WorkerSlot& slot = step_.layout.workers[layout_index];
    int32_t next = step_.layout.at((slot.replica + 1) % step_.layout.replicas, slot.stage).replica *
                       step_.layout.stages + slot.stage;
    std::vector<std::pair<int32_t, int32_t>> twins{{layout_index, next}};
    return network_->route(graph, layout_index, next, twins);
  }

  void record_bytes(TaskId id, double bytes) { task_bytes_[id] = bytes; }

  // Collective group ids: one per (stage, chunk, bucket) across replicas.
  int32_t group_id(TaskGraph& graph, const std::string& key) {
    auto it = groups_.find(key);
    if (it != groups_.end()) return it->second;
    return groups_.emplace(key, graph.new_group()).first->second;
  }

  TaskId optimizer_step(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                        StreamId compute_stream, TaskId after) {
    int32_t layout_index = step_.layout_worker[worker];
    const WorkerSlot& slot = step_.layout.workers[layout_index];
    const NodeGroup& group = cluster_.nodes[slot.node_group];
    double parameters = 0;
    for (int32_t c = 0; c < step_.schedule.num_chunks(); ++c) {
      if (step_.schedule.chunk_rank[c] == slot.stage) parameters += chunk_cost(worker, c).parameters;
    }
    double shard = plan_.zero_stage >= 1 ? parameters / (plan_.dp * plan_.cp) : parameters;
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
    task.work += options_.efficiency.step_overhead * graph.stream(compute_stream).speed;
    TaskId id = graph.add_task(task);
    info.resize(graph.num_tasks());
    info[id] = TaskInfo{worker, ActionKind::kOptimizerStep, -1, -1, TaskInfo::Role::kOptimizer};
    record_bytes(id, shard * kStepAdamBytesPerParameter);
    if (after >= 0) graph.add_dependency(after, id);
    auto sync = last_sync_.find(worker);
    if (sync != last_sync_.end()) graph.add_dependency(sync->second, id);
    TaskId barrier = id;
    TaskId host_done =
        offloaded_fraction(plan_) > 0 ? host_update(graph, info, worker, after, id) : -1;
    // The distributed optimizer's updated parameters are all-gathered (bf16).
    int64_t group_size = plan_.dp * plan_.cp;
    if (plan_.zero_stage >= 1 && plan_.zero_stage < 3 && group_size > 1 && !options_.ideal_links) {
      Task gather = collective_task(graph, worker, Collective::kAllGather,
                                    parameters * kStepParameterBytes, group_size, group);
      gather.group = group_id(graph, fmt::format("gather/{}", slot.stage));
      TaskId gather_id = graph.add_task(gather);
      info.resize(graph.num_tasks());
      info[gather_id] = TaskInfo{worker, ActionKind::kOptimizerStep, -1, -1, TaskInfo::Role::kParamGather};
      record_bytes(gather_id, parameters * kStepParameterBytes);
      graph.add_dependency(id, gather_id);
      if (host_done >= 0) graph.add_dependency(host_done, gather_id);
      barrier = gather_id;
    }
    return barrier;
  }

  // Optimizer offload's host part: CPU Adam once every gradient copy and the worker's last
  // compute task have ended (gradient clipping needs all gradients), then the parameters' copy
  // back. Returns the copy.
  TaskId host_update(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker, TaskId after,
                     TaskId gpu_update) {
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
    auto sync = last_sync_.find(worker);
    if (sync != last_sync_.end()) graph.add_dependency(sync->second, adam_id);
    Task copy;
    copy.kind = TaskKind::kTransfer;
    copy.stream = offload_stream(graph, worker, h2d_streams_, "pcie_h2d");
    copy.latency = offload.split.h2d_seconds();
    TaskId copy_id = graph.add_task(copy);
    info.resize(graph.num_tasks());
    info[copy_id] =
        TaskInfo{worker, ActionKind::kOptimizerStep, -1, -1, TaskInfo::Role::kOffloadH2D};
    graph.add_dependency(adam_id, copy_id);
    offload.cpu_adam = adam_id;
    offload.h2d = copy_id;
    return copy_id;
  }

  const ModelSpec& model_;
  const ClusterSpec& cluster_;
  const Plan& plan_;
  const StepOptions& options_;
  Step& step_;
  NetworkModel* network_;
  ChunkPricer pricer_;
  ChunkLayout layout_;
  MemoryReport memory_;
  std::map<std::string, CostModel> cost_models_;
  CostProvenance provenance_;
  std::set<std::pair<std::string, int32_t>> counted_;  // (GPU type, chunk) passes counted.
  std::map<std::pair<int32_t, int32_t>, ChunkPrice> chunk_costs_;
  std::map<std::pair<int32_t, int32_t>, RouteId> routes_;
  std::map<int32_t, RouteId> inter_routes_;
  std::map<std::string, int32_t> groups_;
  std::map<int32_t, TaskId> last_sync_;
  std::map<TaskId, double> task_bytes_;
  std::vector<StreamId> dp_streams_;
  std::vector<StreamId> timer_streams_;
  std::map<std::pair<int32_t, int32_t>, std::vector<TaskId>> reduced_buckets_;
  std::vector<StreamId> d2h_streams_, h2d_streams_, host_streams_;
  std::vector<int64_t> gpus_per_node_;
};

// Replicas can be simulated once when none of their GPUs has its own speed.
bool replicas_identical(const Plan& plan, const WorkerLayout& layout, const StepOptions& options) {
  if (!NetworkModel::replicas_symmetric(layout)) return false;
  if (has_unequal_shares(plan)) return false;
  if (options.gpu_speed.empty()) return true;
  for (int32_t r = 0; r < layout.stages; ++r) {
    for (int32_t d = 0; d < layout.replicas; ++d) {
      const WorkerSlot& slot = layout.at(d, r);
      for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
        if (options.gpu_speed[g] != 1.0) return false;
      }
    }
  }
  return true;
}

}  // namespace

Step build_step(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                const StepOptions& options) {
  Step step;
  step.plan = plan;
  int32_t p = static_cast<int32_t>(plan.pp);
  std::vector<int64_t> shares = replica_microbatch_counts(plan);
  int32_t m = static_cast<int32_t>(shares[0]);
  step.schedule = build_pipeline_schedule(plan.schedule, p, m, static_cast<int32_t>(plan.vpp));
  step.layout = build_worker_layout(plan, cluster);
  bool dedup = options.deduplicate_replicas && replicas_identical(plan, step.layout, options);
  step.simulated_replicas = dedup ? 1 : static_cast<int32_t>(plan.dp);
  std::vector<double> speed;
  for (int32_t d = 0; d < step.simulated_replicas; ++d) {
    step.replica_schedules.push_back(
        shares[d] == m ? step.schedule
                       : build_pipeline_schedule(plan.schedule, p, static_cast<int32_t>(shares[d]),
                                                 static_cast<int32_t>(plan.vpp)));
    for (int32_t r = 0; r < p; ++r) {
      int32_t index = d * p + r;
      step.layout_worker.push_back(index);
      const WorkerSlot& slot = step.layout.workers[index];
      double slowest = 1.0;
      if (!options.gpu_speed.empty()) {
        for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
          slowest = std::min(slowest, options.gpu_speed[g]);
        }
      }
      speed.push_back(slowest);
      const NodeGroup& group = cluster.nodes[slot.node_group];
      step.worker_names.push_back(fmt::format("stage {} replica {} (GPUs {}-{}, {})", r, d,
                                              slot.first_gpu, slot.first_gpu + slot.num_gpus - 1,
                                              group.gpu.name));
    }
  }
  TaskGraph graph;
  NetworkModel network(cluster, step.layout, graph, options.collective, dedup);
  StepCosts costs(model, cluster, plan, options, step, &network);
  step.lowered = lower_schedule(step.replica_schedules, speed, costs, std::move(graph));
  const MemoryReport& memory = costs.memory();
  for (int32_t index : step.layout_worker) {
    const StageMemory& stage = memory.stages[step.layout.workers[index].stage];
    step.static_memory_bytes.push_back(stage.weights_bytes + stage.gradients_bytes +
                                       stage.optimizer_bytes + stage.transient_bytes +
                                       stage.workspace_bytes);
    step.capacity_bytes.push_back(stage.capacity_bytes);
  }
  step.provenance = costs.provenance();
  if (options.profile) {
    step.provenance.profile_path = options.profile_path;
    step.provenance.profile_device = options.profile->profile().device.name;
    step.provenance.profile_gpu = options.profile->profile().device.catalog_gpu;
    std::set<std::string> unprofiled;
    for (const WorkerSlot& slot : step.layout.workers) {
      const GpuSpec& gpu = cluster.nodes[slot.node_group].gpu;
      if (!profile_applies_to(options.profile->profile(), gpu)) unprofiled.insert(gpu.name);
    }
    step.provenance.unprofiled_gpus.assign(unprofiled.begin(), unprofiled.end());
  }
  step.task_bytes.assign(step.lowered.graph.num_tasks(), 0.0);
  for (const auto& [id, bytes] : costs.task_bytes()) step.task_bytes[id] = bytes;
  step.embedded_comm_seconds.assign(step.lowered.graph.num_tasks(), 0.0);
  for (TaskId id = 0; id < step.lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = step.lowered.info[id];
    if (info.role != TaskInfo::Role::kAction || info.worker < 0) continue;
    ActionKind kind = info.kind;
    if (kind == ActionKind::kForward || kind == ActionKind::kBackward ||
        kind == ActionKind::kBackwardInput) {
      step.embedded_comm_seconds[id] = costs.embedded_comm(info.worker, Action{kind, info.chunk, info.microbatch});
    }
  }
  return step;
}

}  // namespace ppsim
