#include "simulator/planner/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "simulator/engine/engine.h"
#include "simulator/planner/p90_evaluator.h"
#include "simulator/planner/replica_shares.h"
#include "simulator/engine/thread_pool.h"
#include "simulator/engine/work_split.h"
#include "simulator/planner/time_to_train_evaluator.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

constexpr const char* kRuleRecompute = "lighter recompute fits";
constexpr const char* kRuleZero2 = "ZeRO-2 runs as ZeRO-1, which fits";
constexpr const char* kRuleOneRank = "one data-parallel rank: ZeRO changes nothing";

StepMetrics simulate_plan(const ModelSpec& model, const ClusterSpec& cluster,
                          const StepOptions& options, const Plan& plan) {
  Step step = build_step(model, cluster, plan, options);
  Timeline timeline = simulate_graph(step.lowered.graph);
  return compute_metrics(model, cluster, plan, step, timeline);
}

class TimeEvaluator : public PlanEvaluator {
 public:
  TimeEvaluator(const ModelSpec& model, const ClusterSpec& cluster, const StepOptions& step)
      : model_(model), cluster_(cluster), step_(step) {}
  Evaluation evaluate(const Plan& plan) const override {
    Evaluation evaluation;
    evaluation.metrics = simulate_plan(model_, cluster_, step_, plan);
    evaluation.objective = evaluation.metrics.iteration_time_s;
    return evaluation;
  }
  double objective_bound(const Plan&, double bound) const override { return bound; }
  std::string note() const override { return "objective time: simulated iteration time"; }

 protected:
  const ModelSpec& model_;
  const ClusterSpec& cluster_;
  StepOptions step_;
};

class CostEvaluator : public TimeEvaluator {
 public:
  using TimeEvaluator::TimeEvaluator;
  Evaluation evaluate(const Plan& plan) const override {
    Evaluation evaluation = TimeEvaluator::evaluate(plan);
    evaluation.objective *= plan_dollars_per_second(cluster_, plan);
    return evaluation;
  }
  double objective_bound(const Plan& plan, double bound) const override {
    return bound * plan_dollars_per_second(cluster_, plan);
  }
  std::string note() const override {
    return "objective cost: dollars per step = iteration time x the plan's GPUs' "
           "price_per_gpu_hour / 3600";
  }
};

struct Candidate {
  Plan plan;
  double time_bound = 0;
  double objective_bound = 0;
};

// What screening one shape yields.
struct ShapeOutcome {
  std::vector<Candidate> candidates;
  int64_t considered = 0;
  int64_t fitting = 0;
  std::vector<int64_t> rule_drops = std::vector<int64_t>(3, 0);
  std::optional<ClosestPlan> closest;  // Least over among non-fitting variants.
  int64_t unsimulable = 0;
};

bool closer(const ClosestPlan& a, const ClosestPlan& b) {
  if (a.memory.over_bytes != b.memory.over_bytes) return a.memory.over_bytes < b.memory.over_bytes;
  return canonical_before(a.plan, b.plan);
}

ShapeOutcome screen_shape(const PlanScreen& screen, const PlanEvaluator& evaluator,
                          const Plan& shape, const SearchSpace& space) {
  ShapeOutcome outcome;
  ShapeScreen shape_screen(screen, shape);
  std::vector<Plan> variants = shape_screen.deadlocks() ? knob_variants(shape, space)
                                                        : knob_variants(shape, space, shape_screen);
  outcome.considered = static_cast<int64_t>(variants.size());
  if (shape_screen.deadlocks()) {
    outcome.unsimulable = outcome.considered;
    return outcome;
  }
  std::vector<bool> fits(variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    MemoryScreen memory = shape_screen.memory(variants[i]);
    fits[i] = memory.fits;
    if (fits[i]) {
      ++outcome.fitting;
    } else {
      ClosestPlan candidate{variants[i], memory};
      if (!outcome.closest || closer(candidate, *outcome.closest)) outcome.closest = candidate;
    }
  }
  const char* rules[] = {kRuleRecompute, kRuleZero2, kRuleOneRank};
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!fits[i]) continue;
    if (std::optional<Dominance> dominance = find_dominating_twin(variants[i], variants, fits)) {
      for (size_t r = 0; r < 3; ++r) {
        if (dominance->rule == rules[r]) ++outcome.rule_drops[r];
      }
      continue;
    }
    Candidate candidate;
    candidate.plan = variants[i];
    candidate.time_bound = shape_screen.busy_bound(variants[i]);
    candidate.objective_bound = evaluator.objective_bound(variants[i], candidate.time_bound);
    outcome.candidates.push_back(std::move(candidate));
  }
  return outcome;
}

