#include "profiler/mpi_collective_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "profiler/measure.h"
#include "profiler/thread_collectives.h"

namespace ppsim {
namespace {

constexpr Collective kProfiledOps[] = {Collective::kAllReduce, Collective::kAllGather,
                                       Collective::kReduceScatter, Collective::kAllToAll,
                                       Collective::kSendRecv};

// This rank's communicator in `group`: its index in group.members, or -1 when it sits out.
int member_index(const ProfileGroup& group, int rank) {
  for (size_t i = 0; i < group.members.size(); ++i) {
    const auto& m = group.members[i];
    if (std::find(m.begin(), m.end(), rank) != m.end()) return static_cast<int>(i);
  }
  return -1;
}

// Polls the runner's call until it completes; on timeout aborts the communicator and throws.
void wait_for_call(RankCollectiveRunner& runner, const MpiWorld& world, double timeout,
                   const std::string& what) {
  auto start = std::chrono::steady_clock::now();
  auto limit = std::chrono::duration<double>(timeout);
  for (int64_t polls = 0; !runner.test(); ++polls) {
    if (polls % 64 == 0 && std::chrono::steady_clock::now() - start > limit) {
      runner.abort();
      throw CollectiveTimeout(fmt::format(
          "{} did not complete within {:g} s on rank {} ({}): a peer is hung, dead or a link "
          "is down; the communicator is aborted and the job ended (raise --timeout if the run "
          "is just slow)",
          what, timeout, world.rank(), world.hosts()[world.rank()]));
    }
  }
}

}  // namespace

size_t collective_size(double bytes, int n) {
  size_t unit = 16 * static_cast<size_t>(n);
  return std::max(unit, static_cast<size_t>(bytes) / unit * unit);
}

std::vector<CollectiveSample> sweep_collectives(const MpiWorld& world,
                                                const std::vector<ProfileGroup>& groups,
                                                const RunnerFactory& make_runner,
                                                const CollectiveSweepOptions& options) {
  std::vector<CollectiveSample> samples;
  for (const ProfileGroup& group : groups) {
    int member = member_index(group, world.rank());
    std::string shape =
        fmt::format("group {} (n={}, g={})", group.kind, group.ranks, group.ranks_per_node);
    // MPI_Comm_split blocks with no deadline; a timed barrier first means every rank is alive
    // and about to call it.
    world.barrier(options.timeout, "barrier before creating the communicators of " + shape);
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_split(world.comm(), member >= 0 ? member : MPI_UNDEFINED, world.rank(), &comm);
    std::string mine = member >= 0 ? world.describe(group.members[member]) : "";
    size_t largest = collective_size(options.max_bytes, group.ranks);
    std::unique_ptr<RankCollectiveRunner> runner;
    if (member >= 0) runner = make_runner(comm, largest);
    for (Collective op : kProfiledOps) {
      for (double ladder = options.min_bytes; ladder <= options.max_bytes; ladder *= 4) {
        size_t bytes = collective_size(ladder, group.ranks);
        std::string what = fmt::format("{} of {} bytes in {}", collective_name(op), bytes, shape);
        std::vector<double> times;
        for (int64_t i = 0; i < options.warmup_iters + options.iters; ++i) {
          world.barrier(options.timeout, "barrier before " + what);
          double seconds = 0;
          if (runner) {
            runner->start(op, bytes);
            wait_for_call(*runner, world, options.timeout, what + " on " + mine);
            seconds = runner->elapsed();
          }
          if (i >= options.warmup_iters) times.push_back(seconds);
        }
        // Each call's slowest rank, on rank 0; ranks outside the group contribute 0.
        std::vector<double> slowest(times.size());
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Ireduce(times.data(), slowest.data(), static_cast<int>(times.size()), MPI_DOUBLE,
                    MPI_MAX, 0, world.comm(), &request);
        world.wait(request, options.timeout, "gathering the times of " + what);
        if (world.rank() == 0) {
          samples.push_back(
              {op, group.ranks, group.ranks_per_node, group.kind, double(bytes), median(slowest)});
        }
      }
    }
    runner.reset();  // Before its communicator goes.
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  return samples;
}

}  // namespace ppsim
