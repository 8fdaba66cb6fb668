#include "simulator/report/straggler_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace ppsim {
namespace {

// Each injected fault: (flag text, description), model order, jitter last.
std::vector<std::pair<std::string, std::string>> faults(const StragglerModel& model) {
  std::vector<std::pair<std::string, std::string>> list;
  for (const Straggler& straggler : model.stragglers) {
    list.emplace_back(straggler_text(straggler), straggler_description(straggler));
  }
  if (model.jitter)
    list.emplace_back(jitter_text(*model.jitter), jitter_description(*model.jitter));
  return list;
}

}  // namespace

bool reports_monte_carlo(const StragglerRun& run) {
  return !run.model.empty() || run.options.iterations > 1;
}

std::string straggler_report_text(const StragglerRun& run) {
  std::string out;
  if (reports_monte_carlo(run) && run.monte_carlo != nullptr) {
    const MonteCarloResult& result = *run.monte_carlo;
    out += "# stragglers\n";
    for (const auto& [fault, description] : faults(run.model)) {
      out += fmt::format("#   {:<40} {}\n", fault, description);
    }
    if (run.model.empty()) out += "#   none (the step is the same every iteration)\n";
    for (const std::string& warning : result.warnings) out += "# warning: " + warning + "\n";
    out += fmt::format("# step time over {} iteration{} (seed {}; nearest-rank percentiles)\n",
                       run.options.iterations, run.options.iterations == 1 ? "" : "s",
                       run.options.seed);
    out += fmt::format("step_time_p50_s        {:.6f}\n", result.percentiles.p50);
    out += fmt::format("step_time_p90_s        {:.6f}\n", result.percentiles.p90);
    out += fmt::format("step_time_p99_s        {:.6f}\n", result.percentiles.p99);
    out += fmt::format("step_time_mean_s       {:.6f}\n", result.mean_s);
    if (!result.fault_costs.empty()) {
      out += "# what each fault costs: mean step time with all faults minus with all but it\n";
      const char* row = "{} {:<40} {:>10}  {}\n";
      out += fmt::format(fmt::runtime(row), "#", "fault", "cost", "description");
      out += fmt::format(fmt::runtime(row), "#", "", "(s)", "");
      for (const FaultCost& cost : result.fault_costs) {
        out += fmt::format(fmt::runtime(row), " ", cost.fault, fmt::format("{:.6f}", cost.cost_s),
                           cost.description);
      }
    }
  }
  if (run.sensitivity != nullptr) {
    const Sensitivity& sensitivity = *run.sensitivity;
    size_t rows = std::min<size_t>(sensitivity.entries.size(),
                                   static_cast<size_t>(std::max<int64_t>(0, run.sensitivity_rows)));
    out += fmt::format(
        "# sensitivity: step time when one component alone runs at {}x speed (base {:.6f} s); "
        "top {} of {}\n",
        kSensitivitySpeed, sensitivity.base_step_time_s, rows, sensitivity.entries.size());
    const char* row = "{} {:<52} {:>12} {:>10}\n";
    out += fmt::format(fmt::runtime(row), "#", "component", "increase", "step");
    out += fmt::format(fmt::runtime(row), "#", "", "(%)", "(s)");
    for (size_t i = 0; i < rows; ++i) {
      const SensitivityEntry& entry = sensitivity.entries[i];
      out += fmt::format(fmt::runtime(row), " ", entry.component,
                         fmt::format("{:.3f}", entry.step_time_increase_pct),
                         fmt::format("{:.6f}", entry.step_time_s));
    }
  }
  return out;
}

void add_straggler_json(nlohmann::ordered_json& json, const StragglerRun& run) {
  if (reports_monte_carlo(run) && run.monte_carlo != nullptr) {
    const MonteCarloResult& result = *run.monte_carlo;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [fault, description] : faults(run.model)) {
      list.push_back({{"fault", fault}, {"description", description}});
    }
    json["stragglers"] = list;
    json["iterations"] = run.options.iterations;
    json["seed"] = run.options.seed;
    json["step_time_percentiles_s"] = {{"p50", result.percentiles.p50},
                                       {"p90", result.percentiles.p90},
                                       {"p99", result.percentiles.p99},
                                       {"mean", result.mean_s}};
    if (!run.model.empty()) {
      nlohmann::ordered_json costs = nlohmann::ordered_json::array();
      for (const FaultCost& cost : result.fault_costs) {
        costs.push_back(
            {{"fault", cost.fault}, {"description", cost.description}, {"cost_s", cost.cost_s}});
      }
      json["straggler_cost_s"] = costs;
    }
    if (!result.warnings.empty()) json["warnings"] = result.warnings;
  }
  if (run.sensitivity != nullptr) {
    json["sensitivity_base_step_time_s"] = run.sensitivity->base_step_time_s;
    nlohmann::ordered_json entries = nlohmann::ordered_json::array();
    for (const SensitivityEntry& entry : run.sensitivity->entries) {
      entries.push_back({{"component", entry.component},
                         {"step_time_increase_pct", entry.step_time_increase_pct},
                         {"step_time_s", entry.step_time_s}});
    }
    json["sensitivity"] = entries;
  }
}

}  // namespace ppsim
