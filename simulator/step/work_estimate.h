// WorkEstimate: how much a step simulation will cost, estimated from the plan alone before
// anything is built, and the budget (--max-tasks, --max-memory) that refuses a run that would
// otherwise take minutes or exhaust the machine (docs/limits.md).
//
// The estimate (upper bounds, calibrated on the shipped schedules; tests/step/work_estimate_test):
//   tasks   = R * pp * (vpp * m * kTasksPerChunkMicrobatch + kTasksPerStage)
//             R: replicas simulated (one per replica class, replica_classes.h; dp when
//                every replica is),
//             m: microbatches of the longest replica (num_microbatches(plan));
//             measured: 3.5 tasks per (stage, microbatch) for gpipe and 1f1b, 3.75 per chunk for
//             interleaved-1f1b, 4.5 per chunk for zbv, plus up to ~30 per stage (optimizer,
//             data-parallel collectives);
//   flow_pairs = R^2 * pp when R > 1: the R replicas' flows of each stage's data-parallel
//             collective share links, and max-min rates cost about one step per pair;
//   work    = tasks + gpus + flow_pairs / kFlowPairsPerTask, in task-equivalents: on this
//             project's 2-core CI machine one task, one GPU of the cluster layout and ten flow
//             pairs each cost about 20 us (1.4M tasks in 26 s; 1M GPUs in 20 s; 2,048 coupled
//             replicas, 4.2M pairs, in 8 s);
//   memory  = tasks * kBytesPerTask + gpus * kBytesPerGpu (measured 400-550 B per task with
//             the timeline and report, ~90 B per GPU).
// The budget compares work with max_tasks and memory with max_memory_bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "simulator/spec/plan.h"

namespace ppsim {

inline constexpr double kTasksPerChunkMicrobatch = 6;
inline constexpr double kTasksPerStage = 64;
inline constexpr double kFlowPairsPerTask = 10;
inline constexpr double kBytesPerTask = 600;
inline constexpr double kBytesPerGpu = 128;
// A plan search: each shape's memory screen visits every GPU of its layout (0.1-0.25 s per
// memory estimate on a million GPUs, `ppsim memory` on dgx-h100:131072 against dgx-h100-4 on
// the loaded 2-core machine); shapes x GPUs may reach this x --max-tasks (64M visits at the
// default budget, about 10 s: 4,096 shapes on 16,384 GPUs, 64 on a million).
inline constexpr double kSearchGpuVisitsPerTask = 32;

// Defaults: a step of at most two million task-equivalents (about 40 s on a loaded 2-core
// machine, seconds on a workstation; the 405B step on 16,384 GPUs with every replica is
// 0.25 million) and 4 GiB of memory.
inline constexpr int64_t kDefaultMaxTasks = 2'000'000;
inline constexpr double kDefaultMaxMemoryGiB = 4;

struct WorkBudget {
  int64_t max_tasks = kDefaultMaxTasks;  // Task-equivalents per simulated step; --max-tasks.
  double max_memory_bytes = kDefaultMaxMemoryGiB * (1u << 30);  // Bytes; --max-memory (GiB).
};

struct WorkEstimate {
  int64_t replicas = 1;     // Replicas simulated (R).
  double tasks = 0;         // Tasks of the step's graph.
  double flow_pairs = 0;    // Pairs of flows in shared data-parallel collectives.
  double gpus = 0;          // GPUs the plan occupies.
  double work = 0;          // Task-equivalents (header formula).
  double memory_bytes = 0;  // Peak bytes the simulation holds.
};

// The estimate for `plan` with `simulated_replicas` replicas simulated (one per replica class).
// REQUIRES: a plan that passed parse_plan (degrees within plan.h's bounds).
WorkEstimate estimate_step_work(const Plan& plan, int64_t simulated_replicas);

// Whether `estimate` stays within both limits of `budget`.
bool within_work_budget(const WorkEstimate& estimate, const WorkBudget& budget);

// Throws InputError naming the flag that raises the budget (--max-tasks or --max-memory), the
// plan (inline form) and the estimate, when the estimate exceeds the budget.
void check_work_budget(const Plan& plan, const WorkEstimate& estimate, const WorkBudget& budget);

}  // namespace ppsim
