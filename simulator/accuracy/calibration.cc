#include "simulator/accuracy/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "simulator/engine/thread_pool.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

constexpr double kInitialStep = 0.16;  // Relative step of the first sweep.
constexpr double kMinStep = 0.02;      // Stop when every step is below 2%.
constexpr int kMaxSweeps = 12;
constexpr double kSignificant = 1e4;  // Candidates rounded to 4 significant digits.

// Rounds to 4 significant digits, so that fits starting from the same point share values.
double round_significant(double value) {
  if (value == 0) return 0;
  double scale = std::pow(10.0, std::floor(std::log10(std::abs(value))) + 1);
  return std::round(value / scale * kSignificant) / kSignificant * scale;
}

// The constants a row's prediction depends on (calibration.h): its cache key.
using RowKey = std::array<double, 5>;

RowKey row_key(const EfficiencyTable& e, Runtime runtime) {
  const RuntimeOverheads& o = e.overheads(runtime);
  return {e.kernel_scale, e.flash2_scale, o.kernel_gap_s, o.microbatch_overhead_s,
          o.step_overhead_s};
}

// Simulates rows on demand and remembers each row's error per key.
class RowEvaluator {
 public:
  RowEvaluator(const std::vector<PublicRun>& runs, const AccuracyOptions& options, int threads)
      : runs_(runs), options_(options), pool_(resolve_thread_count(threads)), cache_(runs.size()) {}

  // error_pct of each row in `rows` under `efficiency`, in the order given.
  std::vector<double> errors(const std::vector<size_t>& rows, const EfficiencyTable& efficiency) {
    std::vector<size_t> missing;
    for (size_t row : rows) {
      if (!cache_[row].count(row_key(efficiency, runs_[row].plan.runtime))) missing.push_back(row);
    }
    std::vector<double> computed(missing.size());
    pool_.run(static_cast<int64_t>(missing.size()), [&](int64_t i) {
      const PublicRun& run = runs_[missing[i]];
      computed[i] = *predict_run(run, efficiency, options_.collective).error_pct;
    });
    for (size_t i = 0; i < missing.size(); ++i) {
      cache_[missing[i]][row_key(efficiency, runs_[missing[i]].plan.runtime)] = computed[i];
    }
    simulations_ += static_cast<int64_t>(missing.size());
    std::vector<double> out;
    out.reserve(rows.size());
    for (size_t row : rows)
      out.push_back(cache_[row].at(row_key(efficiency, runs_[row].plan.runtime)));
    return out;
  }

  int64_t simulations() const { return simulations_; }

 private:
  const std::vector<PublicRun>& runs_;
  const AccuracyOptions& options_;
  ThreadPool pool_;
  std::vector<std::map<RowKey, double>> cache_;  // Per row.
  int64_t simulations_ = 0;
};

bool compared(const PublicRun& run) {
  return run.predictable() && run.target_tokens_per_s_per_gpu.has_value();
}

// Mean over sources of each source's MAPE; rows[i] belongs to sources[i].
double source_weighted_mape(const std::vector<double>& errors,
                            const std::vector<std::string>& sources) {
  std::map<std::string, std::pair<double, int64_t>> by_source;
  for (size_t i = 0; i < errors.size(); ++i) {
    auto& [sum, count] = by_source[sources[i]];
    sum += std::abs(errors[i]);
    ++count;
  }
  if (by_source.empty()) return 0;
  double total = 0;
  for (const auto& [source, entry] : by_source) total += entry.first / entry.second;
  return total / static_cast<double>(by_source.size());
}

FitResult fit_on(const std::vector<PublicRun>& runs, const AccuracyOptions& options,
                 const std::set<std::string>& sources, RowEvaluator& evaluator) {
  std::vector<size_t> rows;
  std::vector<std::string> row_sources;
  std::set<int> runtimes;
  for (size_t i = 0; i < runs.size(); ++i) {
    const PublicRun& run = runs[i];
    if (!compared(run) || run.model.is_moe() || !sources.count(run.source_id)) continue;
    rows.push_back(i);
    row_sources.push_back(run.source_id);
    runtimes.insert(static_cast<int>(run.plan.runtime));
  }
  FitResult fit;
  fit.sources.assign(sources.begin(), sources.end());
  fit.rows = static_cast<int64_t>(rows.size());
  fit.efficiency = prior_constants(options.efficiency);
  auto objective = [&](const EfficiencyTable& efficiency) {
    ++fit.evaluations;
    return source_weighted_mape(evaluator.errors(rows, efficiency), row_sources);
  };
  std::vector<const FitParameter*> parameters;
  for (const FitParameter& parameter : fit_parameters()) {
    if (rows.empty()) break;
    if (parameter.runtime && !runtimes.count(static_cast<int>(*parameter.runtime))) continue;
    parameters.push_back(&parameter);
    fit.fitted.push_back(parameter.name);
  }
  double best = rows.empty() ? 0 : objective(fit.efficiency);
  fit.prior_objective_pct = best;
  std::vector<double> steps(parameters.size(), kInitialStep);
  for (int sweep = 0; sweep < kMaxSweeps && !parameters.empty(); ++sweep) {
    ++fit.sweeps;
    for (size_t p = 0; p < parameters.size(); ++p) {
      const FitParameter& parameter = *parameters[p];
      double current = parameter.field(fit.efficiency);
      bool moved = false;
      for (double direction : {1.0, -1.0}) {
        // From 0 (an overhead prior may be 0) a relative step goes nowhere: step from the
        // bound's scale instead.
        double base = current > 0 ? current : parameter.upper * 0.01;
        double candidate = round_significant(
            std::clamp(base * (1 + direction * steps[p]), parameter.lower, parameter.upper));
        if (candidate == current) continue;
        EfficiencyTable trial = fit.efficiency;
        parameter.field(trial) = candidate;
        double value = objective(trial);
        if (value < best) {
          best = value;
          fit.efficiency = trial;
          moved = true;
          break;
        }
      }
      if (!moved) steps[p] /= 2;
    }
    if (std::all_of(steps.begin(), steps.end(), [](double s) { return s < kMinStep; })) break;
  }
  fit.objective_pct = best;
  return fit;
}

