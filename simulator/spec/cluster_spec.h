// ClusterSpec: node groups of GPUs, their links, and its parser.
//
// JSON (configs/clusters/*.json):
//   {"name", "nodes": [{"count", "gpus_per_node", "gpu",
//                       "intra_node": {"bandwidth_GBps", "latency_us"},
//                       "nic": {"bandwidth_Gbps", "per_gpu", "latency_us"},
//                       "gpu_overrides"?: {...}, "price_per_gpu_hour"?, "node_type"?,
//                       "host_memory_GiB"?, "cpu_adam_Gparams_per_s"?,
//                       "nvlink_domain_gpus"?, "reliability"?}],
//    "inter_node": {"oversubscription"}, "gpus"?: {"<GPU name>": {...overrides}},
//    "profile"?: "path", "description"?, "ideal_links"?: bool,
//    "stragglers"?: [...] (straggler_spec.h), "reliability"?: {...} (reliability_spec.h),
//    "price_per_gpu_hour"? (every group's price unless the group gives its own)}
// Override objects take "bf16_tflops", "fp16_tflops", "fp8_tflops", "fp4_tflops",
// "fp32_tflops", "memory_GiB", "memory_bandwidth_GBps", "nvlink_bandwidth_GBps",
// "pcie_bandwidth_GBps" and the kernel datasheet fractions "gemm_bf16_efficiency",
// "gemm_fp8_efficiency", "gemm_fp8_blockwise_efficiency", "gemm_fp4_efficiency",
// "flash2_fwd_efficiency", ... (cluster_spec.cc).
// A cluster may also be named inline as NODE_TYPE:NODES ("dgx-h100:512"), NODE_TYPE being a
// file configs/clusters/nodes/<type>.json holding one node group without "count"; for a
// rack-scale type (nvlink_domain_gpus above gpus_per_node) NODES counts racks ("gb200-nvl72:4").
// "nvlink_domain_gpus": GPUs that share one NVLink fabric, a whole number of nodes (GB200 and
// GB300 NVL72: 72, across 18 trays of 4). The parsed group then holds one entry per domain:
// gpus_per_node is the domain, count the domains, host_gpus the GPUs of one host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/reliability_spec.h"
#include "simulator/spec/straggler_spec.h"

namespace ppsim {

// Host memory of a node without "host_memory_GiB": 2 TiB, the system memory of a DGX H100 / H200
// (32 x 64 GiB DIMMs) and of a DGX A100 640GB (the DGX A100 320GB has 1 TiB); NVIDIA DGX
// datasheets.
inline constexpr double kDefaultHostMemoryBytes = 2.0 * 1024 * 1024 * 1024 * 1024;
// CPU Adam of a node without "cpu_adam_Gparams_per_s": DeepSpeed's vectorised CPU-Adam
// (ZeRO-Offload, Ren et al. 2021) updates on the order of 1e9 parameters/s on a two-socket
// server; an order-of-magnitude default until a profile measures it (docs/offload.md).
inline constexpr double kDefaultCpuAdamParametersPerS = 1e9;

// A link class: NVLink/PCIe inside a node, or a NIC.
struct LinkSpec {
  double bandwidth = 0;  // Per direction, bytes/s. JSON "bandwidth_GBps" (intra) / "bandwidth_Gbps" (NIC).
  double latency = 0;    // One-way, seconds. JSON "latency_us".
};

// The NICs of a node.
struct NicSpec {
  LinkSpec link;          // One NIC's bandwidth and latency.
  bool per_gpu = true;    // True: one NIC per GPU (rail-optimised); false: `link` is the node total.
};

// `count` identical nodes.
struct NodeGroup {
  int64_t count = 0;          // Nodes in this group. Required, >= 1.
  int64_t gpus_per_node = 0;  // GPUs per NVLink domain (a node unless nvlink_domain_gpus says
                              // otherwise; JSON "gpus_per_node" is per host). Required, >= 1.
  int64_t host_gpus = 0;      // GPUs per host (tray): the launchers' processes per node; set
                              // by the parser (== gpus_per_node for ordinary nodes).
  GpuSpec gpu;                // Resolved from the catalog by JSON "gpu", with overrides applied.
  LinkSpec intra_node;        // GPU-to-GPU inside a node, per GPU per direction.
  NicSpec nic;                // Inter-node links.
  double price_per_gpu_hour = 0;  // US dollars; JSON "price_per_gpu_hour" (the group's, else
                                  // the cluster's), default 0 (unknown).
  std::string node_type;      // e.g. "dgx-h100" when built from a node type; may be empty.
  // Host (CPU) memory of one node, bytes: where offloaded optimizer states live. JSON
  // "host_memory_GiB", default kDefaultHostMemoryBytes (DGX H100/H200 and DGX A100 640GB).
  double host_memory_bytes = kDefaultHostMemoryBytes;
  // Adam updates per second the node's CPUs sustain, shared by all of its GPUs' processes.
  // JSON "cpu_adam_Gparams_per_s" (1e9 parameters/s), default kDefaultCpuAdamParametersPerS.
  double cpu_adam_parameters_per_s = kDefaultCpuAdamParametersPerS;
  // Failure rates of its GPUs, hosts and NICs and its nodes' checkpoint storage bandwidth: the
  // cluster's "reliability" with the group's own "reliability" over it (reliability_spec.h).
  NodeReliability reliability;

