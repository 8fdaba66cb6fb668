// Profile: what `ppsim profile` measured on one machine, the models fitted to it, and
// ProfileTable, the lookup the cost model uses to turn an op or a collective into seconds.
//
// JSON format (version 1; docs/profile.md has the same with an example). Units are in the key
// names and converted once, by the parser: "_us" microseconds, "_GBps" 1e9 bytes/s, "tflops"
// 1e12 FLOP/s, bytes plain.
//   {"format": "ppsim-profile", "version": 1,
//    "backend": "cuda" | "cpu",
//    "device": {"name", "catalog_gpu"?, "count", "host", "driver", "cuda", "nccl", "library"},
//    "method": {"warmup_iters", "iters", "statistic": "median", "timer"},
//    "gemm":      [{"dtype", "m", "n", "k", "batch", "time_us", "tflops"}],
//    "attention": [{"dtype", "pass": "fwd"|"bwd", "impl", "batch_heads", "seq_len", "head_dim",
//                   "causal", "flops", "time_us", "tflops"}],
//    "memory":    [{"kernel": "copy"|"norm"|"elementwise"|"adam", "bytes", "time_us", "GBps"}],
//    "host_transfer": [{"direction": "h2d"|"d2h", "pinned", "bytes", "time_us", "GBps"}],
//    "collectives": [{"op", "ranks", "ranks_per_node", "group", "bytes", "time_us",
//                     "algbw_GBps", "busbw_GBps"}],
//    "fits": {"collectives":   [{"op", "ranks", "ranks_per_node", "pieces": [PIECE],
//                                "points", "rms_rel_residual", "max_rel_residual"}],
//             "memory":        [{"kernel", "pieces": [PIECE], "points", ...residuals}],
//             "host_transfer": [{"direction", "pieces": [PIECE], "points", ...residuals}],
//             "gemm":      [{"dtype", "latency_us", "peak_tflops", "bandwidth_GBps", "points",
//                            ...residuals}],
//             "attention": [{"dtype", "pass", same fields as gemm}]}}
//   PIECE = {"min_bytes", "max_bytes", "alpha_us", "beta_GBps"}
// Every table may be empty (the CPU backend has no host transfers); every key listed is
// required except "catalog_gpu"; unknown keys are errors. Derived columns (tflops, GBps, algbw,
// busbw) must agree with bytes or FLOPs over time to 0.1%, so a hand-edited time that forgot
// its bandwidth is caught.
//
// Derived metrics (defined once, STYLE rule 13):
//   GEMM flops = 2*m*n*k*batch; tflops = flops / time / 1e12.
//   attention flops: causal forward 2*batch_heads*seq_len^2*head_dim (QK^T and PV, halved by
//     the mask), backward 2.5x forward, as layer_ops.h counts them; written in "flops".
//   memory GBps = bytes (read + written) / time / 1e9; "adam" is one Adam step over
//     bytes / 34 parameters (kStepAdamBytesPerParameter: gradient-norm pass, p, m, v, bf16 copy); host transfer GBps = bytes / time / 1e9.
//   collectives: nccl-tests' size, algbw and busbw (collective_cost.h).
//
// Fitted models, least squares on relative error (each point weighs 1/time), so a 1 KiB
// all-reduce counts as much as a 1 GiB one:
//   alpha-beta, per collective and group shape, memory kernel and transfer direction:
//     time = alpha + bytes / beta, piecewise over bytes where NCCL switches protocol (LL, LL128,
//     Simple): up to three pieces over contiguous size ranges, a break kept only when it
//     halves the rms residual.
//   compute, per GEMM dtype and per attention (dtype, pass):
//     time = latency + flops / peak + bytes / bandwidth, bytes = elem * (m*k + k*n + m*n) *
//     batch for a GEMM, elem * 4 * batch_heads * seq_len * head_dim for attention; all three
//     coefficients >= 0 (a term whose best value is negative is dropped: bandwidth 0 means no
//     bytes term). efficiency(shape) = flops / (time * peak).
//   Residuals are (model - measured) / measured: their rms and max |.| are reported.
//
// Lookup (ProfileTable): measured tables win; fits only extrapolate collectives.
//   A series (one GEMM dtype, one attention (dtype, pass, head_dim), one memory kernel, one
//   transfer direction, one collective group shape) is sorted by x = FLOPs or bytes; points of
//   equal x merge to their geometric-mean time. Between two points log(time) is linear in
//   log(x): exact at measured points and monotone between them. Below the smallest x the time
//   is the smallest point's (a latency floor); above the largest the rate (x / time) stays the
//   largest point's; collectives outside use the fitted alpha-beta piece instead. Either way
//   the estimate says extrapolated.
//
// Thread-safety: Profile is a plain value; ProfileTable is immutable after construction.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <string>
#include <string_view>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/cost/collective_cost.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/model/layer_ops.h"

