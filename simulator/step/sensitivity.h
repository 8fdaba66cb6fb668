// What-if sensitivity: how much the step time grows when one component alone runs 10% slower,
// so a user sees where a straggler would hurt most.
//
// "10% slower" means at kSensitivitySpeed = 0.9 of its speed or bandwidth, as a --straggler
// FACTOR of 0.9 would say: the component's work takes 1/0.9 = 1.111x as long. Components:
//   stage r GPUs          every GPU of pipeline stage r (all replicas): its F, B, I, W tasks,
//                         optimizer step (less the framework's host-side overhead) and
//                         gradient-bucket delays stretch by 1/0.9, as StepOptions::gpu_speed
//                         would make them;
//   NVLink (intra-node)   the intra-node link class: the step rebuilt with
//                         CollectiveEfficiency::intra_bandwidth x 0.9 (TP collectives inside
//                         compute, intra-node sends and ring phases);
//   NICs (inter-node)     the NIC link class: rebuilt with inter_bandwidth x 0.9;
//   PP link stage i-i+1   the pipeline sends between stages i and i+1 (both directions, all
//                         replicas): bytes and latency x 1/0.9; labelled cross-node or NVLink;
//   PP send/recv          every pipeline send;
//   DP gradient reduce    every data-parallel gradient bucket reduction;
//   DP parameter gather   the distributed optimizer's parameter all-gather;
//   <kinds> collectives inside compute
//                         the communication exposed inside compute tasks (TP, EP all-to-all,
//                         CP ring excess, ZeRO-3 gather excess: those the plan has), x 1/0.9.
// Only components the plan has are listed (no DP entries at dp = 1, ...).
// step_time_increase_pct = 100 x (T_component - T_base) / T_base, where T_base is the step with
// the model's fixed faults (slow GPUs, nodes and non-flapping links) and without jitter or
// flapping, so every number is a deterministic difference. Sorted worst first; ties keep the
// order above. The base step is built once and each graph-level component reuses it (a copy
// of its graph, faulted, then simulated); the two link classes rebuild.
//
// Several processes (`split`, work_split.h): the components are shared out by index and their
// step times exchanged, so every process returns the same Sensitivity as one process.
//
// Thread-safety: pure function (with threads != 1 it runs on its own ThreadPool).
#pragma once

#include <string>
#include <vector>

#include "simulator/engine/work_split.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/spec/straggler_spec.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

// The speed a component is slowed to ("10% slower"; the what-if).
inline constexpr double kSensitivitySpeed = 0.9;

struct SensitivityEntry {
  std::string component;              // "stage 3 GPUs (GPUs 24-31)", "NICs (inter-node)", ...
  double step_time_s = 0;             // The step with this component slowed.
  double step_time_increase_pct = 0;  // Over the base step.
};

struct Sensitivity {
  double base_step_time_s = 0;
  std::vector<SensitivityEntry> entries;  // Worst first.
};

// REQUIRES: a valid plan; validate_straggler_model(stragglers, cluster).
// `threads`: the components' simulations run on that many threads (0 = one per hardware
// thread); the result does not depend on it. `split`: the processes sharing the components
// (null: this one alone); every process of the split makes the same call.
Sensitivity step_sensitivity(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                             const StepOptions& base, const StragglerModel& stragglers,
                             int threads = 1, const WorkSplit* split = nullptr);

}  // namespace ppsim
