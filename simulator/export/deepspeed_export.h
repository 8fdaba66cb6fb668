// DeepSpeed: a config JSON with batch sizes, gradient accumulation, ZeRO stage and offload,
// bf16/fp16 and the "pipeline" block (REFERENCE.md 2). Parallel degrees that DeepSpeed takes in
// Python (PipelineModule, topology, MoE) are stated in the top-level "_ppsim_comment" array,
// which DeepSpeed ignores (it reads top-level keys one by one; only nested blocks reject
// unknown keys).
//
// REQUIRES: plan_problem(plan, model, cluster) is nullopt. Never throws for a valid plan;
// launcher_config.h gives the invariants every exporter keeps.
#pragma once

#include "simulator/export/launcher_common.h"

namespace ppsim {

LauncherOutput export_deepspeed(const ModelSpec& model, const ClusterSpec& cluster,
                                const Plan& plan);

}  // namespace ppsim
