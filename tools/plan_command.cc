// `ppsim plan`: the main job. Searches every parallel plan of a model on a cluster (planner.h),
// simulates the ones that can win, and ranks them by step time, cost or p90 step time.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "profiler/mpi_work_split.h"
#include "simulator/cost/profile_table.h"
#include "simulator/export/launcher_config.h"
#include "simulator/planner/planner.h"
#include "simulator/engine/thread_pool.h"
#include "simulator/report/plan_report.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/runtime_support.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {
namespace {

struct Options {
  std::string model = "llama3-70b";
  std::string cluster = "dgx-h100-4";
  int64_t global_batch = 256;
  int64_t seq_len = 0;
  std::vector<int64_t> gpus;  // GPU counts to search; empty: all of the cluster.
  int64_t top = 10;
  std::string objective = "time";
  int threads = 0;
  uint64_t seed = 0;
  std::vector<std::string> schedules;
  bool json = false;
  std::string runtime = "megatron-core";  // Or "any": every plan, megatron-core's costs.
  double memory_margin_pct = 100 * kDefaultMemoryMargin;  // SearchSpace::memory_margin, in %.
  double min_gain_pct = 100 * kDefaultMinGain;
  std::string attention;
  std::vector<std::string> moe_dispatchers;  // --moe-dispatcher (empty: alltoall).
  std::vector<std::string> moe_a2a_overlaps;  // --moe-a2a-overlap (empty: off).
  std::string cuda_graphs = "none";
  std::string precision = "bf16";
  std::optional<bool> grad_reduce_in_fp32;     // --grad-reduce-in-fp32 (absent: the default).
  std::string tp_comm_overlap;                 // --tp-comm-overlap on|off (empty: the default).
  std::string activation_offload = "auto";     // --activation-offload auto|off.
  std::string partial_recompute = "auto";      // --partial-recompute auto|off.
  std::string fp8_recipe;                      // --fp8-recipe (empty: the runtime's).
  std::vector<std::string> recompute_modules;  // --recompute-modules (empty: the defaults).
  bool homogeneous_only = false;
  bool cross_node_cp = false;
  std::string emit;
  std::string out;
  std::string profile;
  std::vector<std::string> stragglers;  // --straggler, repeatable.
  std::string jitter;                   // --jitter DIST:PARAM.
  WorkBudget budget;                    // --max-tasks, --max-memory (per candidate).
  std::string train_tokens;             // --train-tokens N: time the whole run.
  std::string checkpoint_interval;      // --checkpoint-interval daly|young|STEPS.
};

// The message for a flag value outside its names: "unknown WHAT 'VALUE'; expected one of ...".
std::string unknown_choice(std::string_view what, const std::string& value,
                           const std::vector<std::string>& names) {
  return fmt::format("unknown {} '{}'; expected one of {}{}", what, value, join_names(names),
                     did_you_mean(value, names));
}

Objective parse_objective(const std::string& name) {
  const std::vector<std::string>& names = objective_names();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    throw InputError("--objective", "", unknown_choice("objective", name, names));
  }
  return static_cast<Objective>(it - names.begin());
}

std::vector<ScheduleKind> parse_schedules(const std::vector<std::string>& names) {
  std::vector<ScheduleKind> kinds;
  for (const std::string& name : names) {
    // parse_plan validates the name (with "did you mean") and maps it to its kind.
    kinds.push_back(parse_plan("gbs=1,schedule=" + name, "--schedule").schedule);
  }
  return kinds;
}

