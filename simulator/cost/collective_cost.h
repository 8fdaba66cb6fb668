// CollectiveCost: alpha-beta time of an NCCL collective on a group of GPUs.
//
// Sizes follow nccl-tests (REFERENCE.md 5): `bytes` is the "size" column,
//   all_reduce      the whole buffer (count * type)
//   all_gather      the whole output (per-rank count * type * n)
//   reduce_scatter  the whole input (per-rank count * type * n)
//   alltoall        the whole send buffer of one rank (count * n * type)
//   broadcast       the buffer
//   sendrecv        the message one rank sends
// and its derived bandwidths are defined once, here (STYLE rule 13):
//   algbw = bytes / seconds
//   busbw = algbw * factor, factor = 2(n-1)/n all_reduce; (n-1)/n all_gather, reduce_scatter,
//           alltoall; 1 broadcast, sendrecv
// busbw is the per-GPU link rate an optimal ring needs, comparable across n.
//
// Time = latency + transfer. A group of n = N nodes x g ranks per node runs hierarchically:
//   all_reduce      reduce-scatter inside each node, all-reduce of S/g across the N nodes (g
//                   rings, one per local rank, each on that rank's NIC), all-gather inside;
//   all_gather      across nodes (S/g output per ring), then inside each node;
//   reduce_scatter  inside each node, then across nodes;
//   alltoall        every rank sends S/n to each peer: (g-1) peers over NVLink, (n-g) over
//                   the NIC, both at once;
//   broadcast       a pipelined chain; a node's g NICs each carry S/g of it;
//   sendrecv        one hop, over the NIC when the group spans nodes.
// Per GPU that moves (the fields of CollectiveCost)
//   all_reduce     intra 2(g-1)/g * S    inter 2(N-1)/N * S/g
//   all_gather, reduce_scatter
//                  intra  (g-1)/g * S    inter  (N-1)/N * S/g
//   alltoall       intra  (g-1)/n * S    inter  (n-g)/n * S
//   broadcast      intra  S (g > 1)      inter  S/g (N > 1)
//   sendrecv       S on the one link class used
// and transfer = max(intra_bytes / B_intra, inter_bytes / B_inter) when phases overlap (NCCL
// pipelines chunks through them), their sum when they do not. B_x = link bandwidth x the
// achievable fraction. On one node (N = 1) all of this is the plain ring: all_reduce takes
// 2(n-1)/n * S / B_intra, so busbw = B_intra exactly.
//   latency = base_latency + intra_hops * intra.latency + inter_hops * inter.latency,
// with hops as NCCL's ring tuning model counts them (REFERENCE.md 6, tuning.cc): a ring of n
// ranks takes n-1 steps (2(n-1) for all_reduce), N-1 (2(N-1)) of them across nodes and the
// other n-N (2(n-N)) inside; every step waits for the slowest, so a ring over many nodes pays
// the intra steps of every node, not of one. Across nodes the intra step latency is at least
// 3 us (NCCL's network overhead, x3 for Simple). An all_reduce across nodes takes the lower of
// that and NCCL's tree, base + 2((g-1) intra + ceil(log2 N) inter). broadcast: (g-1) and (N-1);
// alltoall and sendrecv one hop of each class used.
// Only ring-style algorithms are modelled: NVLS (in-switch reduction; all_reduce busbw up to
// 460-480 GB/s on 8x H100) and SHARP would beat these times. Fabric oversubscription is the
// caller's: divide inter.bandwidth by it for flows that cross the spine.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "simulator/spec/cluster_spec.h"

namespace ppsim {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

// The GPUs of one communicator and the links they use.
struct CollectiveGroup {
  int64_t size = 1;            // n ranks. >= 1.
  int64_t ranks_per_node = 1;  // g: ranks of the group on each node; divides n (N = n/g nodes).
  LinkSpec intra;              // GPU-to-GPU inside a node: per-GPU bandwidth per direction
                               // (bytes/s) and one-hop latency (s). Unused when g == 1.
  LinkSpec inter;              // One GPU's NIC share (NodeGroup::nic_bandwidth_per_gpu) per
                               // direction and latency across the fabric. Unused when N == 1.
  // All-to-all only: the share of its cross-node bytes sent, < 1 under a dispatcher that sends
  // a token once per destination node and forwards it over NVLink there (DeepEP, HybridEP;
  // model/moe_dispatch.h); the forwarding adds (g-1)/g of the undeduplicated cross-node bytes
  // to the intra-node ones. 1: every copy crosses (NCCL all-to-all).
  double cross_node_share = 1;
  // All-to-all only: the share of its intra-node bytes sent (the direct ones and the forwarded
  // cross-node ones), < 1 under a dispatcher that sends a token once per destination GPU
  // rather than once per expert (DeepEP, HybridEP; model/moe_dispatch.h
  // destination_gpu_share). 1: NCCL all-to-all.
  double intra_node_share = 1;

