#include "simulator/cost/profile_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// ---- Fitting ----

// Weighted least squares min ||W(Ax - t)|| with W = 1/t over the chosen columns; columns are
// scaled to unit norm first so bytes from 1e3 to 1e9 stay well conditioned.
Eigen::VectorXd relative_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& t) {
  Eigen::MatrixXd weighted = t.cwiseInverse().asDiagonal() * a;
  Eigen::VectorXd scale(a.cols());
  for (Eigen::Index c = 0; c < a.cols(); ++c) {
    double norm = weighted.col(c).norm();
    scale(c) = norm > 0 ? norm : 1.0;
    weighted.col(c) /= scale(c);
  }
  Eigen::VectorXd ones = Eigen::VectorXd::Ones(t.size());
  Eigen::VectorXd x = weighted.colPivHouseholderQr().solve(ones);
  return x.cwiseQuotient(scale);
}

FitResiduals residuals_of(const std::vector<double>& model, const std::vector<double>& measured) {
  FitResiduals r;
  r.points = static_cast<int64_t>(measured.size());
  double sum = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    double e = (model[i] - measured[i]) / measured[i];
    sum += e * e;
    r.max_rel = std::max(r.max_rel, std::abs(e));
  }
  r.rms_rel = measured.empty() ? 0 : std::sqrt(sum / measured.size());
  return r;
}

// One alpha-beta piece over points [begin, end) of sorted data, alpha >= 0 and beta > 0.
AlphaBetaPiece fit_piece(const std::vector<double>& x, const std::vector<double>& t, size_t begin,
                         size_t end) {
  AlphaBetaPiece piece{x[begin], x[end - 1], 0, 0};
  size_t n = end - begin;
  Eigen::VectorXd times(n);
  for (size_t i = 0; i < n; ++i) times(i) = t[begin + i];
  if (n >= 2 && x[end - 1] > x[begin]) {
    Eigen::MatrixXd a(n, 2);
    for (size_t i = 0; i < n; ++i) a.row(i) << 1.0, x[begin + i];
    Eigen::VectorXd c = relative_least_squares(a, times);
    if (c(0) >= 0 && c(1) > 0) {
      piece.alpha = c(0);
      piece.beta = 1.0 / c(1);
      return piece;
    }
  }
  // A negative alpha or slope: bandwidth only (alpha 0), the relative-error optimum of t = x/b.
  Eigen::MatrixXd a(n, 1);
  for (size_t i = 0; i < n; ++i) a(i, 0) = x[begin + i];
  Eigen::VectorXd c = relative_least_squares(a, times);
  piece.beta = c(0) > 0 ? 1.0 / c(0) : 1e300;
  return piece;
}

double sum_sq_rel(const std::vector<double>& x, const std::vector<double>& t, size_t begin,
                  size_t end, const AlphaBetaPiece& piece) {
  double sum = 0;
  for (size_t i = begin; i < end; ++i) {
    double e = (piece.alpha + x[i] / piece.beta - t[i]) / t[i];
    sum += e * e;
  }
  return sum;
}

// Best split of [0, n) into `pieces` contiguous ranges of at least 3 points each (2 when a
// piece covers everything); returns the total squared relative error and the pieces.
std::pair<double, std::vector<AlphaBetaPiece>> best_split(const std::vector<double>& x,
                                                          const std::vector<double>& t,
                                                          int pieces) {
  size_t n = x.size();
  constexpr size_t kMinPoints = 3;
  std::pair<double, std::vector<AlphaBetaPiece>> best{INFINITY, {}};
  if (pieces == 1) {
    AlphaBetaPiece p = fit_piece(x, t, 0, n);
    return {sum_sq_rel(x, t, 0, n, p), {p}};
  }
  if (n < kMinPoints * pieces) return best;
  for (size_t cut = kMinPoints; cut + kMinPoints * (pieces - 1) <= n; ++cut) {
    AlphaBetaPiece first = fit_piece(x, t, 0, cut);
    double err = sum_sq_rel(x, t, 0, cut, first);
    std::vector<double> rx(x.begin() + cut, x.end()), rt(t.begin() + cut, t.end());
    auto rest = best_split(rx, rt, pieces - 1);
    if (err + rest.first < best.first) {
      best.first = err + rest.first;
      best.second = {first};
      best.second.insert(best.second.end(), rest.second.begin(), rest.second.end());
    }
  }
  return best;
}

}  // namespace

AlphaBetaFit fit_alpha_beta(const std::vector<double>& bytes, const std::vector<double>& seconds,
                            int max_pieces) {
  PPSIM_CHECK(!bytes.empty() && bytes.size() == seconds.size(), "alpha-beta fit needs points");
  // Sort by size; points of equal size stay (each is a measurement).
  std::vector<size_t> order(bytes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] < bytes[b]; });
  std::vector<double> x, t;
  for (size_t i : order) {
    PPSIM_CHECK(bytes[i] > 0 && seconds[i] > 0, "alpha-beta fit needs positive points");
    x.push_back(bytes[i]);
    t.push_back(seconds[i]);
  }
  auto best = best_split(x, t, 1);
  for (int pieces = 2; pieces <= max_pieces; ++pieces) {
    auto more = best_split(x, t, pieces);
    // A break must halve the rms residual (the sum of squares quarters) and matter (> 1%).
    double rms = std::sqrt(best.first / x.size());
    if (more.second.empty() || rms < 0.01 || more.first > 0.25 * best.first) break;
    best = std::move(more);
  }
  AlphaBetaFit fit;
  fit.pieces = best.second;
  std::vector<double> model;
  for (double b : x) model.push_back(fit.seconds(b));
  fit.residuals = residuals_of(model, t);
  return fit;
}

