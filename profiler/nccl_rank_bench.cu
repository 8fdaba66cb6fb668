// nccl_rank_bench.h: one rank of a non-blocking NCCL communicator across processes.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "profiler/nccl_launch.h"
#include "profiler/nccl_rank_bench.h"

namespace ppsim::cuda {
namespace {

static_assert(sizeof(ncclUniqueId) == kNcclUniqueIdBytes, "ncclUniqueId size changed");

std::string host() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

[[noreturn]] void fail(const std::string& where, int line, const std::string& what) {
  throw std::runtime_error(host() + ": " + where +
                           " at nccl_rank_bench.cu:" + std::to_string(line) + ": " + what);
}

#define PPSIM_RANK_CUDA_CHECK(call)                                                        \
  do {                                                                                     \
    cudaError_t status_ = (call);                                                          \
    if (status_ != cudaSuccess) fail("CUDA error", __LINE__, cudaGetErrorString(status_)); \
  } while (0)

// ncclInProgress is a non-blocking communicator's "not yet"; anything else but success fails.
#define PPSIM_RANK_NCCL_CHECK(call)                              \
  do {                                                           \
    ncclResult_t status_ = (call);                               \
    if (status_ != ncclSuccess && status_ != ncclInProgress) {   \
      fail("NCCL error", __LINE__, ncclGetErrorString(status_)); \
    }                                                            \
  } while (0)

}  // namespace

struct NcclRankComm::State {
  int device = 0, ranks = 1, rank = 0;
  double timeout = 60;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  bool aborted = false;

  std::string who() const {
    return "rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " (GPU " +
           std::to_string(device) + ")";
  }
  // Polls until the communicator has no operation in progress; aborts it after the timeout.
  void wait_ready(const std::string& what) {
    auto begin = std::chrono::steady_clock::now();
    while (true) {
      ncclResult_t state = ncclSuccess;
      PPSIM_RANK_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress)
        fail("NCCL error", __LINE__, what + " on " + who() + ": " + ncclGetErrorString(state));
      if (std::chrono::steady_clock::now() - begin > std::chrono::duration<double>(timeout)) {
        ncclCommAbort(comm);
        aborted = true;
        throw std::runtime_error(host() + ": " + what + " on " + who() +
                                 " did not complete within " + std::to_string(timeout) +
                                 " s; communicator aborted (a peer is hung or a link is down)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

std::string nccl_unique_id() {
  ncclUniqueId id;
  PPSIM_RANK_NCCL_CHECK(ncclGetUniqueId(&id));
  return std::string(reinterpret_cast<const char*>(&id), sizeof(id));
}

NcclRankComm::NcclRankComm(int device, const std::string& unique_id, int ranks, int rank,
                           size_t max_bytes, double timeout)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.device = device;
  s.ranks = ranks;
  s.rank = rank;
  s.timeout = timeout;
  if (unique_id.size() != sizeof(ncclUniqueId)) {
    throw std::runtime_error("ncclUniqueId of " + std::to_string(unique_id.size()) +
                             " bytes; expected " + std::to_string(sizeof(ncclUniqueId)));
  }
  ncclUniqueId id;
  std::memcpy(&id, unique_id.data(), sizeof(id));
  PPSIM_RANK_CUDA_CHECK(cudaSetDevice(device));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // Init and calls return at once; wait_ready() bounds the wait.
  PPSIM_RANK_NCCL_CHECK(ncclCommInitRankConfig(&s.comm, ranks, id, rank, &config));
  s.wait_ready("ncclCommInitRank");
  PPSIM_RANK_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  PPSIM_RANK_CUDA_CHECK(cudaEventCreate(&s.start));
  PPSIM_RANK_CUDA_CHECK(cudaEventCreate(&s.stop));
  PPSIM_RANK_CUDA_CHECK(cudaMalloc(&s.send, max_bytes));
  PPSIM_RANK_CUDA_CHECK(cudaMalloc(&s.recv, max_bytes));
  PPSIM_RANK_CUDA_CHECK(cudaMemset(s.send, 0x3c, max_bytes));  // bf16 ~1.0, not zero.
  PPSIM_RANK_CUDA_CHECK(cudaDeviceSynchronize());
}

NcclRankComm::~NcclRankComm() {
  State& s = *state_;
  cudaSetDevice(s.device);
  if (s.comm && !s.aborted) {
    // Finalize is non-blocking too: a peer already gone makes it time out, then abort.
    ncclResult_t state = ncclCommFinalize(s.comm);
    auto begin = std::chrono::steady_clock::now();
    while (state == ncclInProgress &&
           std::chrono::steady_clock::now() - begin < std::chrono::duration<double>(s.timeout)) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      ncclCommGetAsyncError(s.comm, &state);
    }
    if (state == ncclSuccess)
      ncclCommDestroy(s.comm);
    else
      ncclCommAbort(s.comm);
  }
  if (s.start) cudaEventDestroy(s.start);
  if (s.stop) cudaEventDestroy(s.stop);
  if (s.send) cudaFree(s.send);
  if (s.recv) cudaFree(s.recv);
  if (s.stream) cudaStreamDestroy(s.stream);
}

void NcclRankComm::start(NcclOp op, size_t bytes) {
  State& s = *state_;
  PPSIM_RANK_CUDA_CHECK(cudaSetDevice(s.device));
  PPSIM_RANK_CUDA_CHECK(cudaEventRecord(s.start, s.stream));
  PPSIM_RANK_NCCL_CHECK(enqueue_nccl(op, s.send, s.recv, bytes, s.rank, s.ranks, s.comm, s.stream));
  // A non-blocking communicator may still be enqueuing; the end event must follow the call.
  s.wait_ready("enqueueing an NCCL call");
  PPSIM_RANK_CUDA_CHECK(cudaEventRecord(s.stop, s.stream));
}

bool NcclRankComm::done() {
  State& s = *state_;
  cudaError_t status = cudaEventQuery(s.stop);
  if (status == cudaSuccess) return true;
  if (status != cudaErrorNotReady) fail("CUDA error", __LINE__, cudaGetErrorString(status));
  ncclResult_t async = ncclSuccess;
  PPSIM_RANK_NCCL_CHECK(ncclCommGetAsyncError(s.comm, &async));
  if (async != ncclSuccess && async != ncclInProgress) {
    fail("NCCL error", __LINE__, s.who() + ": " + ncclGetErrorString(async));
  }
  return false;
}

double NcclRankComm::elapsed() const {
  float ms = 0;
  PPSIM_RANK_CUDA_CHECK(cudaEventElapsedTime(&ms, state_->start, state_->stop));
  return ms * 1e-3;
}

void NcclRankComm::abort() {
  State& s = *state_;
  if (s.comm && !s.aborted) ncclCommAbort(s.comm);
  s.aborted = true;
}

}  // namespace ppsim::cuda
