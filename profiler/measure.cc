#include "profiler/measure.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

#include "simulator/spec/error.h"

namespace ppsim {

double median(std::vector<double> samples) {
  PPSIM_CHECK(!samples.empty(), "median of no samples");
  size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + mid, samples.end());
  double upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  double lower = *std::max_element(samples.begin(), samples.begin() + mid);
  return 0.5 * (lower + upper);
}

std::vector<double> time_medians_interleaved(int64_t warmup_iters, int64_t iters,
                                             const std::vector<std::function<void()>>& calls) {
  for (const auto& call : calls) {
    for (int64_t i = 0; i < warmup_iters; ++i) call();
  }
  std::vector<std::vector<double>> samples(calls.size());
  for (int64_t pass = 0; pass < iters; ++pass) {
    for (size_t c = 0; c < calls.size(); ++c) {
      auto start = std::chrono::steady_clock::now();
      calls[c]();
      auto end = std::chrono::steady_clock::now();
      samples[c].push_back(std::chrono::duration<double>(end - start).count());
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& s : samples) medians.push_back(median(std::move(s)));
  return medians;
}

std::string binary_size(double bytes) {
  static const char* kSuffix[] = {"", "K", "M", "G", "T"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && std::fmod(bytes, 1024) == 0) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:.0f}{}", bytes, kSuffix[unit]);
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == 0) return "unknown";
  return name;
}

}  // namespace ppsim
