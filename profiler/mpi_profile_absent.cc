// The several-process profile of a build without MPI: an mpirun launch says how to get one.
#include <string>

#include "profiler/mpi_profile.h"
#include "simulator/spec/error.h"

namespace ppsim {

bool mpi_built() { return false; }

std::optional<Profile> run_mpi_profile(const std::string&, const ProfileOptions&,
                                       std::optional<int>) {
  throw InputError("mpirun", "",
                   "started as one of " + std::to_string(launcher_world_size()) +
                       " ranks, but this ppsim was built without MPI (no C++ MPI found at "
                       "configure time), so several-process profiling is not built; run "
                       "tools/setup.sh (it installs libopenmpi-dev and openmpi-bin) and "
                       "rebuild, or run `ppsim profile` without mpirun");
}

}  // namespace ppsim
