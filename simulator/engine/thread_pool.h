// ThreadPool: a fixed set of std::threads that run one indexed loop at a time.
//
// The planner simulates candidate plans in batches; run(count, body) calls body(i) once for
// every i in [0, count) on the pool's threads (the caller's thread included) and returns when all
// calls have returned. Which thread runs which index is not fixed, so a body must write only
// its own slot of a result vector (results[i]); then the results, and anything computed from
// them in index order, are the same for any number of threads.
//
// Thread-safety: run() is called from one thread at a time (the owner); bodies run
// concurrently and must not share mutable state without their own synchronisation.
// An exception escaping a body does not end the loop: the other indices still run, and run()
// then rethrows the exception of the lowest index that threw (the same one for any number of
// threads).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ppsim {

class ThreadPool {
 public:
  // A pool of `threads` threads in all, counting the caller's: threads - 1 workers are started.
  // threads <= 0 means std::thread::hardware_concurrency() (at least 1); at most kMaxThreads.
  // When the system refuses a thread, the pool runs with those it has (results do not depend
  // on the number of threads).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads in all (workers + the caller).
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls body(i) for i in [0, count), spread over the threads; returns when all are done.
  void run(int64_t count, const std::function<void(int64_t)>& body);

 private:
  void worker_loop();
  // Claims and runs indices of the current loop until none is left.
  void drain();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;  // Workers wait here for a new loop (or shutdown).
  std::condition_variable done_;  // The owner waits here for the loop's last index.
  const std::function<void(int64_t)>* body_ = nullptr;  // The current loop; null between loops.
  int64_t count_ = 0;                                   // Indices in the current loop.
  int64_t next_ = 0;                                    // Next index to claim (guarded by mutex_).
  int64_t finished_ = 0;     // Indices whose body returned (guarded by mutex_).
  uint64_t generation_ = 0;  // Bumped per loop so sleeping workers see a new one.
  bool stopping_ = false;
  std::exception_ptr error_;     // The first-indexed exception of the current loop.
  int64_t error_index_ = 0;      // Its index (guarded by mutex_).
};

// Most threads a pool starts (--threads above it is refused by the CLI): far above the cores
// of any one machine, far below what exhausts the kernel's thread limits.
inline constexpr int kMaxThreads = 1024;

// Threads to use for `requested` (0 = one per hardware thread), at least 1.
int resolve_thread_count(int requested);

}  // namespace ppsim
