#include "simulator/cost/profile.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {
namespace {

constexpr double kUs = 1e-6;
constexpr double kGBps = 1e9;
constexpr double kTflops = 1e12;
// Derived columns must match their definition to this relative tolerance.
constexpr double kDerivedTolerance = 1e-3;

const std::vector<std::string> kCollectiveNames = {"all_reduce", "all_gather", "reduce_scatter",
                                                   "alltoall",   "broadcast",  "sendrecv"};
const Collective kCollectives[] = {Collective::kAllReduce,     Collective::kAllGather,
                                   Collective::kReduceScatter, Collective::kAllToAll,
                                   Collective::kBroadcast,     Collective::kSendRecv};

Collective collective_from_name(const std::string& name) {
  for (size_t i = 0; i < kCollectiveNames.size(); ++i) {
    if (kCollectiveNames[i] == name) return kCollectives[i];
  }
  PPSIM_CHECK(false, "unknown collective " + name);
  return Collective::kAllReduce;
}

// ---- Parsing ----

// Checks a derived column: `value` (in JSON units) against `expected` (same units).
void check_derived(JsonReader& reader, const std::string& key, double value, double expected) {
  if (std::abs(value - expected) > kDerivedTolerance * std::max(std::abs(expected), 1e-300)) {
    reader.fail(key, fmt::format("expected {:.6g} (from the sample's size and time), got {:.6g}",
                                 expected, value));
  }
}

std::vector<JsonReader> elements(JsonReader& reader, const std::string& key) {
  const nlohmann::json& array = reader.required_array(key);
  if (!array.is_array()) reader.fail(key, "expected an array, got " + describe_json_type(array));
  std::vector<JsonReader> out;
  for (size_t i = 0; i < array.size(); ++i) {
    out.emplace_back(array[i], reader.source(), fmt::format("{}/{}", reader.path_of(key), i));
  }
  return out;
}

double read_time(JsonReader& r) { return r.required_number("time_us", 1e-300) * kUs; }

FitResiduals read_residuals(JsonReader& r) {
  FitResiduals res;
  res.points = r.required_int("points", 1);
  res.rms_rel = r.required_number("rms_rel_residual", 0);
  res.max_rel = r.required_number("max_rel_residual", 0);
  return res;
}

AlphaBetaFit read_alpha_beta(JsonReader& r) {
  AlphaBetaFit fit;
  for (JsonReader& p : elements(r, "pieces")) {
    AlphaBetaPiece piece;
    piece.min_bytes = p.required_number("min_bytes", 0);
    piece.max_bytes = p.required_number("max_bytes", piece.min_bytes);
    piece.alpha = p.required_number("alpha_us", 0) * kUs;
    piece.beta = p.required_number("beta_GBps", 1e-300) * kGBps;
    p.finish();
    fit.pieces.push_back(piece);
  }
  if (fit.pieces.empty()) r.fail("pieces", "expected at least one piece");
  fit.residuals = read_residuals(r);
  return fit;
}

ComputeFit read_compute_fit(JsonReader& r, bool attention) {
  ComputeFit fit;
  fit.dtype = r.required_choice("dtype", profile_dtypes());
  if (attention) fit.backward = r.required_choice("pass", {"fwd", "bwd"}) == "bwd";
  fit.latency = r.required_number("latency_us", 0) * kUs;
  fit.peak = r.required_number("peak_tflops", 0) * kTflops;
  fit.bandwidth = r.required_number("bandwidth_GBps", 0) * kGBps;
  fit.residuals = read_residuals(r);
  r.finish();
  return fit;
}

// ---- Writing ----

using Ordered = nlohmann::ordered_json;

Ordered residuals_json(Ordered j, const FitResiduals& r) {
  j["points"] = r.points;
  j["rms_rel_residual"] = r.rms_rel;
  j["max_rel_residual"] = r.max_rel;
  return j;
}

Ordered alpha_beta_json(Ordered j, const AlphaBetaFit& fit) {
  Ordered pieces = Ordered::array();
  for (const AlphaBetaPiece& p : fit.pieces) {
    pieces.push_back({{"min_bytes", p.min_bytes},
                      {"max_bytes", p.max_bytes},
                      {"alpha_us", p.alpha / kUs},
                      {"beta_GBps", p.beta / kGBps}});
  }
  j["pieces"] = pieces;
  return residuals_json(std::move(j), fit.residuals);
}

Ordered compute_fit_json(const ComputeFit& fit, bool attention) {
  Ordered j;
  j["dtype"] = fit.dtype;
  if (attention) j["pass"] = fit.backward ? "bwd" : "fwd";
  j["latency_us"] = fit.latency / kUs;
  j["peak_tflops"] = fit.peak / kTflops;
  j["bandwidth_GBps"] = fit.bandwidth / kGBps;
  return residuals_json(std::move(j), fit.residuals);
}

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

// "a", "a/b" or "a/b/c": the key of a lookup series.
std::string series_key(std::string_view a, std::string_view b = {}, double c = 0) {
  if (b.empty()) return std::string(a);
  return c > 0 ? fmt::format("{}/{}/{}", a, b, c) : fmt::format("{}/{}", a, b);
}

// The exact-shape key of a GEMM: dims rounded to whole elements.
ProfileTable::GemmShapeKey gemm_shape_key(std::string_view dtype, double m, double n, double k,
                                          double batch) {
  return {std::string(dtype), std::llround(m), std::llround(n), std::llround(k),
          std::llround(batch)};
}

}  // namespace

