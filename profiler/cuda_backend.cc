#include "profiler/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "profiler/benchmark_shapes.h"
#include "profiler/cuda_bench.h"
#include "profiler/measure.h"
#include "simulator/cost/profile_fit.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// The catalog GPU a device name stands for, "" when none matches plainly.
std::string catalog_name(const std::string& device) {
  struct Rule {
    const char* contains;
    const char* catalog;
  };
  // The SXM parts; PCIe and NVL parts name themselves so.
  const Rule rules[] = {{"H200", "H200-SXM-141GB"}, {"H100 PCIe", "H100-PCIe-80GB"},
                        {"H100 NVL", "H100-NVL-94GB"}, {"H100", "H100-SXM-80GB"},
                        {"A100-SXM4-80GB", "A100-SXM-80GB"}, {"A100-SXM4-40GB", "A100-SXM-40GB"},
                        {"B200", "B200"}};
  for (const Rule& rule : rules) {
    if (device.find(rule.contains) != std::string::npos) {
      if (find_gpu(rule.catalog)) return rule.catalog;
      return "";
    }
  }
  return "";
}

std::string dtype_name(cuda::Dtype dtype) {
  switch (dtype) {
    case cuda::Dtype::kBf16: return "bf16";
    case cuda::Dtype::kFp16: return "fp16";
    case cuda::Dtype::kFp8: return "fp8";
  }
  return "bf16";
}

}  // namespace

bool cuda_backend_built() { return true; }
bool nccl_built() { return cuda::have_nccl(); }

int cuda_device_count(std::string* why) {
  cuda::DeviceInfo info = cuda::device_info();
  if (info.count == 0 && why) *why = "no CUDA device found (" + info.error + ")";
  return info.count;
}

Profile run_cuda_compute_profile(const ProfileOptions& options) {
  cuda::DeviceInfo info = cuda::device_info();
  if (info.count == 0) {
    throw InputError("--backend cuda", "",
                     "no CUDA device found (" + info.error + "); use --backend cpu");
  }
  int warmup = static_cast<int>(options.warmup_iters);
  int iters = static_cast<int>(options.iters);
  Profile profile;
  profile.backend = "cuda";
  profile.device.name = info.name;
  profile.device.catalog_gpu = catalog_name(info.name);
  profile.device.count = info.count;
  profile.device.host = host_name();
  profile.device.driver = info.driver;
  profile.device.cuda = info.runtime;
  profile.device.nccl = cuda::nccl_version();
  profile.device.library = "cublasLt " + info.cublaslt;
  profile.method = {options.warmup_iters, options.iters, "cuda_events"};

  // GEMMs: zoo shapes (quick: a fixed dozen), bf16 and fp16, fp8 from compute capability 8.9.
  std::vector<BenchGemm> shapes =
      options.quick ? quick_gemm_shapes() : zoo_gemm_shapes(/*max_flops=*/4e13, /*max_shapes=*/160);
  append_missing(shapes, options.extra_gemms);
  std::vector<cuda::Dtype> dtypes = {cuda::Dtype::kBf16, cuda::Dtype::kFp16};
  bool fp8 = info.cc_major > 8 || (info.cc_major == 8 && info.cc_minor >= 9);
  if (fp8) dtypes.push_back(cuda::Dtype::kFp8);
  for (cuda::Dtype dtype : dtypes) {
    for (const BenchGemm& g : shapes) {
      double seconds = cuda::time_gemm(0, g.m, g.n, g.k, g.batch, dtype, warmup, iters);
      if (seconds <= 0) {
        fmt::print(stderr, "ppsim: warning: cuBLASLt has no {} algorithm for m={} n={} k={} batch={}; skipped\n",
                   dtype_name(dtype), g.m, g.n, g.k, g.batch);
        continue;
      }
      profile.gemm.push_back({dtype_name(dtype), double(g.m), double(g.n), double(g.k),
                              double(g.batch), seconds});
    }
  }
  // Attention: the batched-GEMM + softmax path (no cuDNN fused attention in this build).
  for (cuda::Dtype dtype : {cuda::Dtype::kBf16, cuda::Dtype::kFp16}) {
    if (options.quick && dtype == cuda::Dtype::kFp16) continue;
    std::vector<BenchAttention> calls = attention_shapes(options.quick);
    append_missing(calls, options.extra_attention);
    for (const BenchAttention& a : calls) {
      cuda::AttentionTimes t =
          cuda::time_attention(0, a.batch_heads, a.seq_len, a.head_dim, dtype, warmup, iters);
      double flops = 2.0 * a.batch_heads * double(a.seq_len) * a.seq_len * a.head_dim;
      for (bool backward : {false, true}) {
        profile.attention.push_back({dtype_name(dtype), backward, "gemm_softmax",
                                     double(a.batch_heads), double(a.seq_len), double(a.head_dim),
                                     true, backward ? 2.5 * flops : flops,
                                     backward ? t.backward : t.forward});
      }
    }
  }
  // Memory-bound kernels over arrays from 16 MiB (past L2) to 1 GiB.
  std::vector<size_t> arrays = options.quick ? std::vector<size_t>{64u << 20, 256u << 20}
                                             : std::vector<size_t>{16u << 20, 64u << 20,
                                                                   256u << 20, 1024u << 20};
  for (size_t bytes : arrays) {
    double b = double(bytes);
    profile.memory.push_back({"copy", 2 * b, cuda::time_memory(0, cuda::MemoryKernel::kCopy, bytes, warmup, iters)});
    profile.memory.push_back({"norm", 2 * b, cuda::time_memory(0, cuda::MemoryKernel::kNorm, bytes, warmup, iters)});
    profile.memory.push_back({"elementwise", 4 * b, cuda::time_memory(0, cuda::MemoryKernel::kElementwise, bytes, warmup, iters)});
  }
  // Pinned host transfers, 1 MiB to 1 GiB (quick: 16 MiB and 256 MiB).
  std::vector<size_t> transfers = options.quick ? std::vector<size_t>{16u << 20, 256u << 20}
                                                : std::vector<size_t>{1u << 20, 4u << 20, 16u << 20,
                                                                      64u << 20, 256u << 20, 1024u << 20};
  for (bool h2d : {true, false}) {
    for (size_t bytes : transfers) {
      profile.host_transfer.push_back({h2d, true, double(bytes),
                                       cuda::time_host_transfer(0, h2d, bytes, warmup, iters)});
    }
  }
  return profile;
}

