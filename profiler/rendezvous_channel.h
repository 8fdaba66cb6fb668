// RendezvousChannel: the pipeline's point-to-point transfers between worker threads of the CPU
// executor, with the simulator's rendezvous rule (schedule_lowering.h): a transfer happens once
// the sender has produced the tensor (post) and the receiver has reached the matching RECV
// (take); the sender's compute does not wait for it.
//
// One slot per transfer task of the step, reused every iteration: post() marks the sender's
// buffer ready and notes when; take() waits for that and returns the post time, after which the
// receiver copies the bytes (the transfer it times). Waits give up after `timeout` seconds or
// when another worker aborts; both throw std::runtime_error naming the transfer and the ranks,
// so a mismatched schedule fails with a message, never a hang.
//
// Thread-safety: post and take may be called from any threads; each slot has one sender and one
// receiver per iteration; reset() only between iterations (all workers at a barrier).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ppsim {

class RendezvousChannel {
 public:
  // REQUIRES: transfers >= 0, timeout > 0 (seconds).
  RendezvousChannel(int32_t transfers, double timeout);

  // The sender's tensor for `transfer` is ready since `post_time` (seconds, the caller's clock).
  void post(int32_t transfer, double post_time);
  // Waits until `transfer` is posted; returns its post time. `receiver` and `sender` name the
  // workers for the timeout message.
  double take(int32_t transfer, int32_t receiver, int32_t sender);
  // Marks every slot empty for the next iteration.
  void reset();
  // Wakes every waiter, which then throws with `reason`. The first reason wins.
  void abort(const std::string& reason);

 private:
  struct Slot {
    bool posted = false;
    double post_time = 0;
  };
  double timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Slot> slots_;
  std::string abort_reason_;
};

}  // namespace ppsim
