// What `simulate` and `validate` read before they build a step: the model, cluster and plan
// from their flags, checked so that a step can be built, and where they write files.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/step/work_estimate.h"

namespace ppsim {

struct StepInputs {
  ModelSpec model;
  ClusterSpec cluster;
  Plan plan;
};

// Loads a model (load_model_spec) and prints each of its import notes (ModelSpec::notes: what a
// HuggingFace import assumed, such as the default sequence length) as "ppsim: note: ..." on
// stderr.
ModelSpec load_model_with_notes(const std::string& path_or_name);

// Loads --model, --cluster and --plan. Throws InputError (flag "--plan") when the plan is
// impossible on that model and cluster or its schedule cannot run it, and (flag --max-tasks or
// --max-memory) when even one replica's step would exceed `budget` (work_estimate.h).
StepInputs load_step_inputs(const std::string& model, const std::string& cluster,
                            const std::string& plan, const WorkBudget& budget = {});

// Adds --max-tasks N and --max-memory GIB (docs/limits.md) to `command`, writing `budget`.
void add_work_budget_options(CLI::App* command, WorkBudget& budget);

// `--svg-window START:END`: the part of the timeline an SVG draws, in `unit` ("seconds" for a
// step, the input time unit for `ppsim schedule`), 0 <= START < END; `example` shows the form.
// Throws InputError naming the flag otherwise.
std::pair<double, double> parse_svg_window(const std::string& text, const std::string& unit,
                                           const std::string& example);

// Writes `text` to `path`; throws InputError naming `flag` when it cannot.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace ppsim
