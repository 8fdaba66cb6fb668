// cuda_bench.h's compute, memory and transfer measurements (cuBLASLt, CUDA events).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/cuda_bench.h"
#include "profiler/cuda_kernels.cuh"

namespace ppsim::cuda {
namespace {

using namespace ::ppsim::gpu_kernels;

// A device buffer freed on scope exit.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { PPSIM_CUDA_CHECK(cudaMalloc(&ptr, std::max<size_t>(bytes, 16))); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const { return static_cast<T*>(ptr); }
};

// Fills bytes with hashed values in [-1, 1) of type T (never zeros: METHOD.md).
template <typename T>
__global__ void fill_random(T* data, size_t count, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    float v = (h & 0xffff) / 32768.0f - 1.0f;
    data[i] = T(v == 0 ? 0.5f : v);
  }
}

template <typename T>
void randomize(T* data, size_t count, uint32_t seed, cudaStream_t stream) {
  fill_random<T><<<1024, 256, 0, stream>>>(data, count, seed);
  PPSIM_CUDA_CHECK(cudaGetLastError());
}

void randomize_bytes(void* data, size_t bytes, Dtype dtype, uint32_t seed, cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kBf16:
      randomize(static_cast<__nv_bfloat16*>(data), bytes / 2, seed, stream);
      break;
    case Dtype::kFp16:
      randomize(static_cast<__half*>(data), bytes / 2, seed, stream);
      break;
    case Dtype::kFp8:
      randomize(static_cast<__nv_fp8_e4m3*>(data), bytes, seed, stream);
      break;
  }
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

// Warm-up calls, then `iters` calls each between two events; the median in seconds.
template <typename Call>
double time_events(cudaStream_t stream, int warmup, int iters, Call&& call) {
  for (int i = 0; i < warmup; ++i) call();
  PPSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<cudaEvent_t> events(2 * iters);
  for (cudaEvent_t& e : events) PPSIM_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < iters; ++i) {
    PPSIM_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
    call();
    PPSIM_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
  }
  PPSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (int i = 0; i < iters; ++i) {
    float ms = 0;
    PPSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
    seconds.push_back(ms * 1e-3);
  }
  for (cudaEvent_t& e : events) cudaEventDestroy(e);
  return median_of(seconds);
}

cudaDataType_t data_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return CUDA_R_16BF;
    case Dtype::kFp16:
      return CUDA_R_16F;
    case Dtype::kFp8:
      return CUDA_R_8F_E4M3;
  }
  return CUDA_R_16BF;
}

size_t element_bytes(Dtype dtype) { return dtype == Dtype::kFp8 ? 1 : 2; }

// One column-major cuBLASLt matmul D(m x n) = op(A) op(B), strided-batched, planned once.
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t handle, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
         int64_t batch, Dtype in, Dtype out, void* workspace, size_t workspace_bytes)
      : handle_(handle), workspace_(workspace), workspace_bytes_(workspace_bytes) {
    PPSIM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    PPSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    PPSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    layout(&a_, data_type(in), a_rows, a_cols, batch);
    layout(&b_, data_type(in), b_rows, b_cols, batch);
    layout(&c_, data_type(out), m, n, batch);
    cublasLtMatmulPreference_t pref;
    PPSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    PPSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_, sizeof(workspace_bytes_)));
    int found = 0;
    cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, c_, pref, 1, &heuristic_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    ok_ = status == CUBLAS_STATUS_SUCCESS && found > 0;
  }
  ~LtGemm() {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatmulDescDestroy(desc_);
  }
  bool ok() const { return ok_; }
  void run(const void* a, const void* b, void* c, cudaStream_t stream) const {
    float alpha = 1, beta = 0;
    PPSIM_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_,
                                      &heuristic_.algo, workspace_, workspace_bytes_, stream));
  }

 private:
  static void layout(cublasLtMatrixLayout_t* l, cudaDataType_t type, int64_t rows, int64_t cols,
                     int64_t batch) {
    PPSIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, type, rows, cols, rows));
    if (batch > 1) {
      int32_t count = static_cast<int32_t>(batch);
      int64_t stride = rows * cols;
      PPSIM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      PPSIM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }

  cublasLtHandle_t handle_;
  void* workspace_;
  size_t workspace_bytes_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
  bool ok_ = false;
};

constexpr size_t kWorkspaceBytes = 64u << 20;

