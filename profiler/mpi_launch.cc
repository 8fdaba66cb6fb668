// launcher_world_size (mpi_profile.h): built with or without MPI, since a build without it
// must still notice that mpirun started it.
#include <algorithm>
#include <cstdlib>

#include "profiler/mpi_profile.h"

namespace ppsim {

int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* value = std::getenv(name)) return std::max(1, std::atoi(value));
  }
  return 1;
}

}  // namespace ppsim
