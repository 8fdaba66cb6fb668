#include "profiler/rendezvous_channel.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

namespace ppsim {

RendezvousChannel::RendezvousChannel(int32_t transfers, double timeout)
    : timeout_(timeout), slots_(transfers) {}

void RendezvousChannel::post(int32_t transfer, double post_time) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slots_.at(transfer) = {true, post_time};
  }
  changed_.notify_all();
}

double RendezvousChannel::take(int32_t transfer, int32_t receiver, int32_t sender) {
  std::unique_lock<std::mutex> lock(mutex_);
  Slot& slot = slots_.at(transfer);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
  bool ready = changed_.wait_until(lock, deadline,
                                   [&] { return slot.posted || !abort_reason_.empty(); });
  if (!abort_reason_.empty()) throw std::runtime_error(abort_reason_);
  if (!ready) {
    abort_reason_ = fmt::format(
        "worker {} timed out after {} s waiting for worker {}'s transfer (task {}); the peers' "
        "action lists do not match",
        receiver, timeout_, sender, transfer);
    changed_.notify_all();
    throw std::runtime_error(abort_reason_);
  }
  return slot.post_time;
}

void RendezvousChannel::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Slot& slot : slots_) slot = {};
}

void RendezvousChannel::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (abort_reason_.empty()) abort_reason_ = reason;
  }
  changed_.notify_all();
}

}  // namespace ppsim
