// Determinism under threads (issue 22 item 5): `plan` prints the same bytes with 1, 2 and 8
// threads, and `simulate --iterations` (seeded Monte-Carlo) the same bytes run after run. When
// simulate takes --threads (issue 21), its runs join the thread comparison below.
#include <catch2/catch.hpp>
#include <string>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

TEST_CASE("Determinism: plan gives the same bytes with 1, 2 and 8 threads") {
  const std::string search =
      "plan --model llama3.2-1b --cluster dgx-h100-1 --global-batch 64 --top 5 --json";
  testing::CommandResult one = run_ppsim(search + " --threads 1");
  REQUIRE(one.exit_code == 0);
  REQUIRE(!one.out.empty());
  for (int threads : {2, 8}) {
    INFO("threads " << threads);
    testing::CommandResult many = run_ppsim(search + " --threads " + std::to_string(threads));
    CHECK(many.exit_code == 0);
    CHECK(many.out == one.out);
  }
}

TEST_CASE("Determinism: simulate --iterations gives the same bytes run after run") {
  const std::string run =
      "simulate --model llama3.2-1b --cluster dgx-h100-1 --plan tp=2,pp=2,dp=2,gbs=32 "
      "--jitter lognormal:0.05 --straggler gpu=3:0.8 --iterations 20 --seed 7 --json";
  testing::CommandResult first = run_ppsim(run);
  REQUIRE(first.exit_code == 0);
  testing::CommandResult second = run_ppsim(run);
  CHECK(second.exit_code == 0);
  CHECK(second.out == first.out);
}

}  // namespace
}  // namespace ppsim
