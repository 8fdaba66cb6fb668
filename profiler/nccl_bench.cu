// cuda_bench.h's NCCL measurements: one process, devices 0..n-1 (ncclCommInitAll), a
// watchdog thread that aborts every communicator of a call that outlives its timeout.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "profiler/cuda_bench.h"

#if PPSIM_HAVE_NCCL
#include <nccl.h>

#include "profiler/nccl_launch.h"
#endif

namespace ppsim::cuda {

#if !PPSIM_HAVE_NCCL

bool have_nccl() { return false; }
std::string nccl_version() { return ""; }

std::vector<double> time_nccl(NcclOp, int, const std::vector<size_t>&, int, int, double) {
  throw std::runtime_error("this ppsim was built without NCCL: collectives are not measured");
}

#else

namespace {

std::string host() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

#define PPSIM_NCCL_CUDA_CHECK(call)                                                             \
  do {                                                                                          \
    cudaError_t status_ = (call);                                                               \
    if (status_ != cudaSuccess) {                                                               \
      throw std::runtime_error(host() + ": CUDA error at nccl_bench.cu:" +                      \
                               std::to_string(__LINE__) + ": " + cudaGetErrorString(status_));  \
    }                                                                                           \
  } while (0)

#define PPSIM_NCCL_CHECK(call)                                                                  \
  do {                                                                                          \
    ncclResult_t status_ = (call);                                                              \
    if (status_ != ncclSuccess) {                                                               \
      throw std::runtime_error(host() + ": NCCL error at nccl_bench.cu:" +                      \
                               std::to_string(__LINE__) + ": " + ncclGetErrorString(status_));  \
    }                                                                                           \
  } while (0)

const char* op_name(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce: return "all_reduce";
    case NcclOp::kAllGather: return "all_gather";
    case NcclOp::kReduceScatter: return "reduce_scatter";
    case NcclOp::kAllToAll: return "alltoall";
    case NcclOp::kSendRecv: return "sendrecv";
  }
  return "?";
}

// Aborts `comms` when a call armed with arm() is not disarmed within the timeout.
class Watchdog {
 public:
  Watchdog(std::vector<ncclComm_t>& comms, double timeout)
      : comms_(comms), timeout_(timeout), thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  void arm(std::string what) {
    std::lock_guard lock(mutex_);
    what_ = std::move(what);
    deadline_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_));
    armed_ = true;
    changed_.notify_all();
  }
  void disarm() {
    std::lock_guard lock(mutex_);
    armed_ = false;
  }
  bool fired() const { return fired_; }
  std::string message() {
    std::lock_guard lock(mutex_);
    return message_;
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      if (!armed_) {
        changed_.wait(lock);
        continue;
      }
      if (changed_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
          std::chrono::steady_clock::now() >= deadline_) {
        std::string ranks;
        for (size_t r = 0; r < comms_.size(); ++r) ranks += (r ? "," : "") + std::to_string(r);
        message_ = host() + ": " + what_ + " on ranks " + ranks + " (GPUs " + ranks +
                   ") did not complete within " + std::to_string(timeout_) +
                   " s; watchdog aborted the communicator (a peer is hung or a link is down)";
        for (ncclComm_t comm : comms_) ncclCommAbort(comm);
        fired_ = true;
        armed_ = false;
      }
    }
  }

  std::vector<ncclComm_t>& comms_;
  double timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false, stop_ = false;
  std::atomic<bool> fired_{false};
  std::chrono::steady_clock::time_point deadline_;
  std::string what_, message_;
  std::thread thread_;
};

}  // namespace

