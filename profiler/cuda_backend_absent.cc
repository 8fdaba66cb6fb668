// The CUDA backend of a build without nvcc: it reports that it is missing.
#include "profiler/cuda_backend.h"

#include "simulator/spec/error.h"

namespace ppsim {

bool cuda_backend_built() { return false; }
bool nccl_built() { return false; }

int cuda_device_count(std::string* why) {
  if (why) *why = "this ppsim was built without CUDA (nvcc not found at configure time)";
  return 0;
}

Profile run_cuda_compute_profile(const ProfileOptions& options) {
  return run_cuda_profile(options);
}

Profile run_cuda_profile(const ProfileOptions&) {
  throw InputError("--backend", "",
                   "this ppsim was built without CUDA (nvcc not found at configure time); "
                   "use --backend cpu, or rebuild where /usr/local/cuda/bin/nvcc exists");
}

}  // namespace ppsim
