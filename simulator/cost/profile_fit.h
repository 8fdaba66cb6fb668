// The models fitted to a profile's measurements (Profile::fits), written by `ppsim profile`.
//
// Fitted models, least squares on relative error (each point weighs 1/time), so a 1 KiB
// all-reduce counts as much as a 1 GiB one:
//   alpha-beta, per collective and group shape, memory kernel and transfer direction:
//     time = alpha + bytes / beta, piecewise over bytes where NCCL switches protocol (LL, LL128,
//     Simple): up to three pieces over contiguous size ranges, a break kept only when it
//     halves the rms residual.
//   compute, per GEMM dtype and per attention (dtype, pass):
//     time = latency + flops / peak + bytes / bandwidth, bytes = elem * (m*k + k*n + m*n) *
//     batch for a GEMM, elem * 4 * batch_heads * seq_len * head_dim for attention; all three
//     coefficients >= 0 (a term whose best value is negative is dropped: bandwidth 0 means no
//     bytes term). efficiency(shape) = flops / (time * peak).
//   Residuals are (model - measured) / measured: their rms and max |.| are reported.
//
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "simulator/cost/profile.h"

namespace ppsim {

// Least-squares fits of the header above. REQUIRES: bytes > 0 and seconds > 0 in every point.
// Exact data (time = alpha + bytes/beta) comes back exactly, to rounding.
AlphaBetaFit fit_alpha_beta(const std::vector<double>& bytes, const std::vector<double>& seconds,
                            int max_pieces = 3);
// REQUIRES: flops.size() == bytes.size() == seconds.size() >= 1; seconds > 0.
ComputeFit fit_compute(const std::vector<double>& flops, const std::vector<double>& bytes,
                       const std::vector<double>& seconds);
// Every fit of the header over the profile's measured tables (replaces profile.fits).
ProfileFits fit_profile(const Profile& profile);

}  // namespace ppsim
