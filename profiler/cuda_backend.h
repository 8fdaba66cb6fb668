// The CUDA backend of `ppsim profile`: cuBLASLt GEMMs, attention, memory kernels, pinned
// host<->device copies and NCCL collectives on the GPUs of this node, timed with CUDA events
// (warm-up, repeats, median). Plain C++ interface: callers need no CUDA headers, and a build
// without nvcc links cuda_backend_absent.cc instead, whose run_cuda_profile says so.
//
// Process model: one process drives every local GPU (ncclCommInitAll over devices 0..N-1,
// like nccl-tests without MPI: -g N). Groups measured: 2, 4 and 8 GPUs (those that fit in N),
// group "intra_node". Several processes and nodes (mpirun, one rank per GPU, NCCL bootstrapped
// over MPI) are mpi_profile.h's, built where MPI is found.
//
// What it measures:
//   gemm        cuBLASLt matmul, bf16 and fp16 (fp8 e4m3 on compute capability >= 8.9), fp32
//               accumulate, over the GEMM shapes the model zoo's layers produce at tp 1-8 and
//               micro-batch 1-8 (benchmark_shapes.h; --quick: a fixed dozen);
//   attention   impl "gemm_softmax": batched cuBLASLt QK^T, a causal softmax kernel, batched PV
//               (forward); the backward's five batched products plus its softmax-gradient kernel;
//               FLOPs counted as profile.h defines them;
//   memory      copy, row RMS norm and a*b+c kernels, bytes = read + written;
//   host_transfer cudaMemcpyAsync from and to pinned host memory;
//   collectives all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, 1 KiB to 1 GiB
//               (--quick: to 64 MiB) by factors of 4, bf16 sum, out of place.
// Every collective is guarded by a watchdog thread: when one takes longer than
// ProfileOptions::collective_timeout, the watchdog calls ncclCommAbort on every communicator
// of the group and the run fails with a message naming the ranks (GPUs) of the group.
// CHECK failures name host, device, file:line and the library's error string.
#pragma once

#include <string>

#include "profiler/profile_options.h"
#include "simulator/cost/profile_table.h"

namespace ppsim {

// True when this binary was built with the CUDA backend (nvcc found at configure time).
bool cuda_backend_built();
// True when the CUDA backend includes NCCL collectives.
bool nccl_built();

// CUDA devices visible to this process; 0 (and the reason in *why) when there is no device,
// no driver, or no CUDA backend.
int cuda_device_count(std::string* why);

// Measures and fits (fit_profile). Throws InputError "no CUDA device found; use --backend cpu"
// when cuda_device_count() is 0, and std::runtime_error for a CUDA, cuBLAS or NCCL failure
// (message as the header says).
Profile run_cuda_profile(const ProfileOptions& options);

// Everything run_cuda_profile measures except collectives (GEMM, attention, memory, host
// transfers on GPU 0), unfitted: what rank 0 of a several-process profile (mpi_profile.h) adds
// to the NCCL collectives measured across processes. Throws as run_cuda_profile.
Profile run_cuda_compute_profile(const ProfileOptions& options);

}  // namespace ppsim
