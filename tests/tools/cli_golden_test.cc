// CLI golden files: for every line of tests/golden/cli/cases.txt, the exact stdout of ppsim with
// those arguments equals the committed tests/golden/cli/NAME.out (STYLE rule 11). They hold every
// simulate, memory, plan and schedule report byte for byte across refactors; the files change
// only through tools/update_golden.sh.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

const std::string kGoldenDir = std::string(PPSIM_SOURCE_DIR) + "/tests/golden/cli";

// One line of cases.txt: a name and the arguments after it.
struct GoldenCase {
  std::string name, arguments;
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  std::istringstream lines(testing::read_file(kGoldenDir + "/cases.txt"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    REQUIRE(space != std::string::npos);
    cases.push_back({line.substr(0, space), line.substr(space + 1)});
  }
  return cases;
}

TEST_CASE("CLI golden: every case prints exactly its committed output") {
  const std::vector<GoldenCase> cases = golden_cases();
  REQUIRE(cases.size() >= 20);
  for (const GoldenCase& entry : cases) {
    INFO("case " << entry.name << ": ppsim " << entry.arguments
                 << " (regenerate with tools/update_golden.sh only if the change is intended)");
    const testing::CommandResult result = testing::run_ppsim(entry.arguments);
    CHECK(result.exit_code == 0);
    const std::string golden = testing::read_file(kGoldenDir + "/" + entry.name + ".out");
    REQUIRE(!golden.empty());
    CHECK(result.out == golden);
  }
}

}  // namespace
}  // namespace ppsim
