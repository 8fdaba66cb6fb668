#include "simulator/step/monte_carlo.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "simulator/engine/engine.h"
#include "simulator/engine/thread_pool.h"
#include "simulator/spec/error.h"
#include "simulator/spec/units.h"
#include "simulator/step/straggler_effects.h"

namespace ppsim {
namespace {

// Iteration 0's faulted graph and timeline, kept for the report. `graph` is empty when the
// faults left the built graph as it was (has_iteration_faults false): no copy was made.
struct FirstIteration {
  std::optional<TaskGraph> graph;
  Timeline timeline;
};

// Step times of `iterations` iterations of `step` under `model`'s per-iteration faults. When
// `first` is given, iteration 0's faulted graph and timeline are kept there (by the process
// that owns iteration 0). Without a flapping link an iteration does not depend on when it
// starts, so the iterations are shared by `split` and run on `threads` threads (each writes
// its own slot; the result is the same for any number of threads or processes).
std::vector<double> run_iterations(const Step& step, const StragglerModel& model, uint64_t seed,
                                   int64_t iterations, FirstIteration* first, int threads,
                                   const WorkSplit* split) {
  std::vector<double> times(iterations, 0.0);
  bool varies = model.stochastic();
  bool flapping = false;
  for (const Straggler& straggler : model.stragglers) flapping = flapping || straggler.flapping;
  const bool faulted = has_iteration_faults(model);
  // The faults change only what a prepared structure lets differ (engine.h), so the graph's
  // structure is flattened once for every iteration and thread.
  std::optional<PreparedGraph> prepared;
  if (faulted) prepared.emplace(step.lowered.graph);
  auto one = [&](int64_t k, double start) {
    if (!faulted) {  // The graph as built: simulated in place, not copied.
      Timeline timeline = simulate_graph(step.lowered.graph);
      times[k] = timeline.makespan;
      if (k == 0 && first != nullptr) first->timeline = std::move(timeline);
      return;
    }
    TaskGraph graph = step.lowered.graph;
    apply_iteration_faults(graph, step, model, seed, k, start);
    Timeline timeline = simulate_graph(*prepared, graph);
    times[k] = timeline.makespan;
    if (k == 0 && first != nullptr) {
      first->graph = std::move(graph);
      first->timeline = std::move(timeline);
    }
  };
  int64_t simulated = varies ? iterations : 1;
  if (flapping || simulated == 1) {
    double start = 0;
    for (int64_t k = 0; k < simulated; ++k) {
      one(k, start);
      start += times[k];
    }
  } else {
    ThreadPool pool(static_cast<int>(std::min<int64_t>(resolve_thread_count(threads), simulated)));
    run_split(
        split, pool, simulated, [&](int64_t k) { one(k, 0.0); },
        [&](int64_t k) { return value_bytes(times[k]); },
        [&](int64_t k, std::string_view bytes) { times[k] = bytes_value<double>(bytes); });
  }
  for (int64_t k = simulated; k < iterations; ++k) times[k] = times.front();  // The same step.
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
  // Every variant (leave-one-out included) keeps replicas apart when the full model has
  // jitter, so all runs share one task numbering and hence the same jitter draw per task; slow
  // GPUs, nodes and links leave replica classes (replica_classes.h).
  auto build = [&](const StragglerModel& variant) {
    StepOptions step_options = straggler_step_options(base, variant, cluster);
    if (stragglers.jitter) step_options.deduplicate_replicas = false;
    return build_step(model, cluster, plan, step_options);
  };
  MonteCarloResult result;
  result.step = build(stragglers);
  // result.step's graph stays unfaulted (the link and jitter variants reuse it) until the end,
  // when iteration 0's faulted graph takes its place.
  const Step& nominal = result.step;
  FirstIteration first;
  result.step_times_s =
      run_iterations(nominal, stragglers, options.seed, options.iterations, &first,
                     options.threads, options.split);
  result.timeline = std::move(first.timeline);
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
  if (!options.fault_costs) {
    if (first.graph) result.step.lowered.graph = std::move(*first.graph);
    return result;
  }
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
        rebuild ? run_iterations(build(without), without, options.seed, options.iterations, nullptr,
                                 options.threads, options.split)
                : run_iterations(nominal, without, options.seed, options.iterations, nullptr,
                                 options.threads, options.split);
    std::vector<double> saved(times.size());
    for (size_t k = 0; k < times.size(); ++k) saved[k] = result.step_times_s[k] - times[k];
    cost.cost_s = mean(saved);
    result.fault_costs.push_back(std::move(cost));
  }
  if (first.graph) result.step.lowered.graph = std::move(*first.graph);
  return result;
}

}  // namespace ppsim
