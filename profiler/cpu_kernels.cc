#include "profiler/cpu_kernels.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <vector>

namespace ppsim {
namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<Matrix>;

Eigen::Index dim(double x) { return std::max<Eigen::Index>(1, std::llround(x)); }

// Causal softmax of each row of `s` in place (columns after the row index masked to 0).
void causal_softmax(MatrixMap& s) {
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    float max = s.row(i).head(i + 1).maxCoeff();
    float sum = 0;
    for (Eigen::Index j = 0; j <= i; ++j) sum += (s(i, j) = std::exp(s(i, j) - max));
    s.row(i).head(i + 1) /= sum;
    s.row(i).tail(s.cols() - i - 1).setZero();
  }
}

}  // namespace

// Scratch arrays that only grow; each new float is a fixed non-zero value.
//
// Each slot is its own 2 MiB-aligned allocation advised to transparent huge pages. On 4 KiB
// pages a GEMM's time depended on where malloc had put its operands: on this repository's AMD
// EPYC build machine a 256x256x256 fp32 GEMM ran at 17 GFLOP/s in freshly mapped memory and 39
// in memory malloc had recycled (a product strides over X and W's pages, more than the L1 TLB
// holds), so the profiler's ladder and the executor's steady state timed different things. On
// huge pages both run at 37-39 GFLOP/s whatever the call history. Where THP is off
// (/sys/kernel/mm/transparent_hugepage/enabled = never) the advice is a no-op.
struct CpuKernels::Buffers {
  static constexpr size_t kHugePage = 2 << 20;

  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  struct Slot {
    std::unique_ptr<float, FreeDeleter> memory;
    size_t floats = 0;  // Capacity.
  };
  Slot slots[8];

  float* get(int slot, size_t floats, float fill) {
    Slot& s = slots[slot];
    if (s.floats < floats) {
      size_t bytes = (floats * sizeof(float) + kHugePage - 1) / kHugePage * kHugePage;
      float* memory = static_cast<float*>(std::aligned_alloc(kHugePage, bytes));
      if (!memory) throw std::bad_alloc();
      madvise(memory, bytes, MADV_HUGEPAGE);
      std::fill(memory, memory + floats, fill);
      s.memory.reset(memory);
      s.floats = floats;
    }
    return s.memory.get();
  }
  MatrixMap map(int slot, Eigen::Index rows, Eigen::Index cols, float fill = 0.5f) {
    return MatrixMap(get(slot, size_t(rows) * size_t(cols), fill), rows, cols);
  }
};

CpuKernels::CpuKernels() : buffers_(std::make_unique<Buffers>()) {}
CpuKernels::~CpuKernels() = default;

void CpuKernels::gemm(double m, double n, double k, double batch) {
  Eigen::Index rows = dim(m), cols = dim(n), depth = dim(k);
  MatrixMap x = buffers_->map(0, rows, depth, 0.25f);
  MatrixMap w = buffers_->map(1, depth, cols, 0.5f);
  MatrixMap y = buffers_->map(2, rows, cols);
  for (Eigen::Index b = 0; b < dim(batch); ++b) y.noalias() = x * w;
}

void CpuKernels::attention(double batch_heads, double seq_len, double head_dim, bool backward) {
  Eigen::Index seq = dim(seq_len), d = dim(head_dim);
  Buffers& buf = *buffers_;
  MatrixMap q = buf.map(0, seq, d, 0.25f), k = buf.map(1, seq, d, 0.5f);
  MatrixMap v = buf.map(2, seq, d, 0.75f), d_out = buf.map(3, seq, d, 0.125f);
  MatrixMap s = buf.map(4, seq, seq), o = buf.map(5, seq, d);
  float scale = 1.0f / std::sqrt(float(d));
  for (Eigen::Index h = 0; h < dim(batch_heads); ++h) {
    s.noalias() = (q * k.transpose()) * scale;  // The backward recomputes it, as flash does.
    causal_softmax(s);
    if (!backward) {
      o.noalias() = s * v;
      continue;
    }
    MatrixMap dp = buf.map(6, seq, seq), grads = buf.map(7, 3 * seq, d);
    auto dv = grads.topRows(seq), dq = grads.middleRows(seq, seq), dk = grads.bottomRows(seq);
    dv.noalias() = s.transpose() * d_out;
    dp.noalias() = d_out * v.transpose();
    Eigen::VectorXf row_dot = (d_out.cwiseProduct(o)).rowwise().sum();
    dp = s.cwiseProduct(dp.colwise() - row_dot) * scale;
    dq.noalias() = dp * k;
    dk.noalias() = dp.transpose() * q;
  }
}

void CpuKernels::memory(MemoryKernel kernel, double bytes) {
  const int arrays = kernel == MemoryKernel::kElementwise ? 4 : 2;
  size_t count = std::max<size_t>(1, size_t(bytes / arrays / sizeof(float)));
  Buffers& buf = *buffers_;
  float* a = buf.get(0, count, 1.5f);
  const float* b = buf.get(1, count, 0.5f);
  switch (kernel) {
    case MemoryKernel::kCopy:
      std::memcpy(a, b, count * sizeof(float));
      break;
    case MemoryKernel::kNorm:
      for (size_t row = 0; row < count; row += kNormRow) {
        size_t end = std::min(count, row + kNormRow);
        float sum = 0;
        for (size_t i = row; i < end; ++i) sum += b[i] * b[i];
        float inv = 1.0f / std::sqrt(sum / float(end - row) + 1e-5f);
        for (size_t i = row; i < end; ++i) a[i] = b[i] * inv;
      }
      break;
    case MemoryKernel::kElementwise: {
      const float* c = buf.get(2, count, 2.0f);
      const float* d = buf.get(3, count, 0.25f);
      for (size_t i = 0; i < count; ++i) a[i] = b[i] * c[i] + d[i];
      break;
    }
  }
}

void CpuKernels::adam(float* parameters, const float* gradients, float* m, float* v,
                      unsigned short* copy, size_t count) {
  // torch.optim.AdamW defaults; the values do not change the time.
  constexpr float kLr = 1e-4f, kBeta1 = 0.9f, kBeta2 = 0.95f, kEps = 1e-8f, kDecay = 0.1f;
  double norm = 0;
  for (size_t i = 0; i < count; ++i) norm += double(gradients[i]) * gradients[i];
  float clip = norm > 1.0 ? float(1.0 / std::sqrt(norm)) : 1.0f;
  for (size_t i = 0; i < count; ++i) {
    float g = gradients[i] * clip;
    m[i] = kBeta1 * m[i] + (1 - kBeta1) * g;
    v[i] = kBeta2 * v[i] + (1 - kBeta2) * g * g;
    float p = parameters[i] * (1 - kLr * kDecay) - kLr * m[i] / (std::sqrt(v[i]) + kEps);
    parameters[i] = p;
    uint32_t bits;
    std::memcpy(&bits, &p, sizeof(bits));
    copy[i] = static_cast<unsigned short>(bits >> 16);  // bf16: the high half.
  }
}

}  // namespace ppsim
