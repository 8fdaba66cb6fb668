// How fast the engine runs, and how fast straggler studies run at scale (issue 21's targets).
//
// Cases (Llama-3.1-405B, tp 8, pp 16, 1F1B, one microbatch of 8192 tokens at a time, 16
// microbatches per replica; H100 nodes of 8 GPUs, `dgx-h100:N`):
// - BM_EngineAllReplicas405bOn16384: the engine alone on the step of 16,384 GPUs (dp 128) with
//   every replica simulated (the graph is built once, outside the timing): events per second
//   (target >= 5 million per core).
// - BM_OneStraggler405bOn16384: what `ppsim simulate --straggler gpu=5:0.8` does at 16,384 GPUs,
//   build and simulation (target <= 50 ms).
// - BM_Jitter405bOn2048/N: N Monte-Carlo iterations of the step on 2,048 GPUs (dp 16) under
//   `--jitter lognormal:0.05`, as `simulate --iterations N` runs them, on all cores; wall time
//   (target: N = 1000 in <= 30 s on a 2-core machine).
// Counters: events and tasks per simulated step, events_per_s, and peak_rss_MiB, the process's
// peak resident set so far (getrusage ru_maxrss; it only grows, so run one case with
// --benchmark_filter to read one case's peak).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "simulator/engine/engine.h"
#include "simulator/spec/model_file.h"
#include "simulator/step/monte_carlo.h"
#include "simulator/step/step_builder.h"

namespace ppsim {
namespace {

constexpr const char* kPlan16384 = "tp=8,pp=16,dp=128,mbs=1,gbs=2048,schedule=1f1b";
constexpr const char* kPlan2048 = "tp=8,pp=16,dp=16,mbs=1,gbs=256,schedule=1f1b";

double peak_rss_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux.
}

struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
  Plan plan;
};

Inputs load(const char* cluster, const char* plan) {
  return Inputs{load_model_spec("llama3.1-405b"), load_cluster_spec(cluster),
                parse_plan(plan, "benchmark")};
}

void BM_EngineAllReplicas405bOn16384(benchmark::State& state) {
  Inputs in = load("dgx-h100:2048", kPlan16384);
  StepOptions options;
  options.deduplicate_replicas = false;
  Step step = build_step(in.model, in.cluster, in.plan, options);
  int64_t events = 0;
  for (auto _ : state) {
    Timeline timeline = simulate_graph(step.lowered.graph);
    events = timeline.events;
    benchmark::DoNotOptimize(timeline.makespan);
  }
  state.counters["tasks"] = static_cast<double>(step.lowered.graph.num_tasks());
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void BM_OneStraggler405bOn16384(benchmark::State& state) {
  Inputs in = load("dgx-h100:2048", kPlan16384);
  StragglerModel stragglers;
  stragglers.stragglers.push_back(parse_straggler_flag("gpu=5:0.8"));
  MonteCarloOptions options;
  int64_t events = 0, tasks = 0;
  for (auto _ : state) {
    MonteCarloResult result = run_monte_carlo(in.model, in.cluster, in.plan, StepOptions{},
                                              stragglers, options);
    events = result.timeline.events;
    tasks = result.step.lowered.graph.num_tasks();
    benchmark::DoNotOptimize(result.mean_s);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void BM_Jitter405bOn2048(benchmark::State& state) {
  Inputs in = load("dgx-h100:256", kPlan2048);
  StragglerModel stragglers;
  stragglers.jitter = parse_jitter_flag("lognormal:0.05");
  MonteCarloOptions options;
  options.iterations = state.range(0);
  options.threads = 0;  // All cores, as `simulate --iterations` runs them.
  for (auto _ : state) {
    MonteCarloResult result = run_monte_carlo(in.model, in.cluster, in.plan, StepOptions{},
                                              stragglers, options);
    benchmark::DoNotOptimize(result.percentiles.p90);
    state.counters["events_per_iteration"] = static_cast<double>(result.timeline.events);
  }
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

BENCHMARK(BM_EngineAllReplicas405bOn16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OneStraggler405bOn16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Jitter405bOn2048)->Arg(100)->Arg(1000)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace ppsim

BENCHMARK_MAIN();
