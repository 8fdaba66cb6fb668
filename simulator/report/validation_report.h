// Validation: the simulated step (prediction) against what an executor measured running the
// same action lists, and the report of `ppsim validate` (text and --json).
//
// Metrics (defined once; docs/validate.md prints the same):
//   measured_step_s   the median over timed iterations of the step time (the last action's end,
//                     from a barrier that starts every worker together); folded: the median of
//                     replay_with_measured (measured compute, predicted communication).
//   error_pct         100 * (predicted - measured) / measured: positive = the simulator
//                     over-predicts. Over tolerance when |error_pct| > tolerance_pct.
//   per action type   F, B, I, W (compute actions), send (SEND_F and SEND_B transfers),
//                     collective (gradient-reduction buckets, parameter all-gathers), optimizer:
//                     predicted_s = mean over the type's tasks of (end - start) in the simulated
//                     timeline; measured_s = mean over its measured tasks and every timed
//                     iteration; error_pct as above. A type with no measured task (sends and
//                     collectives when folded) has no measured_s and no error.
//   peak memory       predicted: max over workers of static memory (memory model) plus the
//                     timeline's activation peak; measured: max over workers of the executor's
//                     ledger (MemoryLedger: static block plus live activation buffers).
// Gradient-bucket delays (kBucketReady) are part of the backward and belong to no type.
//
// Deterministic: types in the fixed order above; numbers printed with fixed precision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/engine/measured_step.h"
#include "simulator/engine/timeline.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

struct ActionTypeComparison {
  std::string type;        // "F", "B", "I", "W", "send", "collective", "optimizer".
  int64_t count = 0;       // Tasks of this type in one step.
  double predicted_s = 0;  // Mean predicted duration, seconds.
  std::optional<double> measured_s;  // Mean measured duration; nullopt when not measured.
  std::optional<double> error_pct;
};

struct ValidationResult {
  std::string backend;     // "cpu" or "cuda".
  std::string device;      // MeasuredStep::device.
  std::string prediction;  // Where the prediction's costs came from, for the header.
  int64_t iterations = 0;
  int64_t warmup_iterations = 0;
  bool folded = false;
  double tolerance_pct = 0;
  double predicted_step_s = 0;
  double measured_step_s = 0;
  double error_pct = 0;
  bool over_tolerance = false;
  std::vector<ActionTypeComparison> actions;
  double predicted_peak_memory_bytes = 0;
  double measured_peak_memory_bytes = 0;
  std::vector<std::string> notes;  // What was folded, what the prediction assumed.
  double compute_cpu_share = 0;    // MeasuredStep::compute_cpu_share.
  std::vector<std::vector<std::string>> executed;  // Per worker: executed labels, in order.
  // The median iteration as a timeline of the step's graph, for --trace (folded: the replay).
  Timeline measured_timeline;
};

struct ValidationSettings {
  std::string backend;
  std::string prediction;
  int64_t warmup_iterations = 0;
  double tolerance_pct = 10;
};

// REQUIRES: measured comes from the step's program (same task numbering), with >= 1 iteration;
// predicted = simulate_graph(step.lowered.graph).
ValidationResult compare_step(const Step& step, const Timeline& predicted,
                              const MeasuredStep& measured, const ValidationSettings& settings);

// The "#"-commented text report (STYLE rule 14), ending in OK or FAILED.
std::string validation_report_text(const ValidationResult& result, const std::string& inputs);
// The JSON report: predicted_step_s, measured_step_s, error_pct, tolerance_pct,
// over_tolerance, actions {type: {count, predicted_s, measured_s, error_pct}},
// predicted_peak_memory_bytes, measured_peak_memory_bytes, backend, device, iterations,
// folded, prediction, notes, executed (per worker, the labels in executed order).
std::string validation_report_json(const ValidationResult& result);

}  // namespace ppsim
