// `ppsim memory`: per-stage memory of a plan and whether it fits.
#include <fmt/format.h>

#include <string>

#include "simulator/model/memory_model.h"
#include "simulator/report/memory_report.h"
#include "simulator/spec/model_file.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {

void add_memory_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string model, cluster, plan;
    bool json = false;
    WorkBudget budget;  // --max-tasks, --max-memory.
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "memory", "Per-stage memory of a plan: weights, gradients, optimizer, activations, peak");
  command->add_option("--model", options->model, "Zoo name, model JSON or HF config.json")
      ->required();
  command->add_option("--cluster", options->cluster,
                      "Zoo name, cluster JSON, or NODE_TYPE:NODES (dgx-h100:4)")
      ->required();
  command->add_option("--plan", options->plan,
                      "Plan JSON file, shipped plan name, or inline tp=8,pp=4,dp=1,mbs=1,gbs=64")
      ->required();
  command->add_flag("--json", options->json, "Print JSON (fields documented in the README)");
  add_work_budget_options(command, options->budget);
  command->footer(
      "Example:\n"
      "  ppsim memory --model llama3-70b --cluster dgx-h100-4 "
      "--plan tp=8,pp=4,dp=1,mbs=1,gbs=64,recompute=selective,sequence_parallel=true\n"
      "Exit status: 0 whether or not it fits (see \"fits\"), 2 for bad input.");
  command->callback([options, &exit_code] {
    ModelSpec model = load_model_with_notes(options->model);
    ClusterSpec cluster = load_cluster_spec(options->cluster);
    Plan plan = load_plan(options->plan);
    validate_plan(plan, model, cluster, "--plan");
    // The memory model walks the schedule's microbatches: the same budget as a simulation.
    check_work_budget(plan, estimate_step_work(plan, 1), options->budget);
    MemoryReport report = estimate_memory(model, cluster, plan);
    fmt::print("{}", options->json ? memory_report_json(model, cluster, plan, report)
                                   : memory_report_text(model, cluster, plan, report));
    exit_code = 0;
  });
}

}  // namespace ppsim
