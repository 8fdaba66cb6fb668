// `ppsim simulate`: one training step of a plan, event by event.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "profiler/mpi_work_split.h"
#include "simulator/cost/profile_table.h"
#include "simulator/engine/engine.h"
#include "simulator/engine/thread_pool.h"
#include "simulator/report/chrome_trace.h"
#include "simulator/report/memory_svg.h"
#include "simulator/report/simulate_report.h"
#include "simulator/report/straggler_report.h"
#include "simulator/report/timeline_svg.h"
#include "simulator/spec/error.h"
#include "simulator/step/monte_carlo.h"
#include "simulator/step/sensitivity.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/time_to_train.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {
namespace {

struct Options {
  std::string model, cluster, plan, trace, svg, profile, svg_window, memory_svg;
  bool json = false;
  bool all_replicas = false;
  bool ideal_links = false;
  uint64_t seed = 0;
  std::vector<std::string> stragglers;  // --straggler, repeatable.
  std::string jitter;                   // --jitter DIST:PARAM.
  int64_t iterations = 1;
  bool sensitivity = false;
  WorkBudget budget;  // --max-tasks, --max-memory.
  int threads = 0;    // --threads: 0 = one per hardware thread.
  std::string train_tokens;         // --train-tokens N (15.6T, 300B, integers).
  std::string checkpoint_interval;  // --checkpoint-interval daly|young|STEPS.
};

// The plan's "training" with the flags over it; nullopt when neither asks for a run.
std::optional<TrainingSpec> training_request(const Plan& plan, const std::string& tokens,
                                             const std::string& interval) {
  std::optional<TrainingSpec> training = plan.training;
  if (!tokens.empty()) {
    if (!training) training = TrainingSpec{};
    training->tokens = parse_token_count(tokens, "--train-tokens");
    int64_t ramp_tokens = 0;
    for (const BatchPhase& phase : training->batch_ramp) ramp_tokens += phase.tokens;
    if (ramp_tokens > training->tokens) {
      throw InputError("--train-tokens", "",
                       fmt::format("{} tokens are fewer than the plan's batch ramp holds ({})",
                                   training->tokens, ramp_tokens));
    }
  }
  if (!interval.empty()) {
    if (!training) {
      throw InputError("--checkpoint-interval", "",
                       "needs a run to checkpoint: give --train-tokens N (or a \"training\" "
                       "object in the plan)");
    }
    parse_checkpoint_interval(interval, *training, "--checkpoint-interval");
  }
  return training;
}

// The cluster's straggler model plus the flags', checked against the cluster.
StragglerModel straggler_model(const ClusterSpec& cluster, const std::vector<std::string>& flags,
                               const std::string& jitter) {
  StragglerModel extra;
  for (const std::string& flag : flags) extra.stragglers.push_back(parse_straggler_flag(flag));
  if (!jitter.empty()) extra.jitter = parse_jitter_flag(jitter);
  StragglerModel model = cluster.stragglers;
  merge_straggler_models(model, extra);
  validate_straggler_model(model, cluster);
  return model;
}

int run_simulate(const Options& options) {
  // Under mpirun/srun the iterations and components are shared over the ranks; rank 0 prints.
  std::unique_ptr<WorkSplit> split = launch_work_split();
  std::optional<std::pair<double, double>> window;
  if (!options.svg_window.empty()) {
    if (options.svg.empty() && options.memory_svg.empty()) {
      throw InputError("--svg-window", "", "draws a part of --svg or --memory-svg; give one");
    }
    window = parse_svg_window(options.svg_window, "seconds", "0.5:1.5");
  }
  StepInputs inputs =
      load_step_inputs(options.model, options.cluster, options.plan, options.budget);
  ModelSpec& model = inputs.model;
  ClusterSpec& cluster = inputs.cluster;
  Plan& plan = inputs.plan;
  // The run to time (flags checked, and the ramp's plans validated, before anything runs).
  std::optional<TrainingSpec> training =
      training_request(plan, options.train_tokens, options.checkpoint_interval);
  std::vector<TrainingPhase> phases;
  if (training) phases = training_phases(model, cluster, plan, *training);
  StepOptions step_options;
  step_options.deduplicate_replicas = !options.all_replicas;
  step_options.budget = options.budget;
  step_options.ideal_links = options.ideal_links || cluster.ideal_links;
  std::optional<ProfileTable> profile = load_profile_for(cluster, options.profile);
  if (profile) {
    step_options.profile = &*profile;
    step_options.profile_path = options.profile.empty() ? *cluster.profile_path : options.profile;
  }
  // The schedule's dependency graph is checked (Boost.Graph) before it is trusted; a failure is
  // a bug in the schedule builder, not bad input.
  if (std::optional<std::string> problem = check_schedule(build_pipeline_schedule(
          plan.schedule, static_cast<int32_t>(plan.pp),
          static_cast<int32_t>(num_microbatches(plan)), static_cast<int32_t>(plan.vpp),
          static_cast<int32_t>(microbatch_group_in_force(plan))))) {
    PPSIM_CHECK(false, "schedule " + schedule_name(plan.schedule) + ": " + *problem);
  }
  // One step (or --iterations of them) under the straggler model; without one, the plain step.
  StragglerRun run;
  run.model = straggler_model(cluster, options.stragglers, options.jitter);
  run.options.iterations = options.iterations;
  run.options.seed = options.seed;
  run.options.fault_costs = !run.model.empty();
  run.options.threads = options.threads;
  run.options.split = split.get();
  MonteCarloResult monte_carlo =
      run_monte_carlo(model, cluster, plan, step_options, run.model, run.options);
  run.monte_carlo = &monte_carlo;
  std::optional<Sensitivity> sensitivity;
  if (options.sensitivity) {
    sensitivity = step_sensitivity(model, cluster, plan, step_options, run.model, options.threads,
                                   split.get());
    run.sensitivity = &*sensitivity;
  }
  if (split && split->process() != 0) return 0;  // Rank 0 holds iteration 0 and reports.
  const Step& step = monte_carlo.step;
  const Timeline& timeline = monte_carlo.timeline;
  std::string profile_warning = unprofiled_gpus_warning(step.provenance);
  if (!profile_warning.empty()) fmt::print(stderr, "ppsim: warning: {}\n", profile_warning);
  StepMetrics metrics = compute_metrics(model, cluster, plan, step, timeline);
  metrics.critical_path = critical_path(step, timeline);
  std::optional<TimeToTrain> time_to_train;
  if (training) {
    // The step time of the run: the mean over --iterations under stragglers, else the step's.
    double step_time_s = options.iterations > 1 ? monte_carlo.mean_s : metrics.iteration_time_s;
    std::vector<std::string> warnings =
        simulate_phases(model, cluster, step_options, step_time_s, phases);
    time_to_train = ppsim::time_to_train(model, cluster, plan, *training, std::move(phases));
    time_to_train->notes.insert(time_to_train->notes.begin(), warnings.begin(), warnings.end());
    if (options.iterations > 1) {
      add_wall_percentiles(*time_to_train, options.iterations, options.seed);
    }
  }
  SimulateReport report{&model, &cluster, &plan, &step, &metrics, &run};
  if (time_to_train) report.time_to_train = &*time_to_train;
  fmt::print("{}", options.json ? simulate_report_json(report) : simulate_report_text(report));
  if (!options.trace.empty()) {
    write_output_file(options.trace, chrome_trace_json(step.lowered, timeline, step.worker_names), "--trace");
  }
  if (window && window->first >= timeline.makespan) {
    throw InputError("--svg-window", "",
                     fmt::format("'{}' starts after the step ends ({:.6f} s)", options.svg_window,
                                 timeline.makespan));
  }
  if (!options.svg.empty()) {
    TimelineSvgOptions svg;
    svg.title = fmt::format("{} on {}: {}", model.name, cluster.name, plan_to_inline(plan));
    for (int32_t r = 0; r < plan.pp; ++r) svg.row_names.push_back(fmt::format("stage {}", r));
    svg.axis_scale = 1e3;
    svg.axis_unit = "ms";
    svg.long_plan_hint =
        "Boxes this narrow carry no numbers: --svg-window START:END (seconds) draws a part.";
    if (window) {
      svg.window_start = window->first;
      svg.window_end = std::min(window->second, timeline.makespan);
    }
    write_output_file(options.svg, timeline_svg(step.schedule, step.lowered, timeline, svg), "--svg");
  }
  if (!options.memory_svg.empty()) {
    MemorySvgOptions memory;
    memory.title = fmt::format("Memory per stage (replica 0): {} on {}: {}", model.name,
                               cluster.name, plan_to_inline(plan));
    for (int32_t r = 0; r < plan.pp; ++r) {
      memory.row_names.push_back(fmt::format("stage {}", r));
      memory.static_bytes.push_back(step.static_memory_bytes[r]);
      memory.capacity_bytes.push_back(step.capacity_bytes[r]);
    }
    memory.axis_scale = 1e3;
    memory.axis_unit = "ms";
    if (window) {
      memory.window_start = window->first;
      memory.window_end = std::min(window->second, timeline.makespan);
    }
    write_output_file(options.memory_svg, memory_svg(step.lowered, timeline, memory),
                      "--memory-svg");
  }
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand("simulate", "Simulate one training step of a plan");
  command->add_option("--model", options->model, "Zoo name, model JSON or HF config.json")->required();
  command->add_option("--cluster", options->cluster,
                      "Zoo name, cluster JSON, or NODE_TYPE:NODES (dgx-h100:4)")
      ->required();
  command->add_option("--plan", options->plan,
                      "Plan JSON file, shipped plan name, or inline tp=8,pp=4,dp=1,mbs=1,gbs=64")
      ->required();
  command->add_flag("--json", options->json, "Print JSON (fields documented in the README)");
  command->add_option("--profile", options->profile,
                      "Profile JSON (ppsim profile) whose measured costs replace the roofline; "
                      "wins over the cluster spec's \"profile\"");
  command->add_option("--trace", options->trace, "Write a Chrome trace (open in Perfetto)");
  command->add_option("--svg", options->svg,
                      "Write the pipeline timeline as SVG (replica 0; a per-stage summary is "
                      "added past 32 microbatches)");
  command->add_option("--svg-window", options->svg_window,
                      "Draw only START:END seconds of the step in --svg and --memory-svg "
                      "(e.g. 0.5:1.5)");
  command->add_option("--memory-svg", options->memory_svg,
                      "Write each stage's memory over the step (static + activations, peak, "
                      "capacity) as SVG");
  command->add_option("--seed", options->seed,
                      "Seed of the jitter draws (default 0: the same output every run)");
  command->add_option("--straggler", options->stragglers,
                      "A fault (repeatable): gpu=RANK:FACTOR, node=N:FACTOR or "
                      "link=A-B:FACTOR[:+LATENCY_US][:period=MS:duty=FRAC] (docs/stragglers.md)");
  command->add_option("--jitter", options->jitter,
                      "Random slowdown of every compute action: lognormal:SIGMA, uniform:MAX or "
                      "exponential:MEAN");
  command
      ->add_option("--iterations", options->iterations,
                   "Steps to simulate, each with its own jitter draw and flapping phase; adds "
                   "step-time percentiles (and with --train-tokens, as many seeded draws of "
                   "failure arrivals: wall-time p50/p90)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  command->add_flag("--sensitivity", options->sensitivity,
                    "Rank components (each stage's GPUs, link classes, collectives) by how much "
                    "the step slows when that one alone runs 10% slower");
  command->add_option("--threads", options->threads,
                      "Threads for --iterations and --sensitivity (default 0: all cores; the "
                      "output does not depend on it, nor on the ranks of mpirun or srun)")
      ->check(CLI::Range(0, kMaxThreads));
  command->add_option("--train-tokens", options->train_tokens,
                      "Time the whole run of N tokens (15.6T, 300B, 1000000): steps, checkpoints, "
                      "failures, wall days, GPU-hours, cost (docs/time-to-train.md)");
  command->add_option("--checkpoint-interval", options->checkpoint_interval,
                      "Checkpoint interval of the run: daly (default), young or a number of "
                      "steps");
  command->add_flag("--all-replicas", options->all_replicas,
                    "Simulate every data-parallel replica even when they are identical");
  command->add_flag("--ideal-links", options->ideal_links,
                    "Communication costs nothing (what the schedule alone costs)");
  add_work_budget_options(command, options->budget);
  command->footer(
      "Example:\n"
      "  ppsim simulate --model llama3-70b --cluster dgx-h100-4 "
      "--plan tp=8,pp=4,dp=1,mbs=1,gbs=64,recompute=selective,sequence_parallel=true "
      "--svg step.svg --trace step.json\n"
      "  ppsim simulate --model llama3-8b --cluster dgx-h100-4 --plan tp=8,pp=4,dp=1,mbs=1,gbs=128 "
      "--svg step.svg --svg-window 0.5:1.0 --memory-svg memory.svg\n"
      "  ppsim simulate --model llama3-8b --cluster dgx-h100-4 --plan tp=8,pp=4,dp=1,mbs=1,gbs=64 "
      "--straggler node=2:0.8 --jitter lognormal:0.05 --iterations 200 --sensitivity\n"
      "  ppsim simulate --model llama3.1-405b --cluster dgx-h100:2048 --plan "
      "tp=8,pp=16,dp=128,mbs=1,gbs=2048,seq=8192,schedule=interleaved-1f1b,vpp=2,"
      "sequence_parallel=true,zero_stage=1 --train-tokens 15.6T --iterations 1000");
  command->callback([options, &exit_code] { exit_code = run_simulate(*options); });
}

}  // namespace ppsim