// Short reasons a plan stands out among `plans` (best first).
void explain(std::vector<RankedPlan>& plans, Objective objective) {
  if (plans.empty()) return;
  // True when plan i has the smallest value among the plans (the first of near-equal ones).
  auto unique_min = [&](auto value, size_t i) {
    double mine = value(plans[i]);
    double tolerance = 1e-9 * std::max(std::abs(mine), 1e-12);
    for (size_t j = 0; j < plans.size(); ++j) {
      if (j == i) continue;
      double other = value(plans[j]);
      if (other < mine - tolerance || (j < i && other <= mine + tolerance)) return false;
    }
    return true;
  };
  for (size_t i = 0; i < plans.size(); ++i) {
    std::vector<std::string> reasons;
    const RankedPlan& plan = plans[i];
    const bool beaten = std::any_of(plans.begin(), plans.end(), [&](const RankedPlan& other) {
      return other.objective < plan.objective;
    });
    if (i == 0 && beaten) {
      // Ranked first by --min-gain: a faster plan gains too little for its extra machinery.
      reasons.push_back("simplest within --min-gain of the best");
    } else if (i == 0) {
      reasons.push_back(objective == Objective::kCost
                            ? (plan.time_to_train ? "cheapest run" : "cheapest step")
                        : objective == Objective::kP90         ? "lowest p90 step time"
                        : objective == Objective::kTimeToTrain ? "fewest wall days"
                                                               : "fastest step");
      // Where it gains most over the runner-up.
      if (plans.size() > 1) {
        const Breakdown& mine = plan.metrics.breakdown_s;
        const Breakdown& next = plans[1].metrics.breakdown_s;
        std::pair<double, const char*> gains[] = {
            {next.bubble - mine.bubble, "less bubble than #2"},
            {next.exposed_comm - mine.exposed_comm, "less exposed comm than #2"},
            {next.compute - mine.compute, "less compute than #2"},
            {next.optimizer - mine.optimizer, "faster optimizer than #2"}};
        auto best =
            std::max_element(std::begin(gains), std::end(gains),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
        if (best->first > 0) reasons.push_back(best->second);
      }
    }
    if (plans.size() > 1 && i > 0) {
      if (unique_min([](const RankedPlan& p) { return p.metrics.breakdown_s.bubble; }, i)) {
        reasons.push_back("least bubble");
      }
      if (unique_min([](const RankedPlan& p) { return p.metrics.breakdown_s.exposed_comm; }, i)) {
        reasons.push_back("least exposed comm");
      }
      if (plan.plan.recompute == Recompute::kNone &&
          std::any_of(plans.begin(), plans.end(),
                      [](const RankedPlan& p) { return p.plan.recompute != Recompute::kNone; })) {
        reasons.push_back("no recompute needed");
      }
      if (unique_min(
              [](const RankedPlan& p) {
                return static_cast<double>(p.plan.tp * p.plan.pp * p.plan.cp);
              },
              i)) {
        reasons.push_back("fewest model-parallel GPUs");
      }
      if (unique_min([](const RankedPlan& p) { return p.metrics.peak_memory_bytes; }, i)) {
        reasons.push_back("lowest peak memory");
      }
    }
    if (reasons.empty() || (i > 0 && reasons.size() < 2)) {
      double behind = plans[0].objective > 0 ? plan.objective / plans[0].objective - 1 : 0;
      reasons.push_back(fmt::format("{:+.2f}% vs #1", 100 * behind));
    }
    if (reasons.size() > 2) reasons.resize(2);
    std::string why;
    for (size_t k = 0; k < reasons.size(); ++k) why += (k ? ", " : "") + reasons[k];
    plans[i].why = why;
  }
}

}  // namespace

std::tuple<double, int64_t, int, int, int64_t> plan_complexity(const Plan& plan) {
  const int64_t chunks = plan.pp > 1 ? chunks_per_rank(plan.schedule, plan.vpp) : 1;
  int schedule = 0;
  if (plan.pp > 1) {
    if (is_v_shaped(plan.schedule)) {
      schedule = 3;
    } else if (schedule_traits(plan.schedule).splits_backward) {
      schedule = 2;
    } else if (chunks > 1) {
      schedule = 1;
    }
  }
  return {offloaded_fraction(plan), plan.activation_offload_layers,
          static_cast<int>(plan.recompute), schedule, chunks};
}

