// Pieces the profiler's CUDA benchmarks (cuda_bench.cu) and validate's CUDA executor
// (cuda_executor.cu) share, so the profiled and the executed work are the same kernels: error
// checks that name host, device, file and line, and the attention and memory-bound kernels.
// Included by .cu files only. The kernels sit in an anonymous namespace: without relocatable
// device code each translation unit needs its own copy of a non-template __global__ function.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ppsim::gpu_kernels {
namespace {

std::string where(const char* file, int line) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  int device = -1;
  cudaGetDevice(&device);
  const char* base = std::strrchr(file, '/');
  return std::string(host) + " device " + std::to_string(device) + ": " + (base ? base + 1 : file) +
         ":" + std::to_string(line);
}

#define PPSIM_CUDA_CHECK(call)                                                                  \
  do {                                                                                          \
    cudaError_t status_ = (call);                                                               \
    if (status_ != cudaSuccess) {                                                               \
      throw std::runtime_error(::ppsim::gpu_kernels::where(__FILE__, __LINE__) + ": CUDA error: " +                   \
                               cudaGetErrorString(status_) + " (" #call ")");                   \
    }                                                                                           \
  } while (0)

#define PPSIM_CUBLAS_CHECK(call)                                                                \
  do {                                                                                          \
    cublasStatus_t status_ = (call);                                                            \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                                     \
      throw std::runtime_error(::ppsim::gpu_kernels::where(__FILE__, __LINE__) + ": cuBLASLt error: " +               \
                               cublasLtGetStatusString(status_) + " (" #call ")");              \
    }                                                                                           \
  } while (0)

// Causal softmax of rows of `s` ([rows, cols] row-major; row r is query r % cols), scaled.
template <typename T>
__global__ void causal_softmax(T* s, int64_t cols, float scale) {
  int64_t row = blockIdx.x;
  int64_t query = row % cols;
  T* p = s + row * cols;
  __shared__ float reduce[32];
  float max = -INFINITY;
  for (int64_t j = threadIdx.x; j <= query; j += blockDim.x) max = fmaxf(max, float(p[j]) * scale);
  for (int o = 16; o > 0; o /= 2) max = fmaxf(max, __shfl_xor_sync(0xffffffff, max, o));
  if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = max;
  __syncthreads();
  max = -INFINITY;
  for (int w = 0; w < blockDim.x / 32; ++w) max = fmaxf(max, reduce[w]);
  __syncthreads();
  float sum = 0;
  for (int64_t j = threadIdx.x; j <= query; j += blockDim.x) sum += __expf(float(p[j]) * scale - max);
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffff, sum, o);
  if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = sum;
  __syncthreads();
  sum = 0;
  for (int w = 0; w < blockDim.x / 32; ++w) sum += reduce[w];
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    p[j] = T(j <= query ? __expf(float(p[j]) * scale - max) / sum : 0.0f);
  }
}

// dS = P * (dP - rowdot) * scale, in place over dP; rowdot[r] = sum_d dO[r,d] O[r,d].
template <typename T>
__global__ void softmax_backward(const T* p, T* dp, const float* rowdot, int64_t cols, float scale) {
  int64_t row = blockIdx.x;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    int64_t i = row * cols + j;
    dp[i] = T(float(p[i]) * (float(dp[i]) - rowdot[row]) * scale);
  }
}

template <typename T>
__global__ void row_dot(const T* a, const T* b, float* out, int64_t rows, int64_t dim) {
  int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  float sum = 0;
  for (int64_t d = 0; d < dim; ++d) sum += float(a[row * dim + d]) * float(b[row * dim + d]);
  out[row] = sum;
}

__global__ void elementwise_kernel(const float4* b, const float4* c, const float4* d, float4* a,
                                   size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    float4 x = b[i], y = c[i], z = d[i];
    a[i] = make_float4(x.x * y.x + z.x, x.y * y.y + z.y, x.z * y.z + z.z, x.w * y.w + z.w);
  }
}

// One block per row of `dim` floats: y = x / rms(x).
__global__ void rms_norm_kernel(const float* x, float* y, int64_t dim) {
  const float* in = x + blockIdx.x * dim;
  float* out = y + blockIdx.x * dim;
  __shared__ float reduce[32];
  float sum = 0;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) sum += in[j] * in[j];
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffff, sum, o);
  if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = sum;
  __syncthreads();
  sum = 0;
  for (int w = 0; w < blockDim.x / 32; ++w) sum += reduce[w];
  float inv = rsqrtf(sum / dim + 1e-5f);
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) out[j] = in[j] * inv;
}

}  // namespace
}  // namespace ppsim::gpu_kernels