  int64_t num_nodes() const { return size / ranks_per_node; }
};

// What NCCL achieves of the links, and its fixed costs.
struct CollectiveEfficiency {
  // Of the datasheet NVLink/PCIe bandwidth per direction. NCCL's own topology model puts an
  // H100's NVLink at 18 x 20.6 = 370.8 of 450 GB/s (0.82; REFERENCE.md 6), and nccl-tests
  // all_reduce on 8x A100 SXM reaches busbw 230-250 of 300 GB/s (0.77-0.83). 0.80.
  // Kept at this measured value by the calibration (docs/accuracy.md): fitted freely it trades
  // against overlap_slowdown on the FSDP runs and gains 0.06 points of MAPE.
  double intra_bandwidth = 0.80;
  // Of the NIC line rate: inter-node busbw per GPU is about 0.9 x line rate, e.g. 45 GB/s on
  // 400 Gb/s NDR (REFERENCE.md 7). 0.90.
  // Kept at this rule of thumb by the calibration, as intra_bandwidth.
  double inter_bandwidth = 0.90;
  // Fixed cost of one collective, seconds: NCCL's baseLat for Ring with the Simple protocol,
  // which it picks for the large messages training sends (tuning.cc; REFERENCE.md 6). 8.4 us.
  double base_latency = 8.4e-6;
  // True: intra- and inter-node phases overlap (NCCL pipelines chunks), time is the slower
  // one; false: they run back to back. True by default.
  bool overlap_phases = true;
  // Fraction of a collective's time that still shows when it overlaps compute: NCCL's kernels
  // occupy SMs (one block per channel, 8-32 channels) and HBM bandwidth that the overlapped
  // GEMMs lose, so FSDP's prefetched gathers are not free even when they are hidden.
  // Applied to ZeRO-3 parameter gathers and gradient reduce-scatters (chunk_price.h).
  // Fitted on the published FSDP runs (docs/accuracy.md): 0.40 (was 0), bound [0, 0.8];
  // overlap studies of FSDP and ZeRO report 10-40% slower compute under concurrent NCCL
  // traffic, the upper end for reduce-scatters that read fp32 gradients at HBM speed.
  double overlap_slowdown = 0.40;
};

// The time of one collective and what each GPU moves on each link class.
struct CollectiveCost {
  double seconds = 0;        // latency + transfer.
  double latency = 0;        // The alpha term.
  double intra_seconds = 0;  // intra_bytes / B_intra.
  double inter_seconds = 0;  // inter_bytes / B_inter.
  double intra_bytes = 0;    // Bytes each GPU sends over its intra-node links.
  double inter_bytes = 0;    // Bytes each GPU sends through its NIC.
};

// The cost of `kind` moving `bytes` (nccl-tests size, above) on `group`. Zero for n == 1 or
// bytes == 0. REQUIRES: group.size >= 1, ranks_per_node divides size, and the links used
// have positive bandwidth (a bug otherwise: specs are validated at load).
CollectiveCost collective_cost(Collective kind, double bytes, const CollectiveGroup& group,
                               const CollectiveEfficiency& efficiency = {});

// nccl-tests' busbw factor for `kind` on n ranks (above).
double bus_bandwidth_factor(Collective kind, int64_t n);
// algbw = bytes / seconds, bytes/s.
double algorithm_bandwidth(double bytes, double seconds);
// busbw = algbw * bus_bandwidth_factor(kind, n), bytes/s.
double bus_bandwidth(Collective kind, int64_t n, double bytes, double seconds);

// nccl-tests' names: "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast",
// "sendrecv".
std::string_view collective_name(Collective kind);

}  // namespace ppsim
