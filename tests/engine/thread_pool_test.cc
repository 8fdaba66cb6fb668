#include "simulator/engine/thread_pool.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <numeric>

namespace ppsim {
namespace {

TEST_CASE("ThreadPool: every index runs exactly once, for any thread count") {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    CHECK(pool.size() == threads);
    for (int64_t count : {0, 1, 7, 1000}) {
      std::vector<int> runs(count, 0);
      pool.run(count, [&](int64_t i) { runs[i] += 1; });
      CHECK(std::accumulate(runs.begin(), runs.end(), 0) == count);
      CHECK(std::all_of(runs.begin(), runs.end(), [](int n) { return n == 1; }));
    }
  }
}

TEST_CASE("ThreadPool: loops run one after another and results land by index") {
  ThreadPool pool(3);
  std::vector<int64_t> squares(100, -1);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int64_t> sum{0};
    pool.run(100, [&](int64_t i) {
      squares[i] = i * i;
      sum += i;
    });
    CHECK(sum == 4950);
  }
  for (int64_t i = 0; i < 100; ++i) CHECK(squares[i] == i * i);
}

TEST_CASE("ThreadPool: zero threads means one per hardware thread") {
  CHECK(resolve_thread_count(0) >= 1);
  CHECK(resolve_thread_count(3) == 3);
}

}  // namespace
}  // namespace ppsim