// Per-device state for one measurement: stream, cuBLASLt handle, workspace.
struct Session {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer* workspace = nullptr;
  explicit Session(int device) {
    PPSIM_CUDA_CHECK(cudaSetDevice(device));
    PPSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PPSIM_CUBLAS_CHECK(cublasLtCreate(&lt));
    workspace = new DeviceBuffer(kWorkspaceBytes);
  }
  ~Session() {
    delete workspace;
    cublasLtDestroy(lt);
    cudaStreamDestroy(stream);
  }
};

__global__ void copy_kernel(const float4* in, float4* out, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

std::string version_text(int v, int major_div, int minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string((v % major_div) / minor_div);
}

}  // namespace

DeviceInfo device_info() {
  DeviceInfo info;
  cudaError_t status = cudaGetDeviceCount(&info.count);
  if (status != cudaSuccess) {
    info.count = 0;
    info.error = cudaGetErrorString(status);
    cudaGetLastError();
    return info;
  }
  if (info.count == 0) {
    info.error = "cudaGetDeviceCount found 0 devices";
    return info;
  }
  cudaDeviceProp prop;
  PPSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  info.driver = version_text(driver, 1000, 10);
  info.runtime = version_text(runtime, 1000, 10);
  size_t lt = cublasLtGetVersion();
  info.cublaslt = std::to_string(lt / 10000) + "." + std::to_string((lt % 10000) / 100) + "." +
                  std::to_string(lt % 100);
  return info;
}

double time_gemm(int device, int64_t m, int64_t n, int64_t k, int64_t batch, Dtype dtype,
                 int warmup, int iters) {
  Session session(device);
  size_t elem = element_bytes(dtype);
  DeviceBuffer a(size_t(m) * k * batch * elem), b(size_t(k) * n * batch * elem),
      c(size_t(m) * n * batch * 2);
  randomize_bytes(a.ptr, size_t(m) * k * batch * elem, dtype, 1, session.stream);
  randomize_bytes(b.ptr, size_t(k) * n * batch * elem, dtype, 2, session.stream);
  // TN (A stored k x m, transposed), the layout fp8 requires; fp8 writes bf16.
  Dtype out = dtype == Dtype::kFp8 ? Dtype::kBf16 : dtype;
  LtGemm gemm(session.lt, true, false, m, n, k, batch, dtype, out, session.workspace->ptr,
              kWorkspaceBytes);
  if (!gemm.ok()) return -1;
  return time_events(session.stream, warmup, iters,
                     [&] { gemm.run(a.ptr, b.ptr, c.ptr, session.stream); });
}

