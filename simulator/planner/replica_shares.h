// Replica shares: per-replica shares of the global batch for data-parallel replicas of different
// speed (Plan::replica_microbatches; DESIGN "per-replica batch share", as HexiScale and Cephalo
// size each replica's batch to its GPUs).
//
// A replica's throughput is 1 / (seconds per microbatch of its slowest stage): in steady state a
// pipeline moves one microbatch per bottleneck-stage time. A stage's seconds per microbatch are
// its layers' forward + backward + weight-gradient seconds on its GPU type, with the embedding on
// the first chunk's stage and the head on the last's (PlanScreen::layer_seconds, the costs the
// simulation uses, a profile's included).
// Proportional shares: the total T = gbs / mbs microbatches split in proportion to throughput,
// rounded by largest remainder to whole units, each replica at least the schedule's minimum:
//   unit = pp for interleaved-1f1b with vpp > 1 (Megatron runs microbatches in groups of pp),
//          else 1;
//   minimum = 2*pp for dualpipev, else one unit.
// Then the time of replica d is about m_d / throughput_d, and the step's pipelines finish together
// instead of the fast ones idling while the slow ones work through an equal share.
//
// Thread-safety: pure functions (PlanScreen is thread-safe).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "simulator/planner/plan_screen.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// Microbatches per second of each replica (dp entries), from the screen's per-layer seconds.
// REQUIRES: plan_problem(plan, ...) is nullopt.
std::vector<double> replica_throughputs(const PlanScreen& screen, const Plan& plan);

// Shares of `total` microbatches in proportion to `throughput` (header rounding), or nullopt when
// no split meets the minimums. Deterministic: ties in the remainders go to the lower index.
std::optional<std::vector<int64_t>> proportional_shares(const std::vector<double>& throughput,
                                                        int64_t total, int64_t unit,
                                                        int64_t minimum);

// `plan` with proportional shares, or nullopt when its replicas run at one speed, the shares
// come out equal, or the result is not a valid plan.
std::optional<Plan> with_proportional_shares(const PlanScreen& screen, const Plan& plan);

}  // namespace ppsim
