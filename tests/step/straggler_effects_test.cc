// Each straggler model's effect on a step, checked against hand computations.
#include "simulator/step/straggler_effects.h"

#include <catch2/catch.hpp>

#include "simulator/engine/engine.h"
#include "simulator/spec/units.h"
#include "simulator/step/monte_carlo.h"
#include "simulator/step/step_metrics.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::uniform_model;

StragglerModel model_of(std::vector<std::string> flags, const std::string& jitter = "") {
  StragglerModel model;
  for (const std::string& flag : flags) model.stragglers.push_back(parse_straggler_flag(flag));
  if (!jitter.empty()) model.jitter = parse_jitter_flag(jitter);
  return model;
}

// Iteration 0 of `plan_text` under `stragglers`.
MonteCarloResult run(const ModelSpec& model, const ClusterSpec& cluster,
                     const std::string& plan_text, const StragglerModel& stragglers,
                     StepOptions options = {}, uint64_t seed = 0) {
  Plan plan = parse_plan(plan_text, "test");
  REQUIRE_FALSE(plan_problem(plan, model, cluster));
  validate_straggler_model(stragglers, cluster);
  MonteCarloOptions monte_carlo;
  monte_carlo.seed = seed;
  return run_monte_carlo(model, cluster, plan, options, stragglers, monte_carlo);
}

// Durations of the tasks of one kind on one worker, in task order.
std::vector<double> durations(const MonteCarloResult& r, int32_t worker, ActionKind kind) {
  std::vector<double> out;
  for (TaskId id = 0; id < r.step.lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = r.step.lowered.info[id];
    if (info.worker == worker && info.kind == kind && info.role == TaskInfo::Role::kAction) {
      out.push_back(r.timeline.end[id] - r.timeline.start[id]);
    }
  }
  REQUIRE_FALSE(out.empty());
  return out;
}

double last_end(const MonteCarloResult& r, int32_t worker, ActionKind kind) {
  double end = 0;
  for (TaskId id = 0; id < r.step.lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = r.step.lowered.info[id];
    if (info.worker == worker && info.kind == kind) end = std::max(end, r.timeline.end[id]);
  }
  return end;
}

// The first forward send's transfer time (without its latency) and its latency.
std::pair<double, double> first_send(const MonteCarloResult& r) {
  for (TaskId id = 0; id < r.step.lowered.graph.num_tasks(); ++id) {
    if (r.step.lowered.info[id].kind == ActionKind::kSendForward) {
      double latency = r.step.lowered.graph.task(id).latency;
      return {r.timeline.end[id] - r.timeline.start[id] - latency, latency};
    }
  }
  FAIL("no send");
  return {0, 0};
}

TEST_CASE("Stragglers: 2-stage GPipe, free communication, stage 1 at half speed") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  ModelSpec model = uniform_model(8);
  StepOptions ideal;
  ideal.ideal_links = true;
  const char* plan = "tp=1,pp=2,dp=1,mbs=1,gbs=4,schedule=gpipe";
  MonteCarloResult nominal = run(model, cluster, plan, {}, ideal);
  MonteCarloResult slow = run(model, cluster, plan, model_of({"gpu=1:0.5"}), ideal);
  // GPU 1 is stage 1's only GPU: its forwards and backwards take twice as long.
  CHECK(durations(slow, 1, ActionKind::kForward)[0] ==
        Approx(2 * durations(nominal, 1, ActionKind::kForward)[0]));
  CHECK(durations(slow, 1, ActionKind::kBackward)[0] ==
        Approx(2 * durations(nominal, 1, ActionKind::kBackward)[0]));
  CHECK(durations(slow, 0, ActionKind::kForward)[0] ==
        Approx(durations(nominal, 0, ActionKind::kForward)[0]));
  // By hand: stage 1 is the bottleneck and never idles once its first forward arrives, so
  // stage 0's last backward ends at tF0 + m(tF1 + tB1) + tB0 with m = 4.
  double tf0 = durations(slow, 0, ActionKind::kForward)[0];
  double tb0 = durations(slow, 0, ActionKind::kBackward)[0];
  double tf1 = durations(slow, 1, ActionKind::kForward)[0];
  double tb1 = durations(slow, 1, ActionKind::kBackward)[0];
  CHECK(last_end(slow, 0, ActionKind::kBackward) ==
        Approx(tf0 + 4 * (tf1 + tb1) + tb0).epsilon(1e-9));
  // The whole node at half speed slows both stages: every forward doubles.
  MonteCarloResult node = run(model, cluster, plan, model_of({"node=0:0.5"}), ideal);
  CHECK(durations(node, 0, ActionKind::kForward)[0] ==
        Approx(2 * durations(nominal, 0, ActionKind::kForward)[0]));
  CHECK(node.step_times_s[0] > slow.step_times_s[0]);
  // Two faults on one GPU multiply.
  MonteCarloResult both = run(model, cluster, plan, model_of({"gpu=1:0.5", "node=0:0.5"}), ideal);
  CHECK(durations(both, 1, ActionKind::kForward)[0] ==
        Approx(4 * durations(nominal, 1, ActionKind::kForward)[0]));
}

