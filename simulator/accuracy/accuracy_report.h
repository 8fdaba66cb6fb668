// The report of `ppsim accuracy`: predicted vs published throughput per row, and the summary.
//
// Text (nccl-tests layout): '#' header lines echo the runs file, the split rule, the error and
// memory definitions and the global constants used; one table row per run under a units row;
// then '#' lines for rows not compared (no target), rows not predicted (with the reason), the
// defaults applied (each distinct sentence once, with its rows), and a '#' footer with the
// error summary (all, train, test, per source, memory), the worst rows, the schedule
// comparisons and the closing MAPE line.
//
// JSON (--json), one object:
//   runs_file, file_rows (records in the file), split ("all"|"train"|"test"), only_source
//   (string or null), split_rule (text), error_definition (text), memory_unit ("GB = 1e9
//   bytes"), constants {efficiency: {kernel_scale, flash2_scale, gemm_tile, gemm_half_tiles,
//   gemm_half_k, attention_q_tile, memory, roofline_sharpness},
//   runtimes: {<runtime name>: {kernel_gap_s, microbatch_overhead_s, step_overhead_s}},
//   collective: {intra_bandwidth, inter_bandwidth, base_latency_s, overlap_phases}},
//   rows: [{row_id, line, source_id, model, framework, gpu_type, gpu (catalog name or null),
//           num_gpus, split ("train"|"test"), status ("compared"|"not_compared"|
//           "not_predicted"), reason (null unless not_predicted), plan (inline plan or null),
//           runtime, attention (kernel name), flash_attention (attention is not "unfused"),
//           defaults [strings], predicted_tokens_per_s_per_gpu,
//           target_tokens_per_s_per_gpu, error_pct, held_out_error_pct (the row predicted
//           with constants fitted without its source; null with --no-loso),
//           iteration_time_s, mfu, fits,
//           predicted_memory_gb, published_memory_gb, memory_error_pct}]  (numbers are null
//           when not applicable),
//   leave_one_source_out (the headline; null with --no-loso): {mape_pct (mean |error| over
//     every held-out row), source_mape_pct (mean of the per-source MAPEs), rows, worst_source,
//     worst_source_mape_pct, worst_row {row_id, source_id, error_pct}, simulations,
//     per_source: [{source_id, rows, mape_pct, max_abs_error_pct, fitted_mape_pct (the same rows
//     with the constants fitted on every source), worst_row, worst_row_error_pct, constants
//     {name: value} (what its fold fitted without it, every name of `ppsim accuracy --fit`)}]},
//   summary: {all, train, test, memory}: each {rows, mape_pct, max_abs_error_pct},
//   sources: [{source_id, rows, all, train, test, memory}] (same summary objects),
//   worst: [{row_id, source_id, model, error_pct, predicted_tokens_per_s_per_gpu,
//            target_tokens_per_s_per_gpu}], largest |error| first,
//   not_predicted: [{row_id, source_id, reason}],
//   not_compared: [row_id, ...] (simulated, no published target),
//   schedule_groups: [{source_id, model, rows [row_id], schedules [text], published
//                      [tokens/s/GPU], predicted [tokens/s/GPU], pairs, agreeing,
//                      reproduced}].
// Definitions of every number: simulator/accuracy/accuracy.h.
#pragma once

#include <string>

#include "simulator/accuracy/accuracy.h"
#include "simulator/accuracy/calibration.h"

namespace ppsim {

// `loso` is the leave-one-source-out result (calibration.h); null when it was not computed
// (--no-loso), and then the report says so.
std::string accuracy_report_text(const AccuracyResult& result, const AccuracyOptions& options,
                                 const LeaveOneSourceOut* loso = nullptr);
std::string accuracy_report_json(const AccuracyResult& result, const AccuracyOptions& options,
                                 const LeaveOneSourceOut* loso = nullptr);
// `ppsim accuracy --svg FILE`: predicted vs published tokens/s/GPU of every compared row, one
// point per row coloured by source, on log-log axes with the y = x line and the +-10% band.
// Deterministic (fixed palette by source order, coordinates to 0.1 px).
std::string accuracy_residual_svg(const AccuracyResult& result);
// `ppsim accuracy --fit`: the fit on every source, as text or JSON (header of calibration.h).
std::string fit_report_text(const FitResult& fit, const LeaveOneSourceOut* loso);
std::string fit_report_json(const FitResult& fit, const LeaveOneSourceOut* loso);

}  // namespace ppsim