namespace {

// How y's recompute compares with x's: -1 when y re-runs strictly less of every layer's forward
// (none < selective < full; a partial full recompute of N layers per chunk < one of M > N <
// full of every layer), 0 for the same setting, 1 otherwise (more, or neither: selective
// against partial full recompute).
int compare_recompute(const Plan& y, const Plan& x) {
  if (y.recompute == x.recompute && y.recompute_num_layers == x.recompute_num_layers) return 0;
  const bool y_partial = y.recompute == Recompute::kFull && y.recompute_num_layers > 0;
  const bool x_partial = x.recompute == Recompute::kFull && x.recompute_num_layers > 0;
  if (y_partial && x_partial) return y.recompute_num_layers < x.recompute_num_layers ? -1 : 1;
  if (y_partial) return x.recompute == Recompute::kFull ? -1 : 1;
  if (x_partial) return y.recompute == Recompute::kNone ? -1 : 1;
  return y.recompute < x.recompute ? -1 : 1;
}

}  // namespace

std::optional<Dominance> find_dominating_twin(const Plan& x, const std::vector<Plan>& twins,
                                              const std::vector<bool>& fits) {
  PPSIM_CHECK(twins.size() == fits.size());
  // Routed experts shard over their own group, which etp < tp makes larger than dp*cp.
  bool one_rank = x.dp * x.cp == 1 && x.expert_dp() == 1;
  for (size_t i = 0; i < twins.size(); ++i) {
    const Plan& y = twins[i];
    if (!fits[i] || y.sequence_parallel != x.sequence_parallel) continue;
    bool zero_ok = y.zero_stage == x.zero_stage || (y.zero_stage == 1 && x.zero_stage == 2) ||
                   (one_rank && y.zero_stage == 0);
    // Offload is no rule (planner.h): only twins with the same offload fraction and
    // activation-offloaded layers compare.
    const int recompute = compare_recompute(y, x);
    if (!zero_ok || recompute > 0 || offloaded_fraction(y) != offloaded_fraction(x) ||
        y.activation_offload_layers != x.activation_offload_layers)
      continue;
    if (y.zero_stage == x.zero_stage && recompute == 0) continue;  // x itself.
    const char* rule = recompute < 0 ? kRuleRecompute
                       : one_rank                ? kRuleOneRank
                                                 : kRuleZero2;
    return Dominance{i, rule};
  }
  return std::nullopt;
}

std::unique_ptr<PlanEvaluator> make_evaluator(Objective objective, const ModelSpec& model,
                                              const ClusterSpec& cluster, const StepOptions& step,
                                              uint64_t seed, const TrainingSpec* training) {
  switch (objective) {
    case Objective::kTime:
      return std::make_unique<TimeEvaluator>(model, cluster, step);
    case Objective::kCost:
      if (training != nullptr) {
        return make_time_to_train_evaluator(model, cluster, step, *training, /*cost=*/true);
      }
      return std::make_unique<CostEvaluator>(model, cluster, step);
    case Objective::kP90:
      return make_p90_evaluator(model, cluster, step, seed);
    case Objective::kTimeToTrain:
      PPSIM_CHECK(training != nullptr, "the time-to-train objective needs a training run");
      return make_time_to_train_evaluator(model, cluster, step, *training, /*cost=*/false);
  }
  PPSIM_CHECK(false, "unknown objective");
}

double plan_dollars_per_second(const ClusterSpec& cluster, const Plan& plan) {
  int64_t per_stage = plan.tp * plan.cp * plan.dp;
  std::vector<int64_t> group_first;
  int64_t first = 0;
  for (const NodeGroup& group : cluster.nodes) {
    group_first.push_back(first);
    first += group.num_gpus();
  }
  std::vector<int64_t> next(cluster.nodes.size(), 0);
  double dollars_per_hour = 0;
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    int64_t start = stage * per_stage;
    if (!plan.placement.empty()) {
      int64_t g = plan.placement[stage];
      start = group_first[g] + next[g];
      next[g] += per_stage;
    }
    // GPUs [start, start + per_stage) across the groups they fall in.
    for (size_t g = 0; g < cluster.nodes.size(); ++g) {
      int64_t lo = std::max(start, group_first[g]);
      int64_t hi = std::min(start + per_stage, group_first[g] + cluster.nodes[g].num_gpus());
      if (hi > lo)
        dollars_per_hour += static_cast<double>(hi - lo) * cluster.nodes[g].price_per_gpu_hour;
    }
  }
  return dollars_per_hour / 3600.0;
}

