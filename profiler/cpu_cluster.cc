#include "profiler/cpu_cluster.h"

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

const AlphaBetaPiece* covering(const AlphaBetaFit& fit, double bytes) {
  if (fit.pieces.empty()) return nullptr;
  for (const AlphaBetaPiece& piece : fit.pieces) {
    if (bytes <= piece.max_bytes) return &piece;
  }
  return &fit.pieces.back();
}

const AlphaBetaPiece* sendrecv_piece(const Profile& profile, double bytes) {
  for (const CollectiveFit& fit : profile.fits.collectives) {
    if (fit.op == Collective::kSendRecv && fit.ranks == 2) return covering(fit.fit, bytes);
  }
  return nullptr;
}

}  // namespace

ClusterSpec cpu_validation_cluster(const ClusterSpec& cluster, const Profile& profile,
                                   const std::string& profile_source, double transfer_bytes) {
  auto missing = [&](const std::string& what) {
    return InputError(profile_source, "",
                      "the CPU validation needs " + what +
                          " in its profile (run `ppsim profile --backend cpu --quick` again)");
  };
  if (profile.backend != "cpu") {
    throw InputError(profile_source, "/backend",
                     "expected a CPU profile for --backend cpu, found '" + profile.backend +
                         "' (make one with `ppsim profile --backend cpu --quick --out cpu.json`)");
  }
  double peak = 0;
  for (const ComputeFit& fit : profile.fits.gemm) {
    if (fit.dtype == "fp32") peak = fit.peak;
  }
  for (const GemmSample& sample : profile.gemm) {
    peak = std::max(peak, sample.flops() / sample.seconds);  // When the fit dropped its peak.
  }
  if (peak <= 0) throw missing("fp32 GEMMs");
  // The largest copy's achieved rate: DRAM, where a fitted piece's beta can be a cache's.
  double bandwidth = 0, largest = 0;
  for (const MemorySample& sample : profile.memory) {
    if (sample.kernel == "copy" && sample.bytes > largest) {
      largest = sample.bytes;
      bandwidth = sample.bytes / sample.seconds;
    }
  }
  if (bandwidth <= 0) throw missing("the copy kernel");
  const AlphaBetaPiece* link = sendrecv_piece(profile, transfer_bytes);
  if (!link) throw missing("a 2-thread sendrecv");

  ClusterSpec out = cluster;
  out.profile_path.reset();
  for (NodeGroup& group : out.nodes) {
    GpuSpec gpu;
    gpu.name = "CPU thread (" + profile.device.name + ")";
    gpu.peak_bf16_flops = gpu.peak_fp16_flops = gpu.peak_fp32_flops = peak;
    gpu.memory_bytes = group.gpu.memory_bytes;
    gpu.memory_bandwidth = bandwidth;
    gpu.nvlink_bandwidth = gpu.pcie_bandwidth = link->beta;
    gpu.source = "ppsim profile --backend cpu on " + profile.device.host;
    group.gpu = gpu;
    group.intra_node = {link->beta, link->alpha};
    group.nic.link = {link->beta, link->alpha};
    group.nic.per_gpu = true;
  }
  return out;
}

CollectiveEfficiency cpu_collective_efficiency(const Profile& profile, double transfer_bytes) {
  CollectiveEfficiency efficiency;
  efficiency.intra_bandwidth = 1;
  efficiency.inter_bandwidth = 1;
  const AlphaBetaPiece* link = sendrecv_piece(profile, transfer_bytes);
  efficiency.base_latency = link ? link->alpha : 0;
  efficiency.overlap_slowdown = 0;  // No ZeRO-3 prefetch overlap on CPU threads.
  return efficiency;
}

}  // namespace ppsim
