// What `simulate` and `validate` read before they build a step: the model, cluster and plan
// from their flags, checked so that a step can be built, and where they write files.
#pragma once

#include <string>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

struct StepInputs {
  ModelSpec model;
  ClusterSpec cluster;
  Plan plan;
};

// Loads --model, --cluster and --plan. Throws InputError (flag "--plan") when the plan is
// impossible on that model and cluster or its schedule cannot run it.
StepInputs load_step_inputs(const std::string& model, const std::string& cluster,
                            const std::string& plan);

// Writes `text` to `path`; throws InputError naming `flag` when it cannot.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace ppsim
