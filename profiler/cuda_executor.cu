// cuda_executor.h's executor: CUDA, cuBLASLt and NCCL, one host thread per worker (or per
// device when folded). Kernels and error checks come from cuda_kernels.cuh, shared with the
// profiler's cuda_bench.cu, so the measured and the profiled work are the same kernels.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "profiler/cuda_executor.h"
#include "profiler/cuda_kernels.cuh"
#include "profiler/memory_ledger.h"

#ifdef PPSIM_HAVE_NCCL
#include <nccl.h>
#endif

namespace ppsim {
namespace {

using namespace ::ppsim::gpu_kernels;

using bf16 = __nv_bfloat16;

#ifdef PPSIM_HAVE_NCCL
#define EXEC_NCCL_CHECK(call)                                                                   \
  do {                                                                                          \
    ncclResult_t status_ = (call);                                                              \
    if (status_ != ncclSuccess) {                                                               \
      throw std::runtime_error(where(__FILE__, __LINE__) + ": NCCL error: " +                   \
                               ncclGetErrorString(status_) + " (" #call ")");                   \
    }                                                                                           \
  } while (0)
#endif

constexpr size_t kWorkspaceBytes = 64u << 20;  // cuBLASLt workspace, as the profiler's.
constexpr int64_t kNormRowFloats = 4096;       // Row of the norm kernel, as the profiler's.
// A memory-bound kernel's arrays are capped at this size and it runs in passes over them, so
// its bytes moved stay the op's while a loss over 8K tokens x 128K vocabulary (tens of GiB of
// traffic) needs no array of that size. Far larger than any L2 (60 MB on the H200), so every
// pass streams from HBM as the full-size kernel would.
constexpr double kMemoryOperandBytes = 512.0 * (1 << 20);
constexpr double kAdamStoredBytes = 18;        // p, g, m, v fp32 + bf16 copy (cpu_executor.cc).
constexpr double kAdamTouchedBytes = 34;       // Per update (step_builder.h).

int64_t dim(double x) { return std::max<int64_t>(1, std::llround(x)); }

// One column-major cuBLASLt matmul D(m x n) = op(A) op(B), strided-batched, planned once.
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t handle, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
         int64_t batch, void* workspace)
      : handle_(handle), workspace_(workspace) {
    PPSIM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    PPSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    PPSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    layout(&a_, trans_a ? k : m, trans_a ? m : k, batch);
    layout(&b_, trans_b ? n : k, trans_b ? k : n, batch);
    layout(&c_, m, n, batch);
    cublasLtMatmulPreference_t pref;
    PPSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t bytes = kWorkspaceBytes;
    PPSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof(bytes)));
    int found = 0;
    cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, c_, pref, 1, &heuristic_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
      throw std::runtime_error(where(__FILE__, __LINE__) + ": cuBLASLt has no algorithm for " +
                               std::to_string(m) + "x" + std::to_string(n) + "x" +
                               std::to_string(k) + " (batch " + std::to_string(batch) + ")");
    }
  }
  ~LtGemm() {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatmulDescDestroy(desc_);
  }
  void run(const void* a, const void* b, void* c, cudaStream_t stream) const {
    float alpha = 1, beta = 0;
    PPSIM_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_,
                                     &heuristic_.algo, workspace_, kWorkspaceBytes, stream));
  }

 private:
  static void layout(cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t batch) {
    PPSIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, CUDA_R_16BF, rows, cols, rows));
    if (batch > 1) {
      int32_t count = static_cast<int32_t>(batch);
      int64_t stride = rows * cols;
      PPSIM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      PPSIM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }
  cublasLtHandle_t handle_;
  void* workspace_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

__global__ void fill_value(bf16* data, size_t count, float value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    data[i] = bf16(value);
  }
}

__global__ void square_sum(const float* g, size_t count, float* out) {
  float sum = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    sum += g[i] * g[i];
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffff, sum, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, sum);
}

// AdamW with gradient clipping by the global norm (torch defaults; values do not change time).
__global__ void adam_kernel(float* p, const float* g, float* m, float* v, bf16* copy, size_t count,
                            const float* norm_sq) {
  float clip = *norm_sq > 1.0f ? rsqrtf(*norm_sq) : 1.0f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    float grad = g[i] * clip;
    m[i] = 0.9f * m[i] + 0.1f * grad;
    v[i] = 0.95f * v[i] + 0.05f * grad * grad;
    p[i] = p[i] * (1 - 1e-5f) - 1e-4f * m[i] / (sqrtf(v[i]) + 1e-8f);
    copy[i] = bf16(p[i]);
  }
}

