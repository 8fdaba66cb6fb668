// WorkSplit: how an indexed loop's work is shared between processes (the ranks of an `mpirun`
// or `srun` job), so that several machines run one search and every process ends up with every
// index's result, as if it had run the whole loop itself.
//
//   owner      index i of a loop belongs to process i mod processes() (cyclic: loops sorted by
//              cost, like the planner's candidates, spread evenly; the partition depends only
//              on the loop's length and the number of processes, never on timing);
//   run        each process runs the body for the indices it owns (on its thread pool);
//   exchange   each process encodes its indices' results as bytes; every process receives the
//              bytes of every other process and decodes them into its own result slots, in
//              index order. Afterwards every process holds the same results as a single process
//              would, so whatever it computes from them in index order (a percentile, a sorted
//              ranking, the next batch's threshold) is the same, byte for byte.
//
// The core never links MPI: the default is one process (a null WorkSplit* everywhere means
// "this process alone" and exchanges nothing); tools/ passes the MPI implementation
// (profiler/mpi_work_split.h) when the process was launched as one of several ranks.
//
// Thread-safety: exchange() is a collective: every process calls it with the same count, in the
// same order, from the thread that owns the split (for MPI, the thread that initialised it).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

#include "simulator/engine/thread_pool.h"
#include "simulator/spec/error.h"

namespace ppsim {

class WorkSplit {
 public:
  virtual ~WorkSplit() = default;

  // Processes sharing the work (>= 1), and this one's number in [0, processes()); process 0
  // is the one that reports.
  virtual int processes() const = 0;
  virtual int process() const = 0;

  // True when index i of a loop belongs to this process (i mod processes() == process()).
  bool owns(int64_t i) const { return i % processes() == process(); }

  // The collective exchange of a loop of `count` indices: for every index i this process owns,
  // encode(i) gives its result's bytes; decode(i, bytes) is then called, in increasing i, for
  // every index owned by another process, with the bytes its owner's encode(i) gave.
  virtual void exchange(int64_t count, const std::function<std::string(int64_t)>& encode,
                        const std::function<void(int64_t, std::string_view)>& decode) const = 0;
};

// Runs body(i) on `pool` for every index of [0, count) this process owns (all of them when
// `split` is null), then, when split, exchanges the results with encode/decode as above.
// Afterwards every index's result is in place on every process.
void run_split(const WorkSplit* split, ThreadPool& pool, int64_t count,
               const std::function<void(int64_t)>& body,
               const std::function<std::string(int64_t)>& encode,
               const std::function<void(int64_t, std::string_view)>& decode);

// The bytes of a trivially copyable value (exact: a double comes back bit for bit).
template <typename T>
std::string value_bytes(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  return std::string(reinterpret_cast<const char*>(&value), sizeof(T));
}

// The value value_bytes() encoded at `offset` of `bytes`. REQUIRES: bytes long enough.
template <typename T>
T bytes_value(std::string_view bytes, size_t offset = 0) {
  static_assert(std::is_trivially_copyable_v<T>);
  PPSIM_CHECK(offset + sizeof(T) <= bytes.size(), "a result's bytes are shorter than its type");
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

}  // namespace ppsim
