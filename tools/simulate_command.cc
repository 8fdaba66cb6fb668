// `ppsim simulate`: one training step of a plan, event by event.
#include <fmt/format.h>

#include <fstream>
#include <string>

#include "simulator/chrome_trace.h"
#include "simulator/engine.h"
#include "simulator/error.h"
#include "simulator/profile.h"
#include "simulator/simulate_report.h"
#include "simulator/step_builder.h"
#include "simulator/timeline_svg.h"
#include "tools/commands.h"

namespace ppsim {
namespace {

struct Options {
  std::string model, cluster, plan, trace, svg, profile;
  bool json = false;
  bool all_replicas = false;
  bool ideal_links = false;
  uint64_t seed = 0;
};

void write_file(const std::string& path, const std::string& text, const std::string& flag) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(flag, "", fmt::format("cannot write '{}' (check the folder exists)", path));
  out << text;
}

int run_simulate(const Options& options) {
  ModelSpec model = load_model_spec(options.model);
  ClusterSpec cluster = load_cluster_spec(options.cluster);
  Plan plan = load_plan(options.plan);
  validate_plan(plan, model, cluster, "--plan");
  if (auto problem = schedule_problem(plan.schedule, static_cast<int32_t>(plan.pp),
                                      static_cast<int32_t>(num_microbatches(plan)),
                                      static_cast<int32_t>(plan.vpp))) {
    throw InputError("--plan", "", "impossible plan: " + *problem);
  }
  StepOptions step_options;
  step_options.deduplicate_replicas = !options.all_replicas;
  step_options.ideal_links = options.ideal_links || cluster.ideal_links;
  std::optional<ProfileTable> profile = load_profile_for(cluster, options.profile);
  if (profile) {
    step_options.profile = &*profile;
    step_options.profile_path = options.profile.empty() ? *cluster.profile_path : options.profile;
  }
  Step step = build_step(model, cluster, plan, step_options);
  std::string profile_warning = unprofiled_gpus_warning(step.provenance);
  if (!profile_warning.empty()) fmt::print(stderr, "ppsim: warning: {}\n", profile_warning);
  // The schedule's dependency graph is checked (Boost.Graph) before it is trusted; a failure is
  // a bug in the schedule builder, not bad input.
  if (std::optional<std::string> problem = check_schedule(step.schedule)) {
    PPSIM_CHECK(false, "schedule " + schedule_name(plan.schedule) + ": " + *problem);
  }
  Timeline timeline = simulate_graph(step.lowered.graph);
  StepMetrics metrics = compute_metrics(model, cluster, plan, step, timeline);
  fmt::print("{}", options.json ? simulate_report_json(model, cluster, plan, step, metrics)
                                : simulate_report_text(model, cluster, plan, step, metrics));
  if (!options.trace.empty()) {
    write_file(options.trace, chrome_trace_json(step.lowered, timeline, step.worker_names), "--trace");
  }
  if (!options.svg.empty()) {
    TimelineSvgOptions svg;
    svg.title = fmt::format("{} on {}: {}", model.name, cluster.name, plan_to_inline(plan));
    for (int32_t r = 0; r < plan.pp; ++r) svg.row_names.push_back(fmt::format("stage {}", r));
    svg.axis_scale = 1e3;
    svg.axis_unit = "ms";
    write_file(options.svg, timeline_svg(step.schedule, step.lowered, timeline, svg), "--svg");
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
                      "Seed for random jitter models (the step is deterministic without one)");
  command->add_flag("--all-replicas", options->all_replicas,
                    "Simulate every data-parallel replica even when they are identical");
  command->add_flag("--ideal-links", options->ideal_links,
                    "Communication costs nothing (what the schedule alone costs)");
  command->footer(
      "Example:\n"
      "  ppsim simulate --model llama3-70b --cluster dgx-h100-4 "
      "--plan tp=8,pp=4,dp=1,mbs=1,gbs=64,recompute=selective,sequence_parallel=true "
      "--svg step.svg --trace step.json");
  command->callback([options, &exit_code] { exit_code = run_simulate(*options); });
}

}  // namespace ppsim
