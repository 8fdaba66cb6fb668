// NcclRankComm: this process's rank in an NCCL communicator that spans processes (and nodes),
// for the several-process profile. Plain C++ (no CUDA, NCCL or MPI types), implemented in
// nccl_rank_bench.cu; the caller carries the ncclUniqueId between processes (over MPI:
// mpi_collective_runner.cc). Compiled where nvcc, NCCL and MPI are found; not yet run on
// several GPUs (docs/profile.md says so).
//
// Timeouts: the communicator is created non-blocking (ncclConfig_t.blocking = 0), so neither
// its creation nor a call can block the host: init waits by polling ncclCommGetAsyncError and
// gives up (ncclCommAbort, std::runtime_error naming host and ranks) after `timeout` seconds;
// calls are polled through done(), and abort() tears the communicator down.
//
// Thread-safety: one thread per object.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "profiler/cuda_bench.h"

namespace ppsim::cuda {

// sizeof(ncclUniqueId).
inline constexpr size_t kNcclUniqueIdBytes = 128;

// A fresh ncclUniqueId as kNcclUniqueIdBytes bytes (made on one rank, sent to the others).
std::string nccl_unique_id();

class NcclRankComm {
 public:
  // Joins rank `rank` of `ranks` on GPU `device` with buffers of max_bytes. REQUIRES:
  // unique_id from nccl_unique_id() on one rank of the group; 0 <= rank < ranks.
  NcclRankComm(int device, const std::string& unique_id, int ranks, int rank, size_t max_bytes,
               double timeout);
  ~NcclRankComm();
  NcclRankComm(const NcclRankComm&) = delete;
  NcclRankComm& operator=(const NcclRankComm&) = delete;

  // Enqueues one call of `op`, nccl-tests size `bytes` (bf16; sizes as cuda_bench.h's
  // time_nccl), between two CUDA events on this rank's stream.
  void start(NcclOp op, size_t bytes);
  // True once the call's end event has completed; throws on a CUDA or asynchronous NCCL error.
  bool done();
  // Seconds between the call's events.
  double elapsed() const;
  // ncclCommAbort: frees this rank from a call a peer will never join.
  void abort();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ppsim::cuda