double dtype_bytes(std::string_view dtype) {
  if (dtype == "fp8") return 1;
  if (dtype == "fp32") return 4;
  PPSIM_CHECK(dtype == "bf16" || dtype == "fp16", "unknown dtype " + std::string(dtype));
  return 2;
}

double GemmSample::bytes() const { return dtype_bytes(dtype) * (m * k + k * n + m * n) * batch; }

double AlphaBetaFit::seconds(double bytes) const {
  PPSIM_CHECK(!pieces.empty(), "empty alpha-beta fit");
  const AlphaBetaPiece* use = &pieces.back();
  for (const AlphaBetaPiece& p : pieces) {
    if (bytes <= p.max_bytes) {
      use = &p;
      break;
    }
  }
  return use->alpha + bytes / use->beta;
}

double ComputeFit::seconds(double flops, double bytes) const {
  return latency + (peak > 0 ? flops / peak : 0) + (bandwidth > 0 ? bytes / bandwidth : 0);
}

Profile parse_profile(const std::string& text, const std::string& source) {
  nlohmann::json json = parse_json_text(text, source);
  JsonReader root(json, source);
  std::string format = root.required_string("format");
  if (format != "ppsim-profile") {
    root.fail("format", "expected \"ppsim-profile\", got \"" + format + "\"");
  }
  int64_t version = root.required_int("version", 1);
  if (version != kProfileVersion) {
    root.fail("version", fmt::format("unsupported profile version {}; this ppsim reads version {} "
                                     "(re-run ppsim profile)",
                                     version, kProfileVersion));
  }
  Profile profile;
  profile.backend = root.required_choice("backend", {"cuda", "cpu"});

  JsonReader device = root.required_object("device");
  profile.device.name = device.required_string("name");
  if (auto gpu = device.optional_string("catalog_gpu")) {
    if (!find_gpu(*gpu)) {
      device.fail("catalog_gpu",
                  "unknown GPU '" + *gpu + "'" + did_you_mean(*gpu, gpu_names()) +
                      "; expected a name from the GPU catalog, or leave the key out");
    }
    profile.device.catalog_gpu = *gpu;
  }
  profile.device.count = device.required_int("count", 1);
  profile.device.host = device.required_string("host");
  profile.device.driver = device.required_string("driver");
  profile.device.cuda = device.required_string("cuda");
  profile.device.nccl = device.required_string("nccl");
  profile.device.library = device.required_string("library");
  device.finish();

  JsonReader method = root.required_object("method");
  profile.method.warmup_iters = method.required_int("warmup_iters", 0);
  profile.method.iters = method.required_int("iters", 1);
  method.required_choice("statistic", {"median"});
  profile.method.timer = method.required_choice("timer", {"cuda_events", "steady_clock"});
  method.finish();

  for (JsonReader& r : elements(root, "gemm")) {
    GemmSample s;
    s.dtype = r.required_choice("dtype", profile_dtypes());
    s.m = r.required_number("m", 1);
    s.n = r.required_number("n", 1);
    s.k = r.required_number("k", 1);
    s.batch = r.required_number("batch", 1);
    s.seconds = read_time(r);
    check_derived(r, "tflops", r.required_number("tflops", 0), s.flops() / s.seconds / kTflops);
    r.finish();
    profile.gemm.push_back(s);
  }
  for (JsonReader& r : elements(root, "attention")) {
    AttentionSample s;
    s.dtype = r.required_choice("dtype", profile_dtypes());
    s.backward = r.required_choice("pass", {"fwd", "bwd"}) == "bwd";
    s.impl = r.required_choice("impl", {"cudnn_sdpa", "gemm_softmax", "eigen"});
    s.batch_heads = r.required_number("batch_heads", 1);
    s.seq_len = r.required_number("seq_len", 1);
    s.head_dim = r.required_number("head_dim", 1);
    s.causal = r.required_bool("causal");
    s.flops = r.required_number("flops", 1e-300);
    s.seconds = read_time(r);
    check_derived(r, "tflops", r.required_number("tflops", 0), s.flops / s.seconds / kTflops);
    r.finish();
    profile.attention.push_back(s);
  }
  for (JsonReader& r : elements(root, "memory")) {
    MemorySample s;
    s.kernel = r.required_choice("kernel", {"copy", "norm", "elementwise", "adam"});
    s.bytes = r.required_number("bytes", 1);
    s.seconds = read_time(r);
    check_derived(r, "GBps", r.required_number("GBps", 0), s.bytes / s.seconds / kGBps);
    r.finish();
    profile.memory.push_back(s);
  }
  for (JsonReader& r : elements(root, "host_transfer")) {
    HostTransferSample s;
    s.to_device = r.required_choice("direction", {"h2d", "d2h"}) == "h2d";
    s.pinned = r.required_bool("pinned");
    s.bytes = r.required_number("bytes", 1);
    s.seconds = read_time(r);
    check_derived(r, "GBps", r.required_number("GBps", 0), s.bytes / s.seconds / kGBps);
    r.finish();
    profile.host_transfer.push_back(s);
  }
  for (JsonReader& r : elements(root, "collectives")) {
    CollectiveSample s;
    s.op = collective_from_name(r.required_choice("op", kCollectiveNames));
    s.ranks = r.required_int("ranks", 1);
    s.ranks_per_node = r.required_int("ranks_per_node", 1, s.ranks);
    if (s.ranks % s.ranks_per_node != 0) {
      r.fail("ranks_per_node", fmt::format("expected a divisor of ranks = {}, got {}", s.ranks,
                                           s.ranks_per_node));
    }
    s.group = r.required_choice("group", {"intra_node", "rail", "all", "threads"});
    s.bytes = r.required_number("bytes", 1);
    s.seconds = read_time(r);
    double algbw = algorithm_bandwidth(s.bytes, s.seconds) / kGBps;
    check_derived(r, "algbw_GBps", r.required_number("algbw_GBps", 0), algbw);
    check_derived(r, "busbw_GBps", r.required_number("busbw_GBps", 0),
                  algbw * bus_bandwidth_factor(s.op, s.ranks));
    r.finish();
    profile.collectives.push_back(s);
  }

  JsonReader fits = root.required_object("fits");
  for (JsonReader& r : elements(fits, "collectives")) {
    CollectiveFit f;
    f.op = collective_from_name(r.required_choice("op", kCollectiveNames));
    f.ranks = r.required_int("ranks", 1);
    f.ranks_per_node = r.required_int("ranks_per_node", 1, f.ranks);
    f.fit = read_alpha_beta(r);
    r.finish();
    profile.fits.collectives.push_back(f);
  }
  for (JsonReader& r : elements(fits, "memory")) {
    MemoryFit f;
    f.kernel = r.required_choice("kernel", {"copy", "norm", "elementwise", "adam"});
    f.fit = read_alpha_beta(r);
    r.finish();
    profile.fits.memory.push_back(f);
  }
  for (JsonReader& r : elements(fits, "host_transfer")) {
    HostTransferFit f;
    f.to_device = r.required_choice("direction", {"h2d", "d2h"}) == "h2d";
    f.fit = read_alpha_beta(r);
    r.finish();
    profile.fits.host_transfer.push_back(f);
  }
  for (JsonReader& r : elements(fits, "gemm")) profile.fits.gemm.push_back(read_compute_fit(r, false));
  for (JsonReader& r : elements(fits, "attention")) {
    profile.fits.attention.push_back(read_compute_fit(r, true));
  }
  fits.finish();
  root.finish();
  return profile;
}

