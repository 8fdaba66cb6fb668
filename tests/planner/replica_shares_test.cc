// Per-replica batch shares: the plan key, the step builder's per-replica schedules, the
// proportional split and what it buys on a cluster of two GPU types.
#include "simulator/planner/replica_shares.h"

#include <catch2/catch.hpp>

#include "simulator/engine/engine.h"
#include "simulator/export/launcher_config.h"
#include "simulator/model/worker_layout.h"
#include "simulator/planner/planner.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_file.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"

namespace ppsim {
namespace {

double step_time(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                 StepOptions options = {}) {
  REQUIRE_FALSE(plan_problem(plan, model, cluster));
  Step step = build_step(model, cluster, plan, options);
  Timeline timeline = simulate_graph(step.lowered.graph);
  return compute_metrics(model, cluster, plan, step, timeline).iteration_time_s;
}

TEST_CASE("Plan: replica_microbatches parse, round-trip and validate") {
  Plan plan = parse_plan("tp=8,dp=2,mbs=1,gbs=16,rmb=10:6", "test");
  CHECK(plan.replica_microbatches == std::vector<int64_t>{10, 6});
  CHECK(plan_to_inline(plan) == "tp=8,pp=1,dp=2,mbs=1,gbs=16,schedule=1f1b,rmb=10:6");
  CHECK(parse_plan(plan_to_inline(plan), "test").replica_microbatches == plan.replica_microbatches);
  Plan from_json = parse_plan(plan_to_json(plan), "test");
  CHECK(from_json.replica_microbatches == plan.replica_microbatches);
  CHECK(plan_to_json(plan).find("\"replica_microbatches\":[10,6]") != std::string::npos);
  CHECK(num_microbatches(plan) == 10);  // The largest share.
  CHECK(has_unequal_shares(plan));
  CHECK_FALSE(has_unequal_shares(parse_plan("dp=2,gbs=16,rmb=8:8", "test")));

  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("mixed-a100-h100");
  CHECK_FALSE(plan_problem(plan, model, cluster));
  auto problem = [&](const std::string& text) {
    return plan_problem(parse_plan(text, "test"), model, cluster).value_or("");
  };
  CHECK_THAT(problem("tp=8,dp=2,gbs=16,rmb=10:5"),
             Catch::Contains("replica_microbatches add up to 15 but global_batch_size / "
                             "micro_batch_size = 16 / 1 = 16"));
  CHECK_THAT(problem("tp=8,dp=2,gbs=16,rmb=16"),
             Catch::Contains("replica_microbatches has 1 entries but dp=2"));
  CHECK_THAT(problem("tp=4,pp=2,vpp=2,schedule=interleaved-1f1b,dp=2,gbs=16,rmb=9:7"),
             Catch::Contains("replica_microbatches[0] = 9: interleaved-1f1b needs the "
                             "microbatches per step to be a multiple of pp=2"));
  // Unequal shares need gbs divisible by mbs only, not by dp * mbs.
  CHECK(problem("tp=8,dp=2,gbs=15,rmb=10:5").empty());
  CHECK_THROWS_WITH(parse_plan("dp=2,gbs=16,rmb=16:0", "--plan"),
                    Catch::Contains("/rmb/1: expected an integer in [1, 2147483647], got 0"));
  CHECK_THROWS_WITH(parse_plan("{\"dp\": 2, \"gbs\": 16, \"replica_microbatches\": [16, 0]}", "p.json"),
                    Catch::Contains("/replica_microbatches/1"));
}

TEST_CASE("Step: shares equal to the default give the step without the key") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("mixed-a100-h100");
  Plan plan = parse_plan("tp=8,pp=2,dp=4,mbs=1,gbs=32", "test");
  Plan shared = parse_plan("tp=8,pp=2,dp=4,mbs=1,gbs=32,rmb=8:8:8:8", "test");
  CHECK(step_time(model, cluster, shared) == step_time(model, cluster, plan));
  StepOptions all;
  all.deduplicate_replicas = false;
  CHECK(step_time(model, cluster, shared, all) == step_time(model, cluster, plan, all));
}

TEST_CASE("Replica shares: largest-remainder rounding in units, with minimums") {
  CHECK(*proportional_shares({1, 3}, 16, 1, 1) == std::vector<int64_t>{4, 12});
  CHECK(*proportional_shares({1, 1, 1}, 10, 1, 1) == std::vector<int64_t>{4, 3, 3});
  CHECK(*proportional_shares({1, 2}, 16, 4, 4) == std::vector<int64_t>{4, 12});
  CHECK(*proportional_shares({1, 100}, 10, 1, 2) == std::vector<int64_t>{2, 8});
  CHECK_FALSE(proportional_shares({1, 1}, 10, 4, 4));  // 10 is not whole units of 4.
  CHECK_FALSE(proportional_shares({1, 1, 1}, 4, 1, 2));  // 3 replicas x 2 > 4.
}

TEST_CASE("Replica shares: on A100 + H100 replicas, proportional shares beat equal ones by the "
          "hand-computed amount") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("mixed-a100-h100");
  // Four replicas on the A100 nodes, four on the H100 nodes (GPUs in cluster order).
  Plan plan = parse_plan("tp=8,pp=1,dp=8,mbs=1,gbs=64", "test");
  PlanScreen screen(model, cluster, StepOptions{});
  std::vector<double> throughput = replica_throughputs(screen, plan);
  REQUIRE(throughput.size() == 8);
  double a100 = throughput[0], h100 = throughput[7];
  CHECK(throughput[3] == a100);
  CHECK(throughput[4] == h100);
  CHECK(h100 > 1.5 * a100);
  std::optional<Plan> shared = with_proportional_shares(screen, plan);
  REQUIRE(shared);
  const std::vector<int64_t>& m = shared->replica_microbatches;
  CHECK(m[0] < 8);
  CHECK(m[7] > 8);
  // Hand computation: every replica runs its microbatches back to back (pp = 1), so the step is
  // set by the replica that takes longest, m_d / throughput_d, plus what every step pays alike
  // (the gradient all-reduce tail and the optimizer).
  double equal_work = 8 / a100;
  double shared_work = std::max(m[0] / a100, m[7] / h100);
  double equal = step_time(model, cluster, plan);
  double proportional = step_time(model, cluster, *shared);
  double fixed = equal - equal_work;  // The per-step tail, the same with any shares.
  INFO("equal " << equal << " s, proportional " << proportional << " s, shares " << m[0] << ":"
                << m[7] << ", predicted " << shared_work + fixed << " s");
  CHECK(proportional < equal);
  // Within 10%: the screen's per-microbatch seconds leave out the framework's dispatch and the
  // tails differ by GPU type (the A100s' optimizer step is slower), so the estimate is rough.
  CHECK(proportional == Approx(shared_work + fixed).epsilon(0.10));
}

