#include "simulator/model/activation_offload.h"

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {

ActivationOffload offloaded_activation_bytes(const std::vector<double>& saved_bytes,
                                             int64_t offloaded) {
  PPSIM_CHECK(offloaded >= 0 && offloaded <= static_cast<int64_t>(saved_bytes.size()));
  ActivationOffload offload;
  double largest = 0;
  for (int64_t i = 0; i < offloaded; ++i) {
    offload.host_bytes += saved_bytes[i];
    largest = std::max(largest, saved_bytes[i]);
  }
  // The one whose copy is in flight stays (header).
  offload.gpu_saving_bytes = offload.host_bytes - largest;
  return offload;
}

ActivationOffload activation_offload(const std::vector<OffloadLayer>& layers, int64_t offloaded,
                                     double host_bytes_per_s) {
  PPSIM_CHECK(offloaded >= 0 && offloaded <= static_cast<int64_t>(layers.size()));
  PPSIM_CHECK(host_bytes_per_s > 0);
  std::vector<double> saved_bytes;
  for (const OffloadLayer& layer : layers) saved_bytes.push_back(layer.saved_bytes);
  ActivationOffload offload = offloaded_activation_bytes(saved_bytes, offloaded);
  for (int64_t i = 0; i < offloaded; ++i) {
    const double copy = layers[i].saved_bytes / host_bytes_per_s;
    // The next layer's forward hides the copy out, its backward the reload in (header).
    const bool next = i + 1 < static_cast<int64_t>(layers.size());
    offload.forward_seconds += std::max(0.0, copy - (next ? layers[i + 1].forward_seconds : 0.0));
    offload.backward_seconds +=
        std::max(0.0, copy - (next ? layers[i + 1].backward_seconds : 0.0));
  }
  return offload;
}

}  // namespace ppsim
