// RankCollectiveRunner: one rank's side of a group communicator that runs the profiled
// collectives, so the sweep (mpi_collective_sweep.h) times MPI between CPU processes and NCCL
// between GPUs with one loop. A call is started, then polled, so the sweep can give up on a
// hung peer instead of blocking in the library.
//
// Sizes: `bytes` is the nccl-tests size S (profile.h): all_reduce S in and out; all_gather
// S/n in, S out; reduce_scatter S in, S/n out; alltoall S in and out, S/n to each peer;
// sendrecv S to rank+1 and S from rank-1 of the group. REQUIRES: S a multiple of 16n
// (collective_size() in mpi_collective_sweep.h rounds to that).
//
// Thread-safety: the thread that made the world calls everything.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

#include "simulator/cost/collective_cost.h"

namespace ppsim {

class RankCollectiveRunner {
 public:
  virtual ~RankCollectiveRunner() = default;
  // Starts one call of `op` (not kBroadcast) of size `bytes` <= the max_bytes given at creation.
  virtual void start(Collective op, size_t bytes) = 0;
  // True once the started call has completed on this rank. Throws std::runtime_error naming
  // the library's error when the call failed.
  virtual bool test() = 0;
  // Seconds the last completed call took on this rank (steady_clock for MPI, CUDA events for
  // NCCL).
  virtual double elapsed() const = 0;
  // Gives up on the group after a timeout: NCCL aborts its communicator (ncclCommAbort); MPI
  // cannot abort one communicator, so the MPI runner does nothing and the job is aborted.
  virtual void abort() = 0;
};

// MPI collectives on `group` over float buffers of max_bytes (non-blocking MPI_Iallreduce,
// MPI_Iallgather, MPI_Ireduce_scatter_block, MPI_Ialltoall, MPI_Isend/MPI_Irecv; float sum).
std::unique_ptr<RankCollectiveRunner> make_mpi_runner(MPI_Comm group, size_t max_bytes);

// NCCL collectives (bf16 sum) on GPU `device` for the ranks of `group`: group rank 0 makes the
// ncclUniqueId, MPI_Bcast hands it to the others, and each calls ncclCommInitRank (non-blocking,
// so a missing peer times out after `timeout` s instead of hanging). Throws std::runtime_error
// in a build without NCCL. Compiled, not yet run on GPUs (docs/profile.md).
std::unique_ptr<RankCollectiveRunner> make_nccl_runner(MPI_Comm group, int device, size_t max_bytes,
                                                       double timeout);

}  // namespace ppsim
