#include "simulator/step/failure_monte_carlo.h"

#include <cmath>
#include <vector>

#include "simulator/spec/error.h"
#include "simulator/step/monte_carlo.h"

namespace ppsim {

double sample_wall_time(const CheckpointRestartRun& run, SeededRandom& random) {
  const int64_t full = checkpoint_count(run);  // Segments followed by a checkpoint.
  const double last = last_segment_s(run);
  if (run.failure_rate <= 0) return run.work_s + static_cast<double>(full) * run.checkpoint_s;
  const double mtbf = 1 / run.failure_rate;
  const double segment = run.interval_s + run.checkpoint_s;
  double t = 0;
  int64_t done = 0;  // Full segments completed.
  while (true) {
    double x = random.exponential(mtbf);  // Until the next failure, from a segment's start.
    if (done < full) {
      double fit = std::floor(x / segment);
      int64_t k = fit >= static_cast<double>(full - done) ? full - done : static_cast<int64_t>(fit);
      t += static_cast<double>(k) * segment;
      x -= static_cast<double>(k) * segment;
      done += k;
    }
    if (done == full && x >= last) return t + last;
    t += x;  // The failure: the segment's progress is lost.
    while (true) {
      double y = random.exponential(mtbf);
      if (y >= run.restart_s) break;
      t += y;  // A failure during the restart starts it over.
    }
    t += run.restart_s;
  }
}

WallTimePercentiles wall_time_percentiles(const CheckpointRestartRun& run, int64_t iterations,
                                          uint64_t seed) {
  PPSIM_CHECK(iterations >= 1);
  std::vector<double> times(static_cast<size_t>(iterations));
  double sum = 0;
  for (int64_t i = 0; i < iterations; ++i) {
    SeededRandom random = SeededRandom::stream(seed, static_cast<uint64_t>(i));
    times[i] = sample_wall_time(run, random);
    sum += times[i];
  }
  WallTimePercentiles result;
  result.iterations = iterations;
  result.seed = seed;
  result.mean = sum / static_cast<double>(iterations);
  result.p50 = nearest_rank_percentile(times, 50);
  result.p90 = nearest_rank_percentile(times, 90);
  return result;
}

}  // namespace ppsim
