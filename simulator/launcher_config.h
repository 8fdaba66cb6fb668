// Launcher configs: a validated Plan written as the file a training framework starts from.
//
// Three formats, each a pure function of (model, cluster, plan) returning the file's text and
// the list of things the launcher cannot express:
// - megatron:   a bash script that runs Megatron-LM's pretrain_gpt.py under torchrun, with the
//               model shape, parallel sizes, layer split, batch, recompute, precision, optimizer
//               sharding and overlap flags (Megatron-LM arguments.py; REFERENCE.md 1.1-1.4).
// - deepspeed:  a DeepSpeed config JSON: batch sizes, gradient accumulation, ZeRO stage and
//               offload, bf16/fp16, the "pipeline" block (REFERENCE.md 2). Parallel degrees that
//               DeepSpeed takes in Python (PipelineModule, topology, MoE) are stated in the
//               top-level "_ppsim_comment" array, which DeepSpeed ignores (it reads top-level
//               keys one by one; only nested blocks reject unknown keys).
// - torchtitan: a job-config TOML of the TOML era (torchtitan/config/job_config.py at
//               e347b1e5e, REFERENCE.md 3.1), with the same settings as `--section.option`
//               overrides for the later Python-config releases in a comment (REFERENCE.md 3.2).
//
// Invariants: output is deterministic (no time, no absolute path, fixed key order); every flag
// and key is one the launcher accepts; whatever the launcher cannot state (a schedule it lacks,
// a layer split it cannot give, a ZeRO stage it rejects) is in `warnings` and also written as a
// comment in `text`, never dropped silently. The functions never throw for a valid plan.
#pragma once

#include <string>
#include <vector>

#include "simulator/cluster_spec.h"
#include "simulator/model_spec.h"
#include "simulator/plan.h"

namespace ppsim {

enum class LauncherFormat { kMegatron, kDeepSpeed, kTorchTitan };

// One generated launcher file.
struct LauncherOutput {
  std::string text;                   // The whole file, ending in a newline.
  std::vector<std::string> warnings;  // What the launcher cannot express, one sentence each,
                                      // in a fixed order; also written as comments in `text`.
};

// Format names as the CLI spells them: "megatron", "deepspeed", "torchtitan".
const std::vector<std::string>& launcher_format_names();
std::string launcher_format_name(LauncherFormat format);

// Parses a format name. Throws InputError naming `source` (e.g. "--format"), listing the
// formats and suggesting the nearest ("did you mean 'megatron'?") when the name is unknown.
LauncherFormat parse_launcher_format(const std::string& name, const std::string& source);

// The file name a launcher file gets inside an output folder (`plan --emit FORMAT --out DIR`):
// "megatron_launch.sh", "ds_config.json" or "torchtitan_job.toml".
std::string launcher_file_name(LauncherFormat format);

// REQUIRES (all four): plan_problem(plan, model, cluster) is nullopt.
LauncherOutput export_megatron(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan);
LauncherOutput export_deepspeed(const ModelSpec& model, const ClusterSpec& cluster,
                                const Plan& plan);
LauncherOutput export_torchtitan(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan);
// Dispatches on `format` to one of the three above.
LauncherOutput export_launcher(LauncherFormat format, const ModelSpec& model,
                               const ClusterSpec& cluster, const Plan& plan);

}  // namespace ppsim
