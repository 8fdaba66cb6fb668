#include "profiler/thread_collectives.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "profiler/measure.h"
#include "simulator/spec/error.h"

namespace ppsim {

ThreadCommunicator::ThreadCommunicator(int ranks, double timeout)
    : ranks_(ranks), timeout_(timeout), boxes_(static_cast<size_t>(ranks) * ranks) {
  PPSIM_CHECK(ranks >= 1 && timeout > 0, "bad thread communicator");
}

template <typename Ready>
void ThreadCommunicator::wait(std::unique_lock<std::mutex>& lock, int rank, int peer,
                              const char* what, Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
  while (!ready()) {
    if (!abort_reason_.empty()) throw CollectiveTimeout(abort_reason_);
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !ready()) {
      if (abort_reason_.empty()) {
        abort_reason_ = fmt::format("{}: rank {} timed out after {:g} s waiting for {} ({}); "
                                    "communicator of {} ranks aborted",
                                    label_, rank, timeout_,
                                    peer >= 0 ? fmt::format("rank {}", peer) : "every rank",
                                    what, ranks_);
      }
      changed_.notify_all();
      throw CollectiveTimeout(abort_reason_);
    }
  }
  if (!abort_reason_.empty()) throw CollectiveTimeout(abort_reason_);
}

void ThreadCommunicator::send(int from, int to, const void* data, size_t bytes) {
  std::unique_lock lock(mutex_);
  Mailbox& box = mailbox(from, to);
  wait(lock, from, to, "send slot still full", [&] { return !box.full; });
  box.data.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  box.full = true;
  changed_.notify_all();
}

void ThreadCommunicator::recv(int to, int from, void* data, size_t bytes) {
  std::unique_lock lock(mutex_);
  Mailbox& box = mailbox(from, to);
  wait(lock, to, from, "recv", [&] { return box.full; });
  PPSIM_CHECK(box.data.size() == bytes, "message size mismatch");
  std::memcpy(data, box.data.data(), bytes);
  box.full = false;
  changed_.notify_all();
}

void ThreadCommunicator::barrier(int rank) {
  std::unique_lock lock(mutex_);
  int64_t generation = barrier_generation_;
  if (++barrier_count_ == ranks_) {
    barrier_count_ = 0;
    ++barrier_generation_;
    changed_.notify_all();
    return;
  }
  wait(lock, rank, -1, "barrier", [&] { return barrier_generation_ != generation; });
}

void ThreadCommunicator::abort(const std::string& reason) {
  std::unique_lock lock(mutex_);
  if (abort_reason_.empty()) abort_reason_ = reason;
  changed_.notify_all();
}

void ThreadCommunicator::run(int rank, Collective kind, const float* send, float* recv,
                             size_t bytes) {
  const int n = ranks_;
  PPSIM_CHECK(bytes % (4 * n) == 0, "collective size not a multiple of 4n");
  const size_t count = bytes / 4;    // Floats in the nccl-tests size.
  const size_t chunk = count / n;    // Floats per ring step.
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  auto mod = [n](int i) { return ((i % n) + n) % n; };
  switch (kind) {
    case Collective::kAllReduce: {
      std::memcpy(recv, send, bytes);
      std::vector<float> incoming(chunk);
      for (int step = 0; step < n - 1; ++step) {
        this->send(rank, right, recv + mod(rank - step) * chunk, chunk * 4);
        this->recv(rank, left, incoming.data(), chunk * 4);
        float* into = recv + mod(rank - step - 1) * chunk;
        for (size_t i = 0; i < chunk; ++i) into[i] += incoming[i];
      }
      for (int step = 0; step < n - 1; ++step) {
        this->send(rank, right, recv + mod(rank - step + 1) * chunk, chunk * 4);
        this->recv(rank, left, recv + mod(rank - step) * chunk, chunk * 4);
      }
      break;
    }
    case Collective::kAllGather: {
      std::memcpy(recv + rank * chunk, send, chunk * 4);
      for (int step = 0; step < n - 1; ++step) {
        this->send(rank, right, recv + mod(rank - step) * chunk, chunk * 4);
        this->recv(rank, left, recv + mod(rank - step - 1) * chunk, chunk * 4);
      }
      break;
    }
    case Collective::kReduceScatter: {
      // Ring: the partial sum of block b travels rank b+1 -> ... -> b, each adding its part.
      std::vector<float> partial(send + mod(rank - 1) * chunk, send + mod(rank - 1) * chunk + chunk);
      std::vector<float> incoming(chunk);
      for (int step = 0; step < n - 1; ++step) {
        this->send(rank, right, partial.data(), chunk * 4);
        this->recv(rank, left, incoming.data(), chunk * 4);
        const float* mine = send + mod(rank - step - 2) * chunk;
        for (size_t i = 0; i < chunk; ++i) partial[i] = incoming[i] + mine[i];
      }
      std::memcpy(recv, partial.data(), chunk * 4);
      break;
    }
    case Collective::kAllToAll: {
      std::memcpy(recv + rank * chunk, send + rank * chunk, chunk * 4);
      for (int k = 1; k < n; ++k) {
        this->send(rank, mod(rank + k), send + mod(rank + k) * chunk, chunk * 4);
        this->recv(rank, mod(rank - k), recv + mod(rank - k) * chunk, chunk * 4);
      }
      break;
    }
    case Collective::kSendRecv:
      if (n == 1) {
        std::memcpy(recv, send, bytes);
        break;
      }
      this->send(rank, right, send, bytes);
      this->recv(rank, left, recv, bytes);
      break;
    case Collective::kBroadcast:
      PPSIM_CHECK(false, "broadcast is not measured");
  }
}

std::vector<CollectiveSample> measure_thread_collectives(const std::vector<int>& group_sizes,
                                                         double min_bytes, double max_bytes,
                                                         int64_t warmup_iters, int64_t iters,
                                                         double timeout) {
  const Collective kinds[] = {Collective::kAllReduce, Collective::kAllGather,
                              Collective::kReduceScatter, Collective::kAllToAll,
                              Collective::kSendRecv};
  std::vector<CollectiveSample> samples;
  for (int n : group_sizes) {
    for (Collective kind : kinds) {
      for (double bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
        size_t size = static_cast<size_t>(bytes);
        ThreadCommunicator comm(n, timeout);
        comm.set_label(kind);
        std::vector<double> times;
        std::string error;
        std::mutex error_mutex;
        auto body = [&](int rank) {
          try {
            std::vector<float> in(size / 4, 1.0f + rank), out(size / 4);
            for (int64_t i = 0; i < warmup_iters + iters; ++i) {
              comm.barrier(rank);
              auto start = std::chrono::steady_clock::now();
              comm.run(rank, kind, in.data(), out.data(), size);
              comm.barrier(rank);
              auto end = std::chrono::steady_clock::now();
              if (rank == 0 && i >= warmup_iters) {
                times.push_back(std::chrono::duration<double>(end - start).count());
              }
            }
          } catch (const CollectiveTimeout& e) {
            std::lock_guard guard(error_mutex);
            if (error.empty()) error = e.what();
            comm.abort(e.what());
          }
        };
        std::vector<std::thread> threads;
        for (int r = 1; r < n; ++r) threads.emplace_back(body, r);
        body(0);
        for (std::thread& t : threads) t.join();
        if (!error.empty()) throw CollectiveTimeout(error);
        samples.push_back({kind, n, n, "threads", bytes, median(times)});
      }
    }
  }
  return samples;
}

}  // namespace ppsim
