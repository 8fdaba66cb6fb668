// One `ppsim validate` run, from specs to the comparison: the prediction set up for the backend
// (a CPU backend is predicted on the CPU profile's cluster, cpu_cluster.h), the step built with
// every replica, simulated, lowered to an ExecutorProgram, executed, measured and compared.
// The CLI (tools/validate_command.cc) and the benchmark (benchmarks/validate_benchmark.cc) both
// call it, so they validate the same way.
//
// Prediction settings for an executor (not a training framework): EfficiencyTable's
// microbatch_overhead and step_overhead are 0 (the executor has no Python dispatch, no per-step
// host work); on the CPU also kernel_overhead 0 (a kernel is a function call) and memory
// efficiency 1 (the profile measured achieved bandwidth).
#pragma once

#include <string>

#include "profiler/executor_program.h"
#include "simulator/cost/profile_table.h"
#include "simulator/report/validation_report.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

struct ValidationRequest {
  std::string backend = "cpu";              // "cpu" or "cuda".
  const ProfileTable* profile = nullptr;    // Required for "cpu" (a CPU profile).
  std::string profile_source;               // Its path, for messages and the report.
  ExecutorOptions run;                      // Iterations, folding, timeout.
  double tolerance_pct = 10;                // See tools/validate_command.cc for the default.
};

struct ValidationRun {
  Step step;                // As predicted (its graph numbers the measured tasks too).
  ValidationResult result;
};

// REQUIRES: the plan passed validate_plan and schedule_problem; tp = cp = ep = 1.
// Throws InputError for input the backend cannot use (no CPU profile for "cpu", a run that
// would not fit in host memory), std::runtime_error when the run itself fails.
ValidationRun run_validation(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                             const ValidationRequest& request);

}  // namespace ppsim