// Under partial full recompute a replica's time per microbatch is its recomputed layers' plus
// its plain layers' (the first N of each chunk re-run their forward): with pp 2 and vpp 2 on
// 32 layers (8 per chunk) and N = 3, each stage holds 6 recomputed and 10 plain layers.
TEST_CASE("Replica shares: a replica's throughput counts its recomputed and plain layers") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("mixed-a100-h100");
  const std::string shape = "tp=8,pp=2,dp=2,mbs=1,gbs=16,schedule=interleaved-1f1b,vpp=2";
  Plan plan = parse_plan(shape + ",recompute_num_layers=3", "test");
  PlanScreen screen(model, cluster, StepOptions{});
  std::vector<double> throughput = replica_throughputs(screen, plan);
  REQUIRE(throughput.size() == 2);
  const WorkerLayout layout = build_worker_layout(plan, cluster);
  for (int32_t d = 0; d < 2; ++d) {
    double slowest = 0;
    for (int32_t r = 0; r < 2; ++r) {
      const int64_t group = layout.at(d, r).node_group;
      auto full = screen.layer_seconds(parse_plan(shape + ",recompute=full", "full"), group);
      auto none = screen.layer_seconds(parse_plan(shape, "none"), group);
      // Every layer of llama3-8b is alike: layer 0's seconds stand for each.
      double stage = 6 * full->layers[0].total() + 10 * none->layers[0].total();
      if (r == 0) stage += full->embedding.total();
      if (r == 1) stage += full->head.total();
      slowest = std::max(slowest, stage);
    }
    CHECK(throughput[d] == Approx(1 / slowest).epsilon(1e-12));
  }
}

TEST_CASE("Planner: replicas on two GPU types get proportional shares when that is faster") {
  // One layer, so pp = 1 and every plan's replicas span both nodes (no placement can separate
  // them); one A100 node then one H100 node.
  ModelSpec model = load_model_spec("llama3-8b");
  model.num_layers = 1;
  ClusterSpec cluster = load_cluster_spec("dgx-a100-1");
  cluster.name = "a100+h100";
  cluster.nodes.push_back(load_cluster_spec("dgx-h100-1").nodes.front());
  PlannerOptions options;
  options.space.global_batch_size = 32;
  options.space.max_micro_batch_size = 2;
  options.space.zero_stages = {0, 1};
  options.space.offload_fractions = {0};
  options.space.smallest_fitting_offload = false;
  options.top = 1;
  options.threads = 1;
  PlanSearchResult aware = search_plans(model, cluster, options);
  INFO("considered " << aware.stats.considered << " fitting " << aware.stats.fitting << " simulated " << aware.stats.simulated);
  REQUIRE(aware.plans.size() == 1);
  const Plan& best = aware.plans.front().plan;
  INFO(plan_to_inline(best));
  CHECK(has_unequal_shares(best));
  // The same plan with equal shares is slower.
  Plan equal = best;
  equal.replica_microbatches.clear();
  CHECK(aware.plans.front().metrics.iteration_time_s < step_time(model, cluster, equal));
}

TEST_CASE("Replica shares: exporters say they cannot express unequal shares") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("mixed-a100-h100");
  // FSDP (ZeRO-2) with sequence parallelism: a plan every runtime runs (torchtitan takes tp only
  // beside FSDP and sequence parallelism).
  Plan plan = parse_plan(
      "tp=8,pp=1,dp=8,mbs=1,gbs=64,rmb=5:5:5:5:11:11:11:11,sequence_parallel=true,zero_stage=2",
      "test");
  for (LauncherFormat format :
       {LauncherFormat::kMegatron, LauncherFormat::kDeepSpeed, LauncherFormat::kTorchTitan}) {
    plan.runtime = launcher_runtime(format);
    LauncherOutput output = export_launcher(format, model, cluster, plan);
    bool warned = false;
    for (const std::string& warning : output.warnings) {
      warned = warned || warning.find("unequal shares of the global batch") != std::string::npos;
    }
    CHECK(warned);
    if (format == LauncherFormat::kDeepSpeed) continue;  // JSON: warnings on stderr only.
    CHECK(output.text.find("unequal shares of the global batch") != std::string::npos);
    CHECK(output.text.find("5:5:5:5:11:11:11:11") != std::string::npos);
  }
}

}  // namespace
}  // namespace ppsim
