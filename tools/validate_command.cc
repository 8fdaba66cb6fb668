// `ppsim validate`: simulate a plan's step, run the same action lists on this machine (CPU
// threads or CUDA GPUs), and compare the prediction with the measurement (docs/validate.md).
#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "profiler/cuda_backend.h"
#include "profiler/validation_run.h"
#include "simulator/cost/profile_table.h"
#include "simulator/report/chrome_trace.h"
#include "simulator/report/validation_report.h"
#include "simulator/spec/error.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {
namespace {

struct ValidateOptions {
  std::string model, cluster, plan, profile, trace;
  std::string backend = "auto";
  int64_t iterations = 3;
  int64_t warmup = 1;
  // Default tolerance: the accuracy the simulator aims at on published runs (docs/accuracy.md
  // reports a MAPE of about 5%), doubled for a single machine's run-to-run noise.
  double tolerance = 10;
  double timeout = 60;
  bool json = false;
  bool fold = false;
};

int run_validate(const ValidateOptions& options) {
  StepInputs inputs = load_step_inputs(options.model, options.cluster, options.plan);
  ModelSpec& model = inputs.model;
  ClusterSpec& cluster = inputs.cluster;
  Plan& plan = inputs.plan;
  if (plan.tp != 1 || plan.cp != 1 || plan.ep != 1) {
    throw InputError("--plan", "",
                     fmt::format("validate runs one device per pipeline rank: tp, cp and ep must be "
                                 "1 (found tp={}, cp={}, ep={}); validate the pipeline with tp=1 "
                                 "and a proportionally smaller model",
                                 plan.tp, plan.cp, plan.ep));
  }

  // What the executors do not run yet: the prediction would include work they skip.
  if ((plan.zero_stage == 3 && plan.dp > 1) || plan.offload_optimizer) {
    throw InputError("--plan", "",
                     "validate does not execute ZeRO-3 parameter gathers or optimizer offload yet; "
                     "validate with zero_stage <= 2 and offload_optimizer=false");
  }

  std::string backend = options.backend;
  std::string why;
  int devices = cuda_device_count(&why);
  if (backend == "auto") backend = devices > 0 ? "cuda" : "cpu";
  if (backend == "cuda" && devices == 0) {
    fmt::print(stderr,
               "ppsim: validate: no CUDA device: {}; nothing was run (use --backend cpu)\n", why);
    return kExitNoDevice;
  }

  std::optional<ProfileTable> profile = load_profile_for(cluster, options.profile);
  ValidationRequest request;
  request.backend = backend;
  request.profile = profile ? &*profile : nullptr;
  request.profile_source = !options.profile.empty() ? options.profile
                           : cluster.profile_path  ? *cluster.profile_path
                                                   : "";
  request.run.warmup_iterations = options.warmup;
  request.run.iterations = options.iterations;
  request.run.fold = options.fold;
  request.run.timeout = options.timeout;
  request.tolerance_pct = options.tolerance;
  ValidationRun run;
  try {
    run = run_validation(model, cluster, plan, request);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& error) {
    std::fflush(stdout);
    fmt::print(stderr, "ppsim: error: validate: the {} run failed: {}\n", backend, error.what());
    return kExitRunFailed;
  }
  const ValidationResult& validation = run.result;
  std::string described = fmt::format("model {}, cluster {}, plan {}", model.name, cluster.name,
                                   plan_to_inline(plan));
  fmt::print("{}", options.json ? validation_report_json(validation)
                                : validation_report_text(validation, described));
  if (!options.trace.empty()) {
    write_output_file(options.trace,
               chrome_trace_json(run.step.lowered, validation.measured_timeline, run.step.worker_names), "--trace");
  }
  return validation.over_tolerance ? kExitOverTolerance : 0;
}

}  // namespace

void add_validate_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* command = app.add_subcommand(
      "validate", "Run a plan's step on this machine and compare it with the simulation");
  command->add_option("--model", options->model, "Zoo name, model JSON or HF config.json")->required();
  command->add_option("--cluster", options->cluster,
                      "Zoo name, cluster JSON, or NODE_TYPE:NODES (its layout places the workers)")
      ->required();
  command->add_option("--plan", options->plan,
                      "Plan JSON, shipped plan name, or inline pp=2,mbs=1,gbs=8,schedule=1f1b "
                      "(tp = cp = ep = 1)")
      ->required();
  command->add_option("--profile", options->profile,
                      "Profile JSON for the prediction (required for --backend cpu: a CPU "
                      "profile of this machine)");
  command->add_option("--backend", options->backend,
                      "cuda (this node's GPUs), cpu (one thread per rank), or auto: cuda when a "
                      "GPU is found, else cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  command->add_option("--iterations", options->iterations,
                      "Timed steps after the warm-up; the median is reported")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--warmup", options->warmup, "Untimed steps first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--tolerance", options->tolerance,
                      "Largest |step-time error| in percent; above it the exit status is 4")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--timeout", options->timeout,
                      "Seconds a rank waits for a peer before the run aborts, naming both")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--trace", options->trace,
                      "Write the measured timeline as a Chrome trace (as simulate --trace)");
  command->add_flag("--json", options->json, "Print JSON (fields in docs/validate.md)");
  command->add_flag("--fold", options->fold,
                    "Run the workers one after another on one device: validates the compute of "
                    "a plan bigger than this machine; sends and collectives are not measured");
  command->footer(
      "Examples:\n"
      "  ppsim profile --backend cpu --quick -n 15 --model tests/data/validate/small_llama.json "
      "--plan pp=2,mbs=1,gbs=8 --out cpu.json\n"
      "  ppsim validate --backend cpu --profile cpu.json --model tests/data/validate/small_llama.json"
      " --cluster dgx-h100-1 --plan pp=2,mbs=1,gbs=8,schedule=1f1b   # exits 0, or 4 when a busy "
      "machine's timings stray past --tolerance\n"
      "  ppsim validate --backend cuda --model llama3-8b --cluster dgx-h100-1 "
      "--plan pp=4,mbs=1,gbs=16,schedule=zb-h1 --fold   # needs a CUDA GPU\n"
      "Exit status: 0 within tolerance, 2 bad input, 4 error over --tolerance, 5 no device for "
      "the backend (nothing run), 6 the run failed (out of memory, a peer timed out).");
  command->callback([options, &exit_code] { exit_code = run_validate(*options); });
}

}  // namespace ppsim