// A progress bar on stderr, redrawn in place; only when stderr is a terminal.
class ProgressBar {
 public:
  ProgressBar() : enabled_(isatty(fileno(stderr)) != 0) {}
  ~ProgressBar() { finish(); }
  void update(const SearchProgress& progress) {
    if (!enabled_) return;
    constexpr int kWidth = 30;
    double fraction = progress.total > 0 ? static_cast<double>(progress.done) / progress.total : 1;
    int filled = static_cast<int>(fraction * kWidth);
    fmt::print(stderr, "\r[{}{}] {} {}/{}\033[K", std::string(filled, '#'),
               std::string(kWidth - filled, '.'), progress.phase, progress.done, progress.total);
    std::fflush(stderr);
    drawn_ = true;
  }
  void finish() {
    if (drawn_) fmt::print(stderr, "\r\033[K");
    drawn_ = false;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
};

// Writes the best plan's launcher file into `directory`; returns its path and warnings.
std::pair<std::string, std::vector<std::string>> emit_launcher(const Options& options,
                                                               const ModelSpec& model,
                                                               const ClusterSpec& cluster,
                                                               const Plan& plan) {
  LauncherFormat format = parse_launcher_format(options.emit, "--emit");
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(options.out, error);
  if (error) {
    throw InputError("--out", "",
                     fmt::format("cannot create folder '{}': {}", options.out, error.message()));
  }
  std::string path = (fs::path(options.out) / launcher_file_name(format)).string();
  LauncherOutput output = export_launcher(format, model, cluster, plan);
  std::ofstream file(path, std::ios::binary);
  if (!file || !(file << output.text)) {
    throw InputError("--out", "", fmt::format("cannot write '{}'", path));
  }
  file.close();
  if (format == LauncherFormat::kMegatron) {
    std::error_code ignored;  // A script that cannot be made executable still runs with bash.
    fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, ignored);
  }
  return {path, output.warnings};
}

