// ThreadCommunicator: NCCL-style collectives between std::threads of one process, over
// in-process channels, so the CPU backend measures the same table layout (nccl-tests size,
// algbw, busbw) as NCCL on GPUs, and the whole profile pipeline runs in CI.
//
// Channels: one single-slot mailbox per ordered pair of ranks; send copies into the slot and
// waits while it is full, recv waits until it is full and copies out. Algorithms (float sums):
//   all_reduce      ring reduce-scatter then ring all-gather, 2(n-1) steps of S/n
//   all_gather      ring, n-1 steps of S/n (S = the whole output)
//   reduce_scatter  ring, n-1 steps of S/n (S = the whole input)
//   alltoall        n-1 rounds, round k sends S/n to rank r+k and receives from r-k
//   sendrecv        each rank sends S to r+1 and receives S from r-1
// (broadcast is not measured: the plans do not use it.)
//
// Timeouts: every wait (a mailbox or the barrier) gives up after `timeout` seconds; the
// waiting rank aborts the communicator, so every other rank's wait returns too, and all of
// them throw CollectiveTimeout whose message names the collective and the ranks involved,
// e.g. "all_reduce: rank 0 timed out after 0.2 s waiting for rank 1 (recv)". Never a hang.
//
// Thread-safety: each rank's calls come from its own thread; ranks share the communicator.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "simulator/cost/collective_cost.h"
#include "simulator/cost/profile_table.h"

namespace ppsim {

// A collective that timed out or whose communicator another rank aborted.
class CollectiveTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ThreadCommunicator {
 public:
  // REQUIRES: ranks >= 1, timeout > 0 (seconds).
  ThreadCommunicator(int ranks, double timeout);

  int ranks() const { return ranks_; }

  // Point-to-point, `bytes` from `from` to `to`. Throws CollectiveTimeout.
  void send(int from, int to, const void* data, size_t bytes);
  void recv(int to, int from, void* data, size_t bytes);
  // Every rank waits for all. Throws CollectiveTimeout.
  void barrier(int rank);
  // Wakes every waiter, which then throws CollectiveTimeout(reason). First reason wins.
  void abort(const std::string& reason);

  // One collective (header) of nccl-tests size `bytes` on rank `rank`. `send` holds this rank's
  // input and `recv` receives its output; sizes in floats: all_reduce S/4 both; all_gather
  // S/(4n) in, S/4 out; reduce_scatter S/4 in, S/(4n) out; alltoall and sendrecv S/4 both.
  // REQUIRES: bytes a multiple of 4n; kind is not kBroadcast.
  void run(int rank, Collective kind, const float* send, float* recv, size_t bytes);

  // The collective being run, for timeout messages (set by run()).
  void set_label(Collective kind) { label_ = std::string(collective_name(kind)); }

 private:
  struct Mailbox {
    std::vector<char> data;
    bool full = false;
  };
  Mailbox& mailbox(int from, int to) { return boxes_[from * ranks_ + to]; }
  // Waits on `ready` under lock_; throws on timeout or abort, naming `rank` and `peer`.
  template <typename Ready>
  void wait(std::unique_lock<std::mutex>& lock, int rank, int peer, const char* what,
            Ready ready);

  int ranks_;
  double timeout_;
  std::string label_ = "collective";
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Mailbox> boxes_;
  int64_t barrier_count_ = 0;
  int64_t barrier_generation_ = 0;
  std::string abort_reason_;
};

// Measures every collective of the header on groups of `group_sizes` threads over
// nccl-tests sizes from min_bytes to max_bytes by factors of 4: warm-up, then `iters`
// single calls each between barriers, median of rank 0's times. group "threads",
// ranks_per_node = ranks (one process is one node).
std::vector<CollectiveSample> measure_thread_collectives(const std::vector<int>& group_sizes,
                                                         double min_bytes, double max_bytes,
                                                         int64_t warmup_iters, int64_t iters,
                                                         double timeout);

}  // namespace ppsim
