#include "simulator/step/step_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "simulator/cost/collective_timing.h"
#include "simulator/model/activation_memory.h"
#include "simulator/model/memory_model.h"
#include "simulator/spec/error.h"
#include "simulator/step/network_model.h"
#include "simulator/step/step_prices.h"
#include "simulator/step/update_tasks.h"

namespace ppsim {
namespace {

// The step's LoweringCosts: compute tasks and pipeline transfers priced here, the gradient
// reduction and optimizer tasks by UpdateTasks, every chunk's price by StepPrices.
class StepCosts : public LoweringCosts {
 public:
  StepCosts(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
            const StepOptions& options, Step& step, NetworkModel* network)
      : model_(model),
        cluster_(cluster),
        plan_(plan),
        options_(options),
        step_(step),
        network_(network),
        prices_(model, cluster, plan, options, step),
        update_(cluster, plan, options, step, network, prices_) {
    memory_ = estimate_gpu_memory(model, cluster, plan);
  }

  ComputeSpec compute(int32_t worker, const Action& action) override {
    const ChunkPrice& cost = prices_.of(worker, action.chunk);
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
      default:
        PPSIM_CHECK(false, "not a compute action");
    }
    return spec;
  }

  TransferSpec transfer(TaskGraph& graph, int32_t from, int32_t to, const Action& send) override {
    TransferSpec spec;
    if (options_.ideal_links) return spec;
    int32_t a = step_.layout_worker[from];
    int32_t b = step_.layout_worker[to];
    double seq = static_cast<double>(effective_seq_length(plan_, model_)) / plan_.cp;
    double tensor = plan_.micro_batch_size * seq * model_.hidden_size * kActivationElementBytes;
    // Per GPU: a 1/tp shard with sequence parallelism, the whole tensor without; x cp GPUs.
    double per_gpu = plan_.sequence_parallel ? tensor / plan_.tp : tensor;
    spec.bytes = per_gpu * plan_.tp * plan_.cp;
    if (!network_->same_node(a, b)) {
      // One node's share when the sender spreads over several (WorkerSlot::nodes).
      spec.bytes /= step_.layout.workers[a].nodes;
    }
    spec.latency = network_->latency(a, b);
    // A measured sendrecv (one GPU to its peer, on one node or across two) sets the time.
    const NodeGroup& group =
        cluster_.nodes[step_.layout.workers[step_.layout_worker[from]].node_group];
    PassCost measured =
        collective_time(Collective::kSendRecv, per_gpu,
                        collective_group(2, network_->same_node(a, b) ? 2 : 1, group),
                        options_.collective, profile_for_gpu(options_.profile, group.gpu));
    prices_.count_comm(measured);
    auto key = std::make_pair(a, b);
    auto it = routes_.find(key);
    if (it == routes_.end()) {
      std::vector<std::pair<int32_t, int32_t>> twins;
      int32_t stage_a = step_.layout.workers[a].stage, stage_b = step_.layout.workers[b].stage;
      // The class's replicas send alike (a twin per member; just this pair without classes).
      for (int32_t d : step_.classes.members(from / step_.layout.stages)) {
        twins.emplace_back(d * step_.layout.stages + stage_a, d * step_.layout.stages + stage_b);
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

  // Megatron's and DeepSpeed's non-interleaved pipelines wait for each send (runtime.h
  // blocking_p2p); Megatron overlaps p2p in the interleaved schedule, and the zero-bubble and
  // V schedules run in other code (forks, torch.distributed.pipelining).
  bool blocking_sends() const override {
    const ScheduleTraits& schedule = schedule_traits(plan_.schedule);
    return runtime_traits(plan_.runtime).blocking_p2p &&
           (schedule.megatron_native || schedule.deepspeed_native) &&
           !is_interleaved(plan_.schedule) && !schedule.splits_backward;
  }

  TaskId step_action(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                     StreamId compute_stream, const Action& action, TaskId after) override {
    if (action.kind == ActionKind::kGradientSync) {
      update_.after_backward(graph, info, worker, action.chunk, after);
      return -1;
    }
    return update_.optimizer_step(graph, info, worker, compute_stream, after);
  }

  const MemoryReport& memory() const { return memory_; }
  const CostProvenance& provenance() const { return prices_.provenance(); }
  // Step::task_bytes of the tasks this provider added.
  const std::vector<std::pair<TaskId, double>>& task_bytes() const { return update_.task_bytes(); }

  // Exposed communication inside a compute task of this action.
  double embedded_comm(int32_t worker, const Action& action) {
    const ChunkPrice& cost = prices_.of(worker, action.chunk);
    if (action.kind == ActionKind::kForward) return cost.forward_comm;
    if (action.kind == ActionKind::kBackward || action.kind == ActionKind::kBackwardInput) {
      return cost.backward_comm;
    }
    return 0;
  }

 private:
  const ModelSpec& model_;
  const ClusterSpec& cluster_;
  const Plan& plan_;
  const StepOptions& options_;
  Step& step_;
  NetworkModel* network_;
  StepPrices prices_;
  UpdateTasks update_;
  MemoryReport memory_;
  std::map<std::pair<int32_t, int32_t>, RouteId> routes_;  // Pipeline send routes per worker pair.
};

}  // namespace

Step build_step(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                const StepOptions& options) {
  Step step;
  step.plan = plan;
  int32_t p = static_cast<int32_t>(plan.pp);
  // The budget first, before anything is sized by the microbatches (the layout is per worker).
  check_work_budget(plan, estimate_step_work(plan, 1), options.budget);
  std::vector<int64_t> shares = replica_microbatch_counts(plan);
  int32_t m = static_cast<int32_t>(shares[0]);
  step.layout = build_worker_layout(plan, cluster);
  step.classes =
      replica_classes(plan, step.layout, options.gpu_speed, options.singled_out_nodes,
                      options.deduplicate_replicas);
  const WorkEstimate work = estimate_step_work(plan, step.classes.count());
  check_work_budget(plan, work, options.budget);
  const int32_t group = static_cast<int32_t>(microbatch_group_in_force(plan));
  step.schedule =
      build_pipeline_schedule(plan.schedule, p, m, static_cast<int32_t>(plan.vpp), group);
  std::vector<double> speed;
  for (int32_t d : step.classes.simulated) {
    step.replica_schedules.push_back(
        shares[d] == m ? step.schedule
                       : build_pipeline_schedule(plan.schedule, p, static_cast<int32_t>(shares[d]),
                                                 static_cast<int32_t>(plan.vpp), group));
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
  graph.reserve_tasks(static_cast<int64_t>(work.tasks));  // The estimate (work_estimate.h).
  NetworkModel network(cluster, step.layout, graph, options.collective,
                       step.classes.representative);
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
      step.embedded_comm_seconds[id] =
          costs.embedded_comm(info.worker, Action{kind, info.chunk, info.microbatch});
    }
  }
  return step;
}

}  // namespace ppsim
