#include "profiler/profile_report.h"

#include <fmt/format.h>

#include <iterator>

#include "profiler/measure.h"

namespace ppsim {
namespace {

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

void residual_line(fmt::memory_buffer& out, const std::string& what, const std::string& model,
                   const FitResiduals& r) {
  fmt::format_to(std::back_inserter(out), "# {:<34} {}; {} points, rms {:.2f}%, max {:.2f}%\n",
                 what, model, r.points, 100 * r.rms_rel, 100 * r.max_rel);
}

std::string pieces_text(const AlphaBetaFit& fit) {
  std::string text;
  for (const AlphaBetaPiece& p : fit.pieces) {
    if (!text.empty()) text += ", ";
    text += fmt::format("[{}-{}] alpha {:.3g} us beta {:.4g} GB/s", binary_size(p.min_bytes),
                        binary_size(p.max_bytes), p.alpha * 1e6, p.beta / 1e9);
  }
  return text;
}

std::string compute_fit_text(const ComputeFit& f) {
  return fmt::format("latency {:.3g} us, peak {} TFLOP/s, bandwidth {} GB/s", f.latency * 1e6,
                     f.peak > 0 ? fmt::format("{:.4g}", f.peak / 1e12) : "-",
                     f.bandwidth > 0 ? fmt::format("{:.4g}", f.bandwidth / 1e9) : "-");
}

}  // namespace

std::string profile_report_text(const Profile& p) {
  fmt::memory_buffer out;
  auto line = [&](fmt::string_view format, const auto&... args) {
    fmt::vformat_to(std::back_inserter(out), format, fmt::make_format_args(args...));
  };
  line("# ppsim profile (format version {})\n", kProfileVersion);
  line("# backend: {}  device: {} x{}{}  host: {}\n", p.backend, p.device.name, p.device.count,
       p.device.catalog_gpu.empty() ? "" : " (catalog " + p.device.catalog_gpu + ")",
       p.device.host);
  line("# library: {}  driver: {}  CUDA: {}  NCCL: {}\n", p.device.library,
       or_dash(p.device.driver), or_dash(p.device.cuda), or_dash(p.device.nccl));
  line("# method: {} warm-up + {} timed calls per point, median, {}\n", p.method.warmup_iters,
       p.method.iters, p.method.timer);
  if (p.backend == "cpu") {
    line("# warning: CPU backend: these numbers describe this CPU, not a GPU\n");
  }

  line("#\n# GEMM: Y[m,n] = X[m,k] W[k,n] x batch; TFLOP/s = 2mnk*batch / time\n");
  line("# {:>5} {:>8} {:>8} {:>8} {:>5} {:>12} {:>9}\n", "dtype", "m", "n", "k", "batch", "time",
       "rate");
  line("# {:>5} {:>8} {:>8} {:>8} {:>5} {:>12} {:>9}\n", "", "", "", "", "", "(us)", "(TFLOP/s)");
  for (const GemmSample& s : p.gemm) {
    line("  {:>5} {:>8} {:>8} {:>8} {:>5} {:>12.2f} {:>9.3f}\n", s.dtype, s.m, s.n, s.k, s.batch,
         s.seconds * 1e6, s.flops() / s.seconds / 1e12);
  }
  if (p.gemm.empty()) line("# (none)\n");

  line("#\n# Attention (causal; FLOPs as profile.h counts them)\n");
  line("# {:>5} {:>4} {:>12} {:>6} {:>7} {:>5} {:>12} {:>9}\n", "dtype", "pass", "impl", "bh",
       "seq", "d", "time", "rate");
  line("# {:>5} {:>4} {:>12} {:>6} {:>7} {:>5} {:>12} {:>9}\n", "", "", "", "", "", "", "(us)",
       "(TFLOP/s)");
  for (const AttentionSample& s : p.attention) {
    line("  {:>5} {:>4} {:>12} {:>6} {:>7} {:>5} {:>12.2f} {:>9.3f}\n", s.dtype,
         s.backward ? "bwd" : "fwd", s.impl, s.batch_heads, s.seq_len, s.head_dim,
         s.seconds * 1e6, s.flops / s.seconds / 1e12);
  }
  if (p.attention.empty()) line("# (none)\n");

  line("#\n# Memory-bound kernels (bytes read + written) and pinned host transfers\n");
  line("# {:>12} {:>12} {:>12} {:>9}\n", "kernel", "size", "time", "bw");
  line("# {:>12} {:>12} {:>12} {:>9}\n", "", "(B)", "(us)", "(GB/s)");
  for (const MemorySample& s : p.memory) {
    line("  {:>12} {:>12} {:>12.2f} {:>9.2f}\n", s.kernel, s.bytes, s.seconds * 1e6,
         s.bytes / s.seconds / 1e9);
  }
  for (const HostTransferSample& s : p.host_transfer) {
    line("  {:>12} {:>12} {:>12.2f} {:>9.2f}\n", s.to_device ? "h2d" : "d2h", s.bytes,
         s.seconds * 1e6, s.bytes / s.seconds / 1e9);
  }
  if (p.memory.empty() && p.host_transfer.empty()) line("# (none)\n");

  line("#\n# Collectives (nccl-tests: size, algbw = size/time, busbw = algbw x factor)\n");
  line("# {:>14} {:>5} {:>3} {:>10} {:>12} {:>12} {:>9} {:>9}\n", "op", "ranks", "g", "group",
       "size", "time", "algbw", "busbw");
  line("# {:>14} {:>5} {:>3} {:>10} {:>12} {:>12} {:>9} {:>9}\n", "", "", "", "", "(B)", "(us)",
       "(GB/s)", "(GB/s)");
  double busbw_sum = 0;
  for (const CollectiveSample& s : p.collectives) {
    double algbw = algorithm_bandwidth(s.bytes, s.seconds);
    double busbw = algbw * bus_bandwidth_factor(s.op, s.ranks);
    busbw_sum += busbw;
    line("  {:>14} {:>5} {:>3} {:>10} {:>12} {:>12.2f} {:>9.3f} {:>9.3f}\n",
         collective_name(s.op), s.ranks, s.ranks_per_node, s.group, s.bytes, s.seconds * 1e6,
         algbw / 1e9, busbw / 1e9);
  }
  if (p.collectives.empty()) line("# (none)\n");

  line("#\n# Fits (least squares on relative error; residual = (model - measured) / measured)\n");
  for (const CollectiveFit& f : p.fits.collectives) {
    residual_line(out,
                  fmt::format("{} n={} g={}:", collective_name(f.op), f.ranks, f.ranks_per_node),
                  pieces_text(f.fit), f.fit.residuals);
  }
  for (const MemoryFit& f : p.fits.memory) {
    residual_line(out, "memory " + f.kernel + ":", pieces_text(f.fit), f.fit.residuals);
  }
  for (const HostTransferFit& f : p.fits.host_transfer) {
    residual_line(out, std::string("host ") + (f.to_device ? "h2d" : "d2h") + ":",
                  pieces_text(f.fit), f.fit.residuals);
  }
  for (const ComputeFit& f : p.fits.gemm) {
    residual_line(out, "gemm " + f.dtype + ":", compute_fit_text(f), f.residuals);
  }
  for (const ComputeFit& f : p.fits.attention) {
    residual_line(out,
                  fmt::format("attention {} {}:", f.dtype, f.backward ? "bwd" : "fwd"),
                  compute_fit_text(f), f.residuals);
  }
  line("#\n# {} GEMM, {} attention, {} memory, {} host-transfer, {} collective points\n",
       p.gemm.size(), p.attention.size(), p.memory.size(), p.host_transfer.size(),
       p.collectives.size());
  if (!p.collectives.empty()) {
    line("# Avg bus bandwidth    : {:.4g} GB/s\n", busbw_sum / p.collectives.size() / 1e9);
  }
  line("# OK\n");
  return fmt::to_string(out);
}

}  // namespace ppsim
