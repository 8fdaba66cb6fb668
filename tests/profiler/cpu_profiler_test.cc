// The CPU backend: thread collectives are correct and never hang; a --quick run produces a
// valid profile quickly.
#include "profiler/cpu_backend.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "profiler/measure.h"
#include "profiler/thread_collectives.h"
#include "simulator/cost/profile_table.h"

namespace ppsim {
namespace {

// Runs `kind` on n threads with rank r's input all (r + 1) and returns every rank's output.
std::vector<std::vector<float>> run_on_threads(Collective kind, int n, size_t bytes) {
  ThreadCommunicator comm(n, 10.0);
  std::vector<std::vector<float>> out(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      size_t in_count = kind == Collective::kAllGather ? bytes / 4 / n : bytes / 4;
      size_t out_count = kind == Collective::kReduceScatter ? bytes / 4 / n : bytes / 4;
      std::vector<float> in(in_count);
      for (size_t i = 0; i < in_count; ++i) in[i] = float(r + 1) + float(i % 7) * 100;
      out[r].assign(out_count, -1);
      comm.run(r, kind, in.data(), out[r].data(), bytes);
    });
  }
  for (std::thread& t : threads) t.join();
  return out;
}

TEST_CASE("ThreadCommunicator: collectives compute what NCCL's do") {
  for (int n : {1, 2, 3, 4}) {
    size_t bytes = 4 * 12 * 16;  // A multiple of 4n for every n here.
    size_t count = bytes / 4;
    auto reduced = run_on_threads(Collective::kAllReduce, n, bytes);
    double rank_sum = n * (n + 1) / 2.0;
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        REQUIRE(reduced[r][i] == Approx(rank_sum + n * float(i % 7) * 100));
      }
    }
    auto gathered = run_on_threads(Collective::kAllGather, n, bytes);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        size_t block = i / (count / n), offset = i % (count / n);
        REQUIRE(gathered[r][i] == float(block + 1) + float(offset % 7) * 100);
      }
    }
    auto scattered = run_on_threads(Collective::kReduceScatter, n, bytes);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count / n; ++i) {
        size_t global = r * (count / n) + i;
        REQUIRE(scattered[r][i] == Approx(rank_sum + n * float(global % 7) * 100));
      }
    }
    auto exchanged = run_on_threads(Collective::kAllToAll, n, bytes);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        size_t from = i / (count / n), global = r * (count / n) + i % (count / n);
        REQUIRE(exchanged[r][i] == float(from + 1) + float(global % 7) * 100);
      }
    }
    auto shifted = run_on_threads(Collective::kSendRecv, n, bytes);
    for (int r = 0; r < n; ++r) REQUIRE(shifted[r][0] == float((r + n - 1) % n + 1));
  }
}

TEST_CASE("ThreadCommunicator: a missing peer times out naming the ranks, never hangs") {
  ThreadCommunicator comm(2, 0.2);
  comm.set_label(Collective::kAllReduce);
  std::vector<float> in(64, 1), out(64);
  auto start = std::chrono::steady_clock::now();
  try {
    comm.run(0, Collective::kAllReduce, in.data(), out.data(), 256);  // Rank 1 never comes.
    FAIL("expected a timeout");
  } catch (const CollectiveTimeout& e) {
    CHECK_THAT(e.what(), Catch::Contains("all_reduce: rank 0 timed out after 0.2 s waiting for rank 1"));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  // Once aborted, every other rank's call fails at once with the same message.
  CHECK_THROWS_AS(comm.barrier(1), CollectiveTimeout);
}

TEST_CASE("measure: median and binary sizes") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(binary_size(1024) == "1K");
  CHECK(binary_size(3.0 * (1 << 30)) == "3G");
  CHECK(binary_size(1000) == "1000");
}

TEST_CASE("measure: interleaved timing warms each call up, then times one of each per pass") {
  std::vector<char> trace;
  std::vector<std::function<void()>> calls = {[&] { trace.push_back('a'); },
                                              [&] { trace.push_back('b'); }};
  std::vector<double> medians = time_medians_interleaved(2, 3, calls);
  CHECK(std::string(trace.begin(), trace.end()) == "aabbababab");
  REQUIRE(medians.size() == 2);
  CHECK(medians[0] >= 0);
  CHECK(medians[1] >= 0);
}

TEST_CASE("CPU backend: --quick produces a valid, fitted profile in seconds") {
  ProfileOptions options;
  options.quick = true;
  options.warmup_iters = 1;
  options.iters = 3;
  options.collective_timeout = 30;
  auto start = std::chrono::steady_clock::now();
  Profile p = run_cpu_profile(options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 10);
  CHECK(p.backend == "cpu");
  CHECK(p.gemm.size() == 5);
  CHECK(p.attention.size() == 6);
  // 3 kernels x 5 array sizes (16K, 128K, 1M, 4M, 32M), and Adam over 64K, 1M, 4M parameters.
  CHECK(p.memory.size() == 18);
  size_t adam = 0;
  for (const MemorySample& s : p.memory) {
    if (s.kernel != "adam") continue;
    ++adam;
    CHECK((s.bytes == 34.0 * (64 << 10) || s.bytes == 34.0 * (1 << 20) ||
           s.bytes == 34.0 * (4 << 20)));
    CHECK(s.seconds > 0);
  }
  CHECK(adam == 3);
  CHECK(p.host_transfer.empty());
  CHECK(p.collectives.size() == 25);  // 5 ops x 5 sizes (1K..256K by 4) on 2 threads.
  for (const GemmSample& g : p.gemm) CHECK(g.seconds > 0);
  CHECK(p.fits.collectives.size() == 5);
  CHECK(p.fits.gemm.size() == 1);
  CHECK(p.fits.memory.size() == 4);
  // The JSON parses back (strictly) to the same tables.
  Profile q = parse_profile(profile_json(p), "cpu.json");
  CHECK(q.gemm.size() == p.gemm.size());
  CHECK(q.collectives.size() == p.collectives.size());
  CHECK(q.fits.collectives.size() == p.fits.collectives.size());
  // The cost model can use it.
  ProfileTable table(p);
  CHECK(table.gemm(Precision::kBf16, GemmShape{128, 128, 128, 1}).has_value());
  CHECK(table.collective(Collective::kAllReduce, 2, 2, 4096).has_value());
  CHECK(table.optimizer(34.0 * (1 << 20)).has_value());
}

}  // namespace
}  // namespace ppsim