// A host barrier that a failing thread can break.
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (broken_) throw std::runtime_error(reason_);
    int64_t generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation || broken_; });
    if (broken_) throw std::runtime_error(reason_);
  }
  void abort(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_) reason_ = reason;
    broken_ = true;
    changed_.notify_all();
  }

 private:
  int count_;
  int waiting_ = 0;
  int64_t generation_ = 0;
  bool broken_ = false;
  std::string reason_;
  std::mutex mutex_;
  std::condition_variable changed_;
};

struct Shared {
  const ExecutorProgram& program;
  const ExecutorOptions& options;
  int devices = 0;
  std::vector<double> post_time;  // Per transfer task: the sender's post, seconds.
#ifdef PPSIM_HAVE_NCCL
  std::vector<ncclComm_t> world;                          // Per worker (not folded).
  std::map<std::vector<int32_t>, ncclUniqueId> group_ids;  // Per collective worker set.
#endif
  ExecutorResult result;
};

// One worker: its device state, buffers and events.
class Worker {
 public:
  Worker(Shared& shared, int32_t index, int device, double baseline_bytes)
      : shared_(shared), index_(index), device_(device) {
    const ExecutorProgram& program = shared.program;
    ledger_.allocate(baseline_bytes);
    PPSIM_CUDA_CHECK(cudaSetDevice(device_));
    PPSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    PPSIM_CUBLAS_CHECK(cublasLtCreate(&lt_));
    workspace_ = allocate(kWorkspaceBytes, "the cuBLASLt workspace");
    // Operand sizes over the worker's kernels.
    size_t gemm_a = 1, gemm_b = 1, gemm_c = 1, tensor = 1, scores = 1, rows = 1, memory = 16;
    size_t adam = 0, collective = 0, receive = 1, send = 1;
    for (const ExecInstruction& in : program.instructions[index_]) {
      for (const KernelCall& k : in.kernels) {
        if (k.kind == KernelKind::kGemm) {
          size_t b = size_t(dim(k.batch));
          gemm_a = std::max(gemm_a, size_t(dim(k.m)) * dim(k.k) * b);
          gemm_b = std::max(gemm_b, size_t(dim(k.k)) * dim(k.n) * b);
          gemm_c = std::max(gemm_c, size_t(dim(k.m)) * dim(k.n) * b);
        } else if (k.kind == KernelKind::kNorm || k.kind == KernelKind::kElementwise) {
          memory = std::max(memory, size_t(std::min(k.bytes / 2, kMemoryOperandBytes)) + 16);
        } else {
          tensor = std::max(tensor, size_t(dim(k.m)) * dim(k.n) * dim(k.k));
          scores = std::max(scores, size_t(dim(k.m)) * dim(k.n) * dim(k.n));
          rows = std::max(rows, size_t(dim(k.m)) * dim(k.n));
        }
      }
      if (in.kind == ExecKind::kOptimizer) adam = size_t(in.bytes / kAdamTouchedBytes);
      if (in.kind == ExecKind::kRecv) receive = std::max(receive, size_t(in.bytes));
      if (in.kind == ExecKind::kSend) send = std::max(send, size_t(in.bytes));
      for (int32_t c : in.collectives) {
        if (c >= 0) collective = std::max(collective, size_t(program.collectives[c].bytes));
      }
    }
    double static_bytes = program.static_bytes.empty() ? 0 : program.static_bytes[index_];
    static_bytes = std::max(static_bytes, adam * kAdamStoredBytes);
    static_block_ = allocate(size_t(static_bytes), "the static block (weights, gradients, optimizer)");
    adam_ = adam;
    // The stand-in kernels' operands: real device memory, but no part of what training holds
    // (its kernels work in the activations and transient buffers the prediction counts), so
    // they stay out of the measured peak (stand_in_bytes()).
    gemm_a_ = allocate(gemm_a * 2, "GEMM operands", false);
    gemm_b_ = allocate(gemm_b * 2, "GEMM operands", false);
    gemm_c_ = allocate(gemm_c * 2, "GEMM outputs", false);
    for (void*& t : attention_) t = allocate(tensor * 2, "attention tensors", false);
    p_ = allocate(scores * 2, "attention scores", false);
    dp_ = allocate(scores * 2, "attention scores", false);
    rowdot_ = allocate(rows * 4, "attention row sums", false);
    memory_bytes_ = memory;
    for (void*& m : memory_) m = allocate(memory, "memory-bound operands", false);
    receive_ = allocate(receive, "the receive buffer");
    send_ = allocate(send, "the send buffer");
    collective_in_ = allocate(collective + 16, "collective buffers");
    collective_out_ = allocate(collective + 16, "collective buffers");
    norm_ = allocate(4, "the gradient norm");
    fill(gemm_a_, gemm_a, 0.25f);
    fill(gemm_b_, gemm_b, 0.5f);
    for (void* t : attention_) fill(t, tensor, 0.125f);
    for (void* m : memory_) fill(m, memory / 2, 0.5f);
    if (adam_ > 0) fill(static_block_, size_t(adam_ * 8), 0.01f);  // p, g, m, v as fp32 pairs.
    PPSIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    PPSIM_CUDA_CHECK(cudaEventCreate(&origin_));
  }

