// `ppsim simulate`: one training step of a plan, event by event.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "simulator/cost/profile_table.h"
#include "simulator/engine/engine.h"
#include "simulator/report/chrome_trace.h"
#include "simulator/report/simulate_report.h"
#include "simulator/report/straggler_report.h"
#include "simulator/report/timeline_svg.h"
#include "simulator/spec/error.h"
#include "simulator/step/monte_carlo.h"
#include "simulator/step/sensitivity.h"
#include "simulator/step/step_builder.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {
namespace {

struct Options {
  std::string model, cluster, plan, trace, svg, profile;
  bool json = false;
  bool all_replicas = false;
  bool ideal_links = false;
  uint64_t seed = 0;
  std::vector<std::string> stragglers;  // --straggler, repeatable.
  std::string jitter;                   // --jitter DIST:PARAM.
  int64_t iterations = 1;
  bool sensitivity = false;
};

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
  StepInputs inputs = load_step_inputs(options.model, options.cluster, options.plan);
  ModelSpec& model = inputs.model;
  ClusterSpec& cluster = inputs.cluster;
  Plan& plan = inputs.plan;
  StepOptions step_options;
  step_options.deduplicate_replicas = !options.all_replicas;
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
          static_cast<int32_t>(num_microbatches(plan)), static_cast<int32_t>(plan.vpp)))) {
    PPSIM_CHECK(false, "schedule " + schedule_name(plan.schedule) + ": " + *problem);
  }
  // One step (or --iterations of them) under the straggler model; without one, the plain step.
  StragglerRun run;
  run.model = straggler_model(cluster, options.stragglers, options.jitter);
  run.options.iterations = options.iterations;
  run.options.seed = options.seed;
  run.options.fault_costs = !run.model.empty();
  MonteCarloResult monte_carlo =
      run_monte_carlo(model, cluster, plan, step_options, run.model, run.options);
  run.monte_carlo = &monte_carlo;
  std::optional<Sensitivity> sensitivity;
  if (options.sensitivity) {
    sensitivity = step_sensitivity(model, cluster, plan, step_options, run.model);
    run.sensitivity = &*sensitivity;
  }
  const Step& step = monte_carlo.step;
  const Timeline& timeline = monte_carlo.timeline;
  std::string profile_warning = unprofiled_gpus_warning(step.provenance);
  if (!profile_warning.empty()) fmt::print(stderr, "ppsim: warning: {}\n", profile_warning);
  StepMetrics metrics = compute_metrics(model, cluster, plan, step, timeline);
  const SimulateReport report{&model, &cluster, &plan, &step, &metrics, &run};
  fmt::print("{}", options.json ? simulate_report_json(report) : simulate_report_text(report));
  if (!options.trace.empty()) {
    write_output_file(options.trace, chrome_trace_json(step.lowered, timeline, step.worker_names), "--trace");
  }
  if (!options.svg.empty()) {
    TimelineSvgOptions svg;
    svg.title = fmt::format("{} on {}: {}", model.name, cluster.name, plan_to_inline(plan));
    for (int32_t r = 0; r < plan.pp; ++r) svg.row_names.push_back(fmt::format("stage {}", r));
    svg.axis_scale = 1e3;
    svg.axis_unit = "ms";
    write_output_file(options.svg, timeline_svg(step.schedule, step.lowered, timeline, svg), "--svg");
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
  command->add_option("--svg", options->svg, "Write the pipeline timeline as SVG");
  command->add_option("--seed", options->seed,
                      "Seed of the jitter draws (default 0: the same output every run)");
  command->add_option("--straggler", options->stragglers,
                      "A fault (repeatable): gpu=RANK:FACTOR, node=N:FACTOR or "
                      "link=A-B:FACTOR[:+LATENCY_US][:period=MS:duty=FRAC] (docs/stragglers.md)");
  command->add_option("--jitter", options->jitter,
                      "Random slowdown of every compute action: lognormal:SIGMA, uniform:MAX or "
                      "exponential:MEAN");
  command->add_option("--iterations", options->iterations,
                      "Steps to simulate, each with its own jitter draw and flapping phase; adds "
                      "step-time percentiles")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  command->add_flag("--sensitivity", options->sensitivity,
                    "Rank components (each stage's GPUs, link classes, collectives) by how much "
                    "the step slows when that one alone runs 10% slower");
  command->add_flag("--all-replicas", options->all_replicas,
                    "Simulate every data-parallel replica even when they are identical");
  command->add_flag("--ideal-links", options->ideal_links,
                    "Communication costs nothing (what the schedule alone costs)");
  command->footer(
      "Example:\n"
      "  ppsim simulate --model llama3-70b --cluster dgx-h100-4 "
      "--plan tp=8,pp=4,dp=1,mbs=1,gbs=64,recompute=selective,sequence_parallel=true "
      "--svg step.svg --trace step.json\n"
      "  ppsim simulate --model llama3-8b --cluster dgx-h100-4 --plan tp=8,pp=4,dp=1,mbs=1,gbs=64 "
      "--straggler node=2:0.8 --jitter lognormal:0.05 --iterations 200 --sensitivity");
  command->callback([options, &exit_code] { exit_code = run_simulate(*options); });
}

}  // namespace ppsim
