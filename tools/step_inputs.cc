#include "tools/step_inputs.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "simulator/schedule/pipeline_schedule.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"

namespace ppsim {

ModelSpec load_model_with_notes(const std::string& path_or_name) {
  ModelSpec model = load_model_spec(path_or_name);
  for (const std::string& note : model.notes) fmt::print(stderr, "ppsim: note: {}\n", note);
  return model;
}

StepInputs load_step_inputs(const std::string& model, const std::string& cluster,
                            const std::string& plan, const WorkBudget& budget) {
  StepInputs inputs{load_model_with_notes(model), load_cluster_spec(cluster), load_plan(plan)};
  validate_plan(inputs.plan, inputs.model, inputs.cluster, "--plan");
  check_work_budget(inputs.plan, estimate_step_work(inputs.plan, 1), budget);
  const Plan& given = inputs.plan;
  if (auto problem = schedule_problem(given.schedule, static_cast<int32_t>(given.pp),
                                      static_cast<int32_t>(num_microbatches(given)),
                                      static_cast<int32_t>(given.vpp),
                                      static_cast<int32_t>(microbatch_group_in_force(given)))) {
    throw InputError("--plan", "", "impossible plan: " + *problem);
  }
  return inputs;
}

void add_work_budget_options(CLI::App* command, WorkBudget& budget) {
  command
      ->add_option("--max-tasks", budget.max_tasks,
                   fmt::format("Refuse (exit 2) a step estimated above this many task-equivalents "
                               "(default {}; docs/limits.md)",
                               kDefaultMaxTasks))
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  command
      ->add_option_function<double>(
          "--max-memory", [&budget](double gib) { budget.max_memory_bytes = gib * (1u << 30); },
          fmt::format("Refuse (exit 2) a step estimated to need more than this many GiB "
                      "(default {:g}; docs/limits.md)",
                      kDefaultMaxMemoryGiB))
      ->check(CLI::Range(1e-3, 1e6));
}

std::pair<double, double> parse_svg_window(const std::string& text, const std::string& unit,
                                           const std::string& example) {
  const std::string expected =
      fmt::format("expected START:END in {}, 0 <= START < END (e.g. {})", unit, example);
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    throw InputError("--svg-window", "", fmt::format("'{}': {}", text, expected));
  }
  auto number = [&](const std::string& part) {
    try {
      size_t used = 0;
      double value = std::stod(part, &used);
      if (used == part.size() && std::isfinite(value)) return value;
    } catch (const std::exception&) {
    }
    throw InputError("--svg-window", "", fmt::format("'{}': {}", text, expected));
  };
  const double start = number(text.substr(0, colon));
  const double end = number(text.substr(colon + 1));
  if (start < 0 || end <= start) {
    throw InputError("--svg-window", "", fmt::format("'{}': {}", text, expected));
  }
  return {start, end};
}

void write_output_file(const std::string& path, const std::string& text, const std::string& flag) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text)) {
    throw InputError(flag, "", fmt::format("cannot write '{}' (check the folder exists)", path));
  }
}

}  // namespace ppsim