  ~Worker() {
    cudaSetDevice(device_);
    for (auto& [key, e] : events_) cudaEventDestroy(e);
    for (void* ptr : owned_) cudaFree(ptr);
    for (auto& [key, saved] : saved_) {
      for (auto& block : saved) cudaFree(block.first);
    }
    cublasLtDestroy(lt_);
#ifdef PPSIM_HAVE_NCCL
    for (auto& [set, comm] : group_comms_) ncclCommDestroy(comm);
#endif
    cudaEventDestroy(origin_);
    cudaStreamDestroy(stream_);
    for (auto& [peer, s] : send_streams_) cudaStreamDestroy(s);
  }

#ifdef PPSIM_HAVE_NCCL
  // Joins a communicator per collective worker set it belongs to (every member calls this in
  // the same order, so the blocking ncclCommInitRank calls meet).
  void join_collectives() {
    PPSIM_CUDA_CHECK(cudaSetDevice(device_));
    for (const auto& [set, id] : shared_.group_ids) {
      auto it = std::find(set.begin(), set.end(), index_);
      if (it == set.end()) continue;
      ncclComm_t comm;
      EXEC_NCCL_CHECK(ncclCommInitRank(&comm, int(set.size()), id, int(it - set.begin())));
      group_comms_[set] = comm;
    }
  }
#endif

  void start_iteration() {
    PPSIM_CUDA_CHECK(cudaSetDevice(device_));
    PPSIM_CUDA_CHECK(cudaEventRecord(origin_, stream_));
  }

  // Enqueues the worker's instructions; records events (times are read by finish()).
  void run(bool record_labels) {
    PPSIM_CUDA_CHECK(cudaSetDevice(device_));
    const bool fold = shared_.options.fold;
    for (const ExecInstruction& in : shared_.program.instructions[index_]) {
      if (record_labels) shared_.result.executed[index_].push_back(in.label);
      switch (in.kind) {
        case ExecKind::kCompute: {
          mark(in.tasks.front(), true);
          if (in.alloc_bytes > 0) stash(in);
          for (const KernelCall& call : in.kernels) run_kernel(call);
          if (in.free_bytes > 0) unstash(in);
          mark(in.tasks.front(), false);
          break;
        }
        case ExecKind::kSend:
          if (!fold) send(in);
          break;
        case ExecKind::kRecv:
          if (!fold) receive(in);
          break;
        case ExecKind::kCollective:
          for (size_t i = 0; i < in.tasks.size(); ++i) collective(in, i);
          break;
        case ExecKind::kOptimizer: {
          mark(in.tasks.front(), true);
          float* base = static_cast<float*>(static_block_);
          size_t n = adam_;
          PPSIM_CUDA_CHECK(cudaMemsetAsync(norm_, 0, 4, stream_));
          if (n > 0) {
            square_sum<<<1024, 256, 0, stream_>>>(base + n, n, static_cast<float*>(norm_));
            adam_kernel<<<2048, 256, 0, stream_>>>(base, base + n, base + 2 * n, base + 3 * n,
                                                   reinterpret_cast<bf16*>(base + 4 * n), n,
                                                   static_cast<float*>(norm_));
            PPSIM_CUDA_CHECK(cudaGetLastError());
          }
          mark(in.tasks.front(), false);
          for (size_t i = 1; i < in.tasks.size(); ++i) collective(in, i);
          break;
        }
      }
    }
  }

