// Enumerates the structurally valid plans for a model on a cluster (the planner's search
// space before memory pruning and simulation).
//
// The space: every factorisation gpus = tp * pp * dp * cp with tp a power of two up to the GPUs
// per node, pp up to the layer count, cp in {1, 2, 4, 8} (only when the sequence is at least
// 8192 tokens); micro-batch sizes {1, 2, 4, 8}; recompute none/selective/full; sequence
// parallelism whenever tp > 1 (Megatron's recommendation); the distributed optimizer
// (ZeRO-1) whenever dp > 1. Plans for which plan_problem() finds a reason are left out.
// Order: deterministic (tp, pp, cp, mbs, recompute ascending).
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/cluster_spec.h"
#include "simulator/model_spec.h"
#include "simulator/plan.h"

namespace ppsim {

struct CandidateLimits {
  int64_t gpus = 0;                // GPUs to use; 0 = every GPU of the cluster.
  int64_t global_batch_size = 0;   // Sequences per step. REQUIRES: > 0.
  std::optional<int64_t> seq_length;  // Overrides the model's when set.
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
};

std::vector<Plan> enumerate_plans(const ModelSpec& model, const ClusterSpec& cluster,
                                  const CandidateLimits& limits);

}  // namespace ppsim
