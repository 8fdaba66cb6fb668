// The several-process profile: `mpirun -np N ppsim profile ...`, one rank per GPU (CUDA
// backend) or per CPU process (CPU backend), ranks grouped into nodes by
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). Plain C++ interface (no mpi.h): a build without
// MPI links mpi_profile_absent.cc, whose run_mpi_profile says how to get one.
//
// Launch detection: the environment, not MPI_Init, so a plain run needs no MPI at all. A
// process belongs to a several-rank job when OMPI_COMM_WORLD_SIZE (OpenMPI's mpirun),
// PMI_SIZE (MPICH's hydra, Slurm's srun --mpi=pmi2) or SLURM_STEP_NUM_TASKS (any srun) is
// above 1, the first of them that is set.
//
// What each rank does:
//   rank 0      measures the compute tables (GEMM, attention, memory, host transfers) on its
//               device as the single-process backend does, while the others wait idle;
//   every rank  joins the collective sweep (mpi_collective_sweep.h) on the groups of
//               profile_groups(): CPU backend, MPI collectives between the processes; CUDA
//               backend, NCCL on GPU local_rank (modulo the GPUs it sees), communicators
//               bootstrapped by broadcasting the ncclUniqueId over MPI;
//   rank 0      fits (fit_profile) and returns the profile; the others return nothing.
// device.count is the number of ranks and device.host lists the hosts.
#pragma once

#include <optional>
#include <string>

#include "profiler/profile_options.h"
#include "simulator/cost/profile_table.h"

namespace ppsim {

// True when this binary was built with MPI (PPSIM_HAVE_MPI).
bool mpi_built();

// Ranks of the job that launched this process, from the environment (header); 1 when the
// process was not started by an MPI launcher.
int launcher_world_size();

// REQUIRES: launcher_world_size() > 1; backend "cpu", "cuda" or "auto" (cuda when every rank
// sees a GPU); ranks_per_node, when given, >= 1: every that many consecutive ranks stand for
// one node instead of the shared-memory split (to exercise rail and all groups on one host).
// Returns the profile on world rank 0 and nullopt on the others. A failure on any rank (bad
// input, a hung collective, a library error) prints "ppsim: error: rank R (host): ..." and
// ends the whole job with exit status 2 (MPI_Abort), so no rank is left waiting. Without MPI
// in the build: throws InputError saying so.
std::optional<Profile> run_mpi_profile(const std::string& backend, const ProfileOptions& options,
                                       std::optional<int> ranks_per_node);

}  // namespace ppsim
