// Time to train: steps from tokens and the batch ramp, the zero-failure run is steps x step
// time, a given interval, the Daly interval and the failures of a real cluster, cost.
#include "simulator/step/time_to_train.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

ClusterSpec never_failing(ClusterSpec cluster) {
  for (NodeGroup& group : cluster.nodes) {
    group.reliability.gpu_failure_rate = 0;
    group.reliability.node_failure_rate = 0;
    group.reliability.nic_failure_rate = 0;
  }
  return cluster;
}

TrainingSpec tokens(int64_t count) {
  TrainingSpec training;
  training.tokens = count;
  return training;
}

// The run with every phase's step set to `step_time_s` (no simulation).
TimeToTrain timed(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                  const TrainingSpec& training, double step_time_s) {
  std::vector<TrainingPhase> phases = training_phases(model, cluster, plan, training);
  for (TrainingPhase& phase : phases) phase.step_time_s = step_time_s;
  return time_to_train(model, cluster, plan, training, phases);
}

TEST_CASE("Time to train: with no failures the run is steps x step time") {
  ModelSpec model = load_model_spec("llama3-8b");  // Sequence 8192.
  ClusterSpec cluster = never_failing(load_cluster_spec("dgx-h100-1"));
  Plan plan = parse_plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=1", "test");
  // 1e9 tokens / (64 x 8192 = 524,288 per step) = 1907.35 -> 1908 steps.
  TimeToTrain run = timed(model, cluster, plan, tokens(1'000'000'000), 2.0);
  CHECK(run.steps == 1908);
  CHECK(run.tokens == 1'000'000'000);
  CHECK(run.step_time_s == 2.0);
  CHECK(run.compute_s == 1908 * 2.0);
  CHECK(run.wall_s == 1908 * 2.0);
  CHECK(run.goodput == 1);
  CHECK(run.expected_failures == 0);
  CHECK(run.lost_s == 0);
  CHECK(std::isinf(run.interval_s));
  CHECK(run.checkpoint_count == 0);
  CHECK(run.gpus == 8);
  CHECK(run.gpu_hours == Approx(1908 * 2.0 * 8 / 3600).epsilon(1e-12));
  // dgx-h100-1 prices its GPUs at 2.9 $/h.
  REQUIRE(run.cost_usd);
  CHECK(*run.cost_usd == Approx(1908 * 2.0 / 3600 * 8 * 2.9).epsilon(1e-12));
  // A given interval without failures only adds its checkpoints: every 100 steps = 200 s,
  // ceil(3816 / 200) - 1 = 19 checkpoints.
  TrainingSpec every_100 = tokens(1'000'000'000);
  every_100.interval_rule = IntervalRule::kSteps;
  every_100.interval_steps = 100;
  TimeToTrain given = timed(model, cluster, plan, every_100, 2.0);
  CHECK(given.interval_s == 200);
  CHECK(given.checkpoint_count == 19);
  CHECK(given.wall_s == Approx(3816 + 19 * given.checkpoint.blocking_s).epsilon(1e-12));
}

TEST_CASE("Time to train: a batch ramp's phases, each at its own batch") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = never_failing(load_cluster_spec("dgx-h100-1"));
  Plan plan = parse_plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=1", "test");
  TrainingSpec training = tokens(1'000'000'000);
  training.batch_ramp = {{100'000'000, 16, 4096}};
  std::vector<TrainingPhase> phases = training_phases(model, cluster, plan, training);
  REQUIRE(phases.size() == 2);
  // 1e8 / (16 x 4096 = 65,536) = 1525.9 -> 1526 steps; then 9e8 / 524,288 = 1716.6 -> 1717.
  CHECK(phases[0].ramp);
  CHECK(phases[0].plan.global_batch_size == 16);
  CHECK(phases[0].tokens_per_step == 65536);
  CHECK(phases[0].steps == 1526);
  CHECK_FALSE(phases[1].ramp);
  CHECK(phases[1].tokens == 900'000'000);
  CHECK(phases[1].steps == 1717);
  phases[0].step_time_s = 0.5;
  phases[1].step_time_s = 2.0;
  TimeToTrain run = time_to_train(model, cluster, plan, training, phases);
  CHECK(run.steps == 1526 + 1717);
  CHECK(run.compute_s == 1526 * 0.5 + 1717 * 2.0);
  CHECK(run.step_time_s == Approx(run.compute_s / run.steps).epsilon(1e-15));
  CHECK(run.wall_s == run.compute_s);
  // A ramp batch the plan cannot run (12 sequences over 8 replicas) names the ramp entry.
  training.batch_ramp = {{100'000'000, 12, std::nullopt}};
  CHECK_THROWS_WITH(training_phases(model, cluster, plan, training),
                    Catch::Contains("training: /training/batch_ramp/0: this phase's plan") &&
                        Catch::Contains("cannot run"));
}

TEST_CASE("Time to train: failures, the Daly interval and the Llama 3 defaults") {
  ModelSpec model = load_model_spec("llama3.1-405b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:2048");
  Plan plan = parse_plan("tp=8,pp=16,dp=128,mbs=1,gbs=2048,zero_stage=1", "test");
  TimeToTrain run = timed(model, cluster, plan, tokens(15'600'000'000'000), 6.0);
  const double rate = run.failure_rate.total();
  CHECK(rate * 54 * 86400 == Approx(419).epsilon(1e-12));
  CHECK(run.interval_s == Approx(daly_interval(run.checkpoint.blocking_s, 1 / rate)));
  CHECK(run.restart_s == Approx(600 + run.checkpoint.load_s).epsilon(1e-12));
  CHECK(run.wall_s == Approx(expected_wall_time(run.run)).epsilon(1e-15));
  CHECK(run.wall_s > run.compute_s);
  CHECK(run.goodput == Approx(run.compute_s / run.wall_s));
  CHECK(run.expected_failures == Approx(run.wall_s * rate));
  // Lost per failure: about half a segment plus the restart; a little less, as the failures
  // that strike during a restart (R/M, about 5% of them here) cost only part of one.
  const double first_order = (run.interval_s + run.checkpoint.blocking_s) / 2 + run.restart_s;
  CHECK(run.lost_s < first_order);
  CHECK(run.lost_s == Approx(first_order).epsilon(0.05));
  // Young's interval is longer than Daly's here, and its run no shorter.
  TrainingSpec young = tokens(15'600'000'000'000);
  young.interval_rule = IntervalRule::kYoung;
  TimeToTrain by_young = timed(model, cluster, plan, young, 6.0);
  CHECK(by_young.interval_s > run.interval_s);
  CHECK(by_young.wall_s >= run.wall_s * (1 - 1e-6));
  // The Monte-Carlo: the same seed, the same days.
  add_wall_percentiles(run, 50, 11);
  TimeToTrain again = timed(model, cluster, plan, tokens(15'600'000'000'000), 6.0);
  add_wall_percentiles(again, 50, 11);
  REQUIRE(run.wall_percentiles);
  CHECK(run.wall_percentiles->p50 == again.wall_percentiles->p50);
  CHECK(run.wall_percentiles->p90 == again.wall_percentiles->p90);
  CHECK(run.wall_percentiles->p50 <= run.wall_percentiles->p90);
}

TEST_CASE("Time to train: async checkpoints block only for the copy and wait for the write") {
  ModelSpec model = load_model_spec("llama3.1-405b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:2048");
  cluster.reliability.async_checkpoint = true;
  Plan plan = parse_plan("tp=8,pp=16,dp=128,mbs=1,gbs=2048,zero_stage=1", "test");
  TimeToTrain run = timed(model, cluster, plan, tokens(15'600'000'000'000), 6.0);
  CHECK(run.checkpoint.blocking_s < run.checkpoint.save_s);
  CHECK(run.interval_s >= run.checkpoint.save_s - run.checkpoint.blocking_s);
  // A failure while the last checkpoint is still being written falls back one more: the
  // model's restart carries the write window.
  CHECK(run.run.restart_s ==
        Approx(run.restart_s + run.checkpoint.save_s - run.checkpoint.blocking_s));
  ClusterSpec sync_cluster = load_cluster_spec("dgx-h100:2048");
  TimeToTrain sync = timed(model, sync_cluster, plan, tokens(15'600'000'000'000), 6.0);
  CHECK(run.wall_s < sync.wall_s);
}

}  // namespace
}  // namespace ppsim
