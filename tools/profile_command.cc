// `ppsim profile`: measure this machine (CUDA or CPU backend), fit models, write a profile JSON.
#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <string>

#include "profiler/cpu_backend.h"
#include "profiler/cuda_backend.h"
#include "profiler/mpi_profile.h"
#include "profiler/profile_report.h"
#include "profiler/thread_collectives.h"
#include "simulator/cost/profile_table.h"
#include "simulator/model/layer_ops.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/plan.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {
namespace {

struct ProfileCommandOptions {
  std::string out = "profile.json";
  std::string backend = "auto";
  std::string show;
  bool quick = false;
  std::optional<int64_t> warmup_iters;
  std::optional<int64_t> iters;
  double timeout = 60;
  std::optional<int> ranks_per_node;
  std::string model;  // --model: also measure this model's GEMM and attention shapes.
  std::string plan;   // --plan: at this plan's micro-batch, sequence and tp/cp/ep (default 1s).
};

// The shapes --model and --plan add to the profile (docs/profile.md, flags and GEMM lookup).
void add_model_shapes(const ProfileCommandOptions& options, ProfileOptions& profile_options) {
  if (options.model.empty()) {
    if (!options.plan.empty()) {
      throw InputError("--plan", "",
                       "needs --model: the plan picks which of a model's shapes to measure");
    }
    return;
  }
  ModelSpec model = load_model_with_notes(options.model);
  Plan plan;  // Without --plan: mbs 1, no parallelism, the model's sequence length.
  if (!options.plan.empty()) plan = parse_plan(options.plan, "--plan");
  if (std::optional<std::string> problem = op_shape_problem(plan, model)) {
    throw InputError("--plan", "", *problem);
  }
  OpShape shape = op_shape(plan, model);
  profile_options.extra_gemms = model_gemm_shapes(model, {shape});
  profile_options.extra_attention = model_attention_shapes(model, {shape});
}

int run_profile(const ProfileCommandOptions& options) {
  if (!options.show.empty()) {
    fmt::print("{}", profile_report_text(load_profile(options.show)));
    return 0;
  }
  ProfileOptions profile_options;
  profile_options.quick = options.quick;
  profile_options.warmup_iters = options.warmup_iters.value_or(options.quick ? 2 : 5);
  profile_options.iters = options.iters.value_or(options.quick ? 5 : 20);
  profile_options.collective_timeout = options.timeout;
  add_model_shapes(options, profile_options);

  // Under mpirun every rank measures its part; only rank 0 gets the profile and writes it.
  const bool under_mpirun = launcher_world_size() > 1;
  if (options.ranks_per_node && !under_mpirun) {
    throw InputError("--ranks-per-node", "",
                     "applies only under mpirun (several ranks); this process is alone");
  }
  Profile profile;
  if (under_mpirun) {
    std::optional<Profile> gathered =
        run_mpi_profile(options.backend, profile_options, options.ranks_per_node);
    if (!gathered) return 0;
    profile = std::move(*gathered);
  } else {
    std::string backend = options.backend;
    std::string why;
    if (backend == "auto") {
      backend = cuda_device_count(&why) > 0 ? "cuda" : "cpu";
      if (backend == "cpu") {
        fmt::print(stderr, "ppsim: note: {}; profiling the CPU backend\n", why);
      }
    }
    try {
      profile = backend == "cuda" ? run_cuda_profile(profile_options)
                                  : run_cpu_profile(profile_options);
    } catch (const CollectiveTimeout& error) {
      throw InputError("ppsim profile", "", std::string("collective hung: ") + error.what() +
                                                " (raise --timeout if the run is just slow)");
    }
  }
  std::string json = profile_json(profile);
  std::ofstream file(options.out);
  if (!file || !(file << json) || !file.flush()) {
    throw InputError("--out", "", "cannot write " + options.out);
  }
  fmt::print("{}", profile_report_text(profile));
  fmt::print("# profile written to {}\n", options.out);
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ProfileCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "profile", "Measure GEMMs, attention, memory, host transfers and collectives; fit models; "
                 "write a profile JSON for --profile");
  command->add_option("--out", options->out, "Profile JSON to write")->capture_default_str();
  command->add_option("--backend", options->backend,
                      "cuda (GPUs of this node, cuBLASLt + NCCL), cpu (Eigen and threads), or "
                      "auto: cuda when a GPU is found, else cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  command->add_flag("--quick", options->quick,
                    "A reduced shape and size set (seconds on the CPU, about a minute on a GPU)");
  command->add_option("-w,--warmup", options->warmup_iters,
                      "Untimed calls before each point (default 5, --quick 2)");
  command->add_option("-n,--iters", options->iters,
                      "Timed calls per point; the median is kept (default 20, --quick 5)")
      ->check(CLI::PositiveNumber);
  command->add_option("-T,--timeout", options->timeout,
                      "Seconds before a hung collective is aborted, naming its ranks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--ranks-per-node", options->ranks_per_node,
                      "Under mpirun: treat every K consecutive ranks as one node instead of "
                      "grouping by host (one host standing for several nodes: rail, all)")
      ->check(CLI::PositiveNumber);
  command->add_option("--model", options->model,
                      "Also measure this model's GEMM and attention shapes (zoo name or JSON), "
                      "so simulating or validating its plan looks up measured shapes");
  command->add_option("--plan", options->plan,
                      "With --model: the plan whose micro-batch, sequence length and tp/cp/ep "
                      "set the shapes (inline or JSON; default mbs 1 and no parallelism)");
  command->add_option("--show", options->show,
                      "Print the report of an existing profile JSON instead of measuring");
  command->footer(
      "Examples:\n"
      "  ppsim profile --out h200.json                 # every local CUDA GPU, one process\n"
      "  ppsim profile --backend cpu --quick --out cpu.json\n"
      "  ppsim profile --backend cpu --quick --model tests/data/validate/small_llama.json "
      "--plan pp=2,mbs=1,gbs=8 "
      "--out cpu.json\n"
      "  mpirun -np 16 ppsim profile --out cluster.json  # 2 nodes x 8 GPUs: intra_node, "
      "rail, all\n"
      "  ppsim profile --show h200.json                # the CUDA GPU profile above\n"
      "  ppsim simulate ... --profile h200.json\n"
      "Schema and fitting: docs/profile.md. Exit status: 0 done, 2 bad input, no CUDA device "
      "for --backend cuda, or a hung collective.");
  command->callback([options, &exit_code] { exit_code = run_profile(*options); });
}

}  // namespace ppsim
