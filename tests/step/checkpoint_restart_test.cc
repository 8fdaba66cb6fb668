// The checkpoint/restart model: Young's and Daly's intervals against their published values,
// the expected wall time of a fixed interval against a hand computation, and its limits.
#include "simulator/step/checkpoint_restart.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

namespace ppsim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST_CASE("Checkpoint interval: Young's sqrt(2 delta M)") {
  // delta = 5 min, M = 24 h: sqrt(2 x 300 x 86400) = sqrt(51,840,000) = 7200 s exactly.
  CHECK(young_interval(300, 86400) == Approx(7200).epsilon(1e-15));
  // delta = 2 s, M = 2 h: sqrt(2 x 2 x 7200) = sqrt(28800) = 169.7056 s.
  CHECK(young_interval(2, 7200) == Approx(169.70562748477141));
}

TEST_CASE("Checkpoint interval: Daly's higher-order form reproduces his worked examples") {
  // Daly 2006 (FGCS 22(3)), figures 3-5: delta = 5 min, R = 10 min; tau_opt = 117, 57 and
  // 9.1 min for M = 24 h, 6 h and 15 min. By hand, in minutes, for M = 1440:
  // sqrt(2 x 5 x 1440) = 120; delta/2M = 1/576; 120 (1 + (1/3)(1/24) + (1/9)(1/576)) - 5
  // = 120 x 1.0140817901 - 5 = 116.6898148.
  CHECK(daly_interval(5, 1440) == Approx(116.6898148148148).epsilon(1e-12));
  CHECK(std::round(daly_interval(5, 1440)) == 117);
  // M = 360: 60 (1 + (1/3)(1/12) + (1/9)(1/144)) - 5 = 56.7129630.
  CHECK(daly_interval(5, 360) == Approx(56.712962962962955).epsilon(1e-12));
  CHECK(std::round(daly_interval(5, 360)) == 57);
  // M = 15: sqrt(150) (1 + (1/3) sqrt(1/6) + (1/9)(1/6)) - 5 = 9.1409.
  CHECK(daly_interval(5, 15) == Approx(9.140919986395813).epsilon(1e-12));
  // delta >= 2M: tau = M.
  CHECK(daly_interval(40, 15) == 15);
  // Daly's interval sits below Young's by about delta for small delta/M.
  CHECK(daly_interval(5, 1440) < young_interval(5, 1440));
  // No failures: no checkpoint is worth taking.
  CHECK(std::isinf(daly_interval(5, kInf)));
}

TEST_CASE("Checkpoint count: ceil(W / tau) - 1, no checkpoint after the last segment") {
  CheckpointRestartRun run;
  run.work_s = 10;
  run.interval_s = 3;
  CHECK(checkpoint_count(run) == 3);  // 3 + 3 + 3 + 1.
  CHECK(last_segment_s(run) == 1);
  run.work_s = 9;
  CHECK(checkpoint_count(run) == 2);  // 3 + 3 + 3.
  CHECK(last_segment_s(run) == 3);
  run.interval_s = kInf;
  CHECK(checkpoint_count(run) == 0);
  CHECK(last_segment_s(run) == 9);
}

TEST_CASE("Expected wall time: no failures is compute plus checkpoints") {
  CheckpointRestartRun run;
  run.work_s = 1000;
  run.interval_s = 300;  // 4 segments, 3 checkpoints.
  run.checkpoint_s = 7;
  run.restart_s = 600;
  run.failure_rate = 0;
  CHECK(expected_wall_time(run) == 1000 + 3 * 7);
  run.interval_s = kInf;
  CHECK(expected_wall_time(run) == 1000);
}

TEST_CASE("Expected wall time and goodput of a fixed interval (hand oracle)") {
  // W = 10 h of compute, a checkpoint every tau = 1 h costing delta = 1 min, restart R = 10 min,
  // MTBF M = 10 h. n = 10 segments: 9 of 3660 s, then 3600 s without a checkpoint.
  // T = M e^(R/M) [9 (e^(3660/36000) - 1) + (e^(3600/36000) - 1)]
  //   = 36000 x e^(1/60) x [9 x 0.1070155 + 0.1051709] = 39105.172 s; goodput 36000/T = 0.920594.
  CheckpointRestartRun run;
  run.work_s = 36000;
  run.interval_s = 3600;
  run.checkpoint_s = 60;
  run.restart_s = 600;
  run.failure_rate = 1.0 / 36000;
  CHECK(expected_wall_time(run) == Approx(39105.17204832942).epsilon(1e-12));
  CHECK(run.work_s / expected_wall_time(run) == Approx(0.9205943386595566).epsilon(1e-12));
}

TEST_CASE("Expected wall time: lost work per failure tends to half a segment plus the restart") {
  // tau << M: T ~ W + count delta + (T/M) ((tau + delta)/2 + R).
  CheckpointRestartRun run;
  run.work_s = 1e7;
  run.interval_s = 100;
  run.checkpoint_s = 10;
  run.restart_s = 50;
  run.failure_rate = 1e-7;  // M = 1e7 s.
  double wall = expected_wall_time(run);
  double failures = wall * run.failure_rate;
  double lost = (wall - run.work_s - checkpoint_count(run) * run.checkpoint_s) / failures;
  CHECK(lost == Approx((100 + 10) / 2.0 + 50).epsilon(1e-3));
}

}  // namespace
}  // namespace ppsim
