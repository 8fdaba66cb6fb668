// The CPU backend of `ppsim profile`: the same profile schema (simulator/cost/profile.h) measured
// on this machine's CPU, so profiling, fitting and profile-driven costing run in CI without a
// GPU. Its numbers describe the CPU, not a GPU: use such a profile to test the pipeline, not
// to plan a GPU cluster.
//
// What it measures (each point: warm-up, then timed single calls with steady_clock, median):
//   gemm        Eigen fp32 matrix products Y = X W over a fixed shape grid (dtype "fp32");
//   attention   per head S = QK^T, causal mask, row softmax, O = PV (forward) and the five
//               products of the backward, in Eigen fp32, impl "eigen"; FLOPs are counted as
//               profile.h defines them (causal), though the dense products do twice that;
//   memory      memcpy ("copy"), a row RMS norm ("norm") and a = b*c + d ("elementwise")
//               over arrays from 16 KiB to 32 MiB (DRAM), bytes = read + written (kernels:
//               cpu_kernels.h);
//   collectives ThreadCommunicator (thread_collectives.h) on groups of 2 threads (and 4 in
//               the full run), nccl-tests sizes from 1 KiB by factors of 4;
//   host_transfer nothing (no device memory).
// Sizes: --quick keeps every table to a few points so the run takes about a second.
#pragma once

#include "profiler/profile_options.h"
#include "simulator/cost/profile_table.h"

namespace ppsim {

// Measures and fits (fit_profile). Throws CollectiveTimeout if a thread collective hangs.
Profile run_cpu_profile(const ProfileOptions& options);

// Everything run_cpu_profile measures except collectives, unfitted: what rank 0 of a
// several-process profile (mpi_profile.h) adds to the MPI collectives.
Profile run_cpu_compute_profile(const ProfileOptions& options);

// The CPU model from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model_name();

}  // namespace ppsim
