// `ppsim validate`: simulate a plan's step, run the same action lists on this machine (CPU
// threads or CUDA GPUs), and compare the prediction with the measurement (docs/validate.md).
#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include "profiler/cpu_cluster.h"
#include "profiler/cpu_executor.h"
#include "profiler/cuda_backend.h"
#include "profiler/cuda_executor.h"
#include "profiler/executor_program_builder.h"
#include "simulator/chrome_trace.h"
#include "simulator/engine.h"
#include "simulator/error.h"
#include "simulator/profile.h"
#include "simulator/step_builder.h"
#include "simulator/step_program.h"
#include "simulator/activation_memory.h"
#include "simulator/units.h"
#include "simulator/validation_report.h"
#include "tools/commands.h"

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

// Bytes this machine can still give a process (MemAvailable), or 0 when unknown.
double available_host_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * kKiB;
  }
  return 0;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text)) {
    throw InputError("--trace", "", fmt::format("cannot write '{}' (check the folder exists)", path));
  }
}

int run_validate(const ValidateOptions& options) {
  ModelSpec model = load_model_spec(options.model);
  ClusterSpec cluster = load_cluster_spec(options.cluster);
  Plan plan = load_plan(options.plan);
  validate_plan(plan, model, cluster, "--plan");
  if (auto problem = schedule_problem(plan.schedule, static_cast<int32_t>(plan.pp),
                                      static_cast<int32_t>(num_microbatches(plan)),
                                      static_cast<int32_t>(plan.vpp))) {
    throw InputError("--plan", "", "impossible plan: " + *problem);
  }
  if (plan.tp != 1 || plan.cp != 1 || plan.ep != 1) {
    throw InputError("--plan", "",
                     fmt::format("validate runs one device per pipeline rank: tp, cp and ep must be "
                                 "1 (found tp={}, cp={}, ep={}); validate the pipeline with tp=1 "
                                 "and a proportionally smaller model",
                                 plan.tp, plan.cp, plan.ep));
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
  std::string profile_source = !options.profile.empty() ? options.profile
                               : cluster.profile_path  ? *cluster.profile_path
                                                       : "";
  StepOptions step_options;
  step_options.deduplicate_replicas = false;  // The executor runs every replica.
  // The executors run kernels, not a framework: no per-microbatch dispatch, no per-step host
  // work (cost_model.h's fitted overheads describe Megatron and FSDP, not this executor).
  step_options.efficiency.microbatch_overhead = 0;
  step_options.efficiency.step_overhead = 0;
  std::string prediction;
  ClusterSpec predicted_cluster = cluster;
  double tensor_bytes = static_cast<double>(plan.micro_batch_size) *
                        static_cast<double>(effective_seq_length(plan, model)) *
                        static_cast<double>(model.hidden_size) * kActivationElementBytes;
  if (backend == "cpu") {
    if (!profile) {
      throw InputError("--profile", "",
                       "--backend cpu needs a CPU profile of this machine, since the cluster's "
                       "GPU datasheet says nothing about this CPU: run `ppsim profile --backend "
                       "cpu --quick --out cpu.json`, then pass --profile cpu.json");
    }
    predicted_cluster =
        cpu_validation_cluster(cluster, profile->profile(), profile_source, tensor_bytes);
    step_options.collective = cpu_collective_efficiency(profile->profile(), tensor_bytes);
    step_options.efficiency.kernel_overhead = 0;  // A CPU kernel is a function call.
    step_options.efficiency.memory = 1;           // The profile measured achieved bandwidth.
    prediction = fmt::format("profile {} (cpu: {}); links and bandwidth from its fits",
                             profile_source, profile->profile().device.name);
  } else if (profile) {
    prediction = fmt::format("profile {} ({}: {})", profile_source, profile->profile().backend,
                             profile->profile().device.name);
  } else {
    prediction = fmt::format("datasheet roofline of {} (no profile: pass --profile from `ppsim "
                             "profile` on this GPU for a like-for-like comparison)",
                             cluster.nodes.front().gpu.name);
  }
  if (profile) step_options.profile = &*profile;

  Step step = build_step(model, predicted_cluster, plan, step_options);
  if (std::optional<std::string> problem = check_schedule(step.schedule)) {
    PPSIM_CHECK(false, "schedule " + schedule_name(plan.schedule) + ": " + *problem);
  }
  Timeline predicted = simulate_graph(step.lowered.graph);
  if (backend == "cpu") {
    double needed = 0;
    for (size_t w = 0; w < step.static_memory_bytes.size(); ++w) {
      needed += step.static_memory_bytes[w] +
                (w < predicted.peak_memory.size() ? predicted.peak_memory[w] : 0);
    }
    double available = available_host_memory();
    if (available > 0 && needed > 0.8 * available) {
      throw InputError("--model", "",
                       fmt::format("the CPU run would hold {:.1f} GiB, more than 80% of this "
                                   "machine's {:.1f} GiB available; use a smaller model (e.g. "
                                   "tests/data/validate/tiny_llama.json) or a shorter seq",
                                   needed / kGiB, available / kGiB));
    }
  }

  StepProgram program = build_step_program(step, model);
  ExecutorProgram executable = lower_step_program(program);
  ExecutorOptions run_options;
  run_options.warmup_iterations = options.warmup;
  run_options.iterations = options.iterations;
  run_options.fold = options.fold;
  run_options.timeout = options.timeout;
  ExecutorResult result;
  try {
    result = backend == "cpu" ? run_step_on_cpu(executable, run_options)
                              : run_step_on_cuda(executable, run_options);
  } catch (const std::runtime_error& error) {
    std::fflush(stdout);
    fmt::print(stderr, "ppsim: error: validate: the {} run failed: {}\n", backend, error.what());
    return kExitRunFailed;
  }
  MeasuredStep measured = measured_step_from(result, step.lowered.graph, options.fold);

  ValidationSettings settings;
  settings.backend = backend;
  settings.prediction = prediction;
  settings.warmup_iterations = options.warmup;
  settings.tolerance_pct = options.tolerance;
  ValidationResult validation = compare_step(step, predicted, measured, settings);
  std::string inputs = fmt::format("model {}, cluster {}, plan {}", model.name, cluster.name,
                                   plan_to_inline(plan));
  fmt::print("{}", options.json ? validation_report_json(validation)
                                : validation_report_text(validation, inputs));
  if (!options.trace.empty()) {
    write_file(options.trace,
               chrome_trace_json(step.lowered, validation.measured_timeline, step.worker_names));
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
      "  ppsim profile --backend cpu --quick --out cpu.json\n"
      "  ppsim validate --backend cpu --profile cpu.json --model tests/data/validate/tiny_llama.json"
      " --cluster dgx-h100-1 --plan pp=2,mbs=1,gbs=4,schedule=1f1b\n"
      "  ppsim validate --backend cuda --model llama3-8b --cluster dgx-h100-1 "
      "--plan pp=4,mbs=1,gbs=16,schedule=zb-h1 --fold\n"
      "Exit status: 0 within tolerance, 2 bad input, 4 error over --tolerance, 5 no device for "
      "the backend (nothing run), 6 the run failed (out of memory, a peer timed out).");
  command->callback([options, &exit_code] { exit_code = run_validate(*options); });
}

}  // namespace ppsim
