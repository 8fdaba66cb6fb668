// Step and StepOptions: one training step of a plan as the step builder makes it (step_builder.h
// says how), and the options it is built with. Plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/step/replica_classes.h"
#include "simulator/cost/collective_cost.h"
#include "simulator/cost/cost_model.h"
#include "simulator/cost/cost_provenance.h"
#include "simulator/cost/optimizer_step_cost.h"
#include "simulator/cost/profile_table.h"
#include "simulator/model/optimizer_offload.h"
#include "simulator/model/worker_layout.h"
#include "simulator/schedule/pipeline_schedule.h"
#include "simulator/schedule/schedule_lowering.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/step/work_estimate.h"

namespace ppsim {

// What the step's tasks move (kStepParameterBytes, parameter_bytes.h) and how fast its optimizer
// runs (kStepAdamBytesPerParameter, optimizer_step_cost.h); the planner's lower bounds
// (plan_screen.cc) use the same figures. Sources in the header comment above.
// Optimizer offload's constants (CPU Adam rate, PCIe default, bytes moved) live in
// optimizer_offload.h and cluster_spec.h.

struct StepOptions {
  // Simulate identical data-parallel replicas once per class (exact: twins' flows weight the
  // links they share; replica_classes.h says when replicas are identical).
  bool deduplicate_replicas = true;
  // Communication costs nothing (schedule studies and exact-formula tests).
  bool ideal_links = false;
  // Compute speed factor per global GPU (1 = nominal; 0.5 = half speed). Empty: all 1.
  std::vector<double> gpu_speed;
  // Global nodes whose replicas are simulated on their own (the ends of a link fault, whose
  // routes are slowed after the build: straggler_effects.h).
  std::vector<int64_t> singled_out_nodes;
  EfficiencyTable efficiency;       // Compute efficiencies (defaults: cost_model.h).
  CollectiveEfficiency collective;  // Link efficiencies (defaults: collective_cost.h).
  // Measured costs (ppsim profile): op passes through CostModel, collectives and transfers
  // through collective_timing.h, for the GPUs the profile applies to (profile_for_gpu); null:
  // roofline and alpha-beta only. Not owned; must outlive build_step.
  const ProfileTable* profile = nullptr;
  std::string profile_path;  // The file `profile` came from, for reports. "" without one.
  // The profile's unfused attention (gemm_softmax, eigen) prices every attention pass whatever
  // the plan's kernel: `ppsim validate`, whose executor runs the profiler's kernel in its place
  // (cost_model.h). Otherwise a profile prices only the kernel it measured.
  bool profile_attention_stand_in = false;
  // build_step refuses (InputError naming --max-tasks/--max-memory) a step whose estimated
  // work exceeds this (work_estimate.h). Default: the documented budget.
  WorkBudget budget;
};

// One training step of a plan, built (build_step) and ready to simulate: its schedule, workers,
// lowered task graph and what each task stands for.
struct Step {
  Plan plan;
  PipelineSchedule schedule;  // Replica 0's (all replicas', unless their shares differ).
  // Per simulated replica: its schedule, with its own microbatch count (plan.replica_microbatches).
  std::vector<PipelineSchedule> replica_schedules;
  WorkerLayout layout;
  // Which replicas are simulated (classes.count() of them), whom each stands for.
  ReplicaClasses classes;
  Lowered lowered;
  // Per lowered worker (simulated replica * pp + stage): its layout index, static memory and
  // capacity.
  std::vector<int32_t> layout_worker;
  std::vector<double> static_memory_bytes;
  std::vector<double> capacity_bytes;
  // Per task: exposed communication seconds inside a compute task (0 for others).
  std::vector<double> embedded_comm_seconds;
  std::vector<std::string> worker_names;  // "stage 2 replica 0 (GPUs 16-23, H100-SXM-80GB)".
  CostProvenance provenance;
  // Per lowered worker with optimizer offload: its split and tasks; empty without offload.
  std::vector<WorkerOffload> offload;
  // Per task: the bytes it works on, for an executor that runs it (ppsim validate): a
  // collective's nccl-tests size, the optimizer's Adam bytes (kStepAdamBytesPerParameter per
  // parameter of its shard); 0 for other tasks.
  std::vector<double> task_bytes;
};

}  // namespace ppsim
