// Accuracy of ppsim's predictions against published training runs (public_run.h rows).
//
// Each predictable row is simulated as `ppsim simulate` would (build_step, simulate_graph,
// compute_metrics) with the row's specs and the global cost constants of AccuracyOptions, and
// compared with what its source published. Definitions, each computed once here:
//   predicted_tokens_per_s_per_gpu = metrics.tokens_per_s / num_gpus
//   error_pct        = 100 * (predicted - target) / target, target the row's
//                      target_tokens_per_s_per_gpu (positive: ppsim is optimistic)
//   mape             = mean over compared rows of |error_pct|
//   predicted_memory_gb = metrics.peak_memory_bytes / 1e9: the largest stage's simulated peak
//                      (static memory + activation peak, step_metrics.h) in decimal GB, the
//                      unit the sources print ("GB"); compare GiB figures by * 1.0737
//   memory_error_pct = 100 * (predicted_memory_gb - published) / published
// A row is compared when it is predictable and has a target; a row without a target is
// simulated and listed but not counted; an unpredictable row is listed with its reason.
//
// Calibration split (train/test), by row, never by source: a row is in the test split when
// the 32-bit FNV-1a hash of its row_id text is odd, else in train. The rule is fixed so that
// constants fitted on train can be checked on test; every source falls in both halves.
//
// Schedule comparisons: rows that differ only in their pipeline schedule (same source, model,
// GPUs, cluster, parallel degrees, batch sizes, recompute, precision) form a group. In each
// group every pair of rows with distinct published throughputs is a comparison, agreeing when
// the predicted throughputs are ordered the same way.
//
// Deterministic: rows are processed in file order and every tie keeps that order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/accuracy/public_run.h"
#include "simulator/cost/collective_cost.h"
#include "simulator/cost/cost_model.h"

namespace ppsim {

enum class Split { kAll, kTrain, kTest };

// True when row `row_id` belongs to the test split (header).
bool in_test_split(const std::string& row_id);

// "all", "train", "test".
std::string split_name(Split split);

struct AccuracyOptions {
  EfficiencyTable efficiency;        // Global compute constants (defaults: cost_model.h).
  CollectiveEfficiency collective;   // Global link constants (defaults: collective_cost.h).
  Split split = Split::kAll;         // Rows to run.
  std::string only_source;           // Run only rows of this source_id; empty: every source.
  int worst_rows = 5;                // How many worst rows the summary lists.
};

// One row's outcome.
struct RowAccuracy {
  PublicRun run;
  bool test_split = false;     // in_test_split(run.row_id).
  bool simulated = false;      // The row was predictable and simulated.
  double predicted_tokens_per_s_per_gpu = 0;
  double iteration_time_s = 0;
  double mfu = 0;              // Against the precision's dense peak (step_metrics.h).
  bool fits = true;            // The simulated peak fits every stage's GPU memory.
  std::optional<double> error_pct;          // When simulated and the row has a target.
  std::optional<double> predicted_memory_gb;  // When simulated.
  std::optional<double> memory_error_pct;   // When simulated and memory is published.
};

// Mean absolute percentage error over a set of compared rows.
struct ErrorSummary {
  int64_t rows = 0;  // Rows compared.
  double mape = 0;   // Percent; 0 when rows == 0.
  double max_abs_error_pct = 0;
};

struct SourceAccuracy {
  std::string source_id;
  int64_t rows = 0;  // Rows of this source in the run (any state).
  ErrorSummary all, train, test;
  ErrorSummary memory;  // Over rows with a published memory figure.
};

// A group of rows that differ only in their schedule (header).
struct ScheduleGroup {
  std::vector<size_t> rows;  // Indices into AccuracyResult::rows, in file order.
  int64_t pairs = 0;         // Pairs with distinct published throughputs.
  int64_t agreeing = 0;      // Of those, ordered the same way by the prediction.
  bool published_order_reproduced() const { return pairs == agreeing; }
};

struct AccuracyResult {
  std::string runs_file;
  int64_t file_rows = 0;  // Records in the file before the split and source filters.
  Split split = Split::kAll;
  std::string only_source;
  std::vector<RowAccuracy> rows;         // The rows run, in file order.
  ErrorSummary all, train, test, memory;
  std::vector<SourceAccuracy> sources;   // Sorted by source_id.
  std::vector<size_t> worst;             // Indices of the largest |error_pct|, largest first.
  std::vector<size_t> not_predicted;     // Unpredictable rows (reason in run.reason).
  std::vector<size_t> not_compared;      // Simulated rows without a target.
  std::vector<ScheduleGroup> schedule_groups;  // Groups with at least two compared rows.
};

// Runs every row of `runs` that the options select. `runs_file` names the file for reports;
// `file_rows` is the record count before filtering.
AccuracyResult run_accuracy(const std::vector<PublicRun>& runs, const std::string& runs_file,
                            const AccuracyOptions& options = {});

// Loads a runs CSV (load_csv, read_public_runs) and runs it. Throws InputError for an
// unreadable or malformed file or a missing column.
AccuracyResult run_accuracy_file(const std::string& path, const AccuracyOptions& options = {});

// Simulates one predictable row. REQUIRES: run.predictable().
RowAccuracy predict_run(const PublicRun& run, const EfficiencyTable& efficiency,
                        const CollectiveEfficiency& collective);

}  // namespace ppsim
