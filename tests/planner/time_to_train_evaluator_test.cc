// Planning by time to train: the objective is the run's expected wall days (or dollars), its
// bound never exceeds it, and the ranking follows it.
#include "simulator/planner/time_to_train_evaluator.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "simulator/planner/planner.h"
#include "tests/planner/small_search_space.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

// The small search with ZeRO 0 and 1, timing a 20B-token run.
PlannerOptions small_space(Objective objective) {
  PlannerOptions options = testing::small_search_space(objective, {0, 1});
  options.training = TrainingSpec{};
  options.training->tokens = 20'000'000'000;
  return options;
}

TEST_CASE("Time-to-train objective: wall days, a bound below them, and the ranking") {
  ModelSpec model = testing::uniform_model(16);
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  cluster.nodes[0].price_per_gpu_hour = 2;
  PlannerOptions options = small_space(Objective::kTimeToTrain);
  PlanSearchResult result = search_plans(model, cluster, options);
  REQUIRE(result.plans.size() >= 2);
  std::unique_ptr<PlanEvaluator> days =
      make_evaluator(Objective::kTimeToTrain, model, cluster, {}, 0, &*options.training);
  std::unique_ptr<PlanEvaluator> dollars =
      make_evaluator(Objective::kCost, model, cluster, {}, 0, &*options.training);
  for (size_t i = 0; i < result.plans.size(); ++i) {
    const RankedPlan& plan = result.plans[i];
    REQUIRE(plan.time_to_train);
    CHECK(plan.objective == Approx(plan.time_to_train->wall_s / 86400).epsilon(1e-12));
    if (i > 0) CHECK(plan.objective >= result.plans[i - 1].objective);
    // The bound from the plan's own step time is below its objective: e^(R/M) W <= T.
    const double step = plan.metrics.iteration_time_s;
    CHECK(days->objective_bound(plan.plan, step) <= plan.objective);
    CHECK(days->objective_bound(plan.plan, step) >= plan.time_to_train->compute_s / 86400);
    Evaluation cost = dollars->evaluate(plan.plan);
    REQUIRE(cost.time_to_train);
    CHECK(cost.objective == Approx(*cost.time_to_train->cost_usd).epsilon(1e-12));
    CHECK(dollars->objective_bound(plan.plan, step) <= cost.objective);
  }
  CHECK_THAT(result.plans[0].why, Catch::Contains("fewest wall days"));
  CHECK_THAT(result.objective_note, Catch::Contains("objective time-to-train"));
  // The time objective lists every plan's run too.
  PlanSearchResult by_time = search_plans(model, cluster, small_space(Objective::kTime));
  REQUIRE_FALSE(by_time.plans.empty());
  CHECK(by_time.plans[0].time_to_train);
}

}  // namespace
}  // namespace ppsim
