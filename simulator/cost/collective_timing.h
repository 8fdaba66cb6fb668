// Collective timing: the seconds of one collective or point-to-point transfer on a group of one
// node group's GPUs, measured when a profile has it and modelled otherwise. The step builder and
// the planner's screen (plan_screen.h) both call these, so the planner's bounds use the very
// costs the simulation uses.
//
//   measured   profile.collective(op, n, g, bytes) when the profile applies to the group's GPU
//              type (profile_for_gpu) and measured that (op, n, g): its points inside their
//              size range, the fitted alpha-beta outside (flagged extrapolated). profile.h.
//   modelled   collective_cost(op, bytes, group, efficiency).seconds: alpha-beta per link class
//              (collective_cost.h). Used for every group shape the profile did not measure.
// Zero for a group of one rank, no bytes, or ideal links.
//
// Transfers that travel as flows on the network model's shared links (data-parallel buckets,
// parameter gathers, pipeline sends) cannot simply take a measured time: their duration is set
// by the engine from bytes, latency and the links' capacities, so that flows sharing a NIC slow
// each other. calibrate_transfer() keeps them flows and scales their latency and bytes by one
// factor, measured / modelled alone, so that a flow alone on its route lasts the measured time
// and contention still stretches it in proportion.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "simulator/cost/collective_cost.h"
#include "simulator/cost/cost_model.h"
#include "simulator/engine/task_graph.h"
#include "simulator/spec/cluster_spec.h"

namespace ppsim {

class ProfileTable;

// A group of `size` ranks with `per_node` of them on each node (reduced until it divides size;
// at least 1), on `nodes`' links: NVLink inside a node, one GPU's NIC share across nodes.
CollectiveGroup collective_group(int64_t size, int64_t per_node, const NodeGroup& nodes);

// Seconds of `kind` moving `bytes` (nccl-tests size) on `group`, with where they came from.
// `profile` is the one that applies to the group's GPUs (profile_for_gpu), or null.
// `ideal_links`: communication is free (0 seconds).
PassCost collective_time(Collective kind, double bytes, const CollectiveGroup& group,
                         const CollectiveEfficiency& efficiency, const ProfileTable* profile,
                         bool ideal_links = false);

// A flow's latency and bytes, scaled so that alone on its route it lasts `measured` seconds
// (header). `route` may be -1 (latency only). REQUIRES: measured > 0.
struct CalibratedTransfer {
  double latency = 0;  // Seconds.
  double bytes = 0;
};
CalibratedTransfer calibrate_transfer(const TaskGraph& graph, RouteId route, double latency,
                                      double bytes, double measured);

// Seconds a flow of `bytes` takes alone on `route` after `latency` (its rate: the smallest link
// capacity on the route and the route's cap).
double transfer_seconds_alone(const TaskGraph& graph, RouteId route, double latency, double bytes);

}  // namespace ppsim