TEST_CASE("Stragglers: a slow link doubles a cross-node send; extra latency adds to it") {
  ModelSpec model = uniform_model(16);
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  // One stage per node: stage 0 on node 0 sends to stage 1 on node 1.
  const char* plan = "tp=8,pp=4,dp=1,mbs=1,gbs=4,schedule=gpipe";
  MonteCarloResult nominal = run(model, cluster, plan, {});
  MonteCarloResult slow = run(model, cluster, plan, model_of({"link=0-1:0.5"}));
  auto [time, latency] = first_send(nominal);
  auto [slow_time, slow_latency] = first_send(slow);
  CHECK(slow_time == Approx(2 * time).epsilon(1e-6));
  CHECK(slow_latency == latency);
  CHECK(slow.step_times_s[0] > nominal.step_times_s[0]);
  // Either direction names the same path.
  MonteCarloResult reversed = run(model, cluster, plan, model_of({"link=1-0:0.5"}));
  CHECK(reversed.step_times_s[0] == slow.step_times_s[0]);
  MonteCarloResult late = run(model, cluster, plan, model_of({"link=0-1:1:+100"}));
  CHECK(first_send(late).second == Approx(latency + 100 * kMicrosecond));
  CHECK(first_send(late).first == Approx(time).epsilon(1e-6));
  // A link no pipeline or data-parallel traffic crosses changes nothing.
  MonteCarloResult elsewhere = run(model, cluster, plan, model_of({"link=0-3:0.1:+100"}));
  CHECK(elsewhere.step_times_s[0] == Approx(nominal.step_times_s[0]).epsilon(1e-12));
}

TEST_CASE("Stragglers: a flapping link is slow in the first duty of each period") {
  Straggler link = parse_straggler_flag("link=0-1:0.5:period=100:duty=0.3");
  CHECK(link_fault_active(link, 0.0));
  CHECK(link_fault_active(link, 0.029));
  CHECK_FALSE(link_fault_active(link, 0.031));
  CHECK_FALSE(link_fault_active(link, 0.099));
  CHECK(link_fault_active(link, 0.1005));
  CHECK(link_fault_active(parse_straggler_flag("link=0-1:0.5"), 123.0));
}

TEST_CASE("Stragglers: jitter slows every compute action within its distribution") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  ModelSpec model = uniform_model(8);
  StepOptions ideal;
  ideal.ideal_links = true;
  const char* plan = "tp=1,pp=2,dp=1,mbs=1,gbs=16,schedule=1f1b";
  MonteCarloResult nominal = run(model, cluster, plan, {}, ideal);
  MonteCarloResult uniform = run(model, cluster, plan, model_of({}, "uniform:0.2"), ideal);
  std::vector<double> base = durations(nominal, 0, ActionKind::kForward);
  std::vector<double> jittered = durations(uniform, 0, ActionKind::kForward);
  REQUIRE(base.size() == jittered.size());
  bool any_slower = false;
  for (size_t i = 0; i < base.size(); ++i) {
    CHECK(jittered[i] >= base[i] * (1 - 1e-12));
    CHECK(jittered[i] < base[i] * 1.2);
    any_slower = any_slower || jittered[i] > base[i] * 1.001;
  }
  CHECK(any_slower);
  // The same seed gives the same draws; another seed others.
  MonteCarloResult again = run(model, cluster, plan, model_of({}, "uniform:0.2"), ideal);
  CHECK(durations(again, 0, ActionKind::kForward) == jittered);
  MonteCarloResult other = run(model, cluster, plan, model_of({}, "uniform:0.2"), ideal, 7);
  CHECK(durations(other, 0, ActionKind::kForward) != jittered);
}

