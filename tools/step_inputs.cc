#include "tools/step_inputs.h"

#include <fmt/format.h>

#include <fstream>

#include "simulator/schedule/pipeline_schedule.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"

namespace ppsim {

StepInputs load_step_inputs(const std::string& model, const std::string& cluster,
                            const std::string& plan) {
  StepInputs inputs{load_model_spec(model), load_cluster_spec(cluster), load_plan(plan)};
  validate_plan(inputs.plan, inputs.model, inputs.cluster, "--plan");
  if (auto problem = schedule_problem(inputs.plan.schedule, static_cast<int32_t>(inputs.plan.pp),
                                      static_cast<int32_t>(num_microbatches(inputs.plan)),
                                      static_cast<int32_t>(inputs.plan.vpp))) {
    throw InputError("--plan", "", "impossible plan: " + *problem);
  }
  return inputs;
}

void write_output_file(const std::string& path, const std::string& text, const std::string& flag) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text)) {
    throw InputError(flag, "", fmt::format("cannot write '{}' (check the folder exists)", path));
  }
}

}  // namespace ppsim
