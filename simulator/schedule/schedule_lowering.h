// Lowers a PipelineSchedule to a TaskGraph: the per-rank action lists become tasks on streams,
// for one or several data-parallel replicas, with costs supplied by the caller.
//
// Per worker (one pipeline rank of one replica; its tp x cp GPUs run in lockstep, since their
// collectives synchronise every layer, so they are one unit whose speed is its slowest GPU's):
// - a compute stream running F, B, I, W in the schedule's order;
// - a send stream per (peer, direction): activations and gradients to each neighbour rank
//   (V schedules send forward to two peers; one shared queue could deadlock them).
//   A transfer starts when the producer's action has ended and the receiver has reached the
//   matching RECV in its own order (NCCL send/recv needs both sides: a rendezvous); the
//   receiver's next compute action waits for it. Sends do not block the sender's compute,
//   unless the costs say so (LoweringCosts::blocking_sends: Megatron's non-interleaved
//   schedules wait for each batched send/recv before the next compute, so the sender's next
//   compute action after a SEND waits for that transfer to finish).
// Data dependencies between chunks on the same rank (no transfer) become direct edges.
// kGradientSync and kOptimizerStep are handed to the cost provider, which adds its own tasks
// (bucketed DP reduction, optimizer step) after the given predecessor.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/engine/task_graph.h"
#include "simulator/schedule/pipeline_schedule.h"

namespace ppsim {

// Cost and memory of one compute action on one worker.
struct ComputeSpec {
  double seconds = 0;      // At speed 1 (the worker's stream speed divides it).
  double alloc_bytes = 0;  // Allocated when it starts (F: the microbatch's saved activations).
  double free_bytes = 0;   // Freed when it ends (B, or W for split backward).
};

// A point-to-point transfer between two workers.
struct TransferSpec {
  double bytes = 0;    // 0: only the latency.
  double latency = 0;  // Seconds before the bytes move.
  RouteId route = -1;  // Links crossed (needed when bytes > 0).
};

// What a task in the lowered graph stands for, for reports and traces.
struct TaskInfo {
  int32_t worker = -1;      // Index into the workers list (replica * ranks + rank).
  ActionKind kind = ActionKind::kForward;
  int32_t chunk = -1;
  int32_t microbatch = -1;
  // What else the task is, when it is not a pipeline action itself.
  enum class Role : uint8_t {
    kAction,          // A pipeline action (F, B, I, W, a send).
    kGradientReduce,  // One bucket of a chunk's data-parallel gradient reduction.
    kBucketReady,     // The delay until a gradient bucket is ready (part of the backward).
    kParamGather,     // The distributed optimizer's parameter all-gather.
    kOptimizer,       // The optimizer step (the GPU's part of it with optimizer offload).
    kOffloadD2H,      // Offload: one bucket's gradients copied to the host over PCIe.
    kCpuAdam,         // Offload: the host's part of the Adam update.
    kOffloadH2D,      // Offload: the updated parameters copied back to the GPU over PCIe.
  } role = Role::kAction;
};

// True for the tasks that are a pipeline's compute actions: F, B, I, W.
inline bool is_compute_action(const TaskInfo& info) {
  return info.role == TaskInfo::Role::kAction && is_compute(info.kind);
}

class LoweringCosts {
 public:
  virtual ~LoweringCosts() = default;
  virtual ComputeSpec compute(int32_t worker, const Action& action) = 0;
  virtual TransferSpec transfer(TaskGraph& graph, int32_t from_worker, int32_t to_worker,
                                const Action& send) = 0;
  // Adds the tasks of kGradientSync / kOptimizerStep for `worker` after `after` (the task that
  // must end first: the chunk's last weight gradient, or the worker's last task). Returns the
  // task the rest of the worker's compute order must wait for (or -1 for none). Implementations
  // record what they add in `info` (one entry per task, by TaskId).
  // `compute_stream` is the worker's compute stream (the optimizer step runs there).
  virtual TaskId step_action(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                             StreamId compute_stream, const Action& action, TaskId after) = 0;
  // True when a worker's next compute action after a SEND waits for that send (header).
  virtual bool blocking_sends() const { return false; }
};

struct Lowered {
  TaskGraph graph;
  std::vector<TaskInfo> info;             // Per task.
  std::vector<StreamId> compute_stream;   // Per worker.
  std::vector<StreamId> send_forward_stream;   // Per worker: its first forward peer's stream.
  std::vector<StreamId> send_backward_stream;  // Per worker: its first backward peer's stream.
};

// One worker per (replica, rank): worker w = replica * schedule.ranks + rank, on device w.
// `worker_speed[w]` is its compute speed factor (1 = nominal). `graph` may already hold links and
// routes the costs refer to; lowering adds streams and tasks to it.
Lowered lower_schedule(const PipelineSchedule& schedule, int32_t replicas,
                       const std::vector<double>& worker_speed, LoweringCosts& costs,
                       TaskGraph graph = {});
// The same with one schedule per replica: replica d runs replica_schedules[d] (per-replica
// batch shares give replicas different microbatch counts).
// REQUIRES: the schedules differ at most in their microbatch counts (same kind, ranks, chunks).
Lowered lower_schedule(const std::vector<PipelineSchedule>& replica_schedules,
                       const std::vector<double>& worker_speed, LoweringCosts& costs,
                       TaskGraph graph = {});

}  // namespace ppsim