PlanSearchResult search_plans(const ModelSpec& model, const ClusterSpec& cluster,
                              const PlannerOptions& options) {
  PlanScreen screen(model, cluster, options.step, options.space.memory_margin);
  std::unique_ptr<PlanEvaluator> evaluator =
      make_evaluator(options.objective, model, cluster, options.step, options.seed,
                     options.training ? &*options.training : nullptr);
  return search_plans(screen, *evaluator, options);
}

PlanSearchResult search_plans(const PlanScreen& screen, const PlanEvaluator& evaluator,
                              const PlannerOptions& options) {
  PPSIM_CHECK(options.top >= 1 && options.batch_size >= 1 && options.min_gain >= 0);
  PPSIM_CHECK(screen.memory_margin() == options.space.memory_margin,
              "the screen applies the space's memory margin");
  const ModelSpec& model = screen.model();
  const ClusterSpec& cluster = screen.cluster();
  PlanSearchResult result;
  result.objective_note = evaluator.note();
  SearchStats& stats = result.stats;
  ThreadPool pool(options.threads);
  auto report = [&](const char* phase, int64_t done, int64_t total) {
    if (options.progress) options.progress(SearchProgress{phase, done, total});
  };

  // Screen every shape's variants (in parallel, by index; merged in order).
  std::vector<Plan> shapes = enumerate_shapes(model, cluster, options.space, screen);
  stats.shapes = static_cast<int64_t>(shapes.size());
  std::vector<ShapeOutcome> outcomes(shapes.size());
  const int64_t screen_batch = 256;
  for (int64_t begin = 0; begin < stats.shapes; begin += screen_batch) {
    report("screening", begin, stats.shapes);
    int64_t count = std::min(screen_batch, stats.shapes - begin);
    pool.run(count, [&](int64_t i) {
      outcomes[begin + i] = screen_shape(screen, evaluator, shapes[begin + i], options.space);
    });
  }
  report("screening", stats.shapes, stats.shapes);
  std::vector<Candidate> candidates;
  stats.rules = {{kRuleRecompute, 0}, {kRuleZero2, 0}, {kRuleOneRank, 0}};
  for (ShapeOutcome& outcome : outcomes) {
    stats.considered += outcome.considered;
    stats.fitting += outcome.fitting;
    stats.unsimulable += outcome.unsimulable;
    for (size_t r = 0; r < stats.rules.size(); ++r) {
      stats.rules[r].dropped += outcome.rule_drops[r];
      stats.dominated += outcome.rule_drops[r];
    }
    if (outcome.closest && (!result.closest || closer(*outcome.closest, *result.closest))) {
      result.closest = outcome.closest;
    }
    for (Candidate& candidate : outcome.candidates) candidates.push_back(std::move(candidate));
  }
  outcomes.clear();
  stats.candidates = static_cast<int64_t>(candidates.size());
  if (stats.fitting > 0) result.closest.reset();

  // Simulate in order of increasing bound until the bound passes the top-th best objective.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.objective_bound != b.objective_bound) return a.objective_bound < b.objective_bound;
    return canonical_before(a.plan, b.plan);
  });
  std::vector<Evaluation> evaluations(candidates.size());
  std::vector<char> simulated(candidates.size(), false);
  std::vector<size_t> ranked;  // Simulated, fitting; sorted by (objective, canonical).
  auto ranked_before = [&](size_t a, size_t b) {
    if (evaluations[a].objective != evaluations[b].objective) {
      return evaluations[a].objective < evaluations[b].objective;
    }
    return canonical_before(candidates[a].plan, candidates[b].plan);
  };
  // What another process needs of a candidate it did not simulate itself (work_split.h):
  // simulated, shares taken, fits (one byte each), the time bound and the objective. The
  // shares are recomputed (a pure function of the plan); the metrics stay with the process
  // that simulated the candidate.
  std::vector<char> shared_plan(candidates.size(), false);
  std::vector<char> ran_here(candidates.size(), false);  // This process ran its batch body.
  auto outcome_bytes = [&](int64_t i) {
    std::string flags{simulated[i], shared_plan[i], static_cast<char>(evaluations[i].metrics.fits)};
    return flags + value_bytes(candidates[i].time_bound) + value_bytes(evaluations[i].objective);
  };
  auto take_outcome = [&](int64_t i, std::string_view bytes) {
    simulated[i] = bytes[0];
    shared_plan[i] = bytes[1];
    evaluations[i].metrics.fits = bytes[2] != 0;
    candidates[i].time_bound = bytes_value<double>(bytes, 3);
    evaluations[i].objective = bytes_value<double>(bytes, 3 + sizeof(double));
    if (shared_plan[i]) candidates[i].plan = *with_proportional_shares(screen, candidates[i].plan);
  };
  size_t top = static_cast<size_t>(options.top);
  int64_t total = stats.candidates;
  int64_t next = 0;
  // Plans within (1 + min_gain) of the top-th best can still take a place (header).
  auto cutoff = [&] {
    return ranked.size() >= top ? evaluations[ranked[top - 1]].objective * (1 + options.min_gain)
                                : std::numeric_limits<double>::infinity();
  };
  while (next < total) {
    double threshold = cutoff();
    if (candidates[next].objective_bound > threshold) break;
    report("simulating", next, total);
    int64_t count = std::min(options.batch_size, total - next);
    // The replayed bound first; only what can still make the top is simulated.
    run_split(options.split, pool, count, [&](int64_t i) {
      Candidate& candidate = candidates[next + i];
      ran_here[next + i] = true;
      candidate.time_bound = screen.step_time_bound(candidate.plan);
      double bound = evaluator.objective_bound(candidate.plan, candidate.time_bound);
      if (bound > threshold) return;
      simulated[next + i] = true;
      evaluations[next + i] = evaluator.evaluate(candidate.plan);
      // Replicas on GPUs of different speeds: proportional batch shares, kept when better.
      if (!options.space.heterogeneous) return;
      if (std::optional<Plan> shared = with_proportional_shares(screen, candidate.plan)) {
        Evaluation evaluation = evaluator.evaluate(*shared);
        if (evaluation.metrics.fits &&
            evaluation.objective < evaluations[next + i].objective) {
          candidate.plan = *shared;
          evaluations[next + i] = std::move(evaluation);
          shared_plan[next + i] = true;
        }
      }
    }, [&](int64_t i) { return outcome_bytes(next + i); },
    [&](int64_t i, std::string_view bytes) { take_outcome(next + i, bytes); });
    for (int64_t i = next; i < next + count; ++i) {
      if (!simulated[i]) continue;
      ++stats.simulated;
      if (!evaluations[i].metrics.fits) continue;
      ranked.insert(
          std::upper_bound(ranked.begin(), ranked.end(), static_cast<size_t>(i), ranked_before),
          static_cast<size_t>(i));
      while (ranked.size() > top && evaluations[ranked.back()].objective > cutoff()) {
        ranked.pop_back();
      }
    }
    next += count;
  }
  report("simulating", total, total);
  stats.bounded_out = total - stats.simulated;
  // Best first, the simplest plan within (1 + min_gain) of the best remaining takes each place
  // (objectives are the same on every process, so every process chooses alike).
  std::vector<size_t> chosen;
  while (!ranked.empty() && chosen.size() < top) {
    const double limit = evaluations[ranked.front()].objective * (1 + options.min_gain);
    size_t pick = 0;
    for (size_t k = 1; k < ranked.size() && evaluations[ranked[k]].objective <= limit; ++k) {
      if (plan_complexity(candidates[ranked[k]].plan) <
          plan_complexity(candidates[ranked[pick]].plan)) {
        pick = k;
      }
    }
    chosen.push_back(ranked[pick]);
    ranked.erase(ranked.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  // The chosen plans another process simulated: process 0 simulates them again for their
  // metrics (the same numbers: evaluate() is deterministic), at most `top` of them.
  if (options.split != nullptr && options.split->processes() > 1) {
    std::vector<size_t> others;
    for (size_t index : chosen) {
      if (!ran_here[index]) others.push_back(index);
    }
    if (options.split->process() != 0) others.clear();
    pool.run(static_cast<int64_t>(others.size()), [&](int64_t j) {
      evaluations[others[j]] = evaluator.evaluate(candidates[others[j]].plan);
    });
  }
  for (size_t index : chosen) {
    RankedPlan plan;
    plan.plan = candidates[index].plan;
    plan.metrics = std::move(evaluations[index].metrics);
    plan.objective = evaluations[index].objective;
    plan.dollars_per_step =
        plan.metrics.iteration_time_s * plan_dollars_per_second(cluster, plan.plan);
    plan.time_bound_s = candidates[index].time_bound;
    plan.time_to_train = std::move(evaluations[index].time_to_train);
    if (options.training && !plan.time_to_train) {
      plan.time_to_train = plan_time_to_train(model, cluster, options.step, plan.plan,
                                              *options.training, plan.metrics.iteration_time_s);
    }
    result.plans.push_back(std::move(plan));
  }
  explain(result.plans, options.objective);
  return result;
}

}  // namespace ppsim
