// Planning for stragglers: --objective p90 on a cluster with a known slow node.
#include "simulator/planner/p90_evaluator.h"

#include <catch2/catch.hpp>

#include "simulator/planner/planner.h"
#include "tests/planner/small_search_space.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

// 16 equal layers, negligible embedding and head: stage time follows its layer count.
ModelSpec sixteen_layers() { return testing::uniform_model(16); }

// The small search (small_search_space.h) with ZeRO-1 only.
PlannerOptions small_space(Objective objective) {
  return testing::small_search_space(objective, {1});
}

TEST_CASE("p90 planning: a slow node gets fewer layers, and the p90-best differs from time-best") {
  ModelSpec model = sixteen_layers();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  cluster.stragglers.stragglers.push_back(parse_straggler_flag("node=1:0.5"));
  validate_straggler_model(cluster.stragglers, cluster);

  PlanSearchResult by_time = search_plans(model, cluster, small_space(Objective::kTime));
  PlanSearchResult by_p90 = search_plans(model, cluster, small_space(Objective::kP90));
  REQUIRE_FALSE(by_time.plans.empty());
  REQUIRE_FALSE(by_p90.plans.empty());
  const Plan& time_best = by_time.plans[0].plan;
  const Plan& p90_best = by_p90.plans[0].plan;
  INFO("time-best " << plan_to_inline(time_best) << ", p90-best " << plan_to_inline(p90_best));
  CHECK(plan_to_inline(time_best) != plan_to_inline(p90_best));
  // The slow node holds stage 1 of a 2-stage pipeline; it gets fewer layers (the layer balance
  // treats its 0.5 speed as it treats a slower GPU type): 16 layers at speeds 1 and 0.5 balance
  // at about 11 and 5.
  REQUIRE(p90_best.pp == 2);
  std::vector<int64_t> layers = stage_layer_counts(p90_best, model);
  CHECK(layers[1] < layers[0]);
  CHECK(layers[1] <= 6);
  // Under the stragglers, the p90-best plan is faster than the time-best plan would be.
  std::unique_ptr<PlanEvaluator> p90 = make_evaluator(Objective::kP90, model, cluster, {}, 0);
  CHECK(by_p90.plans[0].objective < p90->evaluate(time_best).objective);
  CHECK(by_p90.objective_note.find("node=1:0.5") != std::string::npos);
}

TEST_CASE("p90 planning: without stragglers p90 ranks as time does") {
  ModelSpec model = sixteen_layers();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  PlanSearchResult by_time = search_plans(model, cluster, small_space(Objective::kTime));
  PlanSearchResult by_p90 = search_plans(model, cluster, small_space(Objective::kP90));
  REQUIRE(by_time.plans.size() == by_p90.plans.size());
  for (size_t i = 0; i < by_time.plans.size(); ++i) {
    CHECK(plan_to_inline(by_time.plans[i].plan) == plan_to_inline(by_p90.plans[i].plan));
    CHECK(by_time.plans[i].objective == by_p90.plans[i].objective);
  }
}

TEST_CASE("p90 planning: with jitter the objective is a percentile of seeded draws") {
  ModelSpec model = sixteen_layers();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  cluster.stragglers.jitter = parse_jitter_flag("lognormal:0.2");
  Plan plan = parse_plan("tp=8,pp=2,dp=1,mbs=1,gbs=16,zero_stage=1", "test");
  std::unique_ptr<PlanEvaluator> p90 = make_evaluator(Objective::kP90, model, cluster, {}, 5);
  Evaluation a = p90->evaluate(plan);
  Evaluation b = p90->evaluate(plan);
  CHECK(a.objective == b.objective);
  // Jitter only slows: p90 is above the step's nominal time.
  std::unique_ptr<PlanEvaluator> time = make_evaluator(Objective::kTime, model, cluster, {}, 5);
  CHECK(a.objective > time->evaluate(plan).objective);
  CHECK(p90->note().find("20 seeded Monte-Carlo iterations") != std::string::npos);
}

}  // namespace
}  // namespace ppsim
