// The report of `ppsim memory`: per-stage memory as text or JSON.
//
// JSON fields (all sizes in bytes):
//   model, cluster, plan (the plan object as simulate --plan accepts it), microbatches,
//   seq_length, stages: [{index, layers, gpu, weights_bytes, gradients_bytes, optimizer_bytes,
//   activations_bytes, activations_per_microbatch_bytes, microbatches_in_flight, logits_bytes,
//   transient_bytes (one-at-a-time buffers: ZeRO gathers, recompute working set), workspace_bytes,
//   peak_bytes, capacity_bytes, host_optimizer_bytes, fits}], peak_bytes (largest stage peak),
//   capacity_bytes (that stage's GPU memory), worst_stage, fits (every stage fits, and every node's
//   host memory), over_bytes (how far the worst stage exceeds its capacity; 0 when it fits).
// With offload_optimizer, also per stage host_gradient_bytes (the host's fp32 gradient buffer
// per GPU), and host_memory: {nodes: [{node, node_group, gpus, bytes, capacity_bytes, fits}],
// peak_bytes, fits, worst_node, over_bytes}: per node the offloaded optimizer states and
// gradient buffers of the plan's GPUs on it against NodeGroup::host_memory_bytes
// (optimizer_offload.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simulator/model/memory_model.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// The "host_memory" object above (shared with simulate's report).
nlohmann::ordered_json host_memory_json(const HostMemoryReport& host);

std::string memory_report_text(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan, const MemoryReport& report);

std::string memory_report_json(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan, const MemoryReport& report);

}  // namespace ppsim
