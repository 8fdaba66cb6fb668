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
//   bytes"), constants {efficiency: {gemm_max_bf16, gemm_max_fp8, gemm_tile, gemm_half_tiles,
//   gemm_half_k, attention_fwd, attention_bwd, attention_q_tile, memory, roofline_sharpness,
//   kernel_overhead_s, step_overhead_s, microbatch_overhead_s},
//   collective: {intra_bandwidth, inter_bandwidth, base_latency_s, overlap_phases}},
//   rows: [{row_id, line, source_id, model, framework, gpu_type, gpu (catalog name or null),
//           num_gpus, split ("train"|"test"), status ("compared"|"not_compared"|
//           "not_predicted"), reason (null unless not_predicted), plan (inline plan or null),
//           flash_attention, defaults [strings], predicted_tokens_per_s_per_gpu,
//           target_tokens_per_s_per_gpu, error_pct, iteration_time_s, mfu, fits,
//           predicted_memory_gb, published_memory_gb, memory_error_pct}]  (numbers are null
//           when not applicable),
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

namespace ppsim {

std::string accuracy_report_text(const AccuracyResult& result, const AccuracyOptions& options);
std::string accuracy_report_json(const AccuracyResult& result, const AccuracyOptions& options);

}  // namespace ppsim
