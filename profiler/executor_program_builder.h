// Lowers a StepProgram (simulator/step/step_program.h) to the executors' ExecutorProgram
// (executor_program.h), and turns an ExecutorResult back into the simulator's MeasuredStep.
#pragma once

#include "profiler/executor_program.h"
#include "simulator/engine/measured_step.h"
#include "simulator/step/step_program.h"

namespace ppsim {

ExecutorProgram lower_step_program(const StepProgram& program);

// `graph` is the simulated step's; under folding the step time is replay_with_measured's.
MeasuredStep measured_step_from(const ExecutorResult& result, const TaskGraph& graph, bool folded);

}  // namespace ppsim
