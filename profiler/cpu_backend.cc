#include "profiler/cpu_backend.h"

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "profiler/cpu_kernels.h"
#include "profiler/measure.h"
#include "profiler/thread_collectives.h"

namespace ppsim {
namespace {

struct Shape {
  int m, n, k;
};

std::vector<GemmSample> measure_gemms(const ProfileOptions& options) {
  // Square sizes plus the thin shapes a transformer layer has (tokens x hidden x 3 hidden,
  // the weight gradient's short reduction).
  std::vector<Shape> shapes =
      options.quick ? std::vector<Shape>{{64, 64, 64}, {128, 128, 128}, {256, 256, 256},
                                         {256, 768, 256}, {512, 256, 64}}
                    : std::vector<Shape>{{64, 64, 64},    {128, 128, 128}, {256, 256, 256},
                                         {512, 512, 512}, {1024, 1024, 1024}, {256, 768, 256},
                                         {512, 1536, 512}, {512, 256, 64},  {2048, 512, 128}};
  std::vector<GemmSample> out;
  CpuKernels kernels;
  for (const Shape& s : shapes) {
    double seconds = time_median(options.warmup_iters, options.iters,
                                 [&] { kernels.gemm(s.m, s.n, s.k); });
    out.push_back({"fp32", double(s.m), double(s.n), double(s.k), 1, seconds});
  }
  return out;
}

std::vector<AttentionSample> measure_attention(const ProfileOptions& options) {
  struct Case {
    int batch_heads, seq, dim;
  };
  std::vector<Case> cases = options.quick
                                ? std::vector<Case>{{2, 64, 64}, {2, 128, 64}, {2, 256, 64}}
                                : std::vector<Case>{{4, 128, 64},  {4, 256, 64},  {4, 512, 64},
                                                    {4, 128, 128}, {4, 256, 128}, {4, 512, 128}};
  std::vector<AttentionSample> out;
  CpuKernels kernels;
  for (const Case& c : cases) {
    double fwd_flops = 2.0 * c.batch_heads * double(c.seq) * c.seq * c.dim;
    double fwd = time_median(options.warmup_iters, options.iters,
                             [&] { kernels.attention(c.batch_heads, c.seq, c.dim, false); });
    double bwd = time_median(options.warmup_iters, options.iters,
                             [&] { kernels.attention(c.batch_heads, c.seq, c.dim, true); });
    out.push_back({"fp32", false, "eigen", double(c.batch_heads), double(c.seq), double(c.dim),
                   true, fwd_flops, fwd});
    out.push_back({"fp32", true, "eigen", double(c.batch_heads), double(c.seq), double(c.dim),
                   true, 2.5 * fwd_flops, bwd});
  }
  return out;
}

std::vector<MemorySample> measure_memory(const ProfileOptions& options) {
  // Array sizes from 16 KiB: a small model's activations (what `ppsim validate --backend cpu`
  // runs) are tens of KiB, below which a lookup would only see a latency floor. Up to 32 MiB
  // arrays even when quick (64-128 MiB moved per call): more than the L3 one core sees on
  // current server CPUs (32 MiB per AMD EPYC CCD), so the largest point is DRAM bandwidth,
  // which the optimizer's tens of MiB of states stream at.
  std::vector<double> sizes = options.quick
                                  ? std::vector<double>{16 << 10, 128 << 10, 1 << 20, 4 << 20,
                                                        32 << 20}
                                  : std::vector<double>{16 << 10, 128 << 10, 1 << 20, 4 << 20,
                                                        16 << 20, 32 << 20, 64 << 20};
  std::vector<MemorySample> out;
  CpuKernels kernels;
  for (double size : sizes) {
    struct Kernel {
      const char* name;
      MemoryKernel kernel;
      double arrays;  // Arrays moved: bytes = arrays x size.
    };
    for (Kernel k : {Kernel{"copy", MemoryKernel::kCopy, 2}, Kernel{"norm", MemoryKernel::kNorm, 2},
                     Kernel{"elementwise", MemoryKernel::kElementwise, 4}}) {
      double bytes = k.arrays * size;
      double seconds = time_median(options.warmup_iters, options.iters,
                                   [&] { kernels.memory(k.kernel, bytes); });
      out.push_back({k.name, bytes, seconds});
    }
  }
  return out;
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(' ', colon + 1);
        if (start != std::string::npos) return line.substr(start);
      }
    }
  }
  return "unknown CPU";
}

Profile run_cpu_compute_profile(const ProfileOptions& options) {
  Profile profile;
  profile.backend = "cpu";
  profile.device.name = cpu_model_name();
  profile.device.count = options.quick ? 2 : 4;
  profile.device.host = host_name();
  profile.device.library =
      fmt::format("Eigen {}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
  profile.method = {options.warmup_iters, options.iters, "steady_clock"};
  profile.gemm = measure_gemms(options);
  profile.attention = measure_attention(options);
  profile.memory = measure_memory(options);
  return profile;
}

Profile run_cpu_profile(const ProfileOptions& options) {
  Profile profile = run_cpu_compute_profile(options);
  std::vector<int> groups = options.quick ? std::vector<int>{2} : std::vector<int>{2, 4};
  profile.collectives = measure_thread_collectives(groups, 1024, options.quick ? 256 * 1024 : 4 << 20,
                                                   options.warmup_iters, options.iters,
                                                   options.collective_timeout);
  profile.fits = fit_profile(profile);
  return profile;
}

}  // namespace ppsim
