#include "simulator/engine/thread_pool.h"

#include <algorithm>
#include <system_error>

namespace ppsim {

int resolve_thread_count(int requested) {
  if (requested > 0) return std::min(requested, kMaxThreads);
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? std::min(static_cast<int>(hardware), kMaxThreads) : 1;
}

ThreadPool::ThreadPool(int threads) {
  int total = resolve_thread_count(threads);
  for (int i = 1; i < total; ++i) {
    try {
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error&) {
      break;  // Out of threads: run with the ones started.
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t)>& body) {
  if (count <= 0) return;
  if (workers_.empty()) {
    std::exception_ptr first;
    for (int64_t i = 0; i < count; ++i) {
      try {
        body(i);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = nullptr;
    body_ = &body;
    count_ = count;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return finished_ == count_; });
  body_ = nullptr;
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void ThreadPool::drain() {
  while (true) {
    const std::function<void(int64_t)>* body = nullptr;
    int64_t index = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (body_ == nullptr || next_ >= count_) return;
      body = body_;
      index = next_++;
    }
    std::exception_ptr error;
    try {
      (*body)(index);
    } catch (...) {
      error = std::current_exception();
    }
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error && (!error_ || index < error_index_)) {
        error_ = error;
        error_index_ = index;
      }
      last = ++finished_ == count_;
    }
    if (last) done_.notify_all();
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    drain();
  }
}

}  // namespace ppsim