Profile load_profile(const std::string& path) { return parse_profile(read_text_file(path), path); }

std::string profile_json(const Profile& p) {
  Ordered j;
  j["format"] = "ppsim-profile";
  j["version"] = kProfileVersion;
  j["backend"] = p.backend;
  Ordered device;
  device["name"] = p.device.name;
  if (!p.device.catalog_gpu.empty()) device["catalog_gpu"] = p.device.catalog_gpu;
  device["count"] = p.device.count;
  device["host"] = p.device.host;
  device["driver"] = p.device.driver;
  device["cuda"] = p.device.cuda;
  device["nccl"] = p.device.nccl;
  device["library"] = p.device.library;
  j["device"] = device;
  j["method"] = {{"warmup_iters", p.method.warmup_iters},
                 {"iters", p.method.iters},
                 {"statistic", "median"},
                 {"timer", p.method.timer}};
  Ordered gemm = Ordered::array();
  for (const GemmSample& s : p.gemm) {
    gemm.push_back({{"dtype", s.dtype},
                    {"m", s.m},
                    {"n", s.n},
                    {"k", s.k},
                    {"batch", s.batch},
                    {"time_us", s.seconds / kUs},
                    {"tflops", s.flops() / s.seconds / kTflops}});
  }
  j["gemm"] = gemm;
  Ordered attention = Ordered::array();
  for (const AttentionSample& s : p.attention) {
    attention.push_back({{"dtype", s.dtype},
                         {"pass", s.backward ? "bwd" : "fwd"},
                         {"impl", s.impl},
                         {"batch_heads", s.batch_heads},
                         {"seq_len", s.seq_len},
                         {"head_dim", s.head_dim},
                         {"causal", s.causal},
                         {"flops", s.flops},
                         {"time_us", s.seconds / kUs},
                         {"tflops", s.flops / s.seconds / kTflops}});
  }
  j["attention"] = attention;
  Ordered memory = Ordered::array();
  for (const MemorySample& s : p.memory) {
    memory.push_back({{"kernel", s.kernel},
                      {"bytes", s.bytes},
                      {"time_us", s.seconds / kUs},
                      {"GBps", s.bytes / s.seconds / kGBps}});
  }
  j["memory"] = memory;
  Ordered host = Ordered::array();
  for (const HostTransferSample& s : p.host_transfer) {
    host.push_back({{"direction", s.to_device ? "h2d" : "d2h"},
                    {"pinned", s.pinned},
                    {"bytes", s.bytes},
                    {"time_us", s.seconds / kUs},
                    {"GBps", s.bytes / s.seconds / kGBps}});
  }
  j["host_transfer"] = host;
  Ordered coll = Ordered::array();
  for (const CollectiveSample& s : p.collectives) {
    double algbw = algorithm_bandwidth(s.bytes, s.seconds) / kGBps;
    coll.push_back({{"op", std::string(collective_name(s.op))},
                    {"ranks", s.ranks},
                    {"ranks_per_node", s.ranks_per_node},
                    {"group", s.group},
                    {"bytes", s.bytes},
                    {"time_us", s.seconds / kUs},
                    {"algbw_GBps", algbw},
                    {"busbw_GBps", algbw * bus_bandwidth_factor(s.op, s.ranks)}});
  }
  j["collectives"] = coll;
  Ordered fits;
  fits["collectives"] = Ordered::array();
  for (const CollectiveFit& f : p.fits.collectives) {
    Ordered e{{"op", std::string(collective_name(f.op))},
              {"ranks", f.ranks},
              {"ranks_per_node", f.ranks_per_node}};
    fits["collectives"].push_back(alpha_beta_json(std::move(e), f.fit));
  }
  fits["memory"] = Ordered::array();
  for (const MemoryFit& f : p.fits.memory) {
    fits["memory"].push_back(alpha_beta_json(Ordered{{"kernel", f.kernel}}, f.fit));
  }
  fits["host_transfer"] = Ordered::array();
  for (const HostTransferFit& f : p.fits.host_transfer) {
    fits["host_transfer"].push_back(
        alpha_beta_json(Ordered{{"direction", f.to_device ? "h2d" : "d2h"}}, f.fit));
  }
  fits["gemm"] = Ordered::array();
  for (const ComputeFit& f : p.fits.gemm) fits["gemm"].push_back(compute_fit_json(f, false));
  fits["attention"] = Ordered::array();
  for (const ComputeFit& f : p.fits.attention) {
    fits["attention"].push_back(compute_fit_json(f, true));
  }
  j["fits"] = fits;
  return j.dump(2) + "\n";
}

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

