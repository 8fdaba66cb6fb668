#include "simulator/planner/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "simulator/engine/engine.h"
#include "simulator/planner/p90_evaluator.h"
#include "simulator/planner/replica_shares.h"
#include "simulator/planner/thread_pool.h"
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
    if (i == 0) {
      reasons.push_back(objective == Objective::kCost  ? "cheapest step"
                        : objective == Objective::kP90 ? "lowest p90 step time"
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

std::optional<Dominance> find_dominating_twin(const Plan& x, const std::vector<Plan>& twins,
                                              const std::vector<bool>& fits) {
  PPSIM_CHECK(twins.size() == fits.size());
  bool one_rank = x.dp * x.cp == 1;
  for (size_t i = 0; i < twins.size(); ++i) {
    const Plan& y = twins[i];
    if (!fits[i] || y.sequence_parallel != x.sequence_parallel) continue;
    bool zero_ok = y.zero_stage == x.zero_stage || (y.zero_stage == 1 && x.zero_stage == 2) ||
                   (one_rank && y.zero_stage == 0);
    // Offload is no rule (planner.h): only twins with the same offload fraction compare.
    if (!zero_ok || y.recompute > x.recompute || offloaded_fraction(y) != offloaded_fraction(x))
      continue;
    if (y.zero_stage == x.zero_stage && y.recompute == x.recompute) continue;  // x itself.
    const char* rule = y.recompute < x.recompute ? kRuleRecompute
                       : one_rank                ? kRuleOneRank
                                                 : kRuleZero2;
    return Dominance{i, rule};
  }
  return std::nullopt;
}

std::unique_ptr<PlanEvaluator> make_evaluator(Objective objective, const ModelSpec& model,
                                              const ClusterSpec& cluster, const StepOptions& step,
                                              uint64_t seed) {
  switch (objective) {
    case Objective::kTime:
      return std::make_unique<TimeEvaluator>(model, cluster, step);
    case Objective::kCost:
      return std::make_unique<CostEvaluator>(model, cluster, step);
    case Objective::kP90:
      return make_p90_evaluator(model, cluster, step, seed);
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
  PlanScreen screen(model, cluster, options.step);
  std::unique_ptr<PlanEvaluator> evaluator =
      make_evaluator(options.objective, model, cluster, options.step, options.seed);
  return search_plans(screen, *evaluator, options);
}

PlanSearchResult search_plans(const PlanScreen& screen, const PlanEvaluator& evaluator,
                              const PlannerOptions& options) {
  PPSIM_CHECK(options.top >= 1 && options.batch_size >= 1);
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
  size_t top = static_cast<size_t>(options.top);
  int64_t total = stats.candidates;
  int64_t next = 0;
  while (next < total) {
    double threshold = ranked.size() >= top ? evaluations[ranked[top - 1]].objective
                                            : std::numeric_limits<double>::infinity();
    if (candidates[next].objective_bound > threshold) break;
    report("simulating", next, total);
    int64_t count = std::min(options.batch_size, total - next);
    // The replayed bound first; only what can still make the top is simulated.
    pool.run(count, [&](int64_t i) {
      Candidate& candidate = candidates[next + i];
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
        }
      }
    });
    for (int64_t i = next; i < next + count; ++i) {
      if (!simulated[i]) continue;
      ++stats.simulated;
      if (!evaluations[i].metrics.fits) continue;
      ranked.insert(
          std::upper_bound(ranked.begin(), ranked.end(), static_cast<size_t>(i), ranked_before),
          static_cast<size_t>(i));
      if (ranked.size() > top) ranked.resize(top);
    }
    next += count;
  }
  report("simulating", total, total);
  stats.bounded_out = total - stats.simulated;
  for (size_t index : ranked) {
    RankedPlan plan;
    plan.plan = candidates[index].plan;
    plan.metrics = std::move(evaluations[index].metrics);
    plan.objective = evaluations[index].objective;
    plan.dollars_per_step =
        plan.metrics.iteration_time_s * plan_dollars_per_second(cluster, plan.plan);
    plan.time_bound_s = candidates[index].time_bound;
    result.plans.push_back(std::move(plan));
  }
  explain(result.plans, options.objective);
  return result;
}

}  // namespace ppsim
