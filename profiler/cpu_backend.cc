#include "profiler/cpu_backend.h"

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "profiler/cpu_kernels.h"
#include "profiler/measure.h"
#include "profiler/thread_collectives.h"
#include "simulator/cost/profile_fit.h"
#include "simulator/step/step_builder.h"

namespace ppsim {
namespace {

std::vector<GemmSample> measure_gemms(const ProfileOptions& options) {
  // Square sizes plus the thin shapes a transformer layer has (tokens x hidden x 3 hidden,
  // the weight gradient's short reduction), then any model's own shapes (--model).
  std::vector<BenchGemm> shapes =
      options.quick ? std::vector<BenchGemm>{{64, 64, 64}, {128, 128, 128}, {256, 256, 256},
                                             {256, 768, 256}, {512, 256, 64}}
                    : std::vector<BenchGemm>{{64, 64, 64},     {128, 128, 128},  {256, 256, 256},
                                             {512, 512, 512},  {1024, 1024, 1024},
                                             {256, 768, 256},  {512, 1536, 512}, {512, 256, 64},
                                             {2048, 512, 128}};
  append_missing(shapes, options.extra_gemms);
  CpuKernels kernels;
  std::vector<std::function<void()>> calls;
  for (const BenchGemm& s : shapes) {
    calls.push_back([&kernels, s] {
      kernels.gemm(double(s.m), double(s.n), double(s.k), double(s.batch));
    });
  }
  std::vector<double> seconds =
      time_medians_interleaved(options.warmup_iters, options.iters, calls);
  std::vector<GemmSample> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const BenchGemm& s = shapes[i];
    out.push_back({"fp32", double(s.m), double(s.n), double(s.k), double(s.batch), seconds[i]});
  }
  return out;
}

std::vector<AttentionSample> measure_attention(const ProfileOptions& options) {
  std::vector<BenchAttention> cases =
      options.quick ? std::vector<BenchAttention>{{2, 64, 64}, {2, 128, 64}, {2, 256, 64}}
                    : std::vector<BenchAttention>{{4, 128, 64},  {4, 256, 64},  {4, 512, 64},
                                                  {4, 128, 128}, {4, 256, 128}, {4, 512, 128}};
  append_missing(cases, options.extra_attention);
  CpuKernels kernels;
  std::vector<std::function<void()>> calls;
  for (const BenchAttention& c : cases) {
    for (bool backward : {false, true}) {
      calls.push_back([&kernels, c, backward] {
        kernels.attention(double(c.batch_heads), double(c.seq_len), double(c.head_dim), backward);
      });
    }
  }
  std::vector<double> seconds =
      time_medians_interleaved(options.warmup_iters, options.iters, calls);
  std::vector<AttentionSample> out;
  for (size_t i = 0; i < cases.size(); ++i) {
    const BenchAttention& c = cases[i];
    double heads = double(c.batch_heads), seq = double(c.seq_len), dim = double(c.head_dim);
    double fwd_flops = 2.0 * heads * seq * seq * dim;
    out.push_back({"fp32", false, "eigen", heads, seq, dim, true, fwd_flops, seconds[2 * i]});
    out.push_back({"fp32", true, "eigen", heads, seq, dim, true, 2.5 * fwd_flops, seconds[2 * i + 1]});
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
  // Adam over 64K to 16M parameters (quick: to 4M): one stage of tests/data/validate's
  // small_llama holds about 2M, and on a CPU core the per-parameter square root and division,
  // not the bytes, set its time.
  std::vector<size_t> counts =
      options.quick ? std::vector<size_t>{64 << 10, 1 << 20, 4 << 20}
                    : std::vector<size_t>{64 << 10, 512 << 10, 4 << 20, 16 << 20};
  for (size_t count : counts) {
    std::vector<float> parameters(count, 0.5f), gradients(count, 1e-3f), m(count, 0.0f),
        v(count, 0.0f);
    std::vector<unsigned short> copy(count);
    double seconds = time_median(options.warmup_iters, options.iters, [&] {
      CpuKernels::adam(parameters.data(), gradients.data(), m.data(), v.data(), copy.data(), count);
    });
    out.push_back({"adam", double(count) * kStepAdamBytesPerParameter, seconds});
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
