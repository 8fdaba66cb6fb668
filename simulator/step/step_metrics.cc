#include "simulator/step/step_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <utility>

#include "simulator/model/memory_model.h"
#include "simulator/model/model_stats.h"

namespace ppsim {
namespace {

double mean_peak_flops(const ClusterSpec& cluster, const Step& step, Precision precision) {
  double total = 0;
  int64_t gpus = 0;
  for (const WorkerSlot& slot : step.layout.workers) {
    const GpuSpec& gpu = cluster.nodes[slot.node_group].gpu;
    double peak = gpu.peak_flops(precision);
    if (peak <= 0) peak = std::max(gpu.peak_bf16_flops, gpu.peak_fp16_flops);
    total += peak * slot.num_gpus;
    gpus += slot.num_gpus;
  }
  return gpus > 0 ? total / gpus : 0;
}

// Tasks' lists of direct predecessors (dependency edges) or of collective-group members, as
// compressed rows: one allocation for all, where a vector per task would take one each (the
// planner computes metrics for thousands of plans). Rows keep the order entries were added.
class TaskRows {
 public:
  TaskRows(int32_t rows, const std::vector<std::pair<int32_t, TaskId>>& entries)
      : offsets_(static_cast<size_t>(rows) + 1, 0), entries_(entries.size()) {
    for (const auto& [row, task] : entries) ++offsets_[row + 1];
    for (int32_t r = 0; r < rows; ++r) offsets_[r + 1] += offsets_[r];
    std::vector<int32_t> next(offsets_.begin(), offsets_.end() - 1);
    for (const auto& [row, task] : entries) entries_[next[row]++] = task;
  }
  std::span<const TaskId> operator[](int32_t row) const {
    return {entries_.data() + offsets_[row], entries_.data() + offsets_[row + 1]};
  }

