// Activation offloading (plan key activation_offload_layers; Megatron-Core's
// --cpu-offloading-num-layers N, which hands Transformer Engine's CPU offload context the first N
// transformer layers of the model): each offloaded layer's saved activations go to pinned host
// memory over the GPU's host link (GpuSpec::pcie_bandwidth: PCIe, or NVLink-C2C on Grace
// systems) on a copy stream once its forward has made them, and come back before its backward.
// Megatron-Core runs it only with pp = 1 (plan.h), so layers 0..N-1 of the one pipeline rank.
//
// Per microbatch, with b_i the bytes layer i saves (activation_memory.h), B the host link per
// direction (pcie_bytes_per_s, optimizer_offload.h), f_i and g_i layer i's forward and backward
// (its recompute, input and weight gradients):
//   GPU memory   the offloaded layers' bytes leave the GPU but for the one whose copy is in
//                flight (the handler frees a layer's tensors when its copy ends; Megatron's
//                default keeps no second reload buffer): saved = sum b_i - max b_i.
//   host memory  sum b_i per microbatch in flight.
//   forward      the copies queue on one stream behind the forwards; ppsim takes the forward
//                to wait when a copy falls a layer behind: offloaded layer i shows
//                max(0, b_i / B - f_{i+1}).
//   backward     layer j's reload is prefetched while layer j+1's backward runs, so it shows
//                max(0, b_j / B - g_{j+1}).
// The copies run on copy engines: the HBM bandwidth they take from the compute is not modelled.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace ppsim {

// One layer of a chunk as offloading sees it.
struct OffloadLayer {
  double saved_bytes = 0;       // What its forward saves for its backward, per microbatch.
  double forward_seconds = 0;   // Its forward pass.
  double backward_seconds = 0;  // Its recompute, input and weight gradients.
};

// What offloading the first `offloaded` of `layers` (a chunk in layer order) does per microbatch.
struct ActivationOffload {
  double host_bytes = 0;         // The offloaded layers' saved bytes, in host memory.
  double gpu_saving_bytes = 0;   // What leaves the GPU: host_bytes less the largest layer's.
  double forward_seconds = 0;    // Exposed copy time added to the chunk's forward.
  double backward_seconds = 0;   // Exposed reload time added to its backward.
};

// REQUIRES: 0 <= offloaded <= layers.size(); host_bytes_per_s > 0.
ActivationOffload activation_offload(const std::vector<OffloadLayer>& layers, int64_t offloaded,
                                     double host_bytes_per_s);

// The bytes alone (the memory model's, which has no layer times): host_bytes and
// gpu_saving_bytes of the first `offloaded` of `saved_bytes`, the seconds 0.
// REQUIRES: 0 <= offloaded <= saved_bytes.size().
ActivationOffload offloaded_activation_bytes(const std::vector<double>& saved_bytes,
                                             int64_t offloaded);

}  // namespace ppsim
