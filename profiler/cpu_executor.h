// The CPU executor of `ppsim validate --backend cpu`: runs an ExecutorProgram with one thread
// per worker (pipeline rank of a replica), so the schedule's overlap and waiting are real.
//
// Per instruction, timed with steady_clock from the iteration's start (a barrier):
//   compute     its kernel calls on CpuKernels (the profiler's kernels), after allocating
//               alloc_bytes of saved activations; free_bytes are released at its end;
//   SEND        posts the tensor on the RendezvousChannel (not timed: the receiver times it);
//   RECV        waits for the post, then copies the bytes: the transfer task runs from
//               max(post, arrival at RECV) to the end of the copy;
//   GRAD_SYNC   each bucket as a ThreadCommunicator collective over its workers' threads;
//   OPT_STEP    CpuKernels::adam over bytes / 34 parameters, then any parameter all-gather.
// Gradient reductions run on the worker's thread at the GRAD_SYNC position, not overlapped with
// later compute as the simulator's dp stream overlaps them (docs/validate.md, limits).
// Memory: a real static block of static_bytes per worker (the Adam arrays live in it) and real
// activation buffers, counted by a MemoryLedger; peak_bytes is the ledger's peak.
// compute_cpu_share: CLOCK_THREAD_CPUTIME_ID over steady_clock across compute actions.
// Folding (options.fold): one thread runs the workers one after another; sends, receives and
// collectives are skipped and marked unmeasured.
#pragma once

#include "profiler/executor_program.h"

namespace ppsim {

// Throws std::runtime_error when a peer times out (the schedules of two workers disagree) or
// a collective hangs; the message names the workers.
ExecutorResult run_step_on_cpu(const ExecutorProgram& program, const ExecutorOptions& options);

}  // namespace ppsim