bool have_nccl() { return true; }

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::vector<double> time_nccl(NcclOp op, int n, const std::vector<size_t>& sizes, int warmup,
                              int iters, double timeout) {
  size_t max_bytes = *std::max_element(sizes.begin(), sizes.end());
  std::vector<int> devices(n);
  for (int i = 0; i < n; ++i) devices[i] = i;
  std::vector<ncclComm_t> comms(n);
  PPSIM_NCCL_CHECK(ncclCommInitAll(comms.data(), n, devices.data()));
  std::vector<cudaStream_t> streams(n);
  std::vector<void*> send(n), recv(n);
  for (int r = 0; r < n; ++r) {
    PPSIM_NCCL_CUDA_CHECK(cudaSetDevice(r));
    PPSIM_NCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    PPSIM_NCCL_CUDA_CHECK(cudaMalloc(&send[r], max_bytes));
    PPSIM_NCCL_CUDA_CHECK(cudaMalloc(&recv[r], max_bytes));
    PPSIM_NCCL_CUDA_CHECK(cudaMemset(send[r], 0x3c, max_bytes));  // bf16 ~1.0, not zero.
  }
  Watchdog watchdog(comms, timeout);
  // One call of `op` with nccl-tests size `bytes` on every rank (grouped).
  auto launch = [&](size_t bytes) {
    PPSIM_NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      PPSIM_NCCL_CHECK(enqueue_nccl(op, send[r], recv[r], bytes, r, n, comms[r], streams[r]));
    }
    PPSIM_NCCL_CHECK(ncclGroupEnd());
  };
  // Waits for every stream, polling so the watchdog's abort and async errors surface.
  auto wait_all = [&](const std::string& what) {
    watchdog.arm(what);
    for (int r = 0; r < n; ++r) {
      while (true) {
        cudaSetDevice(r);
        cudaError_t status = cudaStreamQuery(streams[r]);
        if (status == cudaSuccess) break;
        if (status != cudaErrorNotReady) {
          watchdog.disarm();
          throw std::runtime_error(host() + ": CUDA error on rank " + std::to_string(r) + " in " +
                                   what + ": " + cudaGetErrorString(status));
        }
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comms[r], &async);
        if (watchdog.fired()) throw std::runtime_error(watchdog.message());
        if (async != ncclSuccess && async != ncclInProgress) {
          watchdog.disarm();
          throw std::runtime_error(host() + ": NCCL error on rank " + std::to_string(r) + " in " +
                                   what + ": " + ncclGetErrorString(async));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
    watchdog.disarm();
  };
  std::vector<cudaEvent_t> start(n), stop(n);
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(r);
    PPSIM_NCCL_CUDA_CHECK(cudaEventCreate(&start[r]));
    PPSIM_NCCL_CUDA_CHECK(cudaEventCreate(&stop[r]));
  }
  std::vector<double> medians;
  for (size_t bytes : sizes) {
    std::string what = std::string(op_name(op)) + " of " + std::to_string(bytes) + " bytes";
    for (int i = 0; i < warmup; ++i) launch(bytes);
    wait_all(what + " (warm-up)");
    std::vector<double> samples;
    for (int i = 0; i < iters; ++i) {
      for (int r = 0; r < n; ++r) {
        cudaSetDevice(r);
        PPSIM_NCCL_CUDA_CHECK(cudaEventRecord(start[r], streams[r]));
      }
      launch(bytes);
      for (int r = 0; r < n; ++r) {
        cudaSetDevice(r);
        PPSIM_NCCL_CUDA_CHECK(cudaEventRecord(stop[r], streams[r]));
      }
      wait_all(what);
      double slowest = 0;
      for (int r = 0; r < n; ++r) {
        float ms = 0;
        PPSIM_NCCL_CUDA_CHECK(cudaEventElapsedTime(&ms, start[r], stop[r]));
        slowest = std::max(slowest, ms * 1e-3);
      }
      samples.push_back(slowest);
    }
    std::sort(samples.begin(), samples.end());
    size_t mid = samples.size() / 2;
    medians.push_back(samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]));
  }
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(r);
    cudaEventDestroy(start[r]);
    cudaEventDestroy(stop[r]);
    cudaFree(send[r]);
    cudaFree(recv[r]);
    cudaStreamDestroy(streams[r]);
    ncclCommDestroy(comms[r]);
  }
  return medians;
}

#endif

}  // namespace ppsim::cuda
