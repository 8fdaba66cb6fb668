// launcher_world_size (mpi_profile.h), launcher_rank and discard_output_unless_rank_zero
// (mpi_work_split.h): built with or without MPI, since a build without it must still notice
// that mpirun or srun started it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "profiler/mpi_profile.h"
#include "profiler/mpi_work_split.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// The first of `names` set in the environment, as an integer; `fallback` when none is.
int first_set(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return fallback;
}

}  // namespace

int launcher_world_size() {
  // SLURM_STEP_NUM_TASKS: set by srun for the tasks of a job step (not in an sbatch script's
  // own environment, where SLURM_NTASKS is set for the whole allocation).
  return std::max(1, first_set({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}, 1));
}

int launcher_rank() {
  if (launcher_world_size() == 1) return 0;
  return std::max(0, first_set({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}, 0));
}

void discard_output_unless_rank_zero() {
  if (launcher_rank() == 0) return;
  bool done = std::freopen("/dev/null", "w", stdout) && std::freopen("/dev/null", "w", stderr);
  PPSIM_CHECK(done, "cannot send a rank's output to /dev/null");
}

}  // namespace ppsim
