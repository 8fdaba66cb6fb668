// Monte-Carlo over failure arrivals: deterministic per seed, converging on the analytic
// expectation, and exact without failures.
#include "simulator/step/failure_monte_carlo.h"

#include <catch2/catch.hpp>

namespace ppsim {
namespace {

CheckpointRestartRun busy_run() {
  // 100 h of compute, an hour between checkpoints of a minute, restart 10 min, MTBF 5 h: about
  // 22 failures per run.
  CheckpointRestartRun run;
  run.work_s = 100 * 3600.0;
  run.interval_s = 3600;
  run.checkpoint_s = 60;
  run.restart_s = 600;
  run.failure_rate = 1 / (5 * 3600.0);
  return run;
}

TEST_CASE("Failure Monte-Carlo: the same seed gives the same percentiles, another seed others") {
  WallTimePercentiles a = wall_time_percentiles(busy_run(), 200, 7);
  WallTimePercentiles b = wall_time_percentiles(busy_run(), 200, 7);
  WallTimePercentiles c = wall_time_percentiles(busy_run(), 200, 8);
  CHECK(a.p50 == b.p50);
  CHECK(a.p90 == b.p90);
  CHECK(a.mean == b.mean);
  CHECK(a.iterations == 200);
  CHECK(a.seed == 7);
  CHECK(a.mean != c.mean);
  CHECK(a.p50 <= a.p90);
  // A draw does not depend on how many run before it: draw 0 of 1 == draw 0 of 200 (p50 of one
  // draw is that draw).
  SeededRandom random = SeededRandom::stream(7, 0);
  CHECK(wall_time_percentiles(busy_run(), 1, 7).p50 == sample_wall_time(busy_run(), random));
}

TEST_CASE("Failure Monte-Carlo: the mean converges on the analytic expectation") {
  // Daly's formula is exact for this process; 4000 draws put the mean within 0.3% (the wall
  // time's spread is about 3% of its mean here, so the standard error is about 0.05%).
  CheckpointRestartRun run = busy_run();
  WallTimePercentiles p = wall_time_percentiles(run, 4000, 1);
  CHECK(p.mean == Approx(expected_wall_time(run)).epsilon(3e-3));
  CHECK(p.p50 > run.work_s);
}

TEST_CASE("Failure Monte-Carlo: without failures every draw is compute plus checkpoints") {
  CheckpointRestartRun run = busy_run();
  run.failure_rate = 0;
  WallTimePercentiles p = wall_time_percentiles(run, 10, 3);
  CHECK(p.p50 == run.work_s + 99 * 60);
  CHECK(p.p90 == p.p50);
}

}  // namespace
}  // namespace ppsim
