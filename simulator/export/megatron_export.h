// Megatron-LM: a bash script that runs pretrain_gpt.py under torchrun, with the model shape
// (MoE, MLA, MTP, qk-norm and sliding windows included), parallel sizes (expert and expert tensor
// parallel too), layer split (first/last stage counts or an explicit pipeline layout from
// chunk_layout.h), batch, recompute, precision, optimizer sharding and overlap flags (Megatron-LM
// arguments.py and the config dataclasses it builds flags from; REFERENCE.md 1.1-1.4).
//
// REQUIRES: plan_problem(plan, model, cluster) is nullopt. Never throws for a valid plan;
// launcher_config.h gives the invariants every exporter keeps.
#pragma once

#include "simulator/export/launcher_common.h"

namespace ppsim {

LauncherOutput export_megatron(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan);

}  // namespace ppsim