namespace ppsim {

inline constexpr int kProfileVersion = 1;

// The machine a profile was measured on.
struct ProfileDevice {
  std::string name;         // As the driver names it ("NVIDIA H200") or the CPU model.
  std::string catalog_gpu;  // gpu_catalog.h name it stands for; empty: any GPU. Optional.
  int64_t count = 1;        // Devices (GPUs, or CPU threads for the CPU backend) used.
  std::string host;         // Hostname of rank 0.
  std::string driver;       // Driver version, "" for the CPU backend.
  std::string cuda;         // CUDA runtime version, "" for the CPU backend.
  std::string nccl;         // NCCL version, "" when not built with NCCL.
  std::string library;      // GEMM library: "cublasLt 13.0.0", "Eigen 3.4.0".
};

// How every number was taken.
struct ProfileMethod {
  int64_t warmup_iters = 0;  // Untimed calls before timing.
  int64_t iters = 0;         // Timed calls; the median is reported.
  std::string timer;         // "cuda_events" or "steady_clock".
};

// Data types of measured GEMMs and attention: "bf16", "fp16", "fp8", "fp32".
inline const std::vector<std::string>& profile_dtypes() {
  static const std::vector<std::string> kDtypes = {"bf16", "fp16", "fp8", "fp32"};
  return kDtypes;
}
// Bytes per element of a profile dtype. REQUIRES: one of profile_dtypes().
double dtype_bytes(std::string_view dtype);

struct GemmSample {
  std::string dtype;  // profile_dtypes().
  double m = 0, n = 0, k = 0;  // Y[m,n] = X[m,k] W[k,n].
  double batch = 1;            // Independent products per call.
  double seconds = 0;          // Median per call. JSON "time_us".

  double flops() const { return 2 * m * n * k * batch; }
  double bytes() const;  // elem * (m*k + k*n + m*n) * batch.
};

struct AttentionSample {
  std::string dtype;
  bool backward = false;   // JSON "pass": "fwd" | "bwd".
  std::string impl;        // "cudnn_sdpa", "gemm_softmax" (batched GEMMs and a softmax kernel),
                           // "eigen".
  double batch_heads = 0;  // b * heads.
  double seq_len = 0;      // Query = key tokens.
  double head_dim = 0;
  bool causal = true;
  double flops = 0;        // Header formula.
  double seconds = 0;

  double bytes() const { return dtype_bytes(dtype) * 4 * batch_heads * seq_len * head_dim; }
};

struct MemorySample {
  std::string kernel;  // "copy", "norm" (row RMS norm), "elementwise" (a*b+c).
  double bytes = 0;    // Read + written.
  double seconds = 0;
};

struct HostTransferSample {
  bool to_device = true;  // JSON "direction": "h2d" | "d2h".
  bool pinned = true;
  double bytes = 0;
  double seconds = 0;
};

struct CollectiveSample {
  Collective op = Collective::kAllReduce;  // JSON "op": collective_name().
  int64_t ranks = 1;                       // n.
  int64_t ranks_per_node = 1;              // g.
  std::string group;  // What the group stands for: "intra_node", "rail", "all", "threads".
  double bytes = 0;   // nccl-tests size.
  double seconds = 0;
};

// time = alpha + bytes / beta on [min_bytes, max_bytes].
struct AlphaBetaPiece {
  double min_bytes = 0;
  double max_bytes = 0;
  double alpha = 0;  // Seconds. JSON "alpha_us".
  double beta = 0;   // Bytes/s, > 0. JSON "beta_GBps".
};

struct FitResiduals {
  int64_t points = 0;
  double rms_rel = 0;  // sqrt(mean(((model - measured) / measured)^2)).
  double max_rel = 0;  // max |(model - measured) / measured|.
};

struct AlphaBetaFit {
  std::vector<AlphaBetaPiece> pieces;  // Ascending, contiguous in the measured sizes.
  FitResiduals residuals;