  void synchronize() {
    PPSIM_CUDA_CHECK(cudaSetDevice(device_));
    PPSIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (auto& [peer, s] : send_streams_) PPSIM_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  // After synchronize(): this worker's task times and its sends' post times (phase 1).
  void read_times(int64_t slot) {
    ExecutorResult& r = shared_.result;
    for (const ExecInstruction& in : shared_.program.instructions[index_]) {
      if (in.kind == ExecKind::kSend && !shared_.options.fold) {
        shared_.post_time[in.transfer] = seconds(event(in.transfer, kPost));
      }
      if (in.kind == ExecKind::kRecv) continue;  // Phase 2 (read_transfers).
      for (int32_t task : in.tasks) {
        if (!events_.count({task, kStart})) continue;
        r.start[slot][task] = seconds(event(task, kStart));
        r.end[slot][task] = seconds(event(task, kEnd));
        r.measured[task] = 1;
      }
    }
  }

  // Phase 2, after every worker's read_times: the transfers this worker received.
  void read_transfers(int64_t slot) {
    ExecutorResult& r = shared_.result;
    for (const ExecInstruction& in : shared_.program.instructions[index_]) {
      if (in.kind != ExecKind::kRecv || shared_.options.fold) continue;
      double arrival = seconds(event(in.transfer, kStart));
      r.start[slot][in.transfer] = std::max(arrival, shared_.post_time[in.transfer]);
      r.end[slot][in.transfer] = seconds(event(in.transfer, kEnd));
      r.measured[in.transfer] = 1;
    }
  }

  double peak() const { return ledger_.peak(); }
  double stand_in_bytes() const { return stand_in_bytes_; }

 private:
  enum EventRole { kStart, kEnd, kPost, kReady };

  cudaEvent_t event(int32_t task, EventRole role) {
    auto key = std::make_pair(task, int(role));
    auto it = events_.find(key);
    if (it != events_.end()) return it->second;
    cudaEvent_t e;
    PPSIM_CUDA_CHECK(cudaEventCreate(&e));
    return events_.emplace(key, e).first->second;
  }
  void mark(int32_t task, bool start) {
    PPSIM_CUDA_CHECK(cudaEventRecord(event(task, start ? kStart : kEnd), stream_));
  }
  double seconds(cudaEvent_t e) {
    float ms = 0;
    PPSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, origin_, e));
    return ms * 1e-3;
  }

  // `held`: part of the measured peak (the ledger); else a stand-in kernel's operand.
  void* allocate(size_t bytes, const char* what, bool held = true) {
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, std::max<size_t>(bytes, 16));
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error(where(__FILE__, __LINE__) + ": worker " + std::to_string(index_) +
                               ": cannot allocate " + what + " (" + std::to_string(bytes >> 20) +
                               " MiB, " + std::to_string(int64_t(ledger_.live()) >> 20) +
                               " MiB held): " + cudaGetErrorString(status));
    }
    owned_.push_back(ptr);
    if (held) {
      ledger_.allocate(double(bytes));
    } else {
      stand_in_bytes_ += double(bytes);
    }
    return ptr;
  }
  void fill(void* data, size_t count, float value) {
    fill_value<<<1024, 256, 0, stream_>>>(static_cast<bf16*>(data), count, value);
    PPSIM_CUDA_CHECK(cudaGetLastError());
  }

  void run_kernel(const KernelCall& k) {
    switch (k.kind) {
      case KernelKind::kGemm:
        gemm(dim(k.m), dim(k.n), dim(k.k), dim(k.batch)).run(gemm_a_, gemm_b_, gemm_c_, stream_);
        break;
      case KernelKind::kAttentionForward:
      case KernelKind::kAttentionBackward:
        attention(dim(k.m), dim(k.n), dim(k.k), k.kind == KernelKind::kAttentionBackward);
        break;
      case KernelKind::kNorm: {
        // Reads bytes/2 and writes bytes/2, in passes over the capped arrays.
        for (double left = k.bytes / 2; left > 0; left -= double(memory_bytes_)) {
          size_t floats = size_t(std::min(left, double(memory_bytes_)) / 4);
          unsigned rows = unsigned(std::max<size_t>(1, floats / kNormRowFloats));
          rms_norm_kernel<<<rows, 256, 0, stream_>>>(static_cast<float*>(memory_[1]),
                                                     static_cast<float*>(memory_[0]),
                                                     kNormRowFloats);
        }
        break;
      }
      case KernelKind::kElementwise: {
        // Four arrays of bytes/4 each (a = b*c + d), in passes over the capped arrays.
        for (double left = k.bytes / 4; left > 0; left -= double(memory_bytes_)) {
          size_t count = std::max<size_t>(1, size_t(std::min(left, double(memory_bytes_)) / 16));
          elementwise_kernel<<<2048, 256, 0, stream_>>>(
              static_cast<float4*>(memory_[1]), static_cast<float4*>(memory_[2]),
              static_cast<float4*>(memory_[3]), static_cast<float4*>(memory_[0]), count);
        }
        break;
      }
    }
    PPSIM_CUDA_CHECK(cudaGetLastError());
  }

  // TN layout as the profiler: A stored k x m (transposed), B k x n.
  const LtGemm& gemm(int64_t m, int64_t n, int64_t k, int64_t batch, bool ta = true,
                     bool tb = false) {
    auto key = std::make_tuple(m, n, k, batch, ta, tb);
    auto it = gemms_.find(key);
    if (it == gemms_.end()) {
      it = gemms_.emplace(key, std::make_unique<LtGemm>(lt_, ta, tb, m, n, k, batch, workspace_)).first;
    }
    return *it->second;
  }

  // The profiler's "gemm_softmax" attention (cuda_bench.cu).
  void attention(int64_t bh, int64_t s, int64_t d, bool backward) {
    void *q = attention_[0], *k = attention_[1], *v = attention_[2], *o = attention_[3],
         *d_out = attention_[4], *dq = attention_[5], *dk = attention_[6], *dv = attention_[7];
    float scale = 1.0f / std::sqrt(float(d));
    gemm(s, s, d, bh, true, false).run(k, q, p_, stream_);
    causal_softmax<<<unsigned(bh * s), 256, 0, stream_>>>(static_cast<bf16*>(p_), s, scale);
    if (!backward) {
      gemm(d, s, s, bh, false, false).run(v, p_, o, stream_);
      return;
    }
    gemm(d, s, s, bh, false, true).run(d_out, p_, dv, stream_);
    gemm(s, s, d, bh, true, false).run(v, d_out, dp_, stream_);
    int threads = 256;
    unsigned blocks = unsigned((bh * s + threads - 1) / threads);
    row_dot<<<blocks, threads, 0, stream_>>>(static_cast<bf16*>(d_out), static_cast<bf16*>(o),
                                             static_cast<float*>(rowdot_), bh * s, d);
    softmax_backward<<<unsigned(bh * s), 256, 0, stream_>>>(
        static_cast<bf16*>(p_), static_cast<bf16*>(dp_), static_cast<float*>(rowdot_), s, scale);
    gemm(d, s, s, bh, false, false).run(k, dp_, dq, stream_);
    gemm(d, s, s, bh, false, true).run(q, dp_, dk, stream_);
  }

  // Saved activations: stream-ordered allocations, so an over-full device fails here.
  void stash(const ExecInstruction& in) {
    auto& blocks = saved_[{in.chunk, in.microbatch}];
    double kept = std::min(in.kept_for_weight_grad, in.alloc_bytes);
    for (double bytes : {in.alloc_bytes - kept, kept}) {
      if (bytes <= 0) continue;
      void* ptr = nullptr;
      cudaError_t status = cudaMallocAsync(&ptr, size_t(bytes), stream_);
      if (status != cudaSuccess) {
        cudaGetLastError();
        throw std::runtime_error(where(__FILE__, __LINE__) + ": worker " +
                                 std::to_string(index_) + ": " + in.label +
                                 ": out of memory allocating its activations (" +
                                 std::to_string(int64_t(bytes) >> 20) + " MiB, " +
                                 std::to_string(int64_t(ledger_.live()) >> 20) +
                                 " MiB held): the plan does not fit, as in training");
      }
      blocks.push_back({ptr, bytes});
      ledger_.allocate(bytes);
    }
  }
  void unstash(const ExecInstruction& in) {
    auto it = saved_.find({in.chunk, in.microbatch});
    if (it == saved_.end()) return;
    double left = in.free_bytes;
    auto& blocks = it->second;
    while (!blocks.empty() && left > 0.5) {
      PPSIM_CUDA_CHECK(cudaFreeAsync(blocks.front().first, stream_));
      ledger_.release(blocks.front().second);
      left -= blocks.front().second;
      blocks.erase(blocks.begin());
    }
    if (blocks.empty()) saved_.erase(it);
  }

  void send(const ExecInstruction& in) {
#ifdef PPSIM_HAVE_NCCL
    cudaStream_t& s = send_streams_[in.peer];
    if (!s) PPSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ready = event(in.transfer, kReady);
    PPSIM_CUDA_CHECK(cudaEventRecord(ready, stream_));
    PPSIM_CUDA_CHECK(cudaStreamWaitEvent(s, ready, 0));
    PPSIM_CUDA_CHECK(cudaEventRecord(event(in.transfer, kPost), s));
    EXEC_NCCL_CHECK(ncclSend(send_, size_t(in.bytes), ncclChar, in.peer, shared_.world[index_], s));
#else
    throw std::runtime_error("this ppsim's CUDA executor was built without NCCL: use --fold");
#endif
  }
  void receive(const ExecInstruction& in) {
#ifdef PPSIM_HAVE_NCCL
    mark(in.transfer, true);
    EXEC_NCCL_CHECK(ncclRecv(receive_, size_t(in.bytes), ncclChar, in.peer, shared_.world[index_], stream_));
    mark(in.transfer, false);
#else
    throw std::runtime_error("this ppsim's CUDA executor was built without NCCL: use --fold");
#endif
  }
  void collective(const ExecInstruction& in, size_t i) {
    if (shared_.options.fold || in.collectives[i] < 0) return;
#ifdef PPSIM_HAVE_NCCL
    const ExecCollective& call = shared_.program.collectives[in.collectives[i]];
    ncclComm_t comm = group_comms_.at(call.workers);
    size_t n = call.workers.size();
    size_t count = std::max<size_t>(n, size_t(call.bytes / 2) / n * n);  // bf16 elements.
    mark(in.tasks[i], true);
    switch (call.kind) {
      case ExecCollectiveKind::kAllReduce:
        EXEC_NCCL_CHECK(ncclAllReduce(collective_in_, collective_out_, count, ncclBfloat16, ncclSum, comm, stream_));
        break;
      case ExecCollectiveKind::kAllGather:
        EXEC_NCCL_CHECK(ncclAllGather(collective_in_, collective_out_, count / n, ncclBfloat16, comm, stream_));
        break;
      case ExecCollectiveKind::kReduceScatter:
        EXEC_NCCL_CHECK(ncclReduceScatter(collective_in_, collective_out_, count / n, ncclBfloat16, ncclSum, comm, stream_));
        break;
    }
    mark(in.tasks[i], false);
#else
    throw std::runtime_error("this ppsim's CUDA executor was built without NCCL: use --fold");
#endif
  }

  Shared& shared_;
  int32_t index_;
  int device_;
  cudaStream_t stream_ = nullptr;
  std::map<int32_t, cudaStream_t> send_streams_;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  void* static_block_ = nullptr;
  size_t adam_ = 0;
  size_t memory_bytes_ = 16;     // Each memory-bound operand array (<= kMemoryOperandBytes).
  double stand_in_bytes_ = 0;    // Stand-in kernel operands, outside the ledger.
  void *gemm_a_, *gemm_b_, *gemm_c_, *p_, *dp_, *rowdot_, *receive_, *send_, *collective_in_,
      *collective_out_, *norm_;
  void* attention_[8] = {};
  void* memory_[4] = {};
  std::vector<void*> owned_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool>, std::unique_ptr<LtGemm>> gemms_;
  std::map<std::pair<int32_t, int>, cudaEvent_t> events_;
  cudaEvent_t origin_ = nullptr;
  std::map<std::pair<int32_t, int32_t>, std::vector<std::pair<void*, double>>> saved_;
  MemoryLedger ledger_;
