// The work split of a build without MPI: a launch as several ranks says how to get one.
#include <fmt/format.h>

#include "profiler/mpi_profile.h"
#include "profiler/mpi_work_split.h"
#include "simulator/spec/error.h"

namespace ppsim {

std::unique_ptr<WorkSplit> launch_work_split() {
  int ranks = launcher_world_size();
  if (ranks == 1) return nullptr;
  discard_output_unless_rank_zero();
  throw InputError("mpirun", "",
                   fmt::format("started as one of {} ranks, but this ppsim was built without MPI "
                               "(no C++ MPI found at configure time), so its work cannot be "
                               "shared between ranks; run tools/setup.sh (it installs "
                               "libopenmpi-dev and openmpi-bin) and rebuild, or run ppsim as one "
                               "process (it uses every core of its machine: --threads)",
                               ranks));
}

}  // namespace ppsim
