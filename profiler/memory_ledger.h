// MemoryLedger: the bytes one worker of an executor holds, and their peak, as the executor
// allocates and frees real buffers (the static block at set-up, each forward's saved
// activations until the backward frees them, as the simulator's tasks do).
//
// Plain C++17 (the CUDA executor uses it too). Thread-safety: one ledger per worker, used by
// the thread that runs it.
#pragma once

#include <algorithm>

namespace ppsim {

class MemoryLedger {
 public:
  void allocate(double bytes) {
    live_ += bytes;
    peak_ = std::max(peak_, live_);
  }
  void release(double bytes) { live_ -= bytes; }
  double live() const { return live_; }
  double peak() const { return peak_; }

 private:
  double live_ = 0;
  double peak_ = 0;
};

}  // namespace ppsim