#ifdef PPSIM_HAVE_NCCL
  std::map<std::vector<int32_t>, ncclComm_t> group_comms_;
#endif
};

}  // namespace

ExecutorResult run_step_on_cuda(const ExecutorProgram& program, const ExecutorOptions& options) {
  Shared shared{program, options};
  cudaError_t status = cudaGetDeviceCount(&shared.devices);
  if (status != cudaSuccess || shared.devices == 0) {
    cudaGetLastError();
    throw std::runtime_error(std::string("no CUDA device found (") +
                             (status != cudaSuccess ? cudaGetErrorString(status) : "0 devices") +
                             "); use --backend cpu");
  }
  if (!options.fold && program.workers > shared.devices) {
    throw std::runtime_error("the plan has " + std::to_string(program.workers) +
                             " workers but this node has " + std::to_string(shared.devices) +
                             " GPUs; add --fold to run its stages one after another");
  }
  const int64_t iterations = options.iterations;
  ExecutorResult& result = shared.result;
  result.start.assign(iterations, std::vector<double>(program.tasks, 0.0));
  result.end = result.start;
  result.measured.assign(program.tasks, 0);
  result.executed.resize(program.workers);
  shared.post_time.assign(program.tasks, 0.0);
  const int threads = options.fold ? std::min(shared.devices, program.workers) : program.workers;
#ifdef PPSIM_HAVE_NCCL
  if (!options.fold) {
    shared.world.resize(program.workers);
    std::vector<int> devices(program.workers);
    for (int i = 0; i < program.workers; ++i) devices[i] = i;
    EXEC_NCCL_CHECK(ncclCommInitAll(shared.world.data(), program.workers, devices.data()));
    for (const ExecCollective& call : program.collectives) {
      if (shared.group_ids.count(call.workers)) continue;
      ncclUniqueId id;
      EXEC_NCCL_CHECK(ncclGetUniqueId(&id));
      shared.group_ids.emplace(call.workers, id);
    }
  }
#endif
  Barrier barrier(threads);
  std::mutex error_mutex;
  std::exception_ptr error;
  std::vector<std::unique_ptr<Worker>> workers(program.workers);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        // Thread t drives worker t, or (folded) every worker on device t.
        std::vector<int32_t> mine;
        for (int32_t w = t; w < program.workers; w += (options.fold ? threads : program.workers)) {
          mine.push_back(w);
        }
        // What the device holds before this executor allocates (CUDA context, NCCL buffers):
        // part of every worker's measured peak, as the memory model's workspace is.
        PPSIM_CUDA_CHECK(cudaSetDevice(t));
        PPSIM_CUDA_CHECK(cudaFree(nullptr));
        size_t free_bytes = 0, total_bytes = 0;
        PPSIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        double baseline = double(total_bytes - free_bytes);
        for (int32_t w : mine) workers[w] = std::make_unique<Worker>(shared, w, t, baseline);
#ifdef PPSIM_HAVE_NCCL
        if (!options.fold) workers[t]->join_collectives();
#endif
        const int64_t total = options.warmup_iterations + iterations;
        for (int64_t i = 0; i < total; ++i) {
          const bool timed = i >= options.warmup_iterations;
          const int64_t slot = i - options.warmup_iterations;
          barrier.wait();  // Every device idle: the origins line up.
          for (int32_t w : mine) {
            workers[w]->start_iteration();
            workers[w]->run(timed && slot == 0);
            if (options.fold) workers[w]->synchronize();
          }
          for (int32_t w : mine) workers[w]->synchronize();
          if (timed) {
            for (int32_t w : mine) workers[w]->read_times(slot);
          }
          barrier.wait();  // Every post time is known.
          if (timed) {
            for (int32_t w : mine) workers[w]->read_transfers(slot);
          }
        }
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
        }
        barrier.abort(std::string("another worker failed: ") + e.what());
#ifdef PPSIM_HAVE_NCCL
        for (ncclComm_t comm : shared.world) ncclCommAbort(comm);
#endif
      }
    });
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  for (int64_t i = 0; i < iterations; ++i) {
    double makespan = 0;
    for (int32_t t = 0; t < program.tasks; ++t) {
      if (result.measured[t]) makespan = std::max(makespan, result.end[i][t]);
    }
    result.makespan.push_back(makespan);
  }
  for (auto& worker : workers) {
    result.peak_bytes.push_back(worker->peak());
    result.stand_in_bytes.push_back(worker->stand_in_bytes());
  }
  cudaDeviceProp prop;
  PPSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  result.device = std::to_string(threads) + " x " + prop.name +
                  (options.fold ? " (" + std::to_string(program.workers) + " workers folded)" : "");
#ifdef PPSIM_HAVE_NCCL
  for (ncclComm_t comm : shared.world) ncclCommDestroy(comm);
#endif
  return result;
}

}  // namespace ppsim
