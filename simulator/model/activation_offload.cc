#include "simulator/model/activation_offload.h"

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {

ActivationOffload activation_offload(const std::vector<OffloadLayer>& layers, int64_t offloaded,
                                     double host_bytes_per_s) {
  PPSIM_CHECK(offloaded >= 0 && offloaded <= static_cast<int64_t>(layers.size()));
  PPSIM_CHECK(host_bytes_per_s > 0);
  ActivationOffload offload;
  double largest = 0;
  for (int64_t i = 0; i < offloaded; ++i) {
    const double copy = layers[i].saved_bytes / host_bytes_per_s;
    offload.host_bytes += layers[i].saved_bytes;
    largest = std::max(largest, layers[i].saved_bytes);
    // The next layer's forward hides the copy out, its backward the reload in (header).
    const bool next = i + 1 < static_cast<int64_t>(layers.size());
    offload.forward_seconds += std::max(0.0, copy - (next ? layers[i + 1].forward_seconds : 0.0));
    offload.backward_seconds +=
        std::max(0.0, copy - (next ? layers[i + 1].backward_seconds : 0.0));
  }
  offload.gpu_saving_bytes = offload.host_bytes - largest;
  return offload;
}

}  // namespace ppsim
