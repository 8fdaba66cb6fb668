#include "profiler/mpi_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "profiler/cpu_backend.h"
#include "profiler/cuda_backend.h"
#include "profiler/mpi_collective_sweep.h"
#include "profiler/mpi_world.h"
#include "simulator/cost/profile_fit.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// True on every rank when every rank sees a CUDA device.
bool every_rank_has_gpu(const MpiWorld& world) {
  int mine = cuda_device_count(nullptr) > 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world.comm());
  return all == 1;
}

// The GPU this rank drives: its local rank, modulo the GPUs it sees (a launcher that gives
// each rank one visible GPU makes that GPU 0).
int rank_device(const MpiWorld& world) {
  int visible = cuda_device_count(nullptr);
  int on_node =
      static_cast<int>(world.layout().nodes[world.layout().node_of_rank[world.rank()]].size());
  if (visible > 1 && on_node > visible) {
    throw InputError("mpirun", "",
                     fmt::format("{} ranks run on host {} but it has {} GPUs; start one rank per "
                                 "GPU (e.g. mpirun --map-by ppr:{}:node)",
                                 on_node, world.hosts()[world.rank()], visible, visible));
  }
  return world.local_rank() % std::max(1, visible);
}

std::string host_list(const MpiWorld& world) {
  std::string hosts;
  for (const auto& node : world.layout().nodes) {
    hosts += (hosts.empty() ? "" : ",") + world.hosts()[node.front()];
  }
  return hosts;
}

Profile measure(const MpiWorld& world, const std::string& requested,
                const ProfileOptions& options) {
  std::string backend = requested;
  if (backend == "auto") {
    backend = every_rank_has_gpu(world) ? "cuda" : "cpu";
    if (backend == "cpu" && world.rank() == 0) {
      fmt::print(stderr,
                 "ppsim: note: not every rank sees a CUDA device; profiling the CPU "
                 "backend (MPI collectives between the processes)\n");
    }
  }
  const bool cuda = backend == "cuda";
  int device = cuda ? rank_device(world) : 0;

  // Rank 0 measures compute alone; the others wait idle with no limit (a full GPU run takes
  // minutes, and a rank that dies ends the job through mpirun anyway). Rank 0 arrives last,
  // so its wait has the collective timeout: a hung peer cannot hold it.
  Profile profile;
  if (world.rank() == 0) {
    profile = cuda ? run_cuda_compute_profile(options) : run_cpu_compute_profile(options);
  }
  world.barrier(world.rank() == 0 ? options.collective_timeout : 0,
                "barrier after rank 0's compute measurements", /*idle=*/true);

  CollectiveSweepOptions sweep;
  sweep.warmup_iters = options.warmup_iters;
  sweep.iters = options.iters;
  sweep.timeout = options.collective_timeout;
  // GPUs: nccl-tests' 1 KiB - 1 GiB (quick: 64 MiB), as the single-process CUDA backend.
  // CPU processes: 1 KiB - 64 MiB (quick: 1 MiB), which shared memory moves in milliseconds.
  sweep.max_bytes = cuda ? (options.quick ? 64.0 * (1 << 20) : 1024.0 * (1 << 20))
                         : (options.quick ? 1.0 * (1 << 20) : 64.0 * (1 << 20));
  RunnerFactory make_runner = [&](MPI_Comm group, size_t max_bytes) {
    return cuda ? make_nccl_runner(group, device, max_bytes, options.collective_timeout)
                : make_mpi_runner(group, max_bytes);
  };
  std::vector<ProfileGroup> groups = profile_groups(world.layout());
  std::vector<CollectiveSample> samples = sweep_collectives(world, groups, make_runner, sweep);
  if (world.rank() != 0) return profile;

  profile.collectives = std::move(samples);
  profile.device.count = world.size();
  profile.device.host = host_list(world);
  profile.fits = fit_profile(profile);
  return profile;
}

}  // namespace

bool mpi_built() { return true; }

std::optional<Profile> run_mpi_profile(const std::string& backend, const ProfileOptions& options,
                                       std::optional<int> ranks_per_node) {
  MpiWorld world(ranks_per_node);
  try {
    Profile profile = measure(world, backend, options);
    if (world.rank() != 0) return std::nullopt;
    return profile;
  } catch (const std::exception& error) {
    fmt::print(stderr, "ppsim: error: rank {} ({}): {}\n", world.rank(),
               world.hosts()[world.rank()], error.what());
  }
  std::fflush(stderr);
  world.abort_job(2);
}

}  // namespace ppsim
