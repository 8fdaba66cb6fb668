// CpuKernels: the CPU backend's compute kernels, shared by the profiler (cpu_backend.cc, which
// times them) and the validation executor (cpu_executor.cc, which runs a step with them), so a
// CPU prediction and its check run the same code.
//
// Kernels (Eigen fp32, single-threaded per caller; Eigen stays inside the .cc):
//   gemm         Y[m,n] = X[m,k] W[k,n], `batch` times (row-major, Eigen's noalias product);
//   attention    per head (batch_heads of them) S = QK^T / sqrt(d), causal row softmax, O = PV;
//                the backward recomputes S and P (as flash attention does) and runs the five
//                products dV = P^T dO, dP = dO V^T, the softmax gradient, dQ = dS K,
//                dK = dS^T Q;
//   copy         memcpy: `bytes` counts read + written (2 x the array);
//   norm         row RMS norm over rows of kNormRow floats: read + written (2 x the array);
//   elementwise  a = b*c + d: three arrays read, one written (4 x the array);
//   adam         one Adam update of `parameters` fp32 values: a gradient-norm pass, then p, m,
//                v updated and a bf16 copy of p written: 34 bytes per parameter, the figure the
//                step builder charges (kStepAdamBytesPerParameter).
// Inputs are filled with non-zero values when a buffer grows (never time zeros or denormals).
//
// Thread-safety: one CpuKernels per thread. Buffers only grow, so after a first call of each
// shape (a warm-up) no call allocates.
#pragma once

#include <cstddef>
#include <memory>

namespace ppsim {

// Floats per normalized row of the norm kernel (a hidden size of 1024).
inline constexpr size_t kNormRow = 1024;

enum class MemoryKernel { kCopy, kNorm, kElementwise };

class CpuKernels {
 public:
  CpuKernels();
  ~CpuKernels();
  CpuKernels(const CpuKernels&) = delete;
  CpuKernels& operator=(const CpuKernels&) = delete;

  // Dimensions are rounded to the nearest integer, at least 1.
  void gemm(double m, double n, double k, double batch = 1);
  void attention(double batch_heads, double seq_len, double head_dim, bool backward);
  // Moves `bytes` (read + written, as the header counts them per kernel).
  void memory(MemoryKernel kernel, double bytes);
  // REQUIRES: the four arrays hold `parameters` floats and `copy` as many uint16 values.
  static void adam(float* parameters, const float* gradients, float* m, float* v,
                   unsigned short* copy, size_t count);

 private:
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace ppsim