  // Seconds for `bytes` on the piece covering it (the first or last one outside).
  double seconds(double bytes) const;
};

struct CollectiveFit {
  Collective op = Collective::kAllReduce;
  int64_t ranks = 1;
  int64_t ranks_per_node = 1;
  AlphaBetaFit fit;
};

struct MemoryFit {
  std::string kernel;
  AlphaBetaFit fit;
};

struct HostTransferFit {
  bool to_device = true;
  AlphaBetaFit fit;
};

// time = latency + flops / peak + bytes / bandwidth (a term is absent when its rate is 0).
struct ComputeFit {
  std::string dtype;
  bool backward = false;  // Attention only; JSON "pass".
  double latency = 0;     // Seconds. JSON "latency_us".
  double peak = 0;        // FLOP/s; 0 = no FLOP term. JSON "peak_tflops".
  double bandwidth = 0;   // Bytes/s; 0 = no bytes term. JSON "bandwidth_GBps".
  FitResiduals residuals;

  double seconds(double flops, double bytes) const;
};

struct ProfileFits {
  std::vector<CollectiveFit> collectives;
  std::vector<MemoryFit> memory;
  std::vector<HostTransferFit> host_transfer;
  std::vector<ComputeFit> gemm;
  std::vector<ComputeFit> attention;
};

struct Profile {
  std::string backend;  // "cuda" or "cpu".
  ProfileDevice device;
  ProfileMethod method;
  std::vector<GemmSample> gemm;
  std::vector<AttentionSample> attention;
  std::vector<MemorySample> memory;
  std::vector<HostTransferSample> host_transfer;
  std::vector<CollectiveSample> collectives;
  ProfileFits fits;
};

// Parses a profile JSON (format above). Pure; every error is an InputError naming `source` and
// the JSON path.
Profile parse_profile(const std::string& text, const std::string& source);
// Reads and parses a file; a missing file is an InputError.
Profile load_profile(const std::string& path);
// The JSON text of a profile (2-space indent, keys in the order above, trailing newline).
// parse_profile(profile_json(p)) equals p to the last bit or two of each double (unit
// conversions round), and its JSON has the same keys in the same order.
std::string profile_json(const Profile& profile);

// Least-squares fits of the header. REQUIRES: bytes > 0 and seconds > 0 in every point.
// Exact data (time = alpha + bytes/beta) comes back exactly, to rounding.
AlphaBetaFit fit_alpha_beta(const std::vector<double>& bytes, const std::vector<double>& seconds,
                            int max_pieces = 3);
// REQUIRES: flops.size() == bytes.size() == seconds.size() >= 1; seconds > 0.
ComputeFit fit_compute(const std::vector<double>& flops, const std::vector<double>& bytes,
                       const std::vector<double>& seconds);
// Every fit of the header over the profile's measured tables (replaces profile.fits).
ProfileFits fit_profile(const Profile& profile);

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
  // One attention pass of `flops` (layer_ops.h counting) at this head size; the nearest measured
  // head size stands in for a missing one (extrapolated).
  std::optional<ProfileEstimate> attention(Precision precision, bool backward, double head_dim,
                                           double flops) const;
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
  std::vector<Keyed> gemm_;        // Key: dtype.
  std::map<GemmShapeKey, double> gemm_shapes_;
  std::vector<Keyed> attention_;   // Key: dtype/pass/head_dim.
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
