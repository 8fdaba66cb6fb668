#include "profiler/cpu_backend.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "profiler/measure.h"
#include "profiler/thread_collectives.h"

namespace ppsim {
namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Non-zero random inputs (never time zeros), fixed seed.
Matrix random_matrix(Eigen::Index rows, Eigen::Index cols) {
  std::srand(12345);
  return Matrix::Random(rows, cols);
}

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
  for (const Shape& s : shapes) {
    Matrix x = random_matrix(s.m, s.k), w = random_matrix(s.k, s.n), y(s.m, s.n);
    double seconds = time_median(options.warmup_iters, options.iters,
                                 [&] { y.noalias() = x * w; });
    out.push_back({"fp32", double(s.m), double(s.n), double(s.k), 1, seconds});
  }
  return out;
}

// Causal softmax of each row of `s` in place (columns after the row index masked to 0).
void causal_softmax(Matrix& s) {
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    float max = s.row(i).head(i + 1).maxCoeff();
    float sum = 0;
    for (Eigen::Index j = 0; j <= i; ++j) sum += (s(i, j) = std::exp(s(i, j) - max));
    s.row(i).head(i + 1) /= sum;
    s.row(i).tail(s.cols() - i - 1).setZero();
  }
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
  for (const Case& c : cases) {
    Matrix q = random_matrix(c.seq, c.dim), k = random_matrix(c.seq, c.dim),
           v = random_matrix(c.seq, c.dim), d_out = random_matrix(c.seq, c.dim);
    Matrix s(c.seq, c.seq), o(c.seq, c.dim), dp(c.seq, c.seq), dq(c.seq, c.dim),
        dk(c.seq, c.dim), dv(c.seq, c.dim);
    float scale = 1.0f / std::sqrt(float(c.dim));
    auto forward = [&] {
      for (int h = 0; h < c.batch_heads; ++h) {
        s.noalias() = (q * k.transpose()) * scale;
        causal_softmax(s);
        o.noalias() = s * v;
      }
    };
    auto backward = [&] {
      for (int h = 0; h < c.batch_heads; ++h) {
        s.noalias() = (q * k.transpose()) * scale;  // Recomputed, as flash attention does.
        causal_softmax(s);
        dv.noalias() = s.transpose() * d_out;
        dp.noalias() = d_out * v.transpose();
        Eigen::VectorXf row_dot = (d_out.cwiseProduct(o)).rowwise().sum();
        dp = s.cwiseProduct(dp.colwise() - row_dot) * scale;
        dq.noalias() = dp * k;
        dk.noalias() = dp.transpose() * q;
      }
    };
    forward();  // o for the backward's row dot.
    double fwd_flops = 2.0 * c.batch_heads * double(c.seq) * c.seq * c.dim;
    double fwd = time_median(options.warmup_iters, options.iters, forward);
    double bwd = time_median(options.warmup_iters, options.iters, backward);
    out.push_back({"fp32", false, "eigen", double(c.batch_heads), double(c.seq), double(c.dim),
                   true, fwd_flops, fwd});
    out.push_back({"fp32", true, "eigen", double(c.batch_heads), double(c.seq), double(c.dim),
                   true, 2.5 * fwd_flops, bwd});
  }
  return out;
}

std::vector<MemorySample> measure_memory(const ProfileOptions& options) {
  std::vector<double> sizes = options.quick ? std::vector<double>{1 << 20, 4 << 20}
                                            : std::vector<double>{1 << 20, 4 << 20, 16 << 20,
                                                                  64 << 20};
  std::vector<MemorySample> out;
  constexpr size_t kRow = 1024;  // Floats per normalized row.
  for (double size : sizes) {
    size_t count = static_cast<size_t>(size) / 4;
    std::vector<float> a(count, 1.5f), b(count, 0.5f), c(count, 2.0f), d(count, 0.25f);
    double copy = time_median(options.warmup_iters, options.iters,
                              [&] { std::memcpy(a.data(), b.data(), size); });
    out.push_back({"copy", 2 * size, copy});
    double norm = time_median(options.warmup_iters, options.iters, [&] {
      for (size_t row = 0; row < count; row += kRow) {
        float sum = 0;
        for (size_t i = row; i < row + kRow; ++i) sum += b[i] * b[i];
        float inv = 1.0f / std::sqrt(sum / kRow + 1e-5f);
        for (size_t i = row; i < row + kRow; ++i) a[i] = b[i] * inv;
      }
    });
    out.push_back({"norm", 2 * size, norm});
    double elementwise = time_median(options.warmup_iters, options.iters, [&] {
      for (size_t i = 0; i < count; ++i) a[i] = b[i] * c[i] + d[i];
    });
    out.push_back({"elementwise", 4 * size, elementwise});
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
