// CheckpointCost: what a checkpoint of a plan weighs, how long it takes to write and to read
// back, and how long the step stands still for it.
//
//   bytes_per_rank  the checkpointed state one GPU holds: its weights + optimizer states (the
//                   GPU's and, with offload, the host's part), as the memory model counts them
//                   (memory_model.h: ZeRO shards the optimizer over dp*cp, ZeRO-3 the weights);
//                   the largest over pipeline ranks. Gradients are not checkpointed.
//   bytes_total     the checkpoint's size on storage, each byte once: per pipeline rank
//                   (w + o) x (tp x dense + ep x etp x expert parameters per GPU), with w, o the
//                   weight and optimizer bytes per parameter (2 + 12 under mixed-precision Adam;
//                   4 + 8 for FSDP's fp32 shards, ZeRO-2 and -3: the gathered bf16 copies are
//                   not saved). Data-parallel copies are written once, as
//                   Megatron-Core's distributed checkpoint does (torch_dist with fully parallel
//                   save spreads the replicated tensors over the data-parallel ranks);
//                   tp-replicated norms and biases are counted on each tp rank (a few MB).
//   save_s          bytes_total / write bandwidth, the storage shared by all writers: every
//                   host of the plan writes its share, so the bandwidth is
//                   min(sum over the plan's hosts of write_GBps_per_node, write_GBps_aggregate).
//   blocking_s      what the step waits for: save_s for a synchronous checkpoint; with
//                   async_checkpoint only the device-to-host copy of what each GPU writes, its
//                   stage's bytes on storage / the stage's tp*dp*cp GPUs, over its GPU's PCIe
//                   bandwidth, the largest over stages (the write to storage runs behind the
//                   next steps; Megatron's --async-save copies the rank's share to pinned
//                   host memory first); never more than save_s.
//   load_s          bytes_total / read bandwidth (min of the hosts' read_GBps_per_node summed and
//                   read_GBps_aggregate): reading the checkpoint at a restart (fully parallel
//                   load: each byte read once, then exchanged over the fabric, not counted).
#pragma once

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/step/plan_footprint.h"

namespace ppsim {

struct CheckpointCost {
  double bytes_per_rank = 0;   // Bytes (header).
  double bytes_total = 0;      // Bytes.
  double write_bandwidth = 0;  // Bytes/s the plan's hosts write at together.
  double read_bandwidth = 0;   // Bytes/s they read at.
  double save_s = 0;           // Seconds to write one checkpoint.
  double blocking_s = 0;       // Seconds the step stands still per checkpoint.
  double load_s = 0;           // Seconds to read it back at a restart.
  bool async = false;          // Written in the background (cluster "async_checkpoint").
};

// REQUIRES: plan_problem(plan, model, cluster) is nullopt; `footprint` is plan_footprint(plan).
CheckpointCost checkpoint_cost(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                               const PlanFootprint& footprint);

}  // namespace ppsim