AttentionTimes time_attention(int device, int64_t bh, int64_t s, int64_t d, Dtype dtype,
                              int warmup, int iters) {
  Session session(device);
  size_t tensor = size_t(bh) * s * d * 2, scores = size_t(bh) * s * s * 2;
  DeviceBuffer q(tensor), k(tensor), v(tensor), o(tensor), d_out(tensor), dq(tensor), dk(tensor),
      dv(tensor), p(scores), dp(scores), rowdot(size_t(bh) * s * 4);
  for (DeviceBuffer* t : {&q, &k, &v, &d_out}) randomize_bytes(t->ptr, tensor, dtype, 3, session.stream);
  void* ws = session.workspace->ptr;
  // Row-major X[r, c] is column-major X^T; the mapping of each product is in the .cu notes
  // of docs/profile.md. S = QK^T; O = PV; dV = P^T dO; dP = dO V^T; dQ = dS K; dK = dS^T Q.
  LtGemm qk(session.lt, true, false, s, s, d, bh, dtype, dtype, ws, kWorkspaceBytes);
  LtGemm pv(session.lt, false, false, d, s, s, bh, dtype, dtype, ws, kWorkspaceBytes);
  LtGemm dv_gemm(session.lt, false, true, d, s, s, bh, dtype, dtype, ws, kWorkspaceBytes);
  LtGemm dp_gemm(session.lt, true, false, s, s, d, bh, dtype, dtype, ws, kWorkspaceBytes);
  LtGemm dq_gemm(session.lt, false, false, d, s, s, bh, dtype, dtype, ws, kWorkspaceBytes);
  LtGemm dk_gemm(session.lt, false, true, d, s, s, bh, dtype, dtype, ws, kWorkspaceBytes);
  for (LtGemm* g : {&qk, &pv, &dv_gemm, &dp_gemm, &dq_gemm, &dk_gemm}) {
    if (!g->ok()) throw std::runtime_error(where(__FILE__, __LINE__) + ": cuBLASLt has no algorithm for an attention product");
  }
  float scale = 1.0f / std::sqrt(float(d));
  auto softmax = [&] {
    if (dtype == Dtype::kFp16) causal_softmax<__half><<<bh * s, 256, 0, session.stream>>>(p.as<__half>(), s, scale);
    else causal_softmax<__nv_bfloat16><<<bh * s, 256, 0, session.stream>>>(p.as<__nv_bfloat16>(), s, scale);
    PPSIM_CUDA_CHECK(cudaGetLastError());
  };
  auto forward = [&] {
    qk.run(k.ptr, q.ptr, p.ptr, session.stream);
    softmax();
    pv.run(v.ptr, p.ptr, o.ptr, session.stream);
  };
  auto backward = [&] {
    qk.run(k.ptr, q.ptr, p.ptr, session.stream);  // Recompute P, as flash attention does.
    softmax();
    dv_gemm.run(d_out.ptr, p.ptr, dv.ptr, session.stream);
    dp_gemm.run(v.ptr, d_out.ptr, dp.ptr, session.stream);
    int threads = 256;
    unsigned blocks = unsigned((bh * s + threads - 1) / threads);
    if (dtype == Dtype::kFp16) {
      row_dot<__half><<<blocks, threads, 0, session.stream>>>(d_out.as<__half>(), o.as<__half>(), rowdot.as<float>(), bh * s, d);
      softmax_backward<__half><<<bh * s, 256, 0, session.stream>>>(p.as<__half>(), dp.as<__half>(), rowdot.as<float>(), s, scale);
    } else {
      row_dot<__nv_bfloat16><<<blocks, threads, 0, session.stream>>>(d_out.as<__nv_bfloat16>(), o.as<__nv_bfloat16>(), rowdot.as<float>(), bh * s, d);
      softmax_backward<__nv_bfloat16><<<bh * s, 256, 0, session.stream>>>(p.as<__nv_bfloat16>(), dp.as<__nv_bfloat16>(), rowdot.as<float>(), s, scale);
    }
    PPSIM_CUDA_CHECK(cudaGetLastError());
    dq_gemm.run(k.ptr, dp.ptr, dq.ptr, session.stream);
    dk_gemm.run(q.ptr, dp.ptr, dk.ptr, session.stream);
  };
  forward();
  AttentionTimes times;
  times.forward = time_events(session.stream, warmup, iters, forward);
  times.backward = time_events(session.stream, warmup, iters, backward);
  return times;
}

double time_memory(int device, MemoryKernel kernel, size_t array_bytes, int warmup, int iters) {
  Session session(device);
  size_t count = array_bytes / 16;  // float4s.
  DeviceBuffer a(array_bytes), b(array_bytes), c(array_bytes), d(array_bytes);
  for (DeviceBuffer* t : {&b, &c, &d}) randomize(t->as<float>(), array_bytes / 4, 4, session.stream);
  constexpr int64_t kRow = 4096;  // Floats per normalized row.
  auto call = [&] {
    switch (kernel) {
      case MemoryKernel::kCopy:
        copy_kernel<<<2048, 256, 0, session.stream>>>(b.as<float4>(), a.as<float4>(), count);
        break;
      case MemoryKernel::kNorm:
        rms_norm_kernel<<<unsigned(array_bytes / 4 / kRow), 256, 0, session.stream>>>(b.as<float>(), a.as<float>(), kRow);
        break;
      case MemoryKernel::kElementwise:
        elementwise_kernel<<<2048, 256, 0, session.stream>>>(b.as<float4>(), c.as<float4>(), d.as<float4>(), a.as<float4>(), count);
        break;
    }
    PPSIM_CUDA_CHECK(cudaGetLastError());
  };
  return time_events(session.stream, warmup, iters, call);
}

double time_host_transfer(int device, bool to_device, size_t bytes, int warmup, int iters) {
  Session session(device);
  void* host = nullptr;
  PPSIM_CUDA_CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocDefault));
  std::memset(host, 1, bytes);
  DeviceBuffer dev(bytes);
  double seconds = 0;
  try {
    seconds = time_events(session.stream, warmup, iters, [&] {
      if (to_device) {
        PPSIM_CUDA_CHECK(cudaMemcpyAsync(dev.ptr, host, bytes, cudaMemcpyHostToDevice, session.stream));
      } else {
        PPSIM_CUDA_CHECK(cudaMemcpyAsync(host, dev.ptr, bytes, cudaMemcpyDeviceToHost, session.stream));
      }
    });
  } catch (...) {
    cudaFreeHost(host);
    throw;
  }
  cudaFreeHost(host);
  return seconds;
}

}  // namespace ppsim::cuda
