#include "simulator/cost/profile_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <utility>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

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

// ---- Lookup ----

ProfileTable::Series ProfileTable::make_series(std::vector<std::pair<double, double>> points) {
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Series s;
  for (size_t i = 0; i < points.size();) {
    size_t j = i;
    double log_sum = 0;
    while (j < points.size() && points[j].first == points[i].first)
      log_sum += std::log(points[j++].second);
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
    add(attention_, s.impl + ":" + series_key(s.dtype, s.backward ? "bwd" : "fwd", s.head_dim),
        s.flops, s.seconds);
  }
  for (const MemorySample& s : profile_.memory) add(memory_, s.kernel, s.bytes, s.seconds);
  for (const HostTransferSample& s : profile_.host_transfer) {
    add(transfer_, s.to_device ? "h2d" : "d2h", s.bytes, s.seconds);
  }
  for (const CollectiveSample& s : profile_.collectives) {
    add(collective_, fmt::format("{}/{}/{}", collective_name(s.op), s.ranks, s.ranks_per_node),
        s.bytes, s.seconds);
  }
  // Re-sort each series and merge equal x (make_series).
  for (auto* list : {&gemm_, &attention_, &memory_, &transfer_, &collective_}) {
    for (Keyed& k : *list) {
      std::vector<std::pair<double, double>> points;
      for (size_t i = 0; i < k.series.x.size(); ++i)
        points.push_back({k.series.x[i], k.series.seconds[i]});
      k.series = make_series(std::move(points));
    }
  }
}

const double* ProfileTable::measured_gemm(const std::string& dtype, const GemmShape& shape) const {
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
  static constexpr std::string_view kTwinNote =
      "profile has no GEMMs of this dtype: 16-bit twin used";
  static constexpr std::string_view kOtherNote =
      "profile has no 16-bit GEMMs: its other dtype used";
  static const std::vector<std::pair<std::string, std::string_view>> kOrders[] = {
      {{"bf16", {}}, {"fp16", kTwinNote}, {"fp8", kOtherNote}, {"fp32", kOtherNote}},
      {{"fp16", {}}, {"bf16", kTwinNote}, {"fp8", kOtherNote}, {"fp32", kOtherNote}},
      {{"fp8", {}}},
      {}};
  // Tables are tried in order: the precision's own, its 16-bit twin, then (not for fp8, whose
  // roofline peak is the better guess) any measured dtype. ppsim profile measures no nvfp4
  // GEMMs, so nvfp4 keeps the roofline (its fp4 peak).
  const auto& order = kOrders[precision == Precision::kBf16   ? 0
                              : precision == Precision::kFp16 ? 1
                              : precision == Precision::kFp8  ? 2
                                                              : 3];
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

std::optional<ProfileEstimate> ProfileTable::attention(
    Precision precision, bool backward, double head_dim, double flops,
    const std::vector<std::string_view>& impls) const {
  std::string pass = backward ? "bwd" : "fwd";
  std::vector<std::string> dtypes = {precision == Precision::kFp16 ? "fp16" : "bf16",
                                     precision == Precision::kFp16 ? "bf16" : "fp16", "fp32"};
  for (std::string_view impl : impls) {
    for (const std::string& dtype : dtypes) {
      // The nearest measured head size of this impl, dtype and pass (in log distance).
      const Series* best = nullptr;
      double best_dim = 0;
      for (const AttentionSample& a : profile_.attention) {
        if (a.impl != impl || a.dtype != dtype || a.backward != backward) continue;
        if (!best ||
            std::abs(std::log(a.head_dim / head_dim)) < std::abs(std::log(best_dim / head_dim))) {
          best = find(attention_, a.impl + ":" + series_key(dtype, pass, a.head_dim));
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
  }
  return std::nullopt;
}

bool ProfileTable::has_attention(const std::vector<std::string_view>& impls) const {
  for (const AttentionSample& a : profile_.attention) {
    for (std::string_view impl : impls) {
      if (a.impl == impl) return true;
    }
  }
  return false;
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