  int64_t num_gpus() const { return count * gpus_per_node; }
  // GPUs of one host: host_gpus, or gpus_per_node for groups built in code.
  int64_t gpus_per_host() const { return host_gpus > 0 ? host_gpus : gpus_per_node; }
  // Bytes/s one GPU can send off-node: its NIC, or its share of the node's NICs.
  double nic_bandwidth_per_gpu() const {
    return nic.per_gpu ? nic.link.bandwidth : nic.link.bandwidth / gpus_per_node;
  }
};

struct ClusterSpec {
  std::string name;                 // Required.
  std::vector<NodeGroup> nodes;     // Required, non-empty; GPUs are numbered group by group.
  double oversubscription = 1.0;    // Fabric oversubscription ratio (>= 1); JSON
                                    // "inter_node": {"oversubscription"}, default 1 (full bisection).
  std::optional<std::string> profile_path;  // Profile JSON to use for costs; JSON "profile".
                                    // load_cluster_spec makes a relative path relative to the
                                    // cluster file's folder (parse_cluster_spec keeps it as is).
  std::string source;               // The file it was read from; "" for inline NODE_TYPE:NODES.
  std::string description;          // Free text. Optional.
  bool ideal_links = false;         // Communication costs nothing; JSON "ideal_links", default
                                    // false (schedule studies and exact-formula tests).
  StragglerModel stragglers;        // Slow GPUs, links and jitter (straggler_spec.h); JSON
                                    // "stragglers", default none. --straggler flags add to it.
  ReliabilitySpec reliability;      // Failures, restarts and checkpoint storage of the job;
                                    // JSON "reliability", defaults in reliability_spec.h.

  int64_t num_gpus() const;
  int64_t num_nodes() const;
  bool is_heterogeneous() const;    // More than one GPU model.
};

// "4 nodes x 8 H100-SXM-80GB", or for rack-scale groups "2 NVLink domains x 72 GB200 (18
// hosts of 4 each)", for reports and launcher comments.
std::string node_group_summary(const NodeGroup& group);

// Most GPUs a cluster may have (docs/limits.md): 2^24 = 16,777,216, some 16x the largest
// clusters built so far, and small enough that GPU counts and their products with the plan's
// degrees stay far inside 64-bit integers.
inline constexpr int64_t kMaxClusterGpus = int64_t{1} << 24;

// Throws InputError (source, json_path) when the cluster has more than kMaxClusterGpus GPUs.
void check_cluster_size(const ClusterSpec& cluster, const std::string& source,
                        const std::string& json_path);

// Parses ppsim's cluster JSON. Pure; errors throw InputError naming `source`.
ClusterSpec parse_cluster_spec(const std::string& text, const std::string& source);

// Resolves a cluster argument: an existing file, a zoo name (configs/clusters/<name>.json),
// or NODE_TYPE:NODES. Unknown names list what exists.
ClusterSpec load_cluster_spec(const std::string& path_or_name);

// Checks every index of a straggler model against the cluster (GPU rank < GPUs, node < nodes);
// errors name the fault's source and JSON path and the valid range.
void validate_straggler_model(const StragglerModel& model, const ClusterSpec& cluster);

}  // namespace ppsim
