// The work split of a command launched as several ranks: `mpirun -np N ppsim plan ...` or
// `srun -n N ppsim simulate --iterations 1000 ...` share their simulations over the ranks
// (simulator/engine/work_split.h) and rank 0 prints the same bytes one process would.
// Plain C++ interface (no mpi.h): a build without MPI links mpi_work_split_absent.cc, whose
// launch_work_split() says how to get one.
//
// Launch detection (launcher_world_size(), mpi_profile.h): the environment, not MPI_Init, so a
// plain run never initialises MPI and behaves as without it.
//
// Output: ranks other than 0 send their stdout and stderr to /dev/null as soon as the split is
// made (before any input is read), so a report, a warning or an input error is printed once,
// by rank 0. Every rank reads the same inputs, so an input error ends every rank alike (exit
// status 2); a rank that fails alone ends with its exit status, and mpirun/srun then end the
// job.
//
// Thread-safety: MPI_THREAD_FUNNELED: only the thread that called launch_work_split() may call
// exchange() (run_split() does, after its pool's loop).
#pragma once

#include <memory>

#include "simulator/engine/work_split.h"

namespace ppsim {

// This process's rank in the launching job, from the environment (OMPI_COMM_WORLD_RANK,
// PMI_RANK or SLURM_PROCID); 0 when not launched as one of several ranks.
int launcher_rank();

// Ranks other than launcher_rank() 0 send their stdout and stderr to /dev/null from here on.
void discard_output_unless_rank_zero();

// nullptr when this process was not launched as one of several ranks (launcher_world_size()
// == 1). Otherwise discards the output of ranks other than 0, initialises MPI and returns the
// split over MPI_COMM_WORLD; MPI is finalised when it is destroyed. Throws InputError (exit 2) when
// this build has no MPI, or when MPI's world is not the launcher's (srun without an MPI plugin:
// each task a world of its own).
std::unique_ptr<WorkSplit> launch_work_split();

}  // namespace ppsim
