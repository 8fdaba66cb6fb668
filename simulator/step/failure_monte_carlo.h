// Monte-Carlo over failure arrivals: the distribution of a run's wall time under the
// checkpoint/restart model (checkpoint_restart.h), whose mean the analytic expectation gives.
//
// One draw plays the run forward from failure to failure: the time to the next failure is
// exponential (mean M); the segments that fit before it complete; the failure costs the time
// since its segment began, then a restart of R seconds that must itself run uninterrupted
// (a failure during it starts it over). Cost: O(failures) per draw, not O(segments).
// Draw i uses SeededRandom::stream(seed, i), so a draw does not depend on how many run before it
// and the same seed gives the same percentiles, byte for byte.
#pragma once

#include <cstdint>

#include "simulator/spec/seeded_random.h"
#include "simulator/step/checkpoint_restart.h"

namespace ppsim {

// Nearest-rank percentiles of the wall time over the draws, seconds.
struct WallTimePercentiles {
  int64_t iterations = 0;
  uint64_t seed = 0;
  double p50 = 0;
  double p90 = 0;
  double mean = 0;
};

// One run's wall time. REQUIRES: a finite interval or a finite expected wall time.
double sample_wall_time(const CheckpointRestartRun& run, SeededRandom& random);

// `iterations` draws. REQUIRES: iterations >= 1.
WallTimePercentiles wall_time_percentiles(const CheckpointRestartRun& run, int64_t iterations,
                                          uint64_t seed);

}  // namespace ppsim
