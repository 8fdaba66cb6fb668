// The CUDA executor of a build without nvcc: it reports that it is missing.
#include <stdexcept>

#include "profiler/cuda_executor.h"

namespace ppsim {

ExecutorResult run_step_on_cuda(const ExecutorProgram&, const ExecutorOptions&) {
  throw std::runtime_error(
      "this ppsim was built without CUDA (nvcc not found at configure time); use --backend cpu");
}

}  // namespace ppsim
