#include "simulator/step/offload_traffic.h"

#include <algorithm>

#include "simulator/model/memory_model.h"

namespace ppsim {

std::optional<OffloadTraffic> offload_traffic(const ModelSpec& model, const ClusterSpec& cluster,
                                              const Step& step, const Timeline& timeline) {
  if (offloaded_fraction(step.plan) <= 0 || step.offload.empty()) return std::nullopt;
  OffloadTraffic traffic;
  traffic.fraction = offloaded_fraction(step.plan);
  // Every replica's workers in replica order, each a class's through its representative.
  for (int32_t d = 0; d < step.layout.replicas; ++d) {
    int32_t simulated = step.classes.simulated_of(d);
    for (int32_t r = 0; r < step.layout.stages; ++r) {
      const WorkerOffload& offload = step.offload[simulated * step.layout.stages + r];
      double gpus = static_cast<double>(step.layout.at(d, r).num_gpus);
      traffic.d2h_bytes_total += offload.split.d2h_bytes * gpus;
      traffic.h2d_bytes_total += offload.split.h2d_bytes * gpus;
    }
  }
  double worst = -1;
  for (size_t w = 0; w < step.offload.size(); ++w) {
    const WorkerOffload& offload = step.offload[w];
    if (offload.h2d < 0 || offload.gpu_update < 0) continue;
    double exposed = std::max(0.0, timeline.end[offload.h2d] - timeline.end[offload.gpu_update]);
    if (exposed > worst) {
      worst = exposed;
      traffic.worker = static_cast<int32_t>(w);
      traffic.exposed_s = exposed;
      traffic.d2h_bytes_per_gpu = offload.split.d2h_bytes;
      traffic.h2d_bytes_per_gpu = offload.split.h2d_bytes;
      traffic.pcie_d2h_s = offload.split.d2h_seconds();
      traffic.pcie_h2d_s = offload.split.h2d_seconds();
      traffic.cpu_adam_s = offload.split.cpu_adam_seconds();
    }
  }
  traffic.host = estimate_memory(model, cluster, step.plan).host;
  return traffic;
}

}  // namespace ppsim