// ---- Lookup ----

ProfileTable::Series ProfileTable::make_series(std::vector<std::pair<double, double>> points) {
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Series s;
  for (size_t i = 0; i < points.size();) {
    size_t j = i;
    double log_sum = 0;
    while (j < points.size() && points[j].first == points[i].first) log_sum += std::log(points[j++].second);
    s.x.push_back(points[i].first);
    s.seconds.push_back(j - i == 1 ? points[i].second : std::exp(log_sum / (j - i)));
    i = j;
  }
  return s;
}

ProfileEstimate ProfileTable::Series::at(double value) const {
  PPSIM_CHECK(!x.empty(), "empty profile series");
  ProfileEstimate e;
  if (value <= x.front()) {
    e.seconds = seconds.front();
    e.extrapolated = value < x.front();
    return e;
  }
  if (value >= x.back()) {
    e.seconds = seconds.back() * value / x.back();
    e.extrapolated = value > x.back();
    return e;
  }
  size_t hi = std::upper_bound(x.begin(), x.end(), value) - x.begin();
  size_t lo = hi - 1;
  if (x[lo] == value) {
    e.seconds = seconds[lo];
    return e;
  }
  double f = std::log(value / x[lo]) / std::log(x[hi] / x[lo]);
  e.seconds = std::exp(std::log(seconds[lo]) + f * std::log(seconds[hi] / seconds[lo]));
  return e;
}

