// How fast one training step simulates: the planner's inner loop.
//
// Cases from the simulator issue:
// - Llama-3.1-405B on 16,384 H100s: tp 8, pp 16, dp 128, interleaved 1F1B, global batch 2048
//   sequences of 8192 tokens (16 microbatches per replica). Llama 3 trained 126 layers on 16
//   stages with one layer fewer on the first and the last; an interleaved split needs every
//   stage's layers divisible by vpp, so this uses 6 layers on the first stage and 8 on the rest
//   with vpp 2, the closest interleaved split.
// - GPT-3 175B on 1,024 A100s: tp 8, pp 16, dp 8, interleaved 1F1B with vpp 3 (6 layers per
//   stage), global batch 1536 (Narayanan et al. 2021), 192 microbatches per replica.
// Each iteration builds the task graph and runs the engine; counters report tasks and events
// per step and events per second.
#include <benchmark/benchmark.h>

#include "simulator/engine/engine.h"
#include "simulator/spec/model_file.h"
#include "simulator/step/step_builder.h"

namespace ppsim {
namespace {

void simulate_case(benchmark::State& state, const char* model_name, const char* cluster_name,
                   const char* plan_text, bool build_only) {
  ModelSpec model = load_model_spec(model_name);
  ClusterSpec cluster = load_cluster_spec(cluster_name);
  Plan plan = parse_plan(plan_text, "benchmark");
  if (auto problem = plan_problem(plan, model, cluster)) {
    state.SkipWithError(problem->c_str());
    return;
  }
  int64_t events = 0, tasks = 0;
  for (auto _ : state) {
    Step step = build_step(model, cluster, plan);
    tasks = step.lowered.graph.num_tasks();
    if (!build_only) {
      Timeline timeline = simulate_graph(step.lowered.graph);
      events = timeline.events;
      benchmark::DoNotOptimize(timeline.makespan);
    }
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}

constexpr const char* kLlama405bPlan =
    "tp=8,pp=16,dp=128,mbs=1,gbs=2048,schedule=interleaved-1f1b,vpp=2,"
    "stage_layers=6:8:8:8:8:8:8:8:8:8:8:8:8:8:8:8,sequence_parallel=true,zero_stage=1";
constexpr const char* kGpt3Plan =
    "tp=8,pp=16,dp=8,mbs=1,gbs=1536,schedule=interleaved-1f1b,vpp=3,sequence_parallel=true,"
    "zero_stage=1";

void BM_Llama405bOn16384H100(benchmark::State& state) {
  simulate_case(state, "llama3.1-405b", "dgx-h100:2048", kLlama405bPlan, false);
}
void BM_Llama405bOn16384H100_BuildOnly(benchmark::State& state) {
  simulate_case(state, "llama3.1-405b", "dgx-h100:2048", kLlama405bPlan, true);
}
void BM_Gpt3On1024A100(benchmark::State& state) {
  simulate_case(state, "gpt3-175b", "dgx-a100:128", kGpt3Plan, false);
}

BENCHMARK(BM_Llama405bOn16384H100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama405bOn16384H100_BuildOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gpt3On1024A100)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ppsim

BENCHMARK_MAIN();
