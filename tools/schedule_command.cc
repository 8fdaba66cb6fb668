// `ppsim schedule`: a pipeline schedule in abstract costs (issue 9): makespan, per-stage busy
// time, bubble, peak activations and action order, as text (nccl-tests layout) or --json, and
// optionally the timeline as SVG and as a Chrome trace. Fields are documented in
// docs/schedule.md.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "simulator/report/chrome_trace.h"
#include "simulator/report/schedule_report.h"
#include "simulator/report/timeline_svg.h"
#include "simulator/schedule/schedule_study.h"
#include "simulator/spec/error.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {
namespace {

struct Options {
  int32_t stages = 0;
  int32_t microbatches = 0;
  std::string schedule;
  int32_t vpp = 0;               // 0 = the schedule's default (2 for zbv/dualpipev, else 1).
  int32_t microbatch_group = 0;  // 0 = p (Megatron's default).
  double tf = 0, tb = 0, tw = 0;
  double comm = 0;
  std::string stage_costs;
  double mem_per_microbatch = 1;
  double mem_limit = 0;
  bool json = false;
  std::string svg, svg_window, trace;
  WorkBudget budget;  // --max-tasks, --max-memory.
};

void run_schedule(const CLI::App& command, const Options& options) {
  const bool has_inline = command.count("--tf") + command.count("--tb") + command.count("--tw") > 0;
  ScheduleStudyInput input;
  input.schedule = parse_schedule_name(options.schedule, "--schedule");
  input.stages = options.stages;
  input.microbatches = options.microbatches;
  input.chunks_per_rank = command.count("--vpp") > 0
                              ? options.vpp
                              : static_cast<int32_t>(default_chunks_per_rank(input.schedule));
  if (command.count("--microbatch-group") > 0) {
    if (!is_interleaved(input.schedule) || input.chunks_per_rank < 2) {
      throw InputError("--microbatch-group", "",
                       "groups the microbatches of interleaved-1f1b with --vpp 2 or more; leave "
                       "it out for " +
                           options.schedule);
    }
    if (options.microbatch_group < 1) {
      throw InputError("--microbatch-group", "",
                       fmt::format("expected a positive number of microbatches, got {}",
                                   options.microbatch_group));
    }
    input.microbatch_group = options.microbatch_group;
  }
  // The same budget as a simulation (work_estimate.h), before anything is sized by it.
  Plan shape;
  shape.pp = std::max(input.stages, 1);
  shape.vpp = std::max(input.chunks_per_rank, 1);
  shape.global_batch_size = std::max(input.microbatches, 1);
  shape.schedule = input.schedule;
  check_work_budget(shape, estimate_step_work(shape, 1), options.budget);
  if (!options.stage_costs.empty()) {
    if (has_inline) {
      throw InputError("--stage-costs", "",
                       "give either --stage-costs or --tf/--tb/--tw, not both");
    }
    input.costs = load_stage_costs(options.stage_costs);
    if (static_cast<int32_t>(input.costs.size()) != options.stages) {
      throw InputError(options.stage_costs, "",
                       fmt::format("{} stage entries but --stages is {} (give one {{\"tf\", "
                                   "\"tb\", \"tw\"}} per stage)",
                                   input.costs.size(), options.stages));
    }
  } else {
    for (const char* flag : {"--tf", "--tb", "--tw"}) {
      if (command.count(flag) == 0) {
        throw InputError(flag, "",
                         "required: give --tf, --tb and --tw (per stage per microbatch; --tw 0 "
                         "fuses B and W), or --stage-costs FILE");
      }
    }
    if (options.stages >= 1) {
      input.costs.assign(options.stages, StageCosts{options.tf, options.tb, options.tw});
    }
  }
  input.comm = options.comm;
  input.memory_per_microbatch = options.mem_per_microbatch;
  if (command.count("--mem-limit") > 0) input.memory_limit = options.mem_limit;

  std::optional<std::pair<double, double>> window;
  if (!options.svg_window.empty()) {
    if (options.svg.empty()) throw InputError("--svg-window", "", "draws a part of --svg; give it");
    window = parse_svg_window(options.svg_window, "input time units", "10:20");
  }

  ScheduleStudy study = run_schedule_study(input);
  std::vector<std::string> warnings = schedule_memory_warnings(study);
  if (!options.svg.empty()) {
    TimelineSvgOptions svg;
    svg.title = fmt::format("{}: {} stages, {} microbatches{}; makespan {}, bubble {:.1f}%",
                            schedule_name(input.schedule), input.stages, input.microbatches,
                            input.chunks_per_rank > 1
                                ? fmt::format(", {} chunks per stage", input.chunks_per_rank)
                                : "",
                            schedule_number(study.makespan), 100 * study.bubble_ratio);
    for (int32_t r = 0; r < input.stages; ++r)
      svg.row_names.push_back(schedule_stage_name(study.schedule, r));
    svg.axis_unit = "input time unit";
    svg.long_plan_hint =
        "Boxes this narrow carry no numbers: --svg-window START:END (time units) draws a part.";
    if (window) {
      if (window->first >= study.makespan) {
        throw InputError("--svg-window", "",
                         fmt::format("'{}' starts after the schedule ends (makespan {})",
                                     options.svg_window, schedule_number(study.makespan)));
      }
      svg.window_start = window->first;
      svg.window_end = std::min(window->second, study.makespan);
    }
    write_output_file(options.svg, timeline_svg(study.schedule, study.lowered, study.timeline, svg),
                      "--svg");
  }
  if (!options.trace.empty()) {
    std::vector<std::string> names;
    for (int32_t r = 0; r < input.stages; ++r)
      names.push_back(schedule_stage_name(study.schedule, r));
    // One input time unit is drawn as one microsecond.
    write_output_file(options.trace, chrome_trace_json(study.lowered, study.timeline, names, 1.0),
                      "--trace");
  }
  if (options.json) {
    for (const std::string& warning : warnings) fmt::print(stderr, "ppsim: warning: {}\n", warning);
    fmt::print("{}", schedule_report_json(study, warnings));
  } else {
    fmt::print("{}", schedule_report_text(study, warnings));
  }
}

}  // namespace