ProfileTable::ProfileTable(Profile profile) : profile_(std::move(profile)) {
  auto add = [](std::vector<Keyed>& list, const std::string& key, double x, double t) {
    auto it = std::find_if(list.begin(), list.end(), [&](const Keyed& k) { return k.key == key; });
    if (it == list.end()) {
      list.push_back({key, {}});
      it = list.end() - 1;
    }
    it->series.x.push_back(x);
    it->series.seconds.push_back(t);
  };
  std::map<GemmShapeKey, std::vector<double>> shape_times;
  for (const GemmSample& s : profile_.gemm) {
    add(gemm_, s.dtype, s.flops(), s.seconds);
    shape_times[gemm_shape_key(s.dtype, s.m, s.n, s.k, s.batch)].push_back(s.seconds);
  }
  for (const auto& [key, times] : shape_times) {
    double log_sum = 0;
    for (double t : times) log_sum += std::log(t);
    gemm_shapes_[key] =
        times.size() == 1 ? times[0] : std::exp(log_sum / static_cast<double>(times.size()));
  }
  for (const AttentionSample& s : profile_.attention) {
    add(attention_, series_key(s.dtype, s.backward ? "bwd" : "fwd", s.head_dim), s.flops,
        s.seconds);
  }
  for (const MemorySample& s : profile_.memory) add(memory_, s.kernel, s.bytes, s.seconds);
  for (const HostTransferSample& s : profile_.host_transfer) {
    add(transfer_, s.to_device ? "h2d" : "d2h", s.bytes, s.seconds);
  }
  for (const CollectiveSample& s : profile_.collectives) {
    add(collective_,
        fmt::format("{}/{}/{}", collective_name(s.op), s.ranks, s.ranks_per_node), s.bytes,
        s.seconds);
  }
  // Re-sort each series and merge equal x (make_series).
  for (auto* list : {&gemm_, &attention_, &memory_, &transfer_, &collective_}) {
    for (Keyed& k : *list) {
      std::vector<std::pair<double, double>> points;
      for (size_t i = 0; i < k.series.x.size(); ++i) points.push_back({k.series.x[i], k.series.seconds[i]});
      k.series = make_series(std::move(points));
    }
  }
}