Profile run_cuda_profile(const ProfileOptions& options) {
  Profile profile = run_cuda_compute_profile(options);
  cuda::DeviceInfo info = cuda::device_info();
  int warmup = static_cast<int>(options.warmup_iters);
  int iters = static_cast<int>(options.iters);
  // NCCL collectives on 2, 4, 8 local GPUs, 1 KiB to 1 GiB (quick: 64 MiB) by factors of 4.
  if (cuda::have_nccl() && info.count >= 2) {
    std::vector<size_t> sizes;
    for (size_t b = 1024; b <= (options.quick ? (64u << 20) : (1u << 30)); b *= 4) sizes.push_back(b);
    const std::pair<cuda::NcclOp, Collective> ops[] = {
        {cuda::NcclOp::kAllReduce, Collective::kAllReduce},
        {cuda::NcclOp::kAllGather, Collective::kAllGather},
        {cuda::NcclOp::kReduceScatter, Collective::kReduceScatter},
        {cuda::NcclOp::kAllToAll, Collective::kAllToAll},
        {cuda::NcclOp::kSendRecv, Collective::kSendRecv}};
    for (int n : {2, 4, 8}) {
      if (n > info.count) break;
      for (const auto& [nccl_op, op] : ops) {
        std::vector<double> t =
            cuda::time_nccl(nccl_op, n, sizes, warmup, iters, options.collective_timeout);
        for (size_t i = 0; i < sizes.size(); ++i) {
          profile.collectives.push_back({op, n, n, "intra_node", double(sizes[i]), t[i]});
        }
      }
    }
  } else if (!cuda::have_nccl()) {
    fmt::print(stderr, "ppsim: warning: built without NCCL: no collectives measured\n");
  } else {
    fmt::print(stderr, "ppsim: note: one GPU: no collectives measured\n");
  }
  profile.fits = fit_profile(profile);
  return profile;
}

}  // namespace ppsim
