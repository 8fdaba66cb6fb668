// ReliabilitySpec: how often a cluster's parts fail, how long a restart takes, and how fast
// checkpoints reach storage; its parser and its documented defaults (docs/time-to-train.md).
//
// JSON, in the cluster spec (all keys optional; the defaults below):
//   "reliability": {
//     "mtbf_hours": {"gpu": H, "node": H, "nic": H},   (a number > 0, or "never")
//     "restart": {"detection_s", "reschedule_s", "init_s"},
//     "storage": {"write_GBps_per_node", "read_GBps_per_node",
//                 "write_GBps_aggregate", "read_GBps_aggregate"},
//     "async_checkpoint": bool}
// and in a node group (overrides the cluster's for that group's nodes):
//   "reliability": {"mtbf_hours": {...}, "storage": {"write_GBps_per_node",
//                                                   "read_GBps_per_node"}}
// A failure of any GPU, node (host) or NIC a job uses stops the whole job (synchronous
// training); failures are independent and exponentially distributed (Poisson arrivals).
//
// Default failure rates: the Llama 3 report's interruption table (Grattafiori et al. 2024, "The
// Llama 3 Herd of Models", Table 5): 419 unexpected interruptions in a 54-day snapshot of the
// 405B pre-training on 16,384 H100 GPUs in 2,048 eight-GPU servers with one 400 Gb/s NIC per
// GPU (466 interruptions in all; the other 47 were planned maintenance and are not counted).
// Each category's count over its components' hours in the snapshot:
//   gpu   268 = faulty GPU 148 + HBM3 72 + SRAM 19 + GPU system processor 17 + silent data
//         corruption 6 + thermal interface/sensor 6, over 16,384 x 1,296 GPU-hours
//         -> MTBF 79,230 hours per GPU;
//   node  109 = unplanned host maintenance 32 + SSD 3 + power supply 3 + chassis 2 + IO board 2
//         + CPU 2 + system memory 2, and the job-level software causes counted per node:
//         software bug 54 + dependency 2 + NCCL watchdog timeout 7, over 2,048 x 1,296
//         node-hours -> MTBF 24,351 hours per node (host);
//   nic   42 = NIC 7 + network switch/cable 35, over 16,384 x 1,296 NIC-hours
//         -> MTBF 505,563 hours per NIC (its cable and switch port included).
// The three give back 419 interruptions in 54 days at that scale (a job MTBF of 3.09 hours).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ppsim {

// The Llama 3 snapshot (header): GPUs, servers and hours.
inline constexpr double kLlama3Gpus = 16384;
inline constexpr double kLlama3Nodes = 2048;
inline constexpr double kLlama3SnapshotHours = 54 * 24;
inline constexpr double kDefaultGpuMtbfHours = kLlama3Gpus * kLlama3SnapshotHours / 268;
inline constexpr double kDefaultNodeMtbfHours = kLlama3Nodes * kLlama3SnapshotHours / 109;
inline constexpr double kDefaultNicMtbfHours = kLlama3Gpus * kLlama3SnapshotHours / 42;

// Restart parts, seconds. Priors (no public measurement splits a restart this way at 16K GPUs):
// detection: a crashed rank is seen by the launcher within seconds, a hung collective only at
// the NCCL watchdog timeout (PyTorch's and Megatron's --distributed-timeout-minutes default: 10
// min; 7 of Llama 3's 419 interruptions were watchdog timeouts), so one minute on average;
// rescheduling: drain or swap the faulty host and requeue the job on ~2,000 nodes, 5 minutes;
// init: process start, imports and NCCL communicator setup at thousands of ranks, 4 minutes.
// Together 10 minutes, the restart time of Daly's (2006) worked examples. The checkpoint load
// is not a constant: it is the checkpoint's bytes over the storage's read bandwidth.
inline constexpr double kDefaultDetectionS = 60;
inline constexpr double kDefaultRescheduleS = 300;
inline constexpr double kDefaultInitS = 240;

// Checkpoint storage. Aggregate: Llama 3's Tectonic file system for the 405B run sustained 2
// TB/s (peak 7 TB/s; the report's infrastructure section), used for writes and reads. Per node:
// 25 GB/s (a 200 Gb/s front-end storage link, the order one parallel-file-system client
// sustains); a prior, set "storage" for your file system.
inline constexpr double kDefaultWriteBytesPerSAggregate = 2000e9;
inline constexpr double kDefaultReadBytesPerSAggregate = 2000e9;
inline constexpr double kDefaultWriteBytesPerSPerNode = 25e9;
inline constexpr double kDefaultReadBytesPerSPerNode = 25e9;

// What fails, and how fast checkpoints move, per node of a node group.
struct NodeReliability {
  // Failures per second of one GPU, one node (host) and one NIC; 0 = never fails. JSON
  // "mtbf_hours" {"gpu", "node", "nic"} (rate = 1 / (hours x 3600)), defaults above.
  double gpu_failure_rate = 1 / (kDefaultGpuMtbfHours * 3600);
  double node_failure_rate = 1 / (kDefaultNodeMtbfHours * 3600);
  double nic_failure_rate = 1 / (kDefaultNicMtbfHours * 3600);
  // Bytes/s one node writes to / reads from checkpoint storage. JSON "storage"
  // {"write_GBps_per_node", "read_GBps_per_node"}, default kDefault*PerNode.
  double write_bandwidth = kDefaultWriteBytesPerSPerNode;
  double read_bandwidth = kDefaultReadBytesPerSPerNode;
};

// A restart after a failure, besides loading the checkpoint. Seconds.
struct RestartTime {
  double detection_s = kDefaultDetectionS;    // Until the job knows it has failed.
  double reschedule_s = kDefaultRescheduleS;  // Replace the node, requeue, start containers.
  double init_s = kDefaultInitS;              // Processes, imports, NCCL communicators.
  double total() const { return detection_s + reschedule_s + init_s; }
};

struct ReliabilitySpec {
  NodeReliability node;  // The cluster's; each node group starts from it (its own "reliability").
  RestartTime restart;   // JSON "restart" {"detection_s", "reschedule_s", "init_s"}.
  // Bytes/s the storage takes from all writers / gives to all readers together. JSON "storage"
  // {"write_GBps_aggregate", "read_GBps_aggregate"}, defaults above.
  double write_bandwidth_aggregate = kDefaultWriteBytesPerSAggregate;
  double read_bandwidth_aggregate = kDefaultReadBytesPerSAggregate;
  // Checkpoints written in the background (Megatron --async-save, PyTorch DCP async_save): the
  // step blocks only for the device-to-host copy. JSON "async_checkpoint", default false.
  bool async_checkpoint = false;
};

// Parses the cluster's "reliability" object (`value` at `path` in `source`). Pure.
ReliabilitySpec parse_reliability_spec(const nlohmann::json& value, const std::string& source,
                                       const std::string& path);

// Parses a node group's "reliability" object over `base` (the cluster's): only "mtbf_hours"
// and the per-node "storage" keys; job-level keys are an error that says where they belong.
NodeReliability parse_node_reliability(const nlohmann::json& value, const std::string& source,
                                       const std::string& path, const NodeReliability& base);

}  // namespace ppsim
