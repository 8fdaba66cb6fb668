// enqueue_nccl: one rank's part of one profiled NCCL call, shared by the single-process
// (nccl_bench.cu) and the several-process (nccl_rank_bench.cu) benchmarks so both move the
// same bytes. CUDA and NCCL types: included by .cu files only.
//
// Sizes follow nccl-tests for bf16 (2-byte) elements: `bytes` is the size column S; each
// rank's share is (S/2/n) elements rounded down to a multiple of 8 (16 bytes). alltoall is n
// grouped send/recv pairs of that share; sendrecv sends S to rank+1 and receives S from rank-1.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "profiler/cuda_bench.h"

namespace ppsim::cuda {

// Returns the first NCCL result that is neither ncclSuccess nor ncclInProgress (a
// non-blocking communicator's "enqueue still running"), else the last one.
inline ncclResult_t enqueue_nccl(NcclOp op, const void* send, void* recv, size_t bytes, int rank,
                                 int n, ncclComm_t comm, cudaStream_t stream) {
  const char* s = static_cast<const char*>(send);
  char* d = static_cast<char*>(recv);
  const size_t count = bytes / 2;
  const size_t share = (count / n) & ~size_t(7);
  auto failed = [](ncclResult_t r) { return r != ncclSuccess && r != ncclInProgress; };
  ncclResult_t r = ncclSuccess;
  switch (op) {
    case NcclOp::kAllReduce:
      return ncclAllReduce(s, d, count, ncclBfloat16, ncclSum, comm, stream);
    case NcclOp::kAllGather:
      return ncclAllGather(s, d, share, ncclBfloat16, comm, stream);
    case NcclOp::kReduceScatter:
      return ncclReduceScatter(s, d, share, ncclBfloat16, ncclSum, comm, stream);
    case NcclOp::kAllToAll:
      if (failed(r = ncclGroupStart())) return r;
      for (int peer = 0; peer < n; ++peer) {
        if (failed(r = ncclSend(s + peer * share * 2, share, ncclBfloat16, peer, comm, stream)))
          return r;
        if (failed(r = ncclRecv(d + peer * share * 2, share, ncclBfloat16, peer, comm, stream)))
          return r;
      }
      return ncclGroupEnd();
    case NcclOp::kSendRecv:
      if (failed(r = ncclGroupStart())) return r;
      if (failed(r = ncclSend(s, count, ncclBfloat16, (rank + 1) % n, comm, stream))) return r;
      if (failed(r = ncclRecv(d, count, ncclBfloat16, (rank + n - 1) % n, comm, stream))) return r;
      return ncclGroupEnd();
  }
  return ncclInvalidArgument;
}

}  // namespace ppsim::cuda