void add_schedule_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "schedule", "A pipeline schedule in abstract costs: makespan, bubble, memory, action order");
  command->add_option("--stages", options->stages, "Pipeline stages (ranks), p")->required();
  command->add_option("--microbatches", options->microbatches, "Microbatches per step, m")
      ->required();
  command->add_option("--schedule", options->schedule, join_names(schedule_names()))->required();
  command->add_option("--vpp", options->vpp,
                      "Chunks per stage (interleaved-1f1b; zbv/dualpipev use 2). Default 1");
  command->add_option("--microbatch-group", options->microbatch_group,
                      "interleaved-1f1b: microbatches per group through each chunk (Megatron's "
                      "microbatch_group_size_per_vp_stage), from p to m. Default p");
  command->add_option("--tf", options->tf, "Forward time per stage per microbatch");
  command->add_option("--tb", options->tb,
                      "Backward (input gradient) time per stage per microbatch");
  command->add_option("--tw", options->tw,
                      "Weight-gradient time per stage per microbatch; 0 = fused into B");
  command->add_option("--comm", options->comm, "Time per point-to-point transfer. Default 0");
  command->add_option("--stage-costs", options->stage_costs,
                      "JSON file: [{\"tf\":..,\"tb\":..,\"tw\":..}, ...], one per stage");
  command->add_option("--mem-per-microbatch", options->mem_per_microbatch,
                      "Activation memory of one microbatch on a stage. Default 1");
  command->add_option("--mem-limit", options->mem_limit,
                      "Activation memory limit per stage (same unit); exceeding it is reported");
  command->add_flag("--json", options->json, "Print JSON (fields in docs/schedule.md)");
  command->add_option("--svg", options->svg, "Write the pipeline timeline as SVG to FILE");
  command->add_option("--svg-window", options->svg_window,
                      "Draw only START:END of the timeline in --svg (input time units)");
  command->add_option("--trace", options->trace,
                      "Write a Chrome trace (Perfetto) to FILE; 1 time unit = 1 us");
  add_work_budget_options(command, options->budget);
  command->footer(
      "Examples:\n"
      "  ppsim schedule --stages 4 --microbatches 8 --schedule zb-h1 --tf 1 --tb 1 --tw 1\n"
      "  ppsim schedule --stages 4 --microbatches 8 --schedule interleaved-1f1b --vpp 2 "
      "--tf 1 --tb 2 --tw 0 --comm 0.1 --svg timeline.svg\n"
      "Times are per stage (rank) per microbatch in any one unit; with --vpp v each chunk costs "
      "1/v of them.\n"
      "Exit status: 0 (also when --mem-limit is exceeded: see \"mem_limit_exceeded\"), 2 for bad "
      "input.");
  command->callback([command, options, &exit_code] {
    run_schedule(*command, *options);
    exit_code = 0;
  });
}

}  // namespace ppsim
