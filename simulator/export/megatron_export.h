// Megatron-LM: a bash script that runs pretrain_gpt.py under torchrun, with the model shape,
// parallel sizes, layer split, batch, recompute, precision, optimizer sharding and overlap flags
// (Megatron-LM arguments.py; REFERENCE.md 1.1-1.4).
//
// REQUIRES: plan_problem(plan, model, cluster) is nullopt. Never throws for a valid plan;
// launcher_config.h gives the invariants every exporter keeps.
#pragma once

#include "simulator/export/launcher_common.h"

namespace ppsim {

LauncherOutput export_megatron(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan);

}  // namespace ppsim
