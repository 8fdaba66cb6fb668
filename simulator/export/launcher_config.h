// Launcher configs: a validated Plan written as the file a training framework starts from.
//
// Three formats, each a pure function of (model, cluster, plan) returning the file's text and
// the list of things the launcher cannot express:
// - megatron:   a bash script that runs Megatron-LM's pretrain_gpt.py under torchrun, with the
//               model shape, parallel sizes, layer split, batch, recompute, precision, optimizer
//               sharding and overlap flags (Megatron-LM arguments.py; REFERENCE.md 1.1-1.4).
// - deepspeed:  a DeepSpeed config JSON: batch sizes, gradient accumulation, ZeRO stage and
//               offload, bf16/fp16, the "pipeline" block (REFERENCE.md 2), and no other key.
//               Parallel degrees that DeepSpeed takes in Python (PipelineModule, topology, MoE)
//               and the launch line are LauncherOutput::notes.
// - torchtitan: a job-config TOML of the TOML era (torchtitan/config/job_config.py at
//               e347b1e5e, REFERENCE.md 3.1), with the same settings as `--section.option`
//               overrides for the later Python-config releases in a comment (REFERENCE.md 3.2).
//
// Invariants: output is deterministic (no time, no absolute path, fixed key order); every flag
// and key is one the launcher accepts; a plan the runtime cannot run (a schedule it lacks, a
// layer split it cannot give, a ZeRO or offload form it rejects: runtime_plan_problem,
// spec/runtime.h) is refused, never written as something else; what the file runs but cannot
// state exactly (a node order, a layer split left to model code) is in `warnings` and also a
// comment in `text` where the format has comments.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "simulator/export/deepspeed_export.h"
#include "simulator/export/launcher_common.h"
#include "simulator/export/megatron_export.h"
#include "simulator/export/torchtitan_export.h"

namespace ppsim {

// Format names as the CLI spells them: "megatron", "deepspeed", "torchtitan".
const std::vector<std::string>& launcher_format_names();
std::string launcher_format_name(LauncherFormat format);

// Parses a format name. Throws InputError naming `source` (e.g. "--format"), listing the
// formats and suggesting the nearest ("did you mean 'megatron'?") when the name is unknown.
LauncherFormat parse_launcher_format(const std::string& name, const std::string& source);

// The runtime a format's file runs (megatron: megatron-core; deepspeed; torchtitan): what a plan
// must name to be written in that format.
Runtime launcher_runtime(LauncherFormat format);

// Why a plan on `runtime` cannot be written as `format`, or nullopt: a file runs its launcher's
// kernels and overheads, so a plan simulated under another runtime (spec/runtime.h) would launch
// a step ppsim never predicted. megatron takes megatron-core and megatron-lm plans; deepspeed
// and torchtitan their own; pytorch-fsdp has no launcher file.
std::optional<std::string> launcher_runtime_problem(LauncherFormat format, Runtime runtime);

// REQUIRES: plan_problem(plan, model, cluster) is nullopt.
// Dispatches on `format` to export_megatron, export_deepspeed or export_torchtitan (one file
// each beside this one). Throws InputError (source "--plan") when launcher_runtime_problem says
// the plan's runtime does not match (JSON path /runtime), or when runtime_plan_problem says the
// runtime cannot run the plan (the message names the feature).
LauncherOutput export_launcher(LauncherFormat format, const ModelSpec& model,
                               const ClusterSpec& cluster, const Plan& plan);

}  // namespace ppsim