 private:
  std::vector<int32_t> offsets_;
  std::vector<TaskId> entries_;
};

TaskRows predecessor_rows(const TaskGraph& graph) {
  std::vector<std::pair<int32_t, TaskId>> edges;
  edges.reserve(graph.dependencies().size());
  for (const auto& [before, after] : graph.dependencies()) edges.emplace_back(after, before);
  return TaskRows(graph.num_tasks(), edges);
}

// The task that ends the step; of tasks ending together (replicas released by one collective),
// the one on the lowest worker, so the choice does not hang on rounding and a fast replica that
// waited for a slow one is the one described. -1 for an empty graph.
TaskId last_task(const Step& step, const Timeline& timeline) {
  const int32_t n = step.lowered.graph.num_tasks();
  double last_end = 0;
  for (TaskId id = 0; id < n; ++id) last_end = std::max(last_end, timeline.end[id]);
  const double tie = 1e-12 * std::max(1.0, last_end);
  TaskId current = -1;
  for (TaskId id = 0; id < n; ++id) {
    if (timeline.end[id] < last_end - tie) continue;
    if (current < 0 || static_cast<uint32_t>(step.lowered.info[id].worker) <
                           static_cast<uint32_t>(step.lowered.info[current].worker)) {
      current = id;
    }
  }
  return current;
}

// Walks back from the last task through the predecessor that ended exactly when it started. A
// collective's members start together when the last is ready, so a member's predecessors are
// those of every member of its group: the walk follows the member that was ready last.
std::vector<TaskId> critical_tasks(const Step& step, const Timeline& timeline) {
  const TaskGraph& graph = step.lowered.graph;
  int32_t n = graph.num_tasks();
  if (n == 0) return {};
  const TaskRows predecessors = predecessor_rows(graph);
  std::vector<std::pair<int32_t, TaskId>> memberships;
  for (TaskId id = 0; id < n; ++id) {
    if (graph.task(id).group >= 0) memberships.emplace_back(graph.task(id).group, id);
  }
  const TaskRows group_members(graph.num_groups(), memberships);
  TaskId current = last_task(step, timeline);
  std::vector<TaskId> path{current};
  while (true) {
    TaskId best = -1;
    double start = timeline.start[current];
    auto consider = [&](TaskId candidate) {
      if (candidate < 0) return;
      if (timeline.end[candidate] <= start + 1e-12 &&
          (best < 0 || timeline.end[candidate] > timeline.end[best])) {
        best = candidate;
      }
    };
    consider(graph.stream_predecessor(current));
    for (TaskId before : predecessors[current]) consider(before);
    if (graph.task(current).group >= 0) {
      for (TaskId member : group_members[graph.task(current).group]) {
        if (member == current) continue;
        consider(graph.stream_predecessor(member));
        for (TaskId before : predecessors[member]) consider(before);
      }
    }
    if (best < 0 || timeline.end[best] < start - 1e-9 * std::max(1.0, start)) break;
    path.push_back(best);
    current = best;
    if (path.size() > static_cast<size_t>(n)) break;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// How much later worker `worker`'s gradient reductions finished than they would have had every
// replica been ready when it was: its reductions replayed alone, in order, each starting when its
// own dependencies (its gradient buckets) had ended and the one before it had finished, with
// their simulated durations. The difference is time spent waiting for another replica to join
// the collectives, directly or through the backlog that wait left on its reduction stream.
double peer_wait(const Step& step, const Timeline& timeline, const TaskRows& predecessors,
                 int32_t worker) {
  const TaskGraph& graph = step.lowered.graph;
  std::vector<TaskId> reduces;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskInfo& info = step.lowered.info[id];
    if (info.worker == worker && info.role == TaskInfo::Role::kGradientReduce &&
        graph.task(id).group >= 0) {
      reduces.push_back(id);
    }
  }
  if (reduces.empty()) return 0;
  std::stable_sort(reduces.begin(), reduces.end(),
                   [&](TaskId a, TaskId b) { return timeline.start[a] < timeline.start[b]; });
  double alone = 0;   // When the replayed reduction before this one ends.
  double actual = 0;  // When the simulated ones end.
  for (TaskId id : reduces) {
    double ready = 0;
    for (TaskId before : predecessors[id]) ready = std::max(ready, timeline.end[before]);
    alone = std::max(alone, ready) + (timeline.end[id] - timeline.start[id]);
    actual = std::max(actual, timeline.end[id]);
  }
  return std::max(0.0, actual - alone);
}

}  // namespace

std::string task_label(const Step& step, TaskId id) {
  const TaskInfo& info = step.lowered.info[id];
  switch (info.role) {
    case TaskInfo::Role::kGradientReduce: return fmt::format("dp_reduce[c{}]", info.chunk);
    case TaskInfo::Role::kBucketReady: return fmt::format("bucket_ready[c{}]", info.chunk);
    case TaskInfo::Role::kParamGather: return "param_gather";
    case TaskInfo::Role::kOptimizer: return "optimizer";
    case TaskInfo::Role::kOffloadD2H:
      return fmt::format("offload_d2h[c{}]", info.chunk);
    case TaskInfo::Role::kCpuAdam:
      return "cpu_adam";
    case TaskInfo::Role::kOffloadH2D:
      return "offload_h2d";
    case TaskInfo::Role::kAction: break;
  }
  return action_label(Action{info.kind, info.chunk, info.microbatch});
}

StepMetrics compute_metrics(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                            const Step& step, const Timeline& timeline) {
  StepMetrics metrics;
  const TaskGraph& graph = step.lowered.graph;
  metrics.iteration_time_s = timeline.makespan;
  metrics.events = timeline.events;
  metrics.tasks = graph.num_tasks();
  metrics.simulated_replicas = step.classes.count();
  metrics.provenance = step.provenance;
  int64_t seq = effective_seq_length(plan, model);
  if (timeline.makespan > 0) {
    metrics.tokens_per_s = static_cast<double>(plan.global_batch_size) * seq / timeline.makespan;
    double flops = training_flops_per_iteration(model, plan.global_batch_size, seq);
    metrics.model_tflops_per_gpu = flops / (timeline.makespan * plan.num_gpus()) / 1e12;
    double peak = mean_peak_flops(cluster, step, plan.precision);
    metrics.mfu = peak > 0 ? metrics.model_tflops_per_gpu * 1e12 / peak : 0;
  }
  // Per stage (replica 0), and the critical worker's breakdown.
  int32_t p = static_cast<int32_t>(plan.pp);
  std::vector<int64_t> layers = stage_layer_counts(plan, model);
  int32_t workers = static_cast<int32_t>(step.layout_worker.size());
  std::vector<double> busy(workers, 0), comm(workers, 0), optimizer(workers, 0), gather(workers, 0);
  std::vector<double> last_backward_end(workers, 0), optimizer_start(workers, -1);
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskInfo& info = step.lowered.info[id];
    if (info.worker < 0) continue;
    double duration = timeline.end[id] - timeline.start[id];
    if (is_compute_action(info)) {
      busy[info.worker] += duration;
      comm[info.worker] += step.embedded_comm_seconds[id] / graph.stream(graph.task(id).stream).speed;
      last_backward_end[info.worker] = std::max(last_backward_end[info.worker], timeline.end[id]);
    } else if (info.role == TaskInfo::Role::kOptimizer) {
      optimizer[info.worker] += duration;
      optimizer_start[info.worker] = timeline.start[id];
    } else if (info.role == TaskInfo::Role::kParamGather) {
      gather[info.worker] += duration;
    }
  }
  for (int32_t r = 0; r < p; ++r) {
    StageResult stage;
    stage.index = r;
    stage.layers = layers[r];
    stage.gpu = cluster.nodes[step.layout.at(0, r).node_group].gpu.name;
    stage.busy_s = busy[r];
    for (int32_t d = 0; d < step.classes.count(); ++d) {
      int32_t w = d * p + r;
      stage.activation_peak_bytes = std::max(stage.activation_peak_bytes, timeline.peak_memory[w]);
      stage.peak_memory_bytes = std::max(stage.peak_memory_bytes,
                                         step.static_memory_bytes[w] + timeline.peak_memory[w]);
      stage.capacity_bytes = step.capacity_bytes[w];
    }
    metrics.fits = metrics.fits && stage.peak_memory_bytes <= stage.capacity_bytes;
    metrics.peak_memory_bytes = std::max(metrics.peak_memory_bytes, stage.peak_memory_bytes);
    metrics.stages.push_back(stage);
  }
  double busy_sum = 0;
  for (const StageResult& stage : metrics.stages) busy_sum += stage.busy_s;
  if (timeline.makespan > 0) {
    metrics.bubble_pct = 100.0 * (1.0 - busy_sum / (p * timeline.makespan));
  }
  // The critical path ends on the last task (critical_path below), so its worker is the
  // critical one without the walk.
  const TaskId last = last_task(step, timeline);
  int32_t critical = last < 0 ? 0 : std::max(0, step.lowered.info[last].worker);
  Breakdown& breakdown = metrics.breakdown_s;
  breakdown.compute = busy[critical] - comm[critical];
  double dp_wait = optimizer_start[critical] >= 0
                       ? std::max(0.0, optimizer_start[critical] - last_backward_end[critical])
                       : 0.0;
  if (dp_wait > 0) {
    breakdown.straggler_wait =
        std::min(dp_wait, peer_wait(step, timeline, predecessor_rows(graph), critical));
    // Replicas alike still differ by rounding in their ready times: below a nanosecond is none.
    if (breakdown.straggler_wait < 1e-9) breakdown.straggler_wait = 0;
  }
  breakdown.exposed_comm = comm[critical] + dp_wait - breakdown.straggler_wait + gather[critical];
  breakdown.optimizer = optimizer[critical];
  metrics.offload = offload_traffic(model, cluster, step, timeline);
  if (metrics.offload) {
    metrics.host_memory = metrics.offload->host;
  } else if (step.plan.activation_offload_layers > 0) {
    metrics.host_memory = estimate_memory(model, cluster, step.plan).host;
  }
  if (metrics.host_memory && !metrics.host_memory->fits) metrics.fits = false;
  if (metrics.offload && critical < static_cast<int32_t>(step.offload.size())) {
    const WorkerOffload& offload = step.offload[critical];
    if (offload.h2d >= 0 && offload.gpu_update >= 0) {
      breakdown.optimizer +=
          std::max(0.0, timeline.end[offload.h2d] - timeline.end[offload.gpu_update]);
    }
  }
  breakdown.bubble =
      std::max(0.0, timeline.makespan - breakdown.compute - breakdown.exposed_comm -
                        breakdown.straggler_wait - breakdown.optimizer);
  std::vector<double> stage_peaks;
  for (const StageResult& stage : metrics.stages) stage_peaks.push_back(stage.peak_memory_bytes);
  metrics.gpu_types = gpu_type_use(cluster, step, timeline, stage_peaks);
  return metrics;
}

std::vector<CriticalTask> critical_path(const Step& step, const Timeline& timeline) {
  std::vector<CriticalTask> path;
  for (TaskId id : critical_tasks(step, timeline)) {
    path.push_back(CriticalTask{step.lowered.info[id].worker, task_label(step, id),
                                timeline.start[id], timeline.end[id]});
  }
  return path;
}

}  // namespace ppsim
