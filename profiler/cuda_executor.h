// The CUDA executor of `ppsim validate --backend cuda`: runs an ExecutorProgram on this node's
// GPUs from one process, one host thread per worker (pipeline rank of a replica), worker w on
// device w (folded: device w % N, the workers of a device one after another). Plain C++17 with
// no CUDA types (cuda_executor.cu implements it; a build without nvcc links
// cuda_executor_absent.cc, which throws).
//
// Per instruction, between CUDA events on the worker's compute stream (bf16 data, fp32
// accumulate, as the profiler's CUDA backend measures them):
//   compute     its kernel calls: cuBLASLt GEMMs of the pass shape (TN layout, as the profiler),
//               attention as the profiler's "gemm_softmax" (batched QK^T, causal softmax, PV;
//               the backward's five products and its softmax-gradient kernel), memory-bound
//               passes as the norm or a*b+c kernel over the same bytes; the saved activations
//               are allocated with cudaMallocAsync at its start and freed at the backward's end
//               (stream-ordered, so a plan that does not fit fails with out of memory as
//               training would);
//   SEND        ncclSend on a send stream per peer, after an event of the producing action:
//               the sender's compute does not wait (schedule_lowering.h's rule);
//   RECV        ncclRecv on the compute stream; the transfer runs from max(the send's post
//               event, the receiver's arrival event) to the receive's end event;
//   GRAD_SYNC   each bucket as an NCCL collective (bf16) on a communicator of its workers;
//   OPT_STEP    a fused Adam kernel over bytes / 34 fp32 parameters, then any all-gather.
// Events of every device are read against that device's origin event, recorded after a host
// barrier and a device synchronize at each iteration's start (clocks aligned to the barrier).
// Memory: a static block of static_bytes per worker (cudaMalloc; the Adam arrays live in it),
// GEMM operands and workspace, and the activations; peak_bytes is the MemoryLedger's peak plus
// what the device held before the executor allocated (cudaMemGetInfo: the CUDA context and
// NCCL's buffers), so it compares with the memory model's peak, whose workspace counts those.
// Not proven on hardware in this repository's CI (no GPU there): docs/validate.md.
#pragma once

#include <string>

#include "profiler/executor_program.h"

namespace ppsim {

// Throws std::runtime_error naming host, device, file:line and the library's error (an out of
// memory names the worker and the action); "no CUDA device" when there is none.
ExecutorResult run_step_on_cuda(const ExecutorProgram& program, const ExecutorOptions& options);

}  // namespace ppsim
