// `mpirun -np N ppsim plan|simulate ...`: the ranks share the simulations (work_split.h,
// profiler/mpi_work_split.h) and rank 0 prints exactly the bytes one process prints, whatever
// the number of ranks and threads. Registered only where CMake found MPI and mpirun
// (tests/CMakeLists.txt).
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {


testing::CommandResult run_mpi(int ranks, const std::string& arguments) {
  return testing::run_ppsim_mpi(PPSIM_MPIEXEC, ranks, arguments);
}

// One process with 2 threads, then 2 ranks of 1 thread and 3 ranks of 2 threads: the same
// stdout, byte for byte, and the same exit status.
void check_same_bytes(const std::string& arguments) {
  auto alone = testing::run_ppsim(arguments + " --threads 2");
  INFO(arguments << "\n" << alone.err);
  REQUIRE(alone.exit_code == 0);
  REQUIRE(!alone.out.empty());
  for (auto [ranks, threads] : {std::pair{2, 1}, std::pair{3, 2}}) {
    auto split = run_mpi(ranks, arguments + " --threads " + std::to_string(threads));
    INFO(ranks << " ranks of " << threads << " threads\n" << split.err);
    CHECK(split.exit_code == 0);
    CHECK(split.out == alone.out);
  }
}

TEST_CASE("CLI under mpirun: plan on a heterogeneous cluster prints one process's bytes") {
  // 1,248 candidates simulated in 39 batches of 32 (threshold exchanged after each), replica
  // batch shares tried on mixed replicas, and the top plans' metrics on rank 0.
  check_same_bytes(
      "plan --model llama3.2-1b --cluster mixed-a100-h100 --global-batch 32 "
      "--top 3 --json");
}

TEST_CASE("CLI under mpirun: plan --objective p90 prints one process's bytes") {
  // The cluster's slow node, flapping link and jitter: 20 Monte-Carlo draws per candidate.
  check_same_bytes(
      "plan --model llama3.2-1b --cluster dgx-h100-4-stragglers --gpus 8 "
      "--global-batch 32 --objective p90 --top 3");
}

TEST_CASE("CLI under mpirun: simulate --iterations and --sensitivity print one process's bytes") {
  // Jitter: 100 iterations shared, then each fault's leave-one-out (3 more runs of 100).
  check_same_bytes(
      "simulate --model llama3.2-1b --cluster dgx-h100-4 "
      "--plan tp=2,pp=4,dp=4,mbs=1,gbs=32 --straggler gpu=5:0.8 "
      "--straggler link=0-1:0.5 --jitter lognormal:0.05 --iterations 100 "
      "--sensitivity");
  // A flapping link: iterations run in order on every rank; the sensitivity is shared.
  check_same_bytes(
      "simulate --model llama3.2-1b --cluster dgx-h100-4-stragglers "
      "--plan tp=2,pp=4,dp=4,mbs=1,gbs=32 --iterations 20 --sensitivity --json");
}

TEST_CASE("CLI under mpirun: an input error is printed once, by rank 0, with exit status 2") {
  auto result = run_mpi(2,
                        "simulate --model no-such-model --cluster dgx-h100-4 "
                        "--plan tp=8,pp=4,dp=1,mbs=1,gbs=64 --iterations 10");
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  auto first = result.err.find("ppsim: error:");
  REQUIRE(first != std::string::npos);
  CHECK(result.err.find("ppsim: error:", first + 1) == std::string::npos);
  CHECK_THAT(result.err, Catch::Contains("no-such-model"));
}

}  // namespace
}  // namespace ppsim
