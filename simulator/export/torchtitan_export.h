// torchtitan: a job-config TOML of the TOML era (torchtitan/config/job_config.py at e347b1e5e,
// REFERENCE.md 3.1), with the same settings as `--section.option` overrides for the later
// Python-config releases in a comment (REFERENCE.md 3.2).
//
// REQUIRES: plan_problem(plan, model, cluster) is nullopt. Never throws for a valid plan;
// launcher_config.h gives the invariants every exporter keeps.
#pragma once

#include "simulator/export/launcher_common.h"

namespace ppsim {

LauncherOutput export_torchtitan(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan);

}  // namespace ppsim
