// The time of one GPU's Adam step, shared by the step builder and the planner's bounds
// (plan_screen.cc), so the bound and the simulation price it alike.
//
// Thread-safety: pure function.
#pragma once

#include "simulator/cost/profile_table.h"
#include "simulator/spec/gpu_catalog.h"

namespace ppsim {

// Bytes the Adam step touches per parameter, the figure the step builder and the planner's bounds
// share: fp32 master, gradient, m and v read (16), master, m, v and the bf16 copy written (14),
// the gradient-norm pass read (4).
inline constexpr double kStepAdamBytesPerParameter = 34;

// Seconds for an Adam step over `parameters` parameters, kStepAdamBytesPerParameter bytes each:
// the profile's measured "adam" kernel when `profile` (already the one that applies to this GPU,
// profile_for_gpu) has that table, else the bytes at the GPU's memory bandwidth times
// `memory_efficiency` (Adam is memory-bound on a GPU; on a CPU core its square
// root and division make it compute-bound, which only a measurement sees).
double adam_step_seconds(double parameters, const GpuSpec& gpu, double memory_efficiency,
                         const ProfileTable* profile);

}  // namespace ppsim
