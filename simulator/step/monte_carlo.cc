#include "simulator/step/monte_carlo.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simulator/engine/engine.h"
#include "simulator/spec/error.h"
#include "simulator/spec/units.h"
#include "simulator/step/straggler_effects.h"

namespace ppsim {
namespace {

// Step times of `iterations` iterations of `step` under `model`'s per-iteration faults. When
// `first` is given, iteration 0's faulted graph and timeline are kept there.
std::vector<double> run_iterations(const Step& step, const StragglerModel& model, uint64_t seed,
                                   int64_t iterations, MonteCarloResult* first) {
  std::vector<double> times;
  times.reserve(iterations);
  double start = 0;
  bool varies = model.stochastic();
  for (int64_t k = 0; k < iterations; ++k) {
    if (k > 0 && !varies) {
      times.push_back(times.front());  // Every iteration is the same step.
      continue;
    }
    TaskGraph graph = step.lowered.graph;
    apply_iteration_faults(graph, step, model, seed, k, start);
    Timeline timeline = simulate_graph(graph);
    times.push_back(timeline.makespan);
    start += timeline.makespan;
    if (k == 0 && first != nullptr) {
      first->step.lowered.graph = std::move(graph);
      first->timeline = std::move(timeline);
    }
  }
  return times;
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

}  // namespace

double nearest_rank_percentile(std::vector<double> values, double p) {
  PPSIM_CHECK(!values.empty() && p > 0 && p <= 100);
  std::sort(values.begin(), values.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  size_t index = static_cast<size_t>(std::max(1.0, rank)) - 1;
  return values[std::min(index, values.size() - 1)];
}

MonteCarloResult run_monte_carlo(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan, const StepOptions& base,
                                 const StragglerModel& stragglers,
                                 const MonteCarloOptions& options) {
  PPSIM_CHECK(options.iterations >= 1);
  // Every variant (leave-one-out included) keeps replicas apart when the full model has faults,
  // so all runs share one task numbering and hence the same jitter draw per task.
  auto build = [&](const StragglerModel& variant) {
    StepOptions step_options = straggler_step_options(base, variant, cluster);
    if (!stragglers.empty()) step_options.deduplicate_replicas = false;
    return build_step(model, cluster, plan, step_options);
  };
  MonteCarloResult result;
  result.step = build(stragglers);
  Step nominal = result.step;  // Unfaulted graph, reused by the link and jitter variants.
  result.step_times_s =
      run_iterations(nominal, stragglers, options.seed, options.iterations, &result);
  result.percentiles.p50 = nearest_rank_percentile(result.step_times_s, 50);
  result.percentiles.p90 = nearest_rank_percentile(result.step_times_s, 90);
  result.percentiles.p99 = nearest_rank_percentile(result.step_times_s, 99);
  result.mean_s = mean(result.step_times_s);

  for (const Straggler& straggler : stragglers.stragglers) {
    if (straggler.flapping && straggler.flapping->period < result.mean_s) {
      result.warnings.push_back(fmt::format(
          "{}: the {} ms flapping period is shorter than the {:.1f} ms step; each iteration "
          "keeps the state in force at its start, so the link's slow share of a step is not "
          "resolved within it",
          straggler_text(straggler), straggler.flapping->period / kMillisecond,
          result.mean_s / kMillisecond));
    }
  }
  if (!options.fault_costs) return result;
  size_t faults = stragglers.stragglers.size();
  for (size_t i = 0; i <= faults; ++i) {
    if (i == faults && !stragglers.jitter) break;
    StragglerModel without = stragglers;
    FaultCost cost;
    if (i < faults) {
      const Straggler& straggler = stragglers.stragglers[i];
      cost.fault = straggler_text(straggler);
      cost.description = straggler_description(straggler);
      without.stragglers.erase(without.stragglers.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      cost.fault = jitter_text(*stragglers.jitter);
      cost.description = jitter_description(*stragglers.jitter);
      without.jitter.reset();
    }
    // Link faults and jitter act on the graph: the built step serves; GPU speeds need a build.
    bool rebuild = i < faults && stragglers.stragglers[i].kind != StragglerKind::kLink;
    std::vector<double> times =
        rebuild ? run_iterations(build(without), without, options.seed, options.iterations, nullptr)
                : run_iterations(nominal, without, options.seed, options.iterations, nullptr);
    std::vector<double> saved(times.size());
    for (size_t k = 0; k < times.size(); ++k) saved[k] = result.step_times_s[k] - times[k];
    cost.cost_s = mean(saved);
    result.fault_costs.push_back(std::move(cost));
  }
  return result;
}

}  // namespace ppsim
