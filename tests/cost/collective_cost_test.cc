#include "simulator/cost/collective_cost.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "simulator/spec/units.h"

namespace ppsim {
namespace {

constexpr double kNvlink = 450e9;    // H100 NVLink per direction, bytes/s.
constexpr double kNvlinkLat = 2e-6;  // Seconds per hop.
constexpr double kNic = 50e9;        // 400 Gb/s NDR, bytes/s.
constexpr double kNicLat = 5e-6;
constexpr double kSize = 256 * kMiB;  // nccl-tests "size".

CollectiveGroup group_of(int64_t n, int64_t per_node) {
  CollectiveGroup group;
  group.size = n;
  group.ranks_per_node = per_node;
  group.intra = LinkSpec{kNvlink, kNvlinkLat};
  group.inter = LinkSpec{kNic, kNicLat};
  return group;
}

// The link rates with no loss, so busbw equals the link exactly.
CollectiveEfficiency lossless() {
  CollectiveEfficiency efficiency;
  efficiency.intra_bandwidth = 1;
  efficiency.inter_bandwidth = 1;
  efficiency.base_latency = 0;
  return efficiency;
}

TEST_CASE("CollectiveCost: ring all-reduce on 8 GPUs is alpha + 2*7/8*S/B") {
  CollectiveEfficiency efficiency;  // Defaults: 0.80 of NVLink, 8.4 us base.
  CollectiveCost cost = collective_cost(Collective::kAllReduce, kSize, group_of(8, 8), efficiency);
  double alpha = 8.4e-6 + 14 * kNvlinkLat;
  double beta = 2.0 * 7 / 8 * kSize / (0.80 * kNvlink);
  CHECK(cost.latency == Approx(alpha).epsilon(1e-12));
  CHECK(cost.seconds == Approx(alpha + beta).epsilon(1e-12));
  CHECK(cost.intra_bytes == 2.0 * 7 / 8 * kSize);
  CHECK(cost.inter_bytes == 0);
}

TEST_CASE("CollectiveCost: all-gather and reduce-scatter move (n-1)/n of the buffer") {
  for (Collective kind : {Collective::kAllGather, Collective::kReduceScatter}) {
    CollectiveCost cost = collective_cost(kind, kSize, group_of(4, 4), lossless());
    CHECK(cost.seconds == Approx(3 * kNvlinkLat + 3.0 / 4 * kSize / kNvlink).epsilon(1e-12));
  }
}

TEST_CASE("CollectiveCost: busbw recovers the link bandwidth on one node (nccl-tests)") {
  for (Collective kind :
       {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
        Collective::kAllToAll, Collective::kBroadcast, Collective::kSendRecv}) {
    INFO(collective_name(kind));
    CollectiveGroup group = group_of(8, 8);
    group.intra.latency = 0;
    CollectiveEfficiency efficiency = lossless();
    efficiency.intra_bandwidth = 0.8;
    CollectiveCost cost = collective_cost(kind, kSize, group, efficiency);
    CHECK(bus_bandwidth(kind, 8, kSize, cost.seconds) == Approx(0.8 * kNvlink).epsilon(1e-12));
  }
}

TEST_CASE("CollectiveCost: busbw factors follow nccl-tests") {
  CHECK(bus_bandwidth_factor(Collective::kAllReduce, 8) == 2.0 * 7 / 8);
  CHECK(bus_bandwidth_factor(Collective::kAllGather, 8) == 7.0 / 8);
  CHECK(bus_bandwidth_factor(Collective::kReduceScatter, 8) == 7.0 / 8);
  CHECK(bus_bandwidth_factor(Collective::kAllToAll, 8) == 7.0 / 8);
  CHECK(bus_bandwidth_factor(Collective::kBroadcast, 8) == 1);
  CHECK(bus_bandwidth_factor(Collective::kSendRecv, 8) == 1);
  CHECK(algorithm_bandwidth(1e9, 0.5) == 2e9);
  CHECK(collective_name(Collective::kAllToAll) == "alltoall");
}

// NCCL raises the intra-node step latency of a multi-node ring to 3 us (tuning.cc, REFERENCE.md 6).
constexpr double kMultiNodeIntraLat = 3e-6;

TEST_CASE("CollectiveCost: all-reduce across 2 nodes of 8 runs hierarchically") {
  CollectiveGroup group = group_of(16, 8);
  CollectiveCost cost = collective_cost(Collective::kAllReduce, kSize, group, lossless());
  // Reduce-scatter and all-gather inside the node; all-reduce of S/8 between the 2 nodes.
  double intra = 2.0 * 7 / 8 * kSize;
  double inter = 2.0 * 1 / 2 * kSize / 8;
  CHECK(cost.intra_bytes == intra);
  CHECK(cost.inter_bytes == inter);
  // Latency: NCCL's tree beats the 30-step ring here: 2 * (7 intra + log2(2) inter) steps.
  double ring = 28 * kMultiNodeIntraLat + 2 * kNicLat;
  double tree = 2 * (7 * kMultiNodeIntraLat + 1 * kNicLat);
  CHECK(tree < ring);
  CHECK(cost.latency == Approx(tree).epsilon(1e-12));
  double overlapped = std::max(intra / kNvlink, inter / kNic);
  CHECK(cost.seconds == Approx(cost.latency + overlapped).epsilon(1e-12));

  CollectiveEfficiency sequential = lossless();
  sequential.overlap_phases = false;
  CollectiveCost back_to_back = collective_cost(Collective::kAllReduce, kSize, group, sequential);
  CHECK(back_to_back.seconds ==
        Approx(cost.latency + intra / kNvlink + inter / kNic).epsilon(1e-12));
}

TEST_CASE("CollectiveCost: one GPU per node is a ring over the NICs") {
  CollectiveEfficiency efficiency;  // 0.90 of the NIC.
  CollectiveCost cost = collective_cost(Collective::kAllReduce, kSize, group_of(4, 1), efficiency);
  CHECK(cost.intra_bytes == 0);
  CHECK(cost.seconds ==
        Approx(8.4e-6 + 2 * 2 * kNicLat + 2.0 * 3 / 4 * kSize / (0.9 * kNic)).epsilon(1e-12));
  // The same group inside one node is faster.
  CHECK(collective_cost(Collective::kAllReduce, kSize, group_of(4, 4)).seconds < cost.seconds);
}

TEST_CASE("CollectiveCost: alltoall sends to node peers and remote peers at once") {
  CollectiveCost local = collective_cost(Collective::kAllToAll, kSize, group_of(8, 8), lossless());
  CHECK(local.seconds == Approx(kNvlinkLat + 7.0 / 8 * kSize / kNvlink).epsilon(1e-12));
  CollectiveCost spread =
      collective_cost(Collective::kAllToAll, kSize, group_of(16, 8), lossless());
  CHECK(spread.intra_bytes == 7.0 / 16 * kSize);
  CHECK(spread.inter_bytes == 8.0 / 16 * kSize);
  CHECK(spread.seconds ==
        Approx(kMultiNodeIntraLat + kNicLat + 8.0 / 16 * kSize / kNic).epsilon(1e-12));
}

TEST_CASE("CollectiveCost: a node-deduplicating dispatch sends its share and forwards it") {
  // DeepEP-style: half of the cross-node copies travel (moe_dispatch.h), and every copy bound
  // for this node that lands on another GPU is forwarded: (n-g)/n S (g-1)/g over NVLink.
  CollectiveGroup group = group_of(16, 8);
  group.cross_node_share = 0.5;
  CollectiveCost dedup = collective_cost(Collective::kAllToAll, kSize, group, lossless());
  CHECK(dedup.inter_bytes == 0.5 * 8.0 / 16 * kSize);
  CHECK(dedup.intra_bytes == Approx(7.0 / 16 * kSize + 8.0 / 16 * kSize * 7.0 / 8));
  CHECK(dedup.seconds ==
        Approx(kMultiNodeIntraLat + kNicLat + 0.5 * 8.0 / 16 * kSize / kNic).epsilon(1e-12));
  // Other collectives ignore it.
  CollectiveGroup ring = group_of(16, 8);
  CollectiveCost plain = collective_cost(Collective::kAllGather, kSize, ring, lossless());
  ring.cross_node_share = 0.5;
  CHECK(collective_cost(Collective::kAllGather, kSize, ring, lossless()).seconds == plain.seconds);
}

TEST_CASE("CollectiveCost: send/recv uses NVLink inside a node and the NIC across") {
  CollectiveCost same = collective_cost(Collective::kSendRecv, kSize, group_of(2, 2), lossless());
  CHECK(same.seconds == Approx(kNvlinkLat + kSize / kNvlink).epsilon(1e-12));
  CollectiveCost across = collective_cost(Collective::kSendRecv, kSize, group_of(2, 1), lossless());
  CHECK(across.seconds == Approx(kNicLat + kSize / kNic).epsilon(1e-12));
  CHECK(across.inter_bytes == kSize);
}

TEST_CASE("CollectiveCost: broadcast spreads a chain over the node's NICs") {
  CollectiveCost cost = collective_cost(Collective::kBroadcast, kSize, group_of(16, 8), lossless());
  CHECK(cost.intra_bytes == kSize);
  CHECK(cost.inter_bytes == kSize / 8);
  CHECK(cost.latency == Approx(7 * kMultiNodeIntraLat + kNicLat).epsilon(1e-12));
}

TEST_CASE("CollectiveCost: a ring over many nodes pays every node's intra steps (NCCL tuning)") {
  // NCCL's ring latency (tuning.cc): base + (nsteps - nInter) * intra + nInter * inter, with
  // nsteps = n - 1 and nInter = N - 1 for all-gather and reduce-scatter. 512 ranks on 64 nodes:
  // 448 intra steps and 63 inter steps, not the 7 + 63 of one node's chain.
  for (Collective kind : {Collective::kAllGather, Collective::kReduceScatter}) {
    CollectiveCost cost = collective_cost(kind, kSize, group_of(512, 8), lossless());
    CHECK(cost.latency == Approx(448 * kMultiNodeIntraLat + 63 * kNicLat).epsilon(1e-12));
  }
  // On one node the ring is the chain of its ranks at the NVLink latency.
  CollectiveCost local = collective_cost(Collective::kAllGather, kSize, group_of(8, 8), lossless());
  CHECK(local.latency == Approx(7 * kNvlinkLat).epsilon(1e-12));
}

TEST_CASE("CollectiveCost: one rank or no bytes costs nothing; time grows with size") {
  CHECK(collective_cost(Collective::kAllReduce, kSize, group_of(1, 1)).seconds == 0);
  CHECK(collective_cost(Collective::kAllReduce, 0, group_of(8, 8)).seconds == 0);
  double previous = 0;
  for (double bytes = 1024; bytes <= 1024 * kMiB; bytes *= 4) {
    double seconds = collective_cost(Collective::kAllGather, bytes, group_of(32, 8)).seconds;
    CHECK(seconds > previous);
    previous = seconds;
  }
}

}  // namespace
}  // namespace ppsim
