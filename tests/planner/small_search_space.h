// A small plan search for the objective tests (p90, time to train): tp 8 on two 8-GPU nodes, so
// pp 1 x dp 2 or pp 2 x dp 1, 1F1B, micro-batch 1 of a 16-sequence batch, no recompute, no
// offload, sequence parallelism on; `zero_stages` the ZeRO stages searched. Top 3, one thread.
#pragma once

#include <utility>
#include <vector>

#include "simulator/planner/planner.h"

namespace ppsim::testing {

inline PlannerOptions small_search_space(Objective objective, std::vector<int> zero_stages) {
  PlannerOptions options;
  options.objective = objective;
  options.space.global_batch_size = 16;
  options.space.tp = {8};
  options.space.schedules = {ScheduleKind::kOneFOneB};
  options.space.max_micro_batch_size = 1;
  options.space.recompute = {Recompute::kNone};
  options.space.sequence_parallel = {true};
  options.space.zero_stages = std::move(zero_stages);
  options.space.offload_fractions = {0};
  options.space.smallest_fitting_offload = false;
  options.top = 3;
  options.threads = 1;
  return options;
}

}  // namespace ppsim::testing
