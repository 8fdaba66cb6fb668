// Source layout: simulator/ has one folder per step of the data flow (docs/architecture.md), and
// an include never climbs from a lower floor to a higher one. Read from the source tree, so a
// new file in the wrong folder, or an include the wrong way, fails here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace ppsim {
namespace {

namespace fs = std::filesystem;

// The floors, lowest first (docs/architecture.md).
const std::vector<std::string> kFloors = {"spec",   "engine",  "schedule", "model",  "cost",
                                          "step",   "planner", "report",   "export", "accuracy"};

int floor_of(const std::string& folder) {
  auto it = std::find(kFloors.begin(), kFloors.end(), folder);
  return it == kFloors.end() ? -1 : static_cast<int>(it - kFloors.begin());
}

TEST_CASE("Structure: simulator/ holds only the step folders, and includes never climb") {
  const fs::path root = fs::path(PPSIM_SOURCE_DIR) / "simulator";
  const std::regex include(R"(^\s*#\s*include\s+"simulator/([a-z_]+)/[^"]+")");
  int files = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    INFO(entry.path().string());
    REQUIRE(entry.is_directory());  // No file flat in simulator/.
    CHECK(floor_of(entry.path().filename().string()) >= 0);
  }
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const std::string folder = entry.path().parent_path().filename().string();
    const int own = floor_of(folder);
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::smatch match;
      if (!std::regex_search(line, match, include)) continue;
      INFO(entry.path().string() << " includes " << line);
      const int included = floor_of(match[1]);
      CHECK(included >= 0);
      CHECK(included <= own);
    }
    ++files;
  }
  CHECK(files > 100);
}

TEST_CASE("Structure: ../shared/tools/include-check finds no loop (when shared/ is beside us)") {
  const fs::path check = fs::path(PPSIM_SOURCE_DIR) / ".." / "shared" / "tools" / "include-check";
  if (!fs::exists(check)) {
    WARN("skipped: " << check.string() << " is not here");
    return;
  }
  const std::string command = "cd '" + std::string(PPSIM_SOURCE_DIR) + "' && python3 '" +
                              check.string() + "' > /dev/null";
  CHECK(std::system(command.c_str()) == 0);
}

}  // namespace
}  // namespace ppsim
