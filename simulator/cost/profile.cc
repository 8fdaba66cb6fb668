#include "simulator/cost/profile.h"

#include <fmt/format.h>

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

}  // namespace

double dtype_bytes(std::string_view dtype) {
  if (dtype == "fp8") return 1;
  if (dtype == "fp32") return 4;
  PPSIM_CHECK(dtype == "bf16" || dtype == "fp16", "unknown dtype " + std::string(dtype));
  return 2;
}

std::vector<std::string_view> profile_attention_impls(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kUnfused:
      return {"gemm_softmax", "eigen"};
    case AttentionKernel::kFused:
      return {"cudnn_sdpa"};
    case AttentionKernel::kFlash2:
    case AttentionKernel::kTriton:
      return {};
  }
  return {};
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

}  // namespace ppsim
