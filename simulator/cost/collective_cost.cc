#include "simulator/cost/collective_cost.h"

#include <algorithm>
#include <cmath>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// NCCL's floor on the intra-node step latency of a multi-node ring: the network overhead of
// 1 us, x3 for the Simple protocol bulk transfers use (REFERENCE.md 6, tuning.cc).
constexpr double kMultiNodeIntraLatency = 3e-6;

// Per-GPU bytes and hop counts on each link class, before bandwidths and latencies.
struct Traffic {
  double intra_bytes = 0;
  double inter_bytes = 0;
  double intra_hops = 0;
  double inter_hops = 0;
  bool concurrent = false;  // The two classes always run at once (alltoall).
};

Traffic traffic(Collective kind, double s, double n, double g, double nodes,
                double cross_node_share, double intra_node_share) {
  Traffic t;
  switch (kind) {
    case Collective::kAllReduce:
      t.intra_bytes = 2 * (g - 1) / g * s;
      t.inter_bytes = 2 * (nodes - 1) / nodes * s / g;
      // NCCL's ring: 2(n-1) steps, 2(N-1) of them across nodes (REFERENCE.md 6).
      t.intra_hops = 2 * (n - nodes);
      t.inter_hops = 2 * (nodes - 1);
      break;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      t.intra_bytes = (g - 1) / g * s;
      t.inter_bytes = (nodes - 1) / nodes * s / g;
      // NCCL's ring: n-1 steps, N-1 of them across nodes; every step waits for the last.
      t.intra_hops = n - nodes;
      t.inter_hops = nodes - 1;
      break;
    case Collective::kAllToAll:
      t.intra_bytes = (g - 1) / n * s;
      t.inter_bytes = (n - g) / n * s * cross_node_share;
      // Deduplicated copies land on one GPU of the destination node, which forwards them.
      if (cross_node_share < 1) t.intra_bytes += (n - g) / n * s * (g - 1) / g;
      t.intra_bytes *= intra_node_share;
      t.intra_hops = g > 1 ? 1 : 0;
      t.inter_hops = nodes > 1 ? 1 : 0;
      t.concurrent = true;
      break;
    case Collective::kBroadcast:
      t.intra_bytes = g > 1 ? s : 0;
      t.inter_bytes = nodes > 1 ? s / g : 0;
      t.intra_hops = g - 1;
      t.inter_hops = nodes - 1;
      break;
    case Collective::kSendRecv:
      if (nodes > 1) {
        t.inter_bytes = s;
        t.inter_hops = 1;
      } else {
        t.intra_bytes = s;
        t.intra_hops = 1;
      }
      break;
  }
  return t;
}

}  // namespace

CollectiveCost collective_cost(Collective kind, double bytes, const CollectiveGroup& group,
                               const CollectiveEfficiency& efficiency) {
  PPSIM_CHECK(group.size >= 1 && group.ranks_per_node >= 1, "empty collective group");
  PPSIM_CHECK(group.size % group.ranks_per_node == 0, "ranks_per_node must divide the group size");
  CollectiveCost cost;
  if (group.size == 1 || bytes <= 0) return cost;
  double n = static_cast<double>(group.size);
  double g = static_cast<double>(group.ranks_per_node);
  double nodes = static_cast<double>(group.num_nodes());
  PPSIM_CHECK(group.cross_node_share > 0 && group.cross_node_share <= 1,
              "cross_node_share must be in (0, 1]");
  PPSIM_CHECK(group.intra_node_share > 0 && group.intra_node_share <= 1,
              "intra_node_share must be in (0, 1]");
  Traffic t = traffic(kind, bytes, n, g, nodes, group.cross_node_share, group.intra_node_share);

  cost.intra_bytes = t.intra_bytes;
  cost.inter_bytes = t.inter_bytes;
  if (t.intra_bytes > 0) {
    PPSIM_CHECK(group.intra.bandwidth > 0, "intra-node bandwidth must be positive");
    cost.intra_seconds = t.intra_bytes / (group.intra.bandwidth * efficiency.intra_bandwidth);
  }
  if (t.inter_bytes > 0) {
    PPSIM_CHECK(group.inter.bandwidth > 0, "inter-node bandwidth must be positive");
    cost.inter_seconds = t.inter_bytes / (group.inter.bandwidth * efficiency.inter_bandwidth);
  }
  // Across nodes NCCL raises the intra-node step latency to the network proxy's overhead.
  double intra_latency =
      nodes > 1 ? std::max(group.intra.latency, kMultiNodeIntraLatency) : group.intra.latency;
  cost.latency = efficiency.base_latency + t.intra_hops * intra_latency +
                 t.inter_hops * group.inter.latency;
  if (kind == Collective::kAllReduce && nodes > 1) {
    // NCCL picks its tree for latency-bound all-reduces: a chain inside each node and a
    // binary tree across nodes, up and down.
    double tree = efficiency.base_latency +
                  2 * ((g - 1) * intra_latency + std::ceil(std::log2(nodes)) * group.inter.latency);
    cost.latency = std::min(cost.latency, tree);
  }
  double transfer = t.concurrent || efficiency.overlap_phases
                        ? std::max(cost.intra_seconds, cost.inter_seconds)
                        : cost.intra_seconds + cost.inter_seconds;
  cost.seconds = cost.latency + transfer;
  return cost;
}

double bus_bandwidth_factor(Collective kind, int64_t n) {
  PPSIM_CHECK(n >= 1, "group size must be >= 1");
  double ranks = static_cast<double>(n);
  switch (kind) {
    case Collective::kAllReduce:
      return 2 * (ranks - 1) / ranks;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (ranks - 1) / ranks;
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      return 1;
  }
  return 1;
}

double algorithm_bandwidth(double bytes, double seconds) {
  PPSIM_CHECK(seconds > 0, "a bandwidth needs a positive time");
  return bytes / seconds;
}

double bus_bandwidth(Collective kind, int64_t n, double bytes, double seconds) {
  return algorithm_bandwidth(bytes, seconds) * bus_bandwidth_factor(kind, n);
}

std::string_view collective_name(Collective kind) {
  switch (kind) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

}  // namespace ppsim