const double* ProfileTable::measured_gemm(const std::string& dtype,
                                           const GemmShape& shape) const {
  auto it = gemm_shapes_.find(gemm_shape_key(dtype, shape.m, shape.n, shape.k, shape.batch));
  return it == gemm_shapes_.end() ? nullptr : &it->second;
}

const ProfileTable::Series* ProfileTable::find(const std::vector<Keyed>& list,
                                               const std::string& key) const {
  for (const Keyed& k : list) {
    if (k.key == key) return &k.series;
  }
  return nullptr;
}

const std::pair<std::string, std::string_view>* ProfileTable::gemm_table(
    Precision precision) const {
  static constexpr std::string_view kTwinNote = "profile has no GEMMs of this dtype: 16-bit twin used";
  static constexpr std::string_view kOtherNote = "profile has no 16-bit GEMMs: its other dtype used";
  static const std::vector<std::pair<std::string, std::string_view>> kOrders[] = {
      {{"bf16", {}}, {"fp16", kTwinNote}, {"fp8", kOtherNote}, {"fp32", kOtherNote}},
      {{"fp16", {}}, {"bf16", kTwinNote}, {"fp8", kOtherNote}, {"fp32", kOtherNote}},
      {{"fp8", {}}}};
  // Tables are tried in order: the precision's own, its 16-bit twin, then (not for fp8, whose
  // roofline peak is the better guess) any measured dtype.
  const auto& order = kOrders[precision == Precision::kBf16 ? 0 : precision == Precision::kFp16 ? 1 : 2];
  for (const auto& entry : order) {
    if (find(gemm_, entry.first)) return &entry;
  }
  return nullptr;
}

bool ProfileTable::measured_gemm_shape(Precision precision, const GemmShape& shape) const {
  const auto* table = gemm_table(precision);
  return table && measured_gemm(table->first, shape);
}

std::optional<ProfileEstimate> ProfileTable::gemm(Precision precision,
                                                  const GemmShape& shape) const {
  const auto* table = gemm_table(precision);
  if (!table) return std::nullopt;
  const auto& [dtype, note] = *table;
  double flops = 2 * shape.m * shape.n * shape.k * shape.batch;
  if (const double* seconds = measured_gemm(dtype, shape)) {
    double measured_flops = 2.0 * std::llround(shape.m) * std::llround(shape.n) *
                            std::llround(shape.k) * std::llround(shape.batch);
    return ProfileEstimate{*seconds * (flops / measured_flops), false, note};
  }
  ProfileEstimate e = find(gemm_, dtype)->at(flops);
  e.note = note;
  return e;
}

