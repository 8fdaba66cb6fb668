// The CUDA measurements behind cuda_backend.cc: plain C++17 declarations (no simulator
// headers, no CUDA types), implemented in cuda_bench.cu and nccl_bench.cu and compiled by nvcc.
// Every function times with CUDA events (warm-up calls, then `iters` timed calls, median) and
// throws std::runtime_error naming host, device, file:line and the library's error string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ppsim::cuda {

struct DeviceInfo {
  int count = 0;             // Visible devices; 0 with `error` set when none.
  std::string error;         // Why there is no device (the CUDA error string).
  std::string name;          // Device 0's name, e.g. "NVIDIA H200".
  int cc_major = 0, cc_minor = 0;
  std::string driver;        // "13.0" (cudaDriverGetVersion).
  std::string runtime;       // "13.0" (cudaRuntimeGetVersion).
  std::string cublaslt;      // "13.0.0".
  std::string nccl;          // "2.27.7", "" without NCCL.
};

DeviceInfo device_info();

enum class Dtype { kBf16, kFp16, kFp8 };

// Median seconds of one cuBLASLt matmul Y[m,n] = X[m,k] W[k,n], `batch` strided products,
// fp32 accumulate, on `device`. Returns a negative value when cuBLASLt has no algorithm.
double time_gemm(int device, int64_t m, int64_t n, int64_t k, int64_t batch, Dtype dtype,
                 int warmup, int iters);

// Median seconds of the "gemm_softmax" attention forward and backward (cuda_backend.h),
// bf16 or fp16. Returns {forward, backward}.
struct AttentionTimes {
  double forward = 0, backward = 0;
};
AttentionTimes time_attention(int device, int64_t batch_heads, int64_t seq_len, int64_t head_dim,
                              Dtype dtype, int warmup, int iters);

enum class MemoryKernel { kCopy, kNorm, kElementwise };
// Median seconds of one kernel over arrays of `array_bytes` each (copy and norm read one and
// write one; elementwise reads three and writes one).
double time_memory(int device, MemoryKernel kernel, size_t array_bytes, int warmup, int iters);

// Median seconds of cudaMemcpyAsync of `bytes` between pinned host memory and `device`.
double time_host_transfer(int device, bool to_device, size_t bytes, int warmup, int iters);

// NCCL collectives on devices 0..ranks-1 of this process (ncclCommInitAll).
enum class NcclOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
// Median seconds per nccl-tests size in `sizes` (the max over ranks of each call's event time).
// A call still running after `timeout` seconds makes the watchdog abort every communicator;
// the error names the op, the size and the ranks. Throws std::runtime_error without NCCL.
std::vector<double> time_nccl(NcclOp op, int ranks, const std::vector<size_t>& sizes,
                              int warmup, int iters, double timeout);
bool have_nccl();
// "2.27.7", or "" without NCCL.
std::string nccl_version();

}  // namespace ppsim::cuda
