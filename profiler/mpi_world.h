// MpiWorld: this process's place in an `mpirun` job, for the several-process profile.
// Construction initialises MPI, groups the ranks into nodes with
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (or as every `ranks_per_node` consecutive ranks,
// when given, so one host can stand for several nodes), and learns every rank's host name;
// destruction finalises MPI.
//
// Waits after start-up are bounded: each wait on a non-blocking MPI request polls MPI_Test
// against a deadline and throws CollectiveTimeout naming what was awaited and by whom.
// Start-up itself (MPI_Init, the node split, the host-name gather) blocks, bounded only by
// mpirun. MPI cannot abort a single
// communicator, so the caller ends the job with abort_job() (MPI_Abort), which stops every
// rank; NCCL communicators are aborted first by their owners (mpi_collective_runner.h).
//
// Thread-safety: one thread per process (MPI_THREAD_FUNNELED) makes every MPI call.
// Only mpi_*.cc files include this header (they are the ones compiled with MPI's flags).
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "profiler/node_groups.h"

namespace ppsim {

class MpiWorld {
 public:
  // REQUIRES: MPI not yet initialised in this process; ranks_per_node >= 1 when given.
  explicit MpiWorld(std::optional<int> ranks_per_node);
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return layout_.ranks; }
  int local_rank() const { return layout_.local_rank[rank_]; }
  const NodeLayout& layout() const { return layout_; }
  // Host name of every world rank.
  const std::vector<std::string>& hosts() const { return hosts_; }
  MPI_Comm comm() const { return MPI_COMM_WORLD; }

  // "ranks 0,4 on hosts a,b": `ranks` and the distinct hosts they run on, for messages.
  std::string describe(const std::vector<int>& ranks) const;

  // Polls `request` until it completes. Busy polling keeps timing exact; `idle` sleeps 1 ms
  // between polls for waits that time nothing. Throws CollectiveTimeout "<what>: rank R
  // (host) waited S s; ..." after `timeout` seconds (no limit when timeout <= 0).
  void wait(MPI_Request& request, double timeout, const std::string& what, bool idle = false) const;
  // MPI_Ibarrier on the world, then wait().
  void barrier(double timeout, const std::string& what, bool idle = false) const;

  // Ends every rank of the job with exit status `code` (MPI_Abort).
  [[noreturn]] void abort_job(int code) const;

 private:
  int rank_ = 0;
  NodeLayout layout_;
  std::vector<std::string> hosts_;
};

}  // namespace ppsim
