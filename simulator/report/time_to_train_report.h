// The time-to-train section of `simulate` and `plan` reports (time_to_train.h): text lines and
// the JSON object "time_to_train" (docs/time-to-train.md):
//   steps, tokens, step_time_s, compute_days (steps x step_time_s / 86400),
//   checkpoint {bytes_per_rank, bytes_total, save_s, blocking_s, interval_s (null: none taken),
//               count},
//   failures {expected, rate_per_day, lost_s, restart_s},
//   goodput (0-1), wall_days (expected; null when the run never finishes), wall_days_p50,
//   wall_days_p90 (with a Monte-Carlo over failures, --iterations), gpu_hours, cost_usd (when
//   every node group the plan uses has a price_per_gpu_hour), phases [{tokens,
//   global_batch_size, seq_length, steps, step_time_s}] (with a batch ramp), notes (when any).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simulator/step/time_to_train.h"

namespace ppsim {

// Days of a time in seconds.
double seconds_to_days(double seconds);

// The text section ('#' header, one "name value" line per field).
std::string time_to_train_text(const TimeToTrain& result);
// The "time_to_train" JSON object.
nlohmann::ordered_json time_to_train_json(const TimeToTrain& result);

}  // namespace ppsim
