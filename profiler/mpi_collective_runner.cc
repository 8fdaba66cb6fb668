#include "profiler/mpi_collective_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/measure.h"
#include "simulator/spec/error.h"
#if PPSIM_HAVE_NCCL_RANKS
#include "profiler/nccl_rank_bench.h"
#endif

namespace ppsim {
namespace {

std::string mpi_error(int status, const char* call) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(status, text, &length);
  return fmt::format("{}: {} failed: {}", host_name(), call, text);
}

class MpiRunner : public RankCollectiveRunner {
 public:
  MpiRunner(MPI_Comm group, size_t max_bytes)
      : group_(group), send_(max_bytes / 4), recv_(max_bytes / 4) {
    MPI_Comm_rank(group, &rank_);
    MPI_Comm_size(group, &ranks_);
    MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN);
    // Non-zero inputs that differ by rank (never time zeros).
    for (size_t i = 0; i < send_.size(); ++i) send_[i] = 1.0f + 0.001f * float(rank_ + i % 7);
  }

  void start(Collective op, size_t bytes) override {
    const int count = static_cast<int>(bytes / 4);  // Floats in the nccl-tests size.
    const int chunk = count / ranks_;
    float* s = send_.data();
    float* d = recv_.data();
    requests_.assign(1, MPI_REQUEST_NULL);
    int status = MPI_SUCCESS;
    started_ = std::chrono::steady_clock::now();
    switch (op) {
      case Collective::kAllReduce:
        status = MPI_Iallreduce(s, d, count, MPI_FLOAT, MPI_SUM, group_, &requests_[0]);
        break;
      case Collective::kAllGather:
        status = MPI_Iallgather(s, chunk, MPI_FLOAT, d, chunk, MPI_FLOAT, group_, &requests_[0]);
        break;
      case Collective::kReduceScatter:
        status = MPI_Ireduce_scatter_block(s, d, chunk, MPI_FLOAT, MPI_SUM, group_, &requests_[0]);
        break;
      case Collective::kAllToAll:
        status = MPI_Ialltoall(s, chunk, MPI_FLOAT, d, chunk, MPI_FLOAT, group_, &requests_[0]);
        break;
      case Collective::kSendRecv: {
        requests_.assign(2, MPI_REQUEST_NULL);
        int right = (rank_ + 1) % ranks_, left = (rank_ + ranks_ - 1) % ranks_;
        status = MPI_Irecv(d, count, MPI_FLOAT, left, 0, group_, &requests_[0]);
        if (status == MPI_SUCCESS) {
          status = MPI_Isend(s, count, MPI_FLOAT, right, 0, group_, &requests_[1]);
        }
        break;
      }
      case Collective::kBroadcast:
        PPSIM_CHECK(false, "broadcast is not profiled");
    }
    if (status != MPI_SUCCESS) {
      throw std::runtime_error(mpi_error(status, std::string(collective_name(op)).c_str()));
    }
  }

  bool test() override {
    int done = 0;
    int status = MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done,
                             MPI_STATUSES_IGNORE);
    if (status != MPI_SUCCESS) throw std::runtime_error(mpi_error(status, "MPI_Testall"));
    if (done) finished_ = std::chrono::steady_clock::now();
    return done != 0;
  }

  double elapsed() const override {
    return std::chrono::duration<double>(finished_ - started_).count();
  }

  void abort() override {}

 private:
  MPI_Comm group_;
  int rank_ = 0, ranks_ = 1;
  std::vector<float> send_, recv_;
  std::vector<MPI_Request> requests_;
  std::chrono::steady_clock::time_point started_, finished_;
};

}  // namespace

std::unique_ptr<RankCollectiveRunner> make_mpi_runner(MPI_Comm group, size_t max_bytes) {
  return std::make_unique<MpiRunner>(group, max_bytes);
}

#if PPSIM_HAVE_NCCL_RANKS

namespace {

class NcclRunner : public RankCollectiveRunner {
 public:
  explicit NcclRunner(std::unique_ptr<cuda::NcclRankComm> comm) : comm_(std::move(comm)) {}
  void start(Collective op, size_t bytes) override { comm_->start(nccl_op(op), bytes); }
  bool test() override { return comm_->done(); }
  double elapsed() const override { return comm_->elapsed(); }
  void abort() override { comm_->abort(); }

 private:
  static cuda::NcclOp nccl_op(Collective op) {
    switch (op) {
      case Collective::kAllReduce:
        return cuda::NcclOp::kAllReduce;
      case Collective::kAllGather:
        return cuda::NcclOp::kAllGather;
      case Collective::kReduceScatter:
        return cuda::NcclOp::kReduceScatter;
      case Collective::kAllToAll:
        return cuda::NcclOp::kAllToAll;
      case Collective::kSendRecv:
        return cuda::NcclOp::kSendRecv;
      case Collective::kBroadcast:
        break;
    }
    PPSIM_CHECK(false, "broadcast is not profiled");
    return cuda::NcclOp::kAllReduce;
  }
  std::unique_ptr<cuda::NcclRankComm> comm_;
};

}  // namespace

std::unique_ptr<RankCollectiveRunner> make_nccl_runner(MPI_Comm group, int device, size_t max_bytes,
                                                       double timeout) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(group, &rank);
  MPI_Comm_size(group, &ranks);
  // The bootstrap token travels over MPI; NCCL then connects the ranks itself.
  std::string id = rank == 0 ? cuda::nccl_unique_id() : std::string(cuda::kNcclUniqueIdBytes, '\0');
  int status = MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, group);
  if (status != MPI_SUCCESS)
    throw std::runtime_error(mpi_error(status, "MPI_Bcast (ncclUniqueId)"));
  return std::make_unique<NcclRunner>(
      std::make_unique<cuda::NcclRankComm>(device, id, ranks, rank, max_bytes, timeout));
}

#else

std::unique_ptr<RankCollectiveRunner> make_nccl_runner(MPI_Comm, int, size_t, double) {
  throw std::runtime_error(
      "this ppsim was built without NCCL (nccl.h or libnccl not found under the CUDA toolkit): "
      "`--backend cuda` under mpirun cannot measure collectives; use --backend cpu");
}

#endif

}  // namespace ppsim
