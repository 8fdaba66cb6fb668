#include "simulator/step/checkpoint_restart.h"

#include <cmath>

namespace ppsim {

double young_interval(double checkpoint_s, double mtbf_s) {
  return std::sqrt(2 * checkpoint_s * mtbf_s);
}

double daly_interval(double checkpoint_s, double mtbf_s) {
  if (std::isinf(mtbf_s)) return mtbf_s;
  if (checkpoint_s >= 2 * mtbf_s) return mtbf_s;
  const double ratio = checkpoint_s / (2 * mtbf_s);
  return std::sqrt(2 * checkpoint_s * mtbf_s) * (1 + std::sqrt(ratio) / 3 + ratio / 9) -
         checkpoint_s;
}

int64_t checkpoint_count(const CheckpointRestartRun& run) {
  if (std::isinf(run.interval_s) || run.work_s <= run.interval_s) return 0;
  return static_cast<int64_t>(std::ceil(run.work_s / run.interval_s)) - 1;
}

double last_segment_s(const CheckpointRestartRun& run) {
  const int64_t count = checkpoint_count(run);
  return count == 0 ? run.work_s : run.work_s - static_cast<double>(count) * run.interval_s;
}

double expected_wall_time(const CheckpointRestartRun& run) {
  const double count = static_cast<double>(checkpoint_count(run));
  const double last = last_segment_s(run);
  if (run.failure_rate <= 0) return run.work_s + count * run.checkpoint_s;
  const double mtbf = 1 / run.failure_rate;
  // expm1 keeps the small-rate limit exact: M (e^(s/M) - 1) -> s.
  const double segments =
      count * std::expm1((run.interval_s + run.checkpoint_s) / mtbf) + std::expm1(last / mtbf);
  return mtbf * std::exp(run.restart_s / mtbf) * segments;
}

}  // namespace ppsim
