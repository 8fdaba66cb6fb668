#include "simulator/planner/thread_pool.h"

namespace ppsim {

int resolve_thread_count(int requested) {
  if (requested > 0) return requested;
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

ThreadPool::ThreadPool(int threads) {
  int total = resolve_thread_count(threads);
  for (int i = 1; i < total; ++i) workers_.emplace_back([this] { worker_loop(); });
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
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
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
    (*body)(index);
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
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