std::set<std::string> compared_sources(const std::vector<PublicRun>& runs) {
  std::set<std::string> sources;
  for (const PublicRun& run : runs) {
    if (compared(run)) sources.insert(run.source_id);
  }
  return sources;
}

}  // namespace

const std::vector<FitParameter>& fit_parameters() {
  static const std::vector<FitParameter> parameters = [] {
    std::vector<FitParameter> out;
    out.push_back({"kernel_scale", std::nullopt, 0.6, 1.1,
                   [](EfficiencyTable& e) -> double& { return e.kernel_scale; }});
    out.push_back({"flash2_scale", std::nullopt, 0.4, 1.2,
                   [](EfficiencyTable& e) -> double& { return e.flash2_scale; }});
    for (Runtime runtime : all_runtimes()) {
      std::string name = runtime_name(runtime);
      out.push_back(
          {name + ".kernel_gap_s", runtime, 0.5e-6, 12e-6,
           [runtime](EfficiencyTable& e) -> double& { return e.overheads(runtime).kernel_gap_s; }});
      out.push_back({name + ".microbatch_overhead_s", runtime, 0, 5e-3,
                     [runtime](EfficiencyTable& e) -> double& {
                       return e.overheads(runtime).microbatch_overhead_s;
                     }});
      out.push_back(
          {name + ".step_overhead_s", runtime, 0, 0.5, [runtime](EfficiencyTable& e) -> double& {
             return e.overheads(runtime).step_overhead_s;
           }});
    }
    return out;
  }();
  return parameters;
}

EfficiencyTable prior_constants(const EfficiencyTable& shipped) {
  EfficiencyTable prior = shipped;
  prior.kernel_scale = 1;
  prior.flash2_scale = 1;
  for (Runtime runtime : all_runtimes()) {
    prior.overheads(runtime) = runtime_traits(runtime).overheads;
  }
  return prior;
}

FitResult fit_constants(const std::vector<PublicRun>& runs, const AccuracyOptions& options,
                        const std::vector<std::string>& sources, int threads) {
  RowEvaluator evaluator(runs, options, threads);
  std::set<std::string> chosen(sources.begin(), sources.end());
  if (chosen.empty()) chosen = compared_sources(runs);
  return fit_on(runs, options, chosen, evaluator);
}

LeaveOneSourceOut leave_one_source_out(const std::vector<PublicRun>& runs,
                                       const AccuracyOptions& options, int threads) {
  RowEvaluator evaluator(runs, options, threads);
  LeaveOneSourceOut result;
  std::set<std::string> all = compared_sources(runs);
  result.full_fit = fit_on(runs, options, all, evaluator);
  double row_sum = 0, source_sum = 0;
  for (const std::string& held_out : all) {
    std::set<std::string> others = all;
    others.erase(held_out);
    HeldOutSource source;
    source.source_id = held_out;
    source.efficiency = fit_on(runs, options, others, evaluator).efficiency;
    std::vector<size_t> rows;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (compared(runs[i]) && runs[i].source_id == held_out) rows.push_back(i);
    }
    std::vector<double> errors = evaluator.errors(rows, source.efficiency);
    std::vector<double> fitted = evaluator.errors(rows, result.full_fit.efficiency);
    source.rows = static_cast<int64_t>(rows.size());
    double sum = 0, fitted_sum = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      result.held_out_error_pct[runs[rows[i]].row_id] = errors[i];
      double error = std::abs(errors[i]);
      sum += error;
      fitted_sum += std::abs(fitted[i]);
      if (error > source.max_abs_error_pct) {
        source.max_abs_error_pct = error;
        source.worst_row = runs[rows[i]].row_id;
        source.worst_row_error_pct = errors[i];
      }
      if (error > std::abs(result.worst_row_error_pct)) {
        result.worst_row = runs[rows[i]].row_id;
        result.worst_row_source = held_out;
        result.worst_row_error_pct = errors[i];
      }
    }
    source.mape_pct = sum / static_cast<double>(rows.size());
    source.fitted_mape_pct = fitted_sum / static_cast<double>(rows.size());
    row_sum += sum;
    result.rows += source.rows;
    source_sum += source.mape_pct;
    if (result.worst_source.empty() || source.mape_pct > result.worst_source_mape_pct) {
      result.worst_source = held_out;
      result.worst_source_mape_pct = source.mape_pct;
    }
    result.per_source.push_back(std::move(source));
  }
  if (result.rows > 0) result.mape_pct = row_sum / static_cast<double>(result.rows);
  if (!result.per_source.empty()) {
    result.source_mape_pct = source_sum / static_cast<double>(result.per_source.size());
  }
  result.simulations = evaluator.simulations();
  return result;
}

std::string fitted_constants_text(const FitResult& fit) {
  std::string text;
  EfficiencyTable e = fit.efficiency;
  for (const FitParameter& parameter : fit_parameters()) {
    bool had_rows =
        std::find(fit.fitted.begin(), fit.fitted.end(), parameter.name) != fit.fitted.end();
    text += fmt::format("{:<36} {:<12.6g} {}\n", parameter.name, parameter.field(e),
                        had_rows ? "fitted" : "prior (no rows)");
  }
  return text;
}

}  // namespace ppsim
