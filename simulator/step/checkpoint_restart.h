// The checkpoint/restart model of a training run under failures: the optimal checkpoint
// interval and the expected wall time (Young 1974; Daly 2006).
//
// A run of W seconds of compute checkpoints after every tau seconds of compute; a checkpoint
// costs the run delta seconds (its blocking part, checkpoint_cost.h). Failures arrive as a
// Poisson process of rate 1/M (failure_rate.h), during compute, checkpoints and restarts
// alike. A failure loses the work since the last checkpoint and costs a restart of R seconds
// (detection, rescheduling, init, checkpoint load), itself interrupted by a failure during it;
// compute then resumes from the checkpoint. The run is n = ceil(W / tau) segments: n - 1 of
// tau compute + delta checkpoint, then the rest, W - (n - 1) tau, with no checkpoint after it.
//
// Expected wall time. A segment of s seconds that must run uninterrupted, restarting after R
// seconds at each failure, takes in expectation M e^(R/M) (e^(s/M) - 1) (Daly, "A higher order
// estimate of the optimum checkpoint interval for restart dumps", Future Generation Computer
// Systems 22(3):303-312, 2006, the complete model; it is exact for Poisson failures). Summed:
//   T = M e^(R/M) [ (n - 1) (e^((tau + delta)/M) - 1) + (e^(r/M) - 1) ],  r = W - (n - 1) tau
// and T = W + (n - 1) delta without failures. Goodput = W / T.
//
// Optimal interval (compute between checkpoints), for delta > 0:
//   young  tau = sqrt(2 delta M)                          (J. W. Young, "A first order
//          approximation to the optimum checkpoint interval", CACM 17(9):530-531, 1974);
//   daly   tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta
//          for delta < 2M, else tau = M (Daly 2006, the higher-order perturbation solution;
//          his worked examples: M = 24 h, delta = 5 min -> 117 min; M = 6 h -> 57 min;
//          M = 15 min -> 9.1 min).
// Without failures (M infinite) both are infinite: no checkpoint is worth taking.
//
// Expected work lost per failure: (T - W - (n - 1) delta) / (T / M), the wall time that is
// neither compute nor checkpoint, per expected failure; for tau << M it is (tau + delta)/2 + R,
// half a segment plus the restart.
#pragma once

#include <cstdint>
#include <limits>

namespace ppsim {

// One run under the model above. Seconds; rate per second.
struct CheckpointRestartRun {
  double work_s = 0;  // W.
  // tau; infinity = never checkpoint (one segment).
  double interval_s = std::numeric_limits<double>::infinity();
  double checkpoint_s = 0;  // delta.
  double restart_s = 0;     // R.
  double failure_rate = 0;  // 1/M; 0 = no failures.
};

double young_interval(double checkpoint_s, double mtbf_s);
double daly_interval(double checkpoint_s, double mtbf_s);

// Checkpoints the run writes: n - 1 (0 for an infinite interval or a run of one segment).
int64_t checkpoint_count(const CheckpointRestartRun& run);
// The last segment's compute, r = W - (n - 1) tau.
double last_segment_s(const CheckpointRestartRun& run);
// T above; infinity when it overflows (a segment many MTBFs long never finishes).
double expected_wall_time(const CheckpointRestartRun& run);

}  // namespace ppsim
