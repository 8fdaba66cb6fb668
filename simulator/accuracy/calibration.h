// Calibration of the global cost constants on published runs (`ppsim accuracy --fit`), and the
// error that calibration leaves on a source it has not seen (leave one source out, the headline
// of `ppsim accuracy`).
//
// Fitted constants (FitParameter, fit_parameters()): EfficiencyTable::kernel_scale and
// flash2_scale (every row; flash2_scale only changes FlashAttention-2 rows), and per runtime
// (spec/runtime.h) its kernel gap, per-microbatch
// and per-step overheads for that runtime's rows only. Everything else (each GPU's kernel
// datasheet, link efficiencies, tile sizes) is a documented measurement and is not fitted.
//
// Objective: the mean over sources of each source's MAPE (sources weighted equally, not rows),
// over the compared rows of the sources given. Rows of mixture-of-experts models are predicted
// and reported but not fitted: ppsim does not yet model token dispatch, permutation or
// grouped-GEMM efficiency (issue 18), and a constant fitted to missing physics would carry that
// error into every dense prediction.
//
// Method: coordinate pattern search from the priors (prior_constants(): kernel_scale and
// flash2_scale 1, i.e. the kernel datasheets as published, and runtime.h's overheads).
// Per sweep, each constant tries x * (1 + step) then x * (1 - step) (clamped to its bounds,
// rounded to 4 significant digits so that fits share evaluations); the first that lowers the
// objective is taken; a constant with no improving move halves its step. It stops when every
// step is below 2% or after 12 sweeps. A constant whose rows are all outside the
// fit keeps its prior. Deterministic: fixed order, ties keep the current value.
//
// Leave one source out: for each source with compared rows, fit on the others and predict its
// rows. mape_pct is the mean |error| over all held-out rows (each predicted by constants that
// never saw its source); source_mape_pct the mean of the per-source MAPEs; per_source the
// held-out MAPE of each source with the constants fitted without it.
//
// Cost: every row is simulated once per distinct value of the constants it depends on (a
// per-row cache); rows of one evaluation run on a ThreadPool, results in row order, so the
// output does not depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simulator/accuracy/accuracy.h"
#include "simulator/accuracy/public_run.h"

namespace ppsim {

// One fitted constant.
struct FitParameter {
  std::string name;                // "kernel_scale", "torchtitan.kernel_gap_s", ...
  std::optional<Runtime> runtime;  // nullopt: every row depends on it; else that runtime's rows.
  double lower = 0;
  double upper = 0;
  std::function<double&(EfficiencyTable&)> field;
};

// The fitted constants, in search order.
const std::vector<FitParameter>& fit_parameters();

// The starting point of every fit: the datasheets as published (scales 1) and the runtime
// priors of spec/runtime.h; the rest of `shipped` (tile sizes, memory efficiency) is kept.
EfficiencyTable prior_constants(const EfficiencyTable& shipped);

struct FitResult {
  EfficiencyTable efficiency;        // The fitted table.
  std::vector<std::string> sources;  // Sources fitted on, sorted.
  std::vector<std::string> fitted;   // Constants that had rows (the others kept their prior).
  double objective_pct = 0;          // Mean over sources of MAPE at the fitted point.
  double prior_objective_pct = 0;    // The same at the priors.
  int64_t rows = 0;                  // Rows in the fit.
  int64_t sweeps = 0;
  int64_t evaluations = 0;  // Objective evaluations.
};

struct HeldOutSource {
  std::string source_id;
  int64_t rows = 0;     // Compared rows of the source.
  double mape_pct = 0;  // Held-out MAPE.
  double max_abs_error_pct = 0;
  double fitted_mape_pct = 0;  // The same rows with the constants fitted on every source.
  std::string worst_row;       // row_id of its largest |error|.
  double worst_row_error_pct = 0;
  EfficiencyTable efficiency;  // Constants fitted without it.
};

struct LeaveOneSourceOut {
  int64_t rows = 0;            // Held-out rows over all sources.
  double mape_pct = 0;         // Mean |error| over those rows.
  double source_mape_pct = 0;  // Mean over sources of their held-out MAPE.
  std::string worst_source;    // Largest held-out MAPE; first in source order on ties.
  double worst_source_mape_pct = 0;
  std::string worst_row;  // Largest held-out |error|: row_id, its source and error.
  std::string worst_row_source;
  double worst_row_error_pct = 0;
  std::vector<HeldOutSource> per_source;  // Sorted by source_id.
  // Per compared row (by row_id): its error_pct predicted with constants fitted without its
  // source.
  std::map<std::string, double> held_out_error_pct;
  FitResult full_fit;                     // The fit on every source (what --fit prints).
  int64_t simulations = 0;                // Row simulations over all fits (cache misses).
};

// Fits on the compared, dense rows of `sources` (every source when empty).
FitResult fit_constants(const std::vector<PublicRun>& runs, const AccuracyOptions& options,
                        const std::vector<std::string>& sources = {}, int threads = 0);

// Leave one source out over every source of `runs` with compared rows.
LeaveOneSourceOut leave_one_source_out(const std::vector<PublicRun>& runs,
                                       const AccuracyOptions& options, int threads = 0);

// The fitted constants as C++ initialisers for cost_model.h / runtime.cc, for `--fit`.
std::string fitted_constants_text(const FitResult& fit);

}  // namespace ppsim