ComputeFit fit_compute(const std::vector<double>& flops, const std::vector<double>& bytes,
                       const std::vector<double>& seconds) {
  size_t n = seconds.size();
  PPSIM_CHECK(n >= 1 && flops.size() == n && bytes.size() == n, "compute fit needs points");
  Eigen::VectorXd t(n);
  for (size_t i = 0; i < n; ++i) t(i) = seconds[i];
  // Every subset of {latency, flops, bytes} terms; keep the best fit whose coefficients are
  // all >= 0 (a tiny active-set non-negative least squares).
  ComputeFit best;
  double best_err = INFINITY;
  for (int mask = 1; mask < 8; ++mask) {
    std::vector<int> cols;
    for (int c = 0; c < 3; ++c) {
      if (mask & (1 << c)) cols.push_back(c);
    }
    if (cols.size() > n) continue;
    Eigen::MatrixXd a(n, cols.size());
    for (size_t i = 0; i < n; ++i) {
      double row[3] = {1.0, flops[i], bytes[i]};
      for (size_t c = 0; c < cols.size(); ++c) a(i, c) = row[cols[c]];
    }
    Eigen::VectorXd c = relative_least_squares(a, t);
    if ((c.array() < 0).any() || !c.allFinite()) continue;
    double coef[3] = {0, 0, 0};
    for (size_t i = 0; i < cols.size(); ++i) coef[cols[i]] = c(i);
    ComputeFit fit;
    fit.latency = coef[0];
    fit.peak = coef[1] > 0 ? 1.0 / coef[1] : 0;
    fit.bandwidth = coef[2] > 0 ? 1.0 / coef[2] : 0;
    std::vector<double> model, measured(seconds);
    for (size_t i = 0; i < n; ++i) model.push_back(fit.seconds(flops[i], bytes[i]));
    fit.residuals = residuals_of(model, measured);
    double err = fit.residuals.rms_rel;
    // Prefer fewer terms on ties (to rounding).
    if (err < best_err - 1e-12) {
      best_err = err;
      best = fit;
    }
  }
  return best;
}

ProfileFits fit_profile(const Profile& profile) {
  ProfileFits fits;
  // Collectives, in order of first appearance of each (op, n, g).
  std::vector<std::tuple<Collective, int64_t, int64_t>> shapes;
  for (const CollectiveSample& s : profile.collectives) {
    auto key = std::make_tuple(s.op, s.ranks, s.ranks_per_node);
    if (std::find(shapes.begin(), shapes.end(), key) == shapes.end()) shapes.push_back(key);
  }
  for (auto [op, n, g] : shapes) {
    std::vector<double> x, t;
    for (const CollectiveSample& s : profile.collectives) {
      if (s.op == op && s.ranks == n && s.ranks_per_node == g) {
        x.push_back(s.bytes);
        t.push_back(s.seconds);
      }
    }
    fits.collectives.push_back({op, n, g, fit_alpha_beta(x, t)});
  }
  for (std::string kernel : {"copy", "norm", "elementwise", "adam"}) {
    std::vector<double> x, t;
    for (const MemorySample& s : profile.memory) {
      if (s.kernel == kernel) {
        x.push_back(s.bytes);
        t.push_back(s.seconds);
      }
    }
    if (!x.empty()) fits.memory.push_back({kernel, fit_alpha_beta(x, t, 1)});
  }
  for (bool h2d : {true, false}) {
    std::vector<double> x, t;
    for (const HostTransferSample& s : profile.host_transfer) {
      if (s.to_device == h2d) {
        x.push_back(s.bytes);
        t.push_back(s.seconds);
      }
    }
    if (!x.empty()) fits.host_transfer.push_back({h2d, fit_alpha_beta(x, t, 1)});
  }
  for (const std::string& dtype : profile_dtypes()) {
    std::vector<double> f, b, t;
    for (const GemmSample& s : profile.gemm) {
      if (s.dtype == dtype) {
        f.push_back(s.flops());
        b.push_back(s.bytes());
        t.push_back(s.seconds);
      }
    }
    if (!t.empty()) {
      ComputeFit fit = fit_compute(f, b, t);
      fit.dtype = dtype;
      fits.gemm.push_back(fit);
    }
    for (bool backward : {false, true}) {
      std::vector<double> af, ab, at;
      for (const AttentionSample& s : profile.attention) {
        if (s.dtype == dtype && s.backward == backward) {
          af.push_back(s.flops);
          ab.push_back(s.bytes());
          at.push_back(s.seconds);
        }
      }
      if (!at.empty()) {
        ComputeFit fit = fit_compute(af, ab, at);
        fit.dtype = dtype;
        fit.backward = backward;
        fits.attention.push_back(fit);
      }
    }
  }
  return fits;
}

}  // namespace ppsim
