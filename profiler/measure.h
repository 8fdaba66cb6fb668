// Timing helpers shared by the profiler backends: warm-up, repeats, median (STYLE rule 15).
//
// Thread-safety: pure functions, except that time_median runs `call` on the calling thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ppsim {

// The median of `samples` (the mean of the middle two for an even count). REQUIRES: non-empty.
double median(std::vector<double> samples);

// Runs `call` warmup_iters times untimed, then times `iters` single calls with steady_clock
// and returns the median, in seconds. REQUIRES: iters >= 1.
template <typename Call>
double time_median(int64_t warmup_iters, int64_t iters, Call&& call) {
  for (int64_t i = 0; i < warmup_iters; ++i) call();
  std::vector<double> samples;
  samples.reserve(iters);
  for (int64_t i = 0; i < iters; ++i) {
    auto start = std::chrono::steady_clock::now();
    call();
    auto end = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double>(end - start).count());
  }
  return median(std::move(samples));
}

// The same for several calls, interleaved: each call's warm-up first, then `iters` passes that
// time every call once, and each call's median over the passes. A burst of load from another
// process then lands in one pass of every call instead of in all the samples of a few calls
// (on a shared CPU it did: a quick profile's GEMMs read up to 1.6x slow in one run of three).
// REQUIRES: iters >= 1.
std::vector<double> time_medians_interleaved(int64_t warmup_iters, int64_t iters,
                                             const std::vector<std::function<void()>>& calls);

// Bytes with a binary suffix, as nccl-tests' flags take them: 1024 -> "1K", 3<<30 -> "3G";
// sizes that are not whole multiples print in bytes ("1000").
std::string binary_size(double bytes);

// This machine's host name, "unknown" when it cannot be read.
std::string host_name();

}  // namespace ppsim
