#include "simulator/cost/optimizer_step_cost.h"


namespace ppsim {

double adam_step_seconds(double parameters, const GpuSpec& gpu, double memory_efficiency,
                         const ProfileTable* profile) {
  double bytes = parameters * kStepAdamBytesPerParameter;
  if (bytes <= 0) return 0;
  if (profile) {
    if (std::optional<ProfileEstimate> measured = profile->optimizer(bytes)) {
      return measured->seconds;
    }
  }
  return bytes / (gpu.memory_bandwidth * memory_efficiency);
}

}  // namespace ppsim
