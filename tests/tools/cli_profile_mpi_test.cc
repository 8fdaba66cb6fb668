// `mpirun -np 2 ppsim profile --backend cpu --quick`: the several-process profile end to end
// (processes stand for ranks, MPI collectives between them, rank 0 fits and writes). Registered
// only where CMake found MPI and mpirun (tests/CMakeLists.txt).
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "simulator/cost/profile_table.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::temp_path;

testing::CommandResult run_mpi(int ranks, const std::string& arguments) {
  return testing::run_ppsim_mpi(PPSIM_MPIEXEC, ranks, arguments);
}

// Every collective measured on group `group` (n ranks, g per node), with positive sane times
// and consistent fits.
void check_collectives(const Profile& p, const std::string& group, int ranks, int g) {
  std::set<Collective> ops;
  int points = 0;
  for (const CollectiveSample& s : p.collectives) {
    if (s.group != group) continue;
    INFO(group << " " << collective_name(s.op) << " " << s.bytes);
    CHECK(s.ranks == ranks);
    CHECK(s.ranks_per_node == g);
    CHECK(s.seconds > 0);
    CHECK(s.seconds < 1.0);  // 1 MiB between processes on one host: milliseconds at most.
    ops.insert(s.op);
    ++points;
  }
  CHECK(ops.size() == 5);
  CHECK(points == 5 * 6);  // 1 KiB to 1 MiB by 4: six sizes per collective.
  int fits = 0;
  for (const CollectiveFit& f : p.fits.collectives) {
    if (f.ranks != ranks || f.ranks_per_node != g) continue;
    ++fits;
    for (const AlphaBetaPiece& piece : f.fit.pieces) {
      CHECK(piece.alpha >= 0);
      CHECK(piece.beta > 0);
    }
  }
  CHECK(fits == 5);
}

TEST_CASE("CLI profile under mpirun: 2 processes measure MPI collectives; rank 0 writes") {
  std::string out = temp_path("mpi_profile.json");
  auto result = run_mpi(2, "profile --backend cpu --quick --out " + out);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  // One report, from rank 0 only.
  CHECK(result.out.find("# ppsim profile") == result.out.rfind("# ppsim profile"));
  CHECK_THAT(result.out, Catch::Contains("intra_node"));
  Profile p = load_profile(out);
  CHECK(p.backend == "cpu");
  CHECK(p.device.count == 2);
  check_collectives(p, "intra_node", 2, 2);
  // Lookups the cost model makes: measured inside the range, the fit outside it.
  ProfileTable table(p);
  auto inside = table.collective(Collective::kAllReduce, 2, 2, 64 * 1024);
  REQUIRE(inside);
  CHECK(inside->seconds > 0);
  auto outside = table.collective(Collective::kAllReduce, 2, 2, 64.0 * (1 << 20));
  REQUIRE(outside);
  CHECK(outside->seconds > inside->seconds);

  // simulate accepts it where simulate has --profile (the profile-driven cost model).
  auto help = testing::run_ppsim("simulate --help");
  if (help.out.find("--profile") != std::string::npos) {
    auto simulated = testing::run_ppsim(
        "simulate --model llama3.2-1b --cluster dgx-h100-1 --plan tp=2,pp=2,dp=2,mbs=1,gbs=8 "
        "--profile " +
        out);
    INFO(simulated.err);
    CHECK(simulated.exit_code == 0);
  } else {
    WARN("this ppsim's simulate has no --profile yet: checked through ProfileTable only");
  }
  auto shown = testing::run_ppsim("profile --show " + out);
  CHECK(shown.exit_code == 0);
  std::remove(out.c_str());
}

TEST_CASE("CLI profile under mpirun: 4 ranks as 2 nodes of 2 measure intra_node, rail, all") {
  std::string out = temp_path("mpi_nodes_profile.json");
  auto result =
      run_mpi(4, "profile --backend cpu --quick -w 1 -n 3 --ranks-per-node 2 --out " + out);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  Profile p = load_profile(out);
  CHECK(p.device.count == 4);
  CHECK(p.collectives.size() == 3 * 5 * 6);
  check_collectives(p, "intra_node", 2, 2);
  check_collectives(p, "rail", 2, 1);
  check_collectives(p, "all", 4, 2);
  std::remove(out.c_str());
}

TEST_CASE("CLI profile: --ranks-per-node without mpirun is an input error") {
  auto result = testing::run_ppsim("profile --backend cpu --quick --ranks-per-node 1");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains("applies only under mpirun"));
}

}  // namespace
}  // namespace ppsim