std::optional<ProfileEstimate> ProfileTable::attention(Precision precision, bool backward,
                                                       double head_dim, double flops) const {
  std::string pass = backward ? "bwd" : "fwd";
  std::vector<std::string> dtypes = {precision == Precision::kFp16 ? "fp16" : "bf16",
                                     precision == Precision::kFp16 ? "bf16" : "fp16", "fp32"};
  for (const std::string& dtype : dtypes) {
    // The nearest measured head size of this dtype and pass (in log distance).
    const Series* best = nullptr;
    double best_dim = 0;
    for (const AttentionSample& a : profile_.attention) {
      if (a.dtype != dtype || a.backward != backward) continue;
      if (!best || std::abs(std::log(a.head_dim / head_dim)) <
                       std::abs(std::log(best_dim / head_dim))) {
        best = find(attention_, series_key(dtype, pass, a.head_dim));
        best_dim = a.head_dim;
      }
    }
    if (best) {
      ProfileEstimate e = best->at(flops);
      e.extrapolated = e.extrapolated || best_dim != head_dim;
      if (dtype == "fp32") e.note = "profile has no 16-bit attention: fp32 table used";
      return e;
    }
  }
  return std::nullopt;
}

std::optional<ProfileEstimate> ProfileTable::memory(std::string_view kernel, double bytes) const {
  const Series* s = find(memory_, std::string(kernel));
  if (!s) s = find(memory_, "copy");
  if (!s) return std::nullopt;
  return s->at(bytes);
}

std::optional<ProfileEstimate> ProfileTable::optimizer(double bytes) const {
  const Series* s = find(memory_, "adam");
  if (!s) return std::nullopt;
  return s->at(bytes);
}

std::optional<ProfileEstimate> ProfileTable::host_transfer(bool to_device, double bytes) const {
  const Series* s = find(transfer_, to_device ? "h2d" : "d2h");
  if (!s) return std::nullopt;
  return s->at(bytes);
}

std::optional<ProfileEstimate> ProfileTable::collective(Collective op, int64_t ranks,
                                                        int64_t ranks_per_node,
                                                        double bytes) const {
  if (ranks <= 1 || bytes <= 0) return ProfileEstimate{};
  const Series* s =
      find(collective_, fmt::format("{}/{}/{}", collective_name(op), ranks, ranks_per_node));
  if (!s) return std::nullopt;
  if (s->contains(bytes)) return s->at(bytes);
  for (const CollectiveFit& f : profile_.fits.collectives) {
    if (f.op == op && f.ranks == ranks && f.ranks_per_node == ranks_per_node) {
      return ProfileEstimate{f.fit.seconds(bytes), true, {}};
    }
  }
  return s->at(bytes);
}

std::optional<ProfileTable> load_profile_for(const ClusterSpec& cluster,
                                             const std::string& flag_value) {
  if (!flag_value.empty()) {
    if (!std::filesystem::is_regular_file(flag_value)) {
      throw InputError("--profile", "",
                       fmt::format("profile file '{}' not found (write one with `ppsim profile "
                                   "--out {}`)",
                                   flag_value, flag_value));
    }
    return ProfileTable(load_profile(flag_value));
  }
  if (!cluster.profile_path) return std::nullopt;
  const std::string& path = *cluster.profile_path;
  if (!std::filesystem::is_regular_file(path)) {
    throw InputError(cluster.source.empty() ? cluster.name : cluster.source, "/profile",
                     fmt::format("profile file '{}' not found (a relative path is read from the "
                                 "cluster file's folder; fix the path or remove the key)",
                                 path));
  }
  return ProfileTable(load_profile(path));
}

bool profile_applies_to(const Profile& profile, const GpuSpec& gpu) {
  return profile.device.catalog_gpu.empty() || profile.device.catalog_gpu == gpu.name;
}

const ProfileTable* profile_for_gpu(const ProfileTable* profile, const GpuSpec& gpu) {
  return profile && profile_applies_to(profile->profile(), gpu) ? profile : nullptr;
}

}  // namespace ppsim
