// How well the simulator predicts the CPU executor (issue 7's benchmark; not a test).
//
// Per schedule (gpipe, 1f1b, zb-h1) on 2 ranks: first `ppsim profile --backend cpu --quick
// --model small_llama.json --plan pp=2,mbs=1,gbs=8`'s measurement, in-process
// (run_cpu_profile): the quick ladder plus the model's own GEMM and attention shapes; then `ppsim validate
// --backend cpu` of tests/data/validate/small_llama.json with 8 microbatches (run_validation,
// as the CLI does), 1 warm-up and 5 timed steps. Counters: the step-time error in percent
// (error_pct: (predicted - measured) / measured), the predicted and measured step in ms, and
// the error of each action type measured (err_F, err_B, err_I, err_W, err_send, err_optimizer),
// and cpu_share, the rank threads' CPU time over the wall time of their compute actions.
// The target is |error_pct| < 10 on an otherwise idle machine with at least 2 free cores: the
// executor's ranks are threads, so a loaded machine slows them and not the profile's numbers.
#include <benchmark/benchmark.h>

#include <optional>
#include <string>

#include "profiler/benchmark_shapes.h"
#include "profiler/cpu_backend.h"
#include "profiler/validation_run.h"
#include "simulator/model/layer_ops.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

const char* const kModel = PPSIM_SOURCE_DIR "/tests/data/validate/small_llama.json";

// Taken right before each schedule's run: on a shared host the machine's speed drifts by up to
// 10-20% over minutes, and a profile from the start of the process misprices the last run.
ProfileTable cpu_profile() {
  ModelSpec model = load_model_spec(kModel);
  OpShape shape = op_shape(parse_plan("pp=2,mbs=1,gbs=8", "benchmark"), model);
  ProfileOptions options;
  options.quick = true;
  options.warmup_iters = 2;
  options.iters = 15;
  options.collective_timeout = 60;
  options.extra_gemms = model_gemm_shapes(model, {shape});
  options.extra_attention = model_attention_shapes(model, {shape});
  return ProfileTable(run_cpu_profile(options));
}

void validate_schedule(benchmark::State& state, const char* schedule) {
  ModelSpec model = load_model_spec(kModel);
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  Plan plan = parse_plan(std::string("pp=2,mbs=1,gbs=8,schedule=") + schedule, "benchmark");
  ValidationRequest request;
  request.backend = "cpu";
  ProfileTable profile = cpu_profile();
  request.profile = &profile;
  request.profile_source = "in-process --quick CPU profile with the model's shapes";
  request.run.warmup_iterations = 1;
  request.run.iterations = 5;
  std::optional<ValidationResult> result;
  for (auto _ : state) {
    result = run_validation(model, cluster, plan, request).result;
  }
  state.counters["error_pct"] = result->error_pct;
  state.counters["predicted_ms"] = result->predicted_step_s * 1e3;
  state.counters["measured_ms"] = result->measured_step_s * 1e3;
  // Below 1 the rank threads waited for cores: the error then measures the machine's load.
  state.counters["cpu_share"] = result->compute_cpu_share;
  for (const ActionTypeComparison& row : result->actions) {
    if (row.error_pct) state.counters["err_" + row.type] = *row.error_pct;
  }
}

BENCHMARK_CAPTURE(validate_schedule, gpipe, "gpipe")->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(validate_schedule, 1f1b, "1f1b")->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(validate_schedule, zb_h1, "zb-h1")->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ppsim

BENCHMARK_MAIN();
