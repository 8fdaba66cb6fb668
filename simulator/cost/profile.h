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
// The models fitted to a profile: profile_fit.h; the lookup the cost model uses: profile_table.h.
//
// Thread-safety: Profile is a plain value; the functions here are pure (load_profile reads a file).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <string>
#include <string_view>
#include <vector>

#include "simulator/cost/collective_cost.h"
#include "simulator/model/layer_ops.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/runtime.h"

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

// The attention "impl" values that measure a plan's attention kernel (runtime.h): unfused
// attention is what "gemm_softmax" (CUDA: batched QK^T, a softmax kernel, batched PV) and
// "eigen" (CPU: the same products per head) time; Transformer Engine's fused kernel is cuDNN's,
// "cudnn_sdpa". FlashAttention-2 and the Triton kernel have no profiler measurement: none.
// A profile's attention prices only the kernel it measured, since the kernels differ several
// fold at long sequences (the unfused one moves the s x s scores through memory).
std::vector<std::string_view> profile_attention_impls(AttentionKernel kernel);

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

}  // namespace ppsim
