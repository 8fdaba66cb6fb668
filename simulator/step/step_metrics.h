// Metrics of a simulated step, each defined once here (and in the README).
//
//   iteration_time_s      = makespan of the step's timeline (first start to last end)
//   tokens_per_s          = global_batch_size * seq_length / iteration_time_s
//   model_tflops_per_gpu  = F / (iteration_time_s * gpus) / 1e12, with F Megatron-LM's FLOPs per
//                           iteration (num_floating_point_operations; no recompute counted)
//   mfu                   = model_tflops_per_gpu * 1e12 / mean peak dense FLOP/s of the plan's
//                           GPUs at the plan's precision
//   breakdown_s           on the critical worker (the one holding the step's last task):
//     compute       its F/B/I/W task time less the communication exposed inside them
//     exposed_comm  communication inside its tasks (TP, EP, CP, ZeRO-3 excess) plus the wait from
//                   its last backward to its optimizer (DP reduction not hidden) less
//                   straggler_wait, plus the parameter all-gather after the optimizer
//     straggler_wait the part of that wait spent on other replicas: how much later its gradient
//                   reductions ended than if each had started as soon as its own buckets and
//                   the reduction before it allowed (replayed alone with the simulated
//                   durations), at most the wait; a slower replica (a straggler GPU, jitter)
//                   holds the collectives back. 0 when the replicas are alike
//     optimizer     its optimizer step; with optimizer offload, the GPU's part plus the host
//                   part's exposed time (offload_traffic.h) on that worker
//     bubble        iteration_time_s - compute - exposed_comm - straggler_wait - optimizer
//                   (pipeline idle time)
//   critical_path         from the step's last task back through, at each task, the dependency
//                   or stream predecessor that ended when it started; a collective (a DP
//                   gradient reduction) starts when its last member is ready, so the walk
//                   continues through that member's worker (the slow replica)
//   stages[i].busy_s      = sum of compute-task durations of stage i (replica 0)
//   stages[i].peak_memory_bytes = static memory (weights, gradients, optimizer, workspace,
//                           transients) + the timeline's activation peak of stage i (replica 0;
//                           the largest over replicas when replicas were simulated)
//   bubble_pct            = 100 * (1 - sum(stage busy) / (stages * iteration_time_s))
//   offload               optimizer offload's traffic and host memory (offload_traffic.h);
//                         absent without offload
//   host_memory           host memory per node with optimizer or activation offload (the
//                         memory model's, memory_model.h); fits is false when a node's is over
//   gpu_types             per GPU type: count, busy_fraction, compute_s, idle_s,
//                         peak_memory_bytes, capacity_bytes (gpu_utilisation.h)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/engine/timeline.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/step/gpu_utilisation.h"
#include "simulator/step/offload_traffic.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

struct StageResult {
  int32_t index = 0;
  int64_t layers = 0;
  std::string gpu;
  double busy_s = 0;
  double activation_peak_bytes = 0;
  double peak_memory_bytes = 0;
  double capacity_bytes = 0;
};

struct Breakdown {
  double compute = 0;
  double bubble = 0;
  double exposed_comm = 0;
  double straggler_wait = 0;
  double optimizer = 0;
};

// One task on the critical path.
struct CriticalTask {
  int32_t worker = 0;
  std::string what;  // "F[c1,mb3]", "SEND_F[c1,mb3]", "dp_reduce[c1]", "optimizer", ...
  double start_s = 0;
  double end_s = 0;
};

struct StepMetrics {
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double bubble_pct = 0;
  Breakdown breakdown_s;
  std::vector<StageResult> stages;
  double peak_memory_bytes = 0;
  bool fits = true;
  int64_t events = 0;
  int64_t tasks = 0;
  int32_t simulated_replicas = 1;
  // In time order; critical_path() below makes it (simulate's report), compute_metrics leaves
  // it empty (the planner and accuracy runs need only the critical worker).
  std::vector<CriticalTask> critical_path;
  CostProvenance provenance;                // Where the step's costs came from (Step's).
  std::optional<OffloadTraffic> offload;    // With optimizer offload only.
  std::optional<HostMemoryReport> host_memory;  // With optimizer or activation offload.
  std::vector<GpuTypeUse> gpu_types;        // In the order of their first stage.
};

StepMetrics compute_metrics(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                            const Step& step, const Timeline& timeline);

// The chain of tasks that set the step time, each starting when the one before it ended (a
// collective's members count as one), from the first task to the one that ends the step.
std::vector<CriticalTask> critical_path(const Step& step, const Timeline& timeline);

// A task's label for traces and the critical path.
std::string task_label(const Step& step, TaskId id);

}  // namespace ppsim
