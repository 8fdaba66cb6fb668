// ProfileTable: the lookup the cost model uses to turn an op or a collective into seconds from a
// profile (profile.h has the format), and how a command finds the profile that applies.
//
// Lookup (ProfileTable): measured tables win; fits only extrapolate collectives.
//   A series (one GEMM dtype, one attention (impl, dtype, pass, head_dim), one memory kernel, one
//   transfer direction, one collective group shape) is sorted by x = FLOPs or bytes; points of
//   equal x merge to their geometric-mean time. Between two points log(time) is linear in
//   log(x): exact at measured points and monotone between them. Below the smallest x the time
//   is the smallest point's (a latency floor); above the largest the rate (x / time) stays the
//   largest point's; collectives outside use the fitted alpha-beta piece instead. Either way
//   the estimate says extrapolated.
//
// Thread-safety: ProfileTable is immutable after construction.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "simulator/cost/profile.h"

namespace ppsim {

// One time from a profile.
struct ProfileEstimate {
  double seconds = 0;
  bool extrapolated = false;  // Outside the measured range (header rule).
  std::string_view note;      // Set when another dtype's table stood in, e.g. fp32 for bf16.
};

// Sorted lookup series over a profile (header rules). Lookups return nullopt when the profile
// has no table for the request (the caller falls back to the roofline).
class ProfileTable {
 public:
  explicit ProfileTable(Profile profile);

  const Profile& profile() const { return profile_; }

  // One GEMM pass of this shape (forward shape, or the B/W shapes the cost model forms).
  // Tables are tried in order: the precision's own, its 16-bit twin (bf16 <-> fp16), then,
  // except for fp8 (whose roofline peak is the better guess), any measured dtype. In a table,
  // a measured shape (m, n, k, batch each rounding to the request's) gives its own time, scaled
  // by the FLOPs ratio (fractional MoE token counts); any other shape interpolates the series.
  std::optional<ProfileEstimate> gemm(Precision precision, const GemmShape& shape) const;
  // Whether gemm() would answer this shape from its own measurement (not interpolated).
  bool measured_gemm_shape(Precision precision, const GemmShape& shape) const;
  // One attention pass of `flops` (layer_ops.h counting) at this head size, from the samples
  // of the given impls (profile.h profile_attention_impls; the first measured one wins); the
  // nearest measured head size stands in for a missing one (extrapolated). nullopt when the
  // profile measured none of `impls`.
  std::optional<ProfileEstimate> attention(Precision precision, bool backward, double head_dim,
                                           double flops,
                                           const std::vector<std::string_view>& impls) const;
  // Whether the profile measured attention with any of `impls`.
  bool has_attention(const std::vector<std::string_view>& impls) const;
  // A memory-bound kernel moving `bytes`; "norm" and "elementwise" fall back to "copy".
  std::optional<ProfileEstimate> memory(std::string_view kernel, double bytes) const;
  // An Adam step touching `bytes` (34 per parameter) from the measured "adam" kernel only;
  // nullopt without that table (the caller keeps its bandwidth model).
  std::optional<ProfileEstimate> optimizer(double bytes) const;
  std::optional<ProfileEstimate> host_transfer(bool to_device, double bytes) const;
  // A collective of nccl-tests size `bytes` on n ranks, g per node: measured points inside
  // their range, the fitted alpha-beta outside.
  std::optional<ProfileEstimate> collective(Collective op, int64_t ranks, int64_t ranks_per_node,
                                            double bytes) const;

  // A log-log series (header rule); public for tests.
  struct Series {
    std::vector<double> x;        // Ascending, distinct, > 0.
    std::vector<double> seconds;  // Per x, > 0.
    ProfileEstimate at(double x) const;
    bool contains(double value) const {
      return !x.empty() && value >= x.front() && value <= x.back();
    }
  };
  static Series make_series(std::vector<std::pair<double, double>> points);

  // dtype, m, n, k, batch rounded to whole elements.
  using GemmShapeKey = std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>;

 private:
  struct Keyed {
    std::string key;
    Series series;
  };
  const Series* find(const std::vector<Keyed>& list, const std::string& key) const;

  // The measured time of one exact GEMM shape (geometric mean over repeats), or nullptr.
  const double* measured_gemm(const std::string& dtype, const GemmShape& shape) const;
  // The GEMM table gemm() uses for a precision and the note it carries, or nullptr.
  const std::pair<std::string, std::string_view>* gemm_table(Precision precision) const;

  Profile profile_;
  std::vector<Keyed> gemm_;  // Key: dtype.
  std::map<GemmShapeKey, double> gemm_shapes_;
  std::vector<Keyed> attention_;   // Key: impl:dtype/pass/head_dim.
  std::vector<Keyed> memory_;      // Key: kernel.
  std::vector<Keyed> transfer_;    // Key: h2d | d2h.
  std::vector<Keyed> collective_;  // Key: op/n/g.
};

// The profile a command should use: `flag_value` (--profile FILE) when not empty, else the
// cluster's "profile" path (load_cluster_spec has made a relative one relative to the cluster
// file's folder), else nullopt. A missing or malformed file is an InputError naming it (and, for
// the cluster's path, the cluster file and its "/profile" key).
std::optional<ProfileTable> load_profile_for(const ClusterSpec& cluster,
                                             const std::string& flag_value);

// Whether a profile's measurements stand for `gpu`: its device's catalog_gpu is `gpu.name`, or
// it has none (a CPU or unknown device, which the profile format says stands for any GPU).
bool profile_applies_to(const Profile& profile, const GpuSpec& gpu);
// `profile` when it applies to `gpu`, else null (those GPUs keep the roofline).
const ProfileTable* profile_for_gpu(const ProfileTable* profile, const GpuSpec& gpu);

}  // namespace ppsim
