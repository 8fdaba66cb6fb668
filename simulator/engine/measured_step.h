// MeasuredStep: what an executor (ppsim validate's CPU or CUDA backend) measured when it ran a
// StepProgram, in the same task numbering as the simulated step, so the prediction and the
// measurement are compared task by task and drawn by the same trace writer.
//
// Times are seconds from the iteration's start (all workers leave a barrier together). A task
// the executor did not run has measured == false and start == end == 0: the kBucketReady
// delays always (they are part of the backward, not actions), and under folding every send
// and every collective (folded ranks share one device, so their traffic is not real).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/engine/task_graph.h"
#include "simulator/engine/timeline.h"

namespace ppsim {

struct MeasuredStep {
  // One per timed iteration (after the warm-up ones): per task start and end; makespan is
  // the iteration's step time (last end). Under folding, makespan is the replay's
  // (replay_with_measured) and start/end are each task's own measured interval.
  std::vector<Timeline> iterations;
  std::vector<bool> measured;  // Per task: the executor ran and timed it.
  // Per worker: the labels of the instructions it executed, in order (first timed iteration).
  std::vector<std::vector<std::string>> executed;
  // Per worker: the peak bytes the executor held (static block plus activations).
  std::vector<double> peak_memory_bytes;
  bool folded = false;
  // ExecutorResult::compute_cpu_share: below 1 the CPU threads waited for cores (0: unknown).
  double compute_cpu_share = 0;
  std::string device;  // What ran it: "2 CPU threads (Intel ...)", "1 x NVIDIA H200".
};

// The step with every measured compute task's duration replacing its predicted work, and
// everything else (transfers, collectives, delays) as predicted: what the measured compute
// implies for the step when the schedule, not the hardware, decides the overlap. Used by
// folding, where the real step time cannot be measured. Compute tasks get work = measured
// duration x their stream's speed, so the engine's division gives back the duration.
// REQUIRES: durations.size() == measured.size() == graph.num_tasks().
Timeline replay_with_measured(const TaskGraph& graph, const std::vector<double>& durations,
                              const std::vector<bool>& measured);

}  // namespace ppsim
