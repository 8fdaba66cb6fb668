// The straggler part of `ppsim simulate`'s report: Monte-Carlo percentiles, fault costs and
// sensitivity, as text sections and JSON keys that simulate_report.h places in its report.
//
// JSON keys (present as stated; definitions in monte_carlo.h and sensitivity.h):
//   stragglers               [{fault, description}] the faults injected (model order, jitter
//                            last); with a straggler model or --iterations > 1
//   iterations, seed         the Monte-Carlo run; same condition
//   step_time_percentiles_s  {p50, p90, p99, mean}; same condition
//   straggler_cost_s         [{fault, description, cost_s}] leave-one-out cost of each fault;
//                            with a straggler model
//   warnings                 [string] caveats (flapping period shorter than a step); when any
//   sensitivity              [{component, step_time_increase_pct, step_time_s}] worst first,
//                            with sensitivity_base_step_time_s; with --sensitivity
// The report's other fields (iteration_time_s, breakdown, stages, ...) are iteration 0's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "simulator/spec/straggler_spec.h"
#include "simulator/step/monte_carlo.h"
#include "simulator/step/sensitivity.h"

namespace ppsim {

// What `simulate` ran beyond the one step.
struct StragglerRun {
  StragglerModel model;
  MonteCarloOptions options;
  const MonteCarloResult* monte_carlo = nullptr;  // Always set by simulate.
  const Sensitivity* sensitivity = nullptr;       // With --sensitivity.
  int64_t sensitivity_rows = 10;                  // Text rows shown (all are in the JSON).
};

// True when the report carries Monte-Carlo fields: a straggler model, or more than one iteration.
bool reports_monte_carlo(const StragglerRun& run);

// Text sections to insert before the report's footer line ("# OK ..." / "# DOES NOT FIT ...").
std::string straggler_report_text(const StragglerRun& run);
// Adds the keys above to `json`.
void add_straggler_json(nlohmann::ordered_json& json, const StragglerRun& run);

}  // namespace ppsim
