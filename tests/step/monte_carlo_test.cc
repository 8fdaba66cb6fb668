// Monte-Carlo over iterations: percentiles, determinism per seed, convergence, fault costs.
#include "simulator/step/monte_carlo.h"

#include <catch2/catch.hpp>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

MonteCarloResult run(const std::vector<std::string>& flags, const std::string& jitter,
                     int64_t iterations, uint64_t seed, bool costs = false,
                     const char* plan_text = "tp=8,pp=2,dp=1,mbs=1,gbs=8,schedule=1f1b",
                     int threads = 1) {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  StragglerModel model;
  for (const std::string& flag : flags) model.stragglers.push_back(parse_straggler_flag(flag));
  if (!jitter.empty()) model.jitter = parse_jitter_flag(jitter);
  validate_straggler_model(model, cluster);
  Plan plan = parse_plan(plan_text, "test");
  MonteCarloOptions options;
  options.iterations = iterations;
  options.seed = seed;
  options.fault_costs = costs;
  options.threads = threads;
  return run_monte_carlo(testing::small_dense_model(), cluster, plan, {}, model, options);
}

TEST_CASE("Monte-Carlo: nearest-rank percentiles") {
  std::vector<double> values = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  CHECK(nearest_rank_percentile(values, 50) == 5);
  CHECK(nearest_rank_percentile(values, 90) == 9);
  CHECK(nearest_rank_percentile(values, 99) == 10);
  CHECK(nearest_rank_percentile({3.5}, 90) == 3.5);
}

TEST_CASE("Monte-Carlo: without faults every iteration is the nominal step") {
  MonteCarloResult result = run({}, "", 5, 0);
  REQUIRE(result.step_times_s.size() == 5);
  for (double time : result.step_times_s) CHECK(time == result.step_times_s[0]);
  CHECK(result.percentiles.p50 == result.step_times_s[0]);
  CHECK(result.percentiles.p99 == result.step_times_s[0]);
}

TEST_CASE("Monte-Carlo: deterministic per seed; iteration k's draw does not depend on N") {
  MonteCarloResult a = run({}, "lognormal:0.1", 20, 1);
  MonteCarloResult b = run({}, "lognormal:0.1", 20, 1);
  CHECK(a.step_times_s == b.step_times_s);
  MonteCarloResult c = run({}, "lognormal:0.1", 20, 2);
  CHECK(a.step_times_s != c.step_times_s);
  MonteCarloResult longer = run({}, "lognormal:0.1", 40, 1);
  CHECK(std::vector<double>(longer.step_times_s.begin(), longer.step_times_s.begin() + 20) ==
        a.step_times_s);
  CHECK(a.percentiles.p50 <= a.percentiles.p90);
  CHECK(a.percentiles.p90 <= a.percentiles.p99);
}

TEST_CASE("Monte-Carlo: the same numbers on one thread or several") {
  const char* plan = "tp=2,pp=2,dp=8,mbs=1,gbs=32,schedule=1f1b";
  MonteCarloResult one = run({"gpu=5:0.7", "link=0-1:0.5"}, "lognormal:0.1", 12, 3, true, plan, 1);
  for (int threads : {2, 3, 0}) {
    INFO(threads);
    MonteCarloResult many =
        run({"gpu=5:0.7", "link=0-1:0.5"}, "lognormal:0.1", 12, 3, true, plan, threads);
    CHECK(many.step_times_s == one.step_times_s);
    CHECK(many.timeline.end == one.timeline.end);
    REQUIRE(many.fault_costs.size() == one.fault_costs.size());
    for (size_t i = 0; i < one.fault_costs.size(); ++i) {
      CHECK(many.fault_costs[i].cost_s == one.fault_costs[i].cost_s);
    }
  }
}

TEST_CASE("Monte-Carlo: percentiles converge as the iteration count grows") {
  // Each quadrupling of N shrinks the estimate's spread by about half; the p50 and p90 of 400
  // and 1600 iterations agree to well under the jitter's own spread (a few percent).
  MonteCarloResult few = run({}, "uniform:0.2", 400, 3);
  MonteCarloResult many = run({}, "uniform:0.2", 1600, 3);
  MonteCarloResult more = run({}, "uniform:0.2", 1600, 4);
  CHECK(few.percentiles.p50 == Approx(many.percentiles.p50).epsilon(0.005));
  CHECK(few.percentiles.p90 == Approx(many.percentiles.p90).epsilon(0.005));
  // Two independent seeds at the larger N agree more closely still.
  CHECK(many.percentiles.p50 == Approx(more.percentiles.p50).epsilon(0.002));
  CHECK(many.percentiles.p90 == Approx(more.percentiles.p90).epsilon(0.003));
  // The jitter spreads the distribution: p90 above p50.
  CHECK(many.percentiles.p90 > many.percentiles.p50);
}

TEST_CASE("Monte-Carlo: a flapping link is slow for `duty` of the simulated time") {
  // Stage 0 on node 0 sends to stage 1 on node 1 through the link. A 10 s period is about 100
  // steps: 2000 iterations span about 20 periods, and the iterations that start in the slow
  // part of a period (then run slow to their end) fill about 30% of the simulated time. Fewer
  // than 30% of the iterations are slow, since slow iterations are longer.
  MonteCarloResult nominal = run({}, "", 1, 0);
  MonteCarloResult flapping = run({"link=0-1:0.05:period=10000:duty=0.3"}, "", 2000, 0);
  double slow_time = 0, total = 0;
  int slow = 0;
  for (double time : flapping.step_times_s) {
    total += time;
    if (time > nominal.step_times_s[0] * 1.0001) {
      slow_time += time;
      ++slow;
    }
  }
  CHECK(slow_time / total == Approx(0.3).margin(0.02));
  CHECK(slow < 0.3 * 2000);
  CHECK(slow > 0.15 * 2000);
  CHECK(flapping.percentiles.p50 == Approx(nominal.step_times_s[0]));
  CHECK(flapping.percentiles.p90 > nominal.step_times_s[0] * 1.01);
  CHECK(flapping.warnings.empty());
  // A period shorter than a step is flagged: its state is held per iteration.
  MonteCarloResult fast = run({"link=0-1:0.05:period=1.7:duty=0.3"}, "", 3, 0);
  REQUIRE(fast.warnings.size() == 1);
  CHECK(fast.warnings[0].find("shorter than the") != std::string::npos);
}

TEST_CASE("Monte-Carlo: a fault's cost is the step time it alone adds (leave one out)") {
  MonteCarloResult nominal = run({}, "", 1, 0);
  MonteCarloResult one = run({"gpu=8:0.5"}, "", 1, 0, true);
  REQUIRE(one.fault_costs.size() == 1);
  CHECK(one.fault_costs[0].fault == "gpu=8:0.5");
  CHECK(one.fault_costs[0].cost_s ==
        Approx(one.step_times_s[0] - nominal.step_times_s[0]).epsilon(1e-9));
  // A fault on a GPU the plan does not use costs nothing (GPU 16 is outside tp 8 x pp 2).
  MonteCarloResult unused = run({"gpu=16:0.5", "link=0-1:0.5"}, "uniform:0.1", 10, 0, true);
  REQUIRE(unused.fault_costs.size() == 3);
  CHECK(unused.fault_costs[0].cost_s == Approx(0).margin(1e-12));
  CHECK(unused.fault_costs[1].cost_s > 0);
  CHECK(unused.fault_costs[2].fault == "jitter=uniform:0.1");
  CHECK(unused.fault_costs[2].cost_s > 0);
}

}  // namespace
}  // namespace ppsim