int run_plan(const Options& options) {
  // Under mpirun/srun the candidates' simulations are shared over the ranks; rank 0 prints.
  std::unique_ptr<WorkSplit> split = launch_work_split();
  ModelSpec model = load_model_with_notes(options.model);
  ClusterSpec cluster = load_cluster_spec(options.cluster);
  // Each count once, smallest first: the search and its report do not depend on the order typed.
  std::vector<int64_t> gpu_counts = options.gpus;
  std::sort(gpu_counts.begin(), gpu_counts.end());
  gpu_counts.erase(std::unique(gpu_counts.begin(), gpu_counts.end()), gpu_counts.end());
  for (int64_t gpus : gpu_counts) {
    if (gpus > cluster.num_gpus()) {
      throw InputError("--gpus", "",
                       fmt::format("{} GPUs requested but cluster '{}' has {}", gpus,
                                   cluster.name, cluster.num_gpus()));
    }
  }
  if (options.emit.empty() != options.out.empty()) {
    throw InputError(
        options.emit.empty() ? "--out" : "--emit", "",
        "--emit FORMAT and --out DIR go together (e.g. --emit megatron --out launch/)");
  }
  // The runtime every candidate runs on (spec/runtime.h): its kernels and overheads, and what
  // it can run; "any" searches every plan with the default runtime's costs.
  const bool any_runtime = options.runtime == "any";
  std::optional<Runtime> runtime = any_runtime ? kDefaultRuntime : find_runtime(options.runtime);
  if (!runtime) {
    std::vector<std::string> names = runtime_names();
    names.push_back("any");
    throw InputError("--runtime", "", unknown_choice("runtime", options.runtime, names));
  }
  if (!options.emit.empty()) {  // Fail early: a bad format, or one the runtime does not run.
    LauncherFormat format = parse_launcher_format(options.emit, "--emit");
    if (any_runtime) {
      throw InputError("--emit", "",
                       "--runtime any ranks plans no one launcher runs; name the runtime whose "
                       "launcher --emit writes (e.g. --runtime megatron-core --emit megatron)");
    }
    if (std::optional<std::string> problem = launcher_runtime_problem(format, *runtime)) {
      throw InputError("--emit", "",
                       fmt::format("{} (plan --runtime {})", *problem,
                                   runtime_name(launcher_runtime(format))));
    }
  }
  if (!(options.memory_margin_pct >= 0 && options.memory_margin_pct < 100)) {
    throw InputError("--memory-margin", "",
                     fmt::format("{} is not a percentage in [0, 100) of GPU memory",
                                 options.memory_margin_pct));
  }
  if (!(options.min_gain_pct >= 0 && options.min_gain_pct < 100)) {
    throw InputError("--min-gain", "",
                     fmt::format("{} is not a percentage in [0, 100)", options.min_gain_pct));
  }
  PlannerOptions planner;
  planner.objective = parse_objective(options.objective);
  if (!options.train_tokens.empty()) {
    planner.training = TrainingSpec{};
    planner.training->tokens = parse_token_count(options.train_tokens, "--train-tokens");
  }
  if (!options.checkpoint_interval.empty()) {
    if (!planner.training) {
      throw InputError("--checkpoint-interval", "",
                       "needs a run to checkpoint: give --train-tokens N");
    }
    parse_checkpoint_interval(options.checkpoint_interval, *planner.training,
                              "--checkpoint-interval");
  }
  if (planner.objective == Objective::kTimeToTrain && !planner.training) {
    throw InputError("--objective", "",
                     "time-to-train ranks plans by the wall days of a whole run: give "
                     "--train-tokens N (e.g. --train-tokens 15.6T)");
  }
  // The straggler flags join the cluster's own model (the p90 objective reads it there).
  StragglerModel extra;
  for (const std::string& flag : options.stragglers) {
    extra.stragglers.push_back(parse_straggler_flag(flag));
  }
  if (!options.jitter.empty()) extra.jitter = parse_jitter_flag(options.jitter);
  merge_straggler_models(cluster.stragglers, extra);
  validate_straggler_model(cluster.stragglers, cluster);
  if (!cluster.stragglers.empty() && planner.objective != Objective::kP90) {
    fmt::print(stderr,
               "ppsim: note: objective {} ranks the nominal cluster; its straggler model is "
               "used by --objective p90 (and in layer balance candidates)\n",
               objective_name(planner.objective));
  }
  if (planner.objective == Objective::kCost) {
    for (size_t g = 0; g < cluster.nodes.size(); ++g) {
      if (cluster.nodes[g].price_per_gpu_hour <= 0) {
        throw InputError("--objective", "",
                         fmt::format("cost needs a price: node group {} ({}) of cluster '{}' has "
                                     "no price_per_gpu_hour; add it to the cluster spec",
                                     g, cluster.nodes[g].gpu.name, cluster.name));
      }
    }
  }
  planner.space.gpu_counts = gpu_counts;
  planner.space.global_batch_size = options.global_batch;
  if (options.seq_len > 0) planner.space.seq_length = options.seq_len;
  if (!options.schedules.empty()) planner.space.schedules = parse_schedules(options.schedules);
  planner.space.heterogeneous = !options.homogeneous_only;
  planner.space.cross_node_workers = options.cross_node_cp;
  planner.space.runtime = *runtime;
  planner.space.runtime_limits = !any_runtime;
  planner.space.memory_margin = options.memory_margin_pct / 100;
  planner.min_gain = options.min_gain_pct / 100;
  if (!options.attention.empty()) {
    planner.space.attention = find_attention_kernel(options.attention);
    if (!planner.space.attention) {
      throw InputError("--attention", "",
                       unknown_choice("attention kernel", options.attention,
                                      attention_kernel_names()));
    }
  }
  if (!options.moe_dispatchers.empty()) {
    std::vector<MoeDispatcher>& dispatchers = planner.space.moe_dispatchers;
    dispatchers.clear();
    for (const std::string& name : options.moe_dispatchers) {
      const std::optional<MoeDispatcher> dispatcher = find_moe_dispatcher(name);
      if (!dispatcher) {
        throw InputError("--moe-dispatcher", "",
                         unknown_choice("MoE dispatcher", name, moe_dispatcher_names()));
      }
      if (std::find(dispatchers.begin(), dispatchers.end(), *dispatcher) != dispatchers.end()) {
        throw InputError("--moe-dispatcher", "",
                         fmt::format("'{}' is named twice; name each dispatcher once", name));
      }
      if (!any_runtime) {
        if (std::optional<std::string> problem =
                runtime_dispatcher_problem(*runtime, *dispatcher)) {
          throw InputError("--moe-dispatcher", "", *problem);
        }
      }
      dispatchers.push_back(*dispatcher);
    }
  }
  if (!options.moe_a2a_overlaps.empty()) {
    std::vector<bool>& overlaps = planner.space.moe_a2a_overlaps;
    overlaps.clear();
    for (const std::string& name : options.moe_a2a_overlaps) {
      if (name != "off" && name != "on") {
        throw InputError("--moe-a2a-overlap", "",
                         unknown_choice("MoE all-to-all overlap setting", name, {"off", "on"}));
      }
      const bool on = name == "on";
      if (std::find(overlaps.begin(), overlaps.end(), on) != overlaps.end()) {
        throw InputError("--moe-a2a-overlap", "",
                         fmt::format("'{}' is named twice; name each setting once", name));
      }
      if (on && !any_runtime) {
        if (std::optional<std::string> problem = runtime_moe_overlap_problem(*runtime)) {
          throw InputError("--moe-a2a-overlap", "", *problem);
        }
      }
      overlaps.push_back(on);
    }
  }
  const std::optional<CudaGraphs> graphs = find_cuda_graphs(options.cuda_graphs);
  if (!graphs) {
    throw InputError("--cuda-graphs", "",
                     unknown_choice("CUDA graph scope", options.cuda_graphs, cuda_graphs_names()));
  }
  if (std::optional<std::string> problem = cuda_graphs_problem(*graphs, model)) {
    throw InputError("--cuda-graphs", "", *problem);
  }
  if (!any_runtime) {
    if (std::optional<std::string> problem = runtime_cuda_graphs_problem(*runtime, *graphs)) {
      throw InputError("--cuda-graphs", "", *problem);
    }
  }
  planner.space.cuda_graphs = *graphs;
  const std::optional<Precision> precision = find_precision(options.precision);
  if (!precision) {
    throw InputError("--precision", "",
                     unknown_choice("precision", options.precision, precision_names()));
  }
  for (const NodeGroup& group : cluster.nodes) {
    if (std::optional<std::string> problem = gpu_precision_problem(*precision, group.gpu)) {
      throw InputError("--precision", "", *problem);
    }
  }
  if (!any_runtime) {
    if (std::optional<std::string> problem = runtime_precision_problem(*runtime, *precision)) {
      throw InputError("--precision", "", *problem);
    }
  }
  planner.space.precision = *precision;
  if (!options.tp_comm_overlap.empty()) {
    if (options.tp_comm_overlap != "on" && options.tp_comm_overlap != "off") {
      throw InputError("--tp-comm-overlap", "",
                       unknown_choice("TP communication overlap setting", options.tp_comm_overlap,
                                      {"on", "off"}));
    }
    const bool on = options.tp_comm_overlap == "on";
    if (on && !any_runtime) {
      Plan probe = parse_plan("tp=2,gbs=1,sequence_parallel=true,tp_comm_overlap=true", "probe");
      probe.runtime = *runtime;
      if (std::optional<std::string> problem = runtime_knob_problem(probe)) {
        throw InputError("--tp-comm-overlap", "", *problem);
      }
    }
    planner.space.tp_comm_overlap = on;
  }
  if (options.grad_reduce_in_fp32) {
    Plan probe;
    probe.precision = *precision;
    probe.runtime = *runtime;
    probe.grad_reduce_in_fp32 = options.grad_reduce_in_fp32;
    if (std::optional<std::string> problem =
            any_runtime ? std::nullopt : runtime_grad_reduce_problem(probe)) {
      throw InputError("--grad-reduce-in-fp32", "", *problem);
    }
    planner.space.grad_reduce_in_fp32 = options.grad_reduce_in_fp32;
  }
  if (!options.fp8_recipe.empty()) {
    const std::optional<Fp8Recipe> recipe = find_fp8_recipe(options.fp8_recipe);
    if (!recipe) {
      throw InputError("--fp8-recipe", "",
                       unknown_choice("fp8 recipe", options.fp8_recipe, fp8_recipe_names()));
    }
    if (*precision != Precision::kFp8) {
      throw InputError("--fp8-recipe", "",
                       fmt::format("--fp8-recipe {} needs --precision fp8 (given: {})",
                                   options.fp8_recipe, precision_name(*precision)));
    }
    for (const NodeGroup& group : cluster.nodes) {
      if (std::optional<std::string> problem = gpu_fp8_recipe_problem(*recipe, group.gpu)) {
        throw InputError("--fp8-recipe", "", *problem);
      }
    }
    Plan probe;
    probe.precision = *precision;
    probe.runtime = *runtime;
    probe.fp8_recipe = recipe;
    if (std::optional<std::string> problem =
            any_runtime ? std::nullopt : runtime_fp8_recipe_problem(probe)) {
      throw InputError("--fp8-recipe", "", *problem);
    }
    planner.space.fp8_recipe = recipe;
  }
  if (options.activation_offload != "auto" && options.activation_offload != "off") {
    throw InputError("--activation-offload", "",
                     unknown_choice("activation offload setting", options.activation_offload,
                                    {"auto", "off"}));
  }
  planner.space.smallest_fitting_activation_offload = options.activation_offload == "auto";
  if (options.partial_recompute != "auto" && options.partial_recompute != "off") {
    throw InputError("--partial-recompute", "",
                     unknown_choice("partial recompute setting", options.partial_recompute,
                                    {"auto", "off"}));
  }
  planner.space.smallest_fitting_partial_recompute = options.partial_recompute == "auto";
  if (!options.recompute_modules.empty()) {
    // parse_plan validates the names (with "did you mean") and sets their bits.
    const RecomputeModules modules =
        parse_plan("gbs=1,recompute_modules=" + join_names(options.recompute_modules, ":"),
                   "--recompute-modules")
            .recompute_modules;
    if (std::optional<std::string> problem = recompute_modules_problem(modules, model)) {
      throw InputError("--recompute-modules", "", *problem);
    }
    if (!any_runtime) {
      if (std::optional<std::string> problem =
              runtime_recompute_modules_problem(*runtime, modules)) {
        throw InputError("--recompute-modules", "", *problem);
      }
    }
    planner.space.selective_module_sets = {modules};
  } else if (model.is_moe() && runtime_support(*runtime).recompute_modules) {
    // What Megatron-Bridge's MoE recipes re-run (GPT-OSS, Qwen3 MoE): the experts'
    // activation and the norms, cheap kernels that free the routed copies' largest tensors
    // (docs/recompute.md), beside Megatron's default.
    planner.space.selective_module_sets = {
        0, recompute_module_bit(RecomputeModule::kMoeAct) |
               recompute_module_bit(RecomputeModule::kLayernorm)};
  }
  planner.top = options.top;
  planner.threads = options.threads;
  planner.split = split.get();
  planner.seed = options.seed;
  planner.step.ideal_links = cluster.ideal_links;
  planner.step.budget = options.budget;
  std::optional<ProfileTable> profile = load_profile_for(cluster, options.profile);
  CostProvenance profile_costs;
  if (profile) {
    planner.step.profile = &*profile;
    planner.step.profile_path = options.profile.empty() ? *cluster.profile_path : options.profile;
    profile_costs.profile_path = planner.step.profile_path;
    profile_costs.profile_device = profile->profile().device.name;
    profile_costs.profile_gpu = profile->profile().device.catalog_gpu;
    for (const NodeGroup& group : cluster.nodes) {
      if (!profile_applies_to(profile->profile(), group.gpu) &&
          std::find(profile_costs.unprofiled_gpus.begin(), profile_costs.unprofiled_gpus.end(),
                    group.gpu.name) == profile_costs.unprofiled_gpus.end()) {
        profile_costs.unprofiled_gpus.push_back(group.gpu.name);
      }
    }
    std::sort(profile_costs.unprofiled_gpus.begin(), profile_costs.unprofiled_gpus.end());
    std::string warning = unprofiled_gpus_warning(profile_costs);
    if (!warning.empty()) fmt::print(stderr, "ppsim: warning: {}\n", warning);
  }
  ProgressBar bar;
  planner.progress = [&bar](const SearchProgress& progress) { bar.update(progress); };
  PlanSearchResult result = search_plans(model, cluster, planner);
  bar.finish();
  // Rank 0 holds the plans' metrics and reports; every rank ends with the same exit status.
  if (split && split->process() != 0) return result.plans.empty() ? kExitNothingFits : 0;

  PlanRequest request;
  request.gpu_counts =
      gpu_counts.empty() ? std::vector<int64_t>{cluster.num_gpus()} : gpu_counts;
  request.gpus = request.gpu_counts.back();
  request.global_batch_size = options.global_batch;
  request.seq_length = options.seq_len > 0 ? options.seq_len : model.seq_length;
  request.objective = planner.objective;
  request.runtime = options.runtime;
  request.memory_margin = planner.space.memory_margin;
  request.min_gain = planner.min_gain;
  request.training = planner.training;
  request.costs = profile_costs;
  EmittedFiles emitted;
  if (!result.plans.empty() && !options.emit.empty()) {
    auto [path, warnings] = emit_launcher(options, model, cluster, result.plans.front().plan);
    emitted.format = options.emit;
    emitted.paths.push_back(path);
    emitted.warnings = warnings;
  }
  fmt::print("{}", options.json ? plan_report_json(model, cluster, request, result, emitted)
                                : plan_report_text(model, cluster, request, result, emitted));
  if (result.plans.empty()) {
    std::fflush(stdout);
    if (result.closest) {
      fmt::print(stderr,
                 "ppsim: nothing fits: {} (use more GPUs, GPUs with more memory, or a "
                 "smaller --global-batch)\n",
                 closest_plan_sentence(result));
    } else if (result.stats.considered == 0) {
      fmt::print(stderr,
                 "ppsim: no valid plan: no factorisation of {} GPUs satisfies the plan "
                 "rules for {} (try another --gpus or --global-batch)\n",
                 fmt::join(request.gpu_counts, " or "), model.name);
    } else {
      fmt::print(stderr,
                 "ppsim: no plan fits in the simulation (the memory screen and the "
                 "simulator disagree; please report this)\n");
    }
    return kExitNothingFits;
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "plan",
      "Find the fastest (or cheapest) parallel plan for a model on a cluster (the main job)");
  command->add_option("--model", options->model, "Zoo name, model JSON or HF config.json")
      ->capture_default_str();
  command
      ->add_option("--cluster", options->cluster,
                   "Zoo name, cluster JSON, or NODE_TYPE:NODES (dgx-h100:4)")
      ->capture_default_str();
  command->add_option("--global-batch", options->global_batch, "Sequences per optimizer step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, kMaxBatch));
  command->add_option("--seq-len", options->seq_len, "Sequence length (default: the model's)")
      ->check(CLI::Range(int64_t{1}, kMaxPlanSequence));
  command
      ->add_option("--gpus", options->gpus,
                   "GPUs every plan uses; several counts (8192,16384) rank plans across them "
                   "(default: all of the cluster)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  command->add_option("--top", options->top, "Plans to list (the ranking is exact for all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  command
      ->add_option("--objective", options->objective,
                   "time (step time), cost (dollars per step; of the whole run with "
                   "--train-tokens), p90 (90th percentile step time under the cluster's "
                   "straggler model), time-to-train (expected wall days of --train-tokens)")
      ->capture_default_str();
  command->add_option("--train-tokens", options->train_tokens,
                      "Time the whole run of N tokens (15.6T, 300B, 1000000) for every plan "
                      "listed: wall days, goodput, cost (docs/time-to-train.md)");
  command->add_option("--checkpoint-interval", options->checkpoint_interval,
                      "Checkpoint interval of the run: daly (default), young or a number of "
                      "steps");
  command->add_option("--runtime", options->runtime,
                      "Code base the plans run on, and whose capabilities bound the search: "
                      "megatron-core (default), megatron-lm, deepspeed, torchtitan, "
                      "pytorch-fsdp; or any (every plan the simulator runs, megatron-core's "
                      "costs; docs/export.md, docs/runtimes.md)");
  command
      ->add_option("--memory-margin", options->memory_margin_pct,
                   "Percent of each GPU's memory a plan must leave free (allocator "
                   "fragmentation, NCCL buffers beyond the modelled ones; docs/plan.md)")
      ->capture_default_str();
  command
      ->add_option("--min-gain", options->min_gain_pct,
                   "Percent a plan with offload, recompute or a more complex schedule must gain "
                   "over a simpler one to rank above it (docs/plan.md)")
      ->capture_default_str();
  command->add_option("--attention", options->attention,
                      "Attention kernel, if not the runtime's: unfused, flash2, fused, triton");
  command
      ->add_option("--moe-dispatcher", options->moe_dispatchers,
                   "MoE token dispatcher of every plan with ep > 1: alltoall (default), deepep, "
                   "hybridep (Megatron-Core's flex dispatcher); several (repeat or "
                   "comma-separate) are searched, one candidate each (docs/moe.md)")
      ->delimiter(',');
  command
      ->add_option("--moe-a2a-overlap", options->moe_a2a_overlaps,
                   "MoE all-to-all overlap of every plan with ep > 1: off (default), on "
                   "(Megatron-Core's --overlap-moe-expert-parallel-comm); off,on searches both, "
                   "one candidate each (docs/moe.md)")
      ->delimiter(',');
  command->add_option("--cuda-graphs", options->cuda_graphs,
                      "CUDA graph capture of every plan: none (default), moe-router, layers, "
                      "full-iteration (Megatron-Core's --cuda-graph-impl; docs/plan.md)");
  command->add_option("--precision", options->precision,
                      "GEMM precision of every plan: bf16 (default), fp16, fp8, nvfp4 (Blackwell "
                      "FP4; Megatron-Core only)");
  command->add_option("--tp-comm-overlap", options->tp_comm_overlap,
                      "on or off: every sequence-parallel plan's TP communication overlap "
                      "(Megatron-Core's --tp-comm-overlap, torchtitan's async TP); default the "
                      "runtime's: on under megatron-core, off under torchtitan (docs/runtimes.md)");
  command->add_option("--grad-reduce-in-fp32", options->grad_reduce_in_fp32,
                      "Keep and reduce every plan's gradients in fp32 (true, the default but for "
                      "fp16) or in the training dtype (false: Megatron-Core's "
                      "--grad-reduce-in-bf16, as NeMo/Megatron-Bridge performance recipes run)");
  command->add_option("--fp8-recipe", options->fp8_recipe,
                      "With --precision fp8, every plan's scaling recipe: delayed, tensorwise, "
                      "mxfp8 (Blackwell), blockwise (Hopper and later); default the runtime's "
                      "(docs/precision.md)");
  command->add_option("--activation-offload", options->activation_offload,
                      "auto (default): a pp=1 plan that does not fit without recompute also "
                      "tries the fewest layers whose activations go to host memory "
                      "(activation_offload_layers; megatron-core); off: never");
  command->add_option("--partial-recompute", options->partial_recompute,
                      "auto (default): a plan that fits only with full recompute also tries "
                      "the fewest layers per pipeline chunk to recompute "
                      "(recompute_num_layers, docs/recompute.md); off: never");
  command
      ->add_option("--recompute-modules", options->recompute_modules,
                   "What every selective-recompute plan re-runs (repeat or comma-separate): "
                   "core_attn (default), moe_act, layernorm, mla_up_proj, mlp, moe, "
                   "shared_experts (Megatron-Core's --recompute-modules; docs/recompute.md)")
      ->delimiter(',');
  command->add_option("--threads", options->threads, "Simulation threads (default: all cores)")
      ->check(CLI::Range(0, kMaxThreads));
  add_work_budget_options(command, options->budget);
  command->add_option("--seed", options->seed, "Seed of the p90 objective's Monte-Carlo draws")
      ->capture_default_str();
  command->add_option("--straggler", options->stragglers,
                      "A fault added to the cluster's straggler model (repeatable): "
                      "gpu=RANK:FACTOR, node=N:FACTOR or "
                      "link=A-B:FACTOR[:+LATENCY_US][:period=MS:duty=FRAC] (docs/stragglers.md)");
  command->add_option("--jitter", options->jitter,
                      "Random slowdown of every compute action for --objective p90: "
                      "lognormal:SIGMA, uniform:MAX or exponential:MEAN");
  command
      ->add_option("--schedule", options->schedules,
                   "Only these pipeline schedules (repeat or comma-separate; default: all but the "
                   "searched zb-1p and zb-2p, docs/plan.md)")
      ->delimiter(',');
  command->add_flag("--json", options->json, "Print JSON (fields in docs/plan.md)");
  command->add_option("--profile", options->profile,
                      "Profile JSON (ppsim profile) whose measured costs replace the roofline "
                      "in the search and its bounds; wins over the cluster spec's \"profile\"");
  command->add_flag("--homogeneous-only", options->homogeneous_only,
                    "Plan a cluster of several GPU types as if it were homogeneous (GPUs in "
                    "cluster order, no per-type layer balance): the baseline heterogeneity-aware "
                    "planning is compared with");
  command->add_flag("--cross-node-cp", options->cross_node_cp,
                    "Also try tp*cp above the GPUs per node (context parallelism across nodes; "
                    "such plans simulate every replica, seconds each at thousands of GPUs)");
  command->add_option("--emit", options->emit,
                      "Write the best plan's launcher file: megatron, deepspeed or torchtitan");
  command->add_option("--out", options->out, "Folder for --emit (created if missing)");
  command->footer(
      "Example:\n"
      "  ppsim plan --model llama3-70b --cluster dgx-h100-4 --global-batch 256 --top 5\n"
      "  ppsim plan --model llama3-70b --cluster mixed-a100-h100 --objective cost --json\n"
      "  ppsim plan --model llama3-8b --cluster dgx-h100-1 --emit megatron --out launch/\n"
      "  ppsim plan --model llama3-8b --cluster dgx-h100-4 --objective p90 --straggler "
      "node=3:0.7 --jitter lognormal:0.05\n"
      "  ppsim plan --model llama3-8b --cluster dgx-h100-4 --train-tokens 1T "
      "--objective time-to-train\n"
      "Exit status: 0 when a plan fits, 3 when nothing fits (the closest is named), 2 for bad "
      "input.");
  command->callback([options, &exit_code] { exit_code = run_plan(*options); });
}

}  // namespace ppsim
