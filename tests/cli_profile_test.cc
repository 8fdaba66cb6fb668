// `ppsim profile`: the CPU backend end to end, --show, bad profile files, and the CUDA
// backend's answer on a machine without a GPU.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "simulator/json_reader.h"
#include "simulator/profile.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

std::string temp_path(const std::string& name) {
  return (std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp")) + "/ppsim_" +
         std::to_string(::getpid()) + "_" + name;
}

TEST_CASE("CLI profile: --backend cpu --quick writes a profile that --show reads") {
  std::string out = temp_path("cpu_profile.json");
  auto result = run_ppsim("profile --backend cpu --quick -w 1 -n 3 --out " + out);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::StartsWith("# ppsim profile (format version 1)"));
  CHECK_THAT(result.out, Catch::Contains("# warning: CPU backend"));
  CHECK_THAT(result.out, Catch::Contains("algbw"));
  CHECK_THAT(result.out, Catch::Contains("# OK"));
  Profile p = load_profile(out);
  CHECK(p.backend == "cpu");
  auto shown = run_ppsim("profile --show " + out);
  REQUIRE(shown.exit_code == 0);
  CHECK_THAT(shown.out, Catch::Contains("# Fits"));
  std::remove(out.c_str());
}

TEST_CASE("CLI profile: a bad profile file exits 2 naming the file and the JSON path") {
  auto missing = run_ppsim("profile --show tests/data/no_such_profile.json");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("no_such_profile.json"));
  std::string bad = temp_path("bad_profile.json");
  FILE* f = std::fopen(bad.c_str(), "w");
  std::fputs("{\"format\": \"ppsim-profile\", \"version\": 1, \"backend\": \"gpu\"}", f);
  std::fclose(f);
  auto result = run_ppsim("profile --show " + bad);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains("ppsim: error: "));
  CHECK_THAT(result.err, Catch::Contains("/backend: unknown value 'gpu'"));
  std::remove(bad.c_str());
  auto flag = run_ppsim("profile --backend tpu");
  CHECK(flag.exit_code == 2);
}

TEST_CASE("CLI profile: --backend cuda without a GPU says so and exits 2") {
  std::string out = temp_path("cuda_profile.json");
  auto result = run_ppsim("profile --backend cuda --quick --out " + out);
  if (result.exit_code == 0) {
    WARN("a CUDA device is present: the no-GPU message is not tested here");
    std::remove(out.c_str());
    return;
  }
  CHECK(result.exit_code == 2);
  bool no_device = result.err.find("no CUDA device found") != std::string::npos;
  bool no_build = result.err.find("built without CUDA") != std::string::npos;
  INFO(result.err);
  CHECK((no_device || no_build));
  CHECK_THAT(result.err, Catch::Contains("use --backend cpu"));
}

}  // namespace
}  // namespace ppsim
