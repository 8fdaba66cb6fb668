// The collective sweep of a several-process profile: every group shape of profile_groups()
// (intra_node, rail, all), every profiled collective (all_reduce, all_gather, reduce_scatter,
// alltoall, sendrecv) and every nccl-tests size from min_bytes to max_bytes by factors of 4,
// one rank per process (mpirun), measured the same way on CPUs (MPI) and GPUs (NCCL).
//
// Method, per point: warm-up calls, then `iters` timed calls. Before each call every rank of
// the world meets in a barrier, so the group's concurrent communicators start together; each
// member times its call, and a call's time is the slowest rank's (nccl-tests). The point's
// time is the median of those, gathered on world rank 0 (MPI_Reduce of the per-call maxima).
//
// Timeouts: a call, barrier or reduction that outlives `timeout` seconds makes the waiting
// rank abort its group's communicator (NCCL) and throw CollectiveTimeout naming the
// collective, size, group and its ranks and hosts; the caller then ends the job (MPI_Abort).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "profiler/mpi_collective_runner.h"
#include "profiler/mpi_world.h"
#include "profiler/node_groups.h"
#include "simulator/cost/profile_table.h"

namespace ppsim {

struct CollectiveSweepOptions {
  double min_bytes = 1024;     // Smallest nccl-tests size, bytes.
  double max_bytes = 1 << 20;  // Largest size, bytes (the ladder goes by factors of 4).
  int64_t warmup_iters = 2;    // Untimed calls per point.
  int64_t iters = 5;           // Timed calls per point. >= 1.
  double timeout = 60;         // Seconds any one call or wait may take.
};

// Makes this rank's runner for one group communicator (members only), buffers of max_bytes.
using RunnerFactory =
    std::function<std::unique_ptr<RankCollectiveRunner>(MPI_Comm group, size_t max_bytes)>;

// `bytes` rounded down to a multiple of 16 n (each rank's share a 16-byte multiple, as
// nccl-tests rounds): the size actually moved and reported. At least 16 n.
size_t collective_size(double bytes, int n);

// Runs the sweep on every rank (all must call it with the same arguments). Returns the
// samples on world rank 0 (group as in profile.h, ranks_per_node g), empty on the others.
// Throws CollectiveTimeout (header) and std::runtime_error from the runners.
std::vector<CollectiveSample> sweep_collectives(const MpiWorld& world,
                                                const std::vector<ProfileGroup>& groups,
                                                const RunnerFactory& make_runner,
                                                const CollectiveSweepOptions& options);

}  // namespace ppsim