TEST_CASE("Stragglers: the jitter distributions have the stated shape") {
  SeededRandom random(42);
  const int n = 20000;
  JitterSpec lognormal = parse_jitter_flag("lognormal:0.1");
  JitterSpec exponential = parse_jitter_flag("exponential:0.05");
  JitterSpec uniform = parse_jitter_flag("uniform:0.3");
  int undisturbed = 0;
  double exponential_sum = 0, uniform_sum = 0, uniform_max = 0;
  for (int i = 0; i < n; ++i) {
    double s = jitter_slowdown(lognormal, random);
    REQUIRE(s >= 1);
    undisturbed += s == 1.0;
    exponential_sum += jitter_slowdown(exponential, random) - 1;
    double u = jitter_slowdown(uniform, random);
    uniform_sum += u - 1;
    uniform_max = std::max(uniform_max, u);
  }
  // Clamped lognormal of median 1: half the actions undisturbed.
  CHECK(undisturbed / static_cast<double>(n) == Approx(0.5).margin(0.02));
  CHECK(exponential_sum / n == Approx(0.05).epsilon(0.05));
  CHECK(uniform_sum / n == Approx(0.15).epsilon(0.03));
  CHECK(uniform_max < 1.3);
}

TEST_CASE("Stragglers: per-stage speed for layer balance is the stage's slowest GPU") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  cluster.stragglers = model_of({"gpu=9:0.5", "node=3:0.8"});
  Plan plan = parse_plan("tp=8,pp=2,dp=2,mbs=1,gbs=8", "test");
  // Stage 0 holds GPUs 0-15 (nodes 0-1, GPU 9 among them), stage 1 GPUs 16-31 (nodes 2-3).
  std::vector<double> speed = stage_straggler_speed(cluster, plan);
  REQUIRE(speed.size() == 2);
  CHECK(speed[0] == 0.5);
  CHECK(speed[1] == 0.8);
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("Stragglers: the breakdown names the wait for a slower replica, the path crosses to it") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  ModelSpec model = testing::uniform_model(8);
  const std::string plan_text = "tp=2,pp=1,dp=4,mbs=1,gbs=32";
  Plan plan = parse_plan(plan_text, "test");
  MonteCarloResult nominal = run(model, cluster, plan_text, {});
  StepMetrics calm = compute_metrics(model, cluster, plan, nominal.step, nominal.timeline);
  CHECK(calm.breakdown_s.straggler_wait == 0);  // Alike replicas wait for nobody.
  // Jitter: each replica draws its own slowdowns. Where the critical worker is not the slowest
  // replica, it waited for it at the gradient reduction: that is straggler_wait, and the
  // critical path crosses to the slowest replica.
  int waited = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    INFO("seed " << seed);
    MonteCarloResult jittered =
        run(model, cluster, plan_text, model_of({}, "lognormal:0.3"), {}, seed);
    StepMetrics metrics = compute_metrics(model, cluster, plan, jittered.step, jittered.timeline);
    metrics.critical_path = critical_path(jittered.step, jittered.timeline);
    const Breakdown& b = metrics.breakdown_s;
    // The parts add up to the step (bubble is the rest; pp = 1 leaves none).
    CHECK(b.compute + b.bubble + b.exposed_comm + b.straggler_wait + b.optimizer ==
          Approx(metrics.iteration_time_s).epsilon(1e-9));
    REQUIRE(metrics.critical_path.size() > 2);
    int32_t critical = metrics.critical_path.back().worker;
    int32_t first = metrics.critical_path.front().worker;
    // The path starts on the replica whose backwards ended last.
    for (int32_t w = 0; w < 4; ++w) {
      CHECK(last_end(jittered, first, ActionKind::kBackward) >=
            last_end(jittered, w, ActionKind::kBackward));
    }
    if (first != critical) {
      ++waited;
      CHECK(b.straggler_wait > 0);
      // The wait is about the time from the critical worker's last backward to the slowest
      // replica's (plus the difference in their last gradient buckets' delays, a few percent).
      CHECK(b.straggler_wait == Approx(last_end(jittered, first, ActionKind::kBackward) -
                                       last_end(jittered, critical, ActionKind::kBackward))
                                    .epsilon(0.1));
    } else {
      CHECK(b.straggler_wait == 0);
    }
  }
  CHECK(waited > 0);
}

}  // namespace
}  // namespace ppsim
