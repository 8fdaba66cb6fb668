// How fast the planner searches: the full space, memory screen, bounds and simulations.
//
// Cases from the planner issue (targets on a 2-core machine):
// - Llama-3.1-405B on 16,384 H100s (dgx-h100:2048), global batch 2048 sequences of 8192
//   tokens (Llama 3's 16M-token batch): under 60 s;
// - Llama-3-70B on 256 H100s (dgx-h100-32), global batch 256: under 5 s.
// Llama-3-70B on 32 H100s with and without partial recompute variants (what they cost).
// And what searching MoE token dispatchers costs: Qwen3-30B-A3B on 16 H100s (dgx-h100:2),
// global batch 256, with alltoall alone and with alltoall, deepep and hybridep
// (`plan --moe-dispatcher alltoall,deepep,hybridep`: each expert-parallel shape three times),
// and with the all-to-all overlap off and on (`plan --moe-a2a-overlap off,on`). A hybrid
// Mamba-2 MoE model beside it: Nemotron 3 Nano (52 layers of three kinds) on the same 16 H100s,
// global batch 256 of 8192 tokens.
// Each iteration runs search_plans() with the default space and top 10 on all hardware
// threads. Counters: plans considered, fitting, candidates after dominance, plans simulated, and
// the best step time found.
#include <benchmark/benchmark.h>

#include <utility>
#include <vector>

#include "simulator/planner/planner.h"
#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

void search_case(benchmark::State& state, const char* model_name, const char* cluster_name,
                 int64_t global_batch,
                 std::vector<MoeDispatcher> dispatchers = {MoeDispatcher::kAllToAll},
                 std::vector<bool> overlaps = {false}, bool partial_recompute = true) {
  ModelSpec model = load_model_spec(model_name);
  ClusterSpec cluster = load_cluster_spec(cluster_name);
  PlannerOptions options;
  options.space.global_batch_size = global_batch;
  options.space.moe_dispatchers = std::move(dispatchers);
  options.space.moe_a2a_overlaps = std::move(overlaps);
  options.space.smallest_fitting_partial_recompute = partial_recompute;
  options.top = 10;
  options.threads = 0;
  PlanSearchResult result;
  for (auto _ : state) {
    result = search_plans(model, cluster, options);
    benchmark::DoNotOptimize(result.plans.data());
  }
  state.counters["shapes"] = static_cast<double>(result.stats.shapes);
  state.counters["considered"] = static_cast<double>(result.stats.considered);
  state.counters["fitting"] = static_cast<double>(result.stats.fitting);
  state.counters["candidates"] = static_cast<double>(result.stats.candidates);
  state.counters["simulated"] = static_cast<double>(result.stats.simulated);
  state.counters["best_step_s"] =
      result.plans.empty() ? 0.0 : result.plans.front().metrics.iteration_time_s;
}

void BM_PlanLlama405bOn16384H100(benchmark::State& state) {
  search_case(state, "llama3.1-405b", "dgx-h100:2048", 2048);
}
void BM_PlanLlama70bOn256H100(benchmark::State& state) {
  search_case(state, "llama3-70b", "dgx-h100-32", 256);
}
void BM_PlanLlama70bOn32H100Default(benchmark::State& state) {
  search_case(state, "llama3-70b", "dgx-h100-4", 256);
}
// The same search without partial recompute variants (`plan --partial-recompute off`): what
// searching recompute_num_layers costs.
void BM_PlanLlama70bOn32H100NoPartialRecompute(benchmark::State& state) {
  search_case(state, "llama3-70b", "dgx-h100-4", 256, {MoeDispatcher::kAllToAll}, {false},
              false);
}

void BM_PlanQwen3MoeOn16H100Alltoall(benchmark::State& state) {
  search_case(state, "qwen3-30b-a3b", "dgx-h100:2", 256);
}
void BM_PlanQwen3MoeOn16H100ThreeDispatchers(benchmark::State& state) {
  search_case(state, "qwen3-30b-a3b", "dgx-h100:2", 256,
              {MoeDispatcher::kAllToAll, MoeDispatcher::kDeepEp, MoeDispatcher::kHybridEp});
}
void BM_PlanQwen3MoeOn16H100OverlapOffOn(benchmark::State& state) {
  search_case(state, "qwen3-30b-a3b", "dgx-h100:2", 256, {MoeDispatcher::kAllToAll},
              {false, true});
}
void BM_PlanNemotron3NanoOn16H100(benchmark::State& state) {
  search_case(state, "nemotron-3-nano-30b-a3b", "dgx-h100:2", 256);
}

BENCHMARK(BM_PlanLlama405bOn16384H100)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_PlanLlama70bOn256H100)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_PlanLlama70bOn32H100Default)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_PlanLlama70bOn32H100NoPartialRecompute)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(BM_PlanQwen3MoeOn16H100Alltoall)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_PlanQwen3MoeOn16H100ThreeDispatchers)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(BM_PlanQwen3MoeOn16H100OverlapOffOn)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(BM_PlanNemotron3NanoOn16H100)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace ppsim

BENCHMARK_MAIN();
