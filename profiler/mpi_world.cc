#include "profiler/mpi_world.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "profiler/measure.h"
#include "profiler/thread_collectives.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// MPI calls that fail are bugs or broken installs: abort with the library's message.
void check_mpi(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(status, text, &length);
  fmt::print(stderr, "ppsim: error: {}: {} failed: {}\n", host_name(), call, text);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

// Every rank's string, in rank order (MPI_Allgather of fixed-width fields).
std::vector<std::string> all_gather_strings(const std::string& mine, int ranks) {
  constexpr int kWidth = 256;
  std::vector<char> field(kWidth, 0), all(static_cast<size_t>(kWidth) * ranks, 0);
  mine.copy(field.data(), kWidth - 1);
  check_mpi(
      MPI_Allgather(field.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD),
      "MPI_Allgather");
  std::vector<std::string> out;
  for (int r = 0; r < ranks; ++r) out.emplace_back(all.data() + static_cast<size_t>(r) * kWidth);
  return out;
}

}  // namespace

MpiWorld::MpiWorld(std::optional<int> ranks_per_node) {
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // Errors come back as codes, so check_mpi can name the call and the host.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  hosts_ = all_gather_strings(host_name(), size);
  if (ranks_per_node) {
    layout_ = blocked_node_layout(size, *ranks_per_node);
    return;
  }
  // The node key is the world rank of the node's first process in the shared-memory split:
  // exact even where two machines report the same host name (containers).
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  int leader = rank_;
  check_mpi(MPI_Bcast(&leader, 1, MPI_INT, 0, node), "MPI_Bcast (node leader)");
  MPI_Comm_free(&node);
  layout_ = node_layout(all_gather_strings(std::to_string(leader), size));
}

MpiWorld::~MpiWorld() { MPI_Finalize(); }

std::string MpiWorld::describe(const std::vector<int>& ranks) const {
  std::vector<std::string> hosts;
  for (int r : ranks) {
    if (std::find(hosts.begin(), hosts.end(), hosts_[r]) == hosts.end()) hosts.push_back(hosts_[r]);
  }
  std::string text = rank_list(ranks) + (hosts.size() == 1 ? " on host " : " on hosts ");
  for (size_t i = 0; i < hosts.size() && i < 8; ++i) text += (i ? "," : "") + hosts[i];
  if (hosts.size() > 8) text += ",...";
  return text;
}

void MpiWorld::wait(MPI_Request& request, double timeout, const std::string& what,
                    bool idle) const {
  auto start = std::chrono::steady_clock::now();
  auto limit = std::chrono::duration<double>(timeout);
  int done = 0;
  for (int64_t polls = 0;; ++polls) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (idle) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Reading the clock every poll would slow the busy loop for small messages.
    if (timeout > 0 && (idle || polls % 64 == 0) &&
        std::chrono::steady_clock::now() - start > limit) {
      throw CollectiveTimeout(fmt::format(
          "{}: rank {} ({}) waited {:g} s without completion; a peer is hung, dead or too slow "
          "(raise --timeout if the run is just slow)",
          what, rank_, hosts_[rank_], timeout));
    }
  }
}

void MpiWorld::barrier(double timeout, const std::string& what, bool idle) const {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  wait(request, timeout, what, idle);
}

void MpiWorld::abort_job(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this tells the compiler so.
}

}  // namespace ppsim
