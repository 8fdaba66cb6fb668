// OffloadTraffic: what optimizer offload did in a simulated step (optimizer_offload.h has the
// model), for simulate's report.
//
//   d2h_bytes_per_gpu, h2d_bytes_per_gpu  one GPU's gradients down / parameters up over PCIe, on
//                         the reported worker: f * shard * 4 and f * shard * 2 bytes
//   d2h_bytes_total, h2d_bytes_total  the same summed over every GPU of the plan (all replicas)
//   pcie_d2h_s, pcie_h2d_s  seconds its PCIe link spends on them (bytes / PCIe bandwidth); the
//                         d2h copies overlap the backward
//   cpu_adam_s            seconds of the host's Adam for that GPU (its share of the node's rate)
//   exposed_s             how long after the GPU's own part of the update (which starts when the
//                         backward and gradient reduction are done) the updated parameters are
//                         back on the GPU: max(0, end of h2d - end of the GPU's update); the host
//                         part's cost to the step on that worker
//   worker                the simulated worker with the largest exposed_s (first on ties); every
//                         per-GPU figure above is that worker's
//   host                  host memory per node (memory_model.h), from the plan
#pragma once

#include <optional>
#include <string>

#include "simulator/engine/timeline.h"
#include "simulator/model/optimizer_offload.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

struct OffloadTraffic {
  double fraction = 0;
  double d2h_bytes_per_gpu = 0;
  double h2d_bytes_per_gpu = 0;
  double d2h_bytes_total = 0;
  double h2d_bytes_total = 0;
  double pcie_d2h_s = 0;
  double pcie_h2d_s = 0;
  double cpu_adam_s = 0;
  double exposed_s = 0;
  int32_t worker = 0;  // Index into step.worker_names.
  HostMemoryReport host;
};

// nullopt when the plan does not offload. REQUIRES: `timeline` simulated step.lowered.graph.
std::optional<OffloadTraffic> offload_traffic(const ModelSpec& model, const ClusterSpec& cluster,
                                              const Step& step, const Timeline& timeline);

}  // namespace ppsim
