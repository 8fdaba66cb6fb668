#include "profiler/mpi_work_split.h"

#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <climits>
#include <string>
#include <thread>
#include <vector>

#include "profiler/mpi_profile.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// MPI's default error handler (MPI_ERRORS_ARE_FATAL) ends the job on a failed call, so the
// calls below are not checked one by one.
class MpiWorkSplit final : public WorkSplit {
 public:
  MpiWorkSplit() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiWorkSplit() override { MPI_Finalize(); }
  MpiWorkSplit(const MpiWorkSplit&) = delete;
  MpiWorkSplit& operator=(const MpiWorkSplit&) = delete;

  int processes() const override { return size_; }
  int process() const override { return rank_; }

  void exchange(int64_t count, const std::function<std::string(int64_t)>& encode,
                const std::function<void(int64_t, std::string_view)>& decode) const override {
    // Ranks that finish their share first wait here, asleep between polls, rather than spin
    // inside the collectives below (they would take cores from ranks still simulating on the
    // same node); the gathers then run with every rank ready.
    MPI_Request ready = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &ready);
    for (int done = 0;;) {
      MPI_Test(&ready, &done, MPI_STATUS_IGNORE);
      if (done) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // Rank r owns indices r, r + P, r + 2P, ...: owned(r) of them.
    auto owned = [&](int r) -> int64_t { return r < count ? (count - r + size_ - 1) / size_ : 0; };
    std::vector<long long> my_lengths;
    std::string my_bytes;
    for (int64_t i = rank_; i < count; i += size_) {
      std::string bytes = encode(i);
      my_lengths.push_back(static_cast<long long>(bytes.size()));
      my_bytes += bytes;
    }
    // Every index's length, rank by rank (rank r's block in its own index order).
    std::vector<int> counts(size_), displacements(size_);
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      PPSIM_CHECK(total + owned(r) <= INT_MAX, "too many indices for one exchange");
      counts[r] = static_cast<int>(owned(r));
      displacements[r] = static_cast<int>(total);
      total += owned(r);
    }
    std::vector<long long> lengths(total);
    MPI_Allgatherv(my_lengths.data(), counts[rank_], MPI_LONG_LONG, lengths.data(), counts.data(),
                   displacements.data(), MPI_LONG_LONG, MPI_COMM_WORLD);
    // Every rank's bytes.
    std::vector<int> byte_counts(size_), byte_displacements(size_);
    long long bytes_total = 0;
    for (int r = 0; r < size_; ++r) {
      long long rank_bytes = 0;
      for (int64_t j = 0; j < owned(r); ++j) rank_bytes += lengths[displacements[r] + j];
      PPSIM_CHECK(bytes_total + rank_bytes <= INT_MAX, "results too large for one exchange");
      byte_counts[r] = static_cast<int>(rank_bytes);
      byte_displacements[r] = static_cast<int>(bytes_total);
      bytes_total += rank_bytes;
    }
    std::string all(static_cast<size_t>(bytes_total), '\0');
    MPI_Allgatherv(my_bytes.data(), byte_counts[rank_], MPI_CHAR, all.data(), byte_counts.data(),
                   byte_displacements.data(), MPI_CHAR, MPI_COMM_WORLD);
    // Decode in index order; each rank's cursor walks its block in the same order.
    std::vector<long long> cursor(byte_displacements.begin(), byte_displacements.end());
    for (int64_t i = 0; i < count; ++i) {
      int r = static_cast<int>(i % size_);
      long long length = lengths[displacements[r] + i / size_];
      if (r != rank_) decode(i, std::string_view(all.data() + cursor[r], length));
      cursor[r] += length;
    }
  }

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<WorkSplit> launch_work_split() {
  int ranks = launcher_world_size();
  if (ranks == 1) return nullptr;
  // Before MPI_Init: a failure to start MPI is then reported once too.
  discard_output_unless_rank_zero();
  auto split = std::make_unique<MpiWorkSplit>();
  if (split->processes() != ranks) {
    throw InputError("mpirun", "",
                     fmt::format("the launcher started {} ranks but MPI sees a world of {}; "
                                 "under Slurm, start ppsim with an MPI plugin (srun --mpi=pmix, "
                                 "or --mpi=pmi2) or with mpirun",
                                 ranks, split->processes()));
  }
  return split;
}

}  // namespace ppsim
