#include "simulator/spec/data_root.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace ppsim {

std::string data_root() {
  const char* home = std::getenv("PPSIM_HOME");
  return home && *home ? home : PPSIM_SOURCE_DIR;
}

std::vector<std::string> zoo_names(const std::string& relative_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  fs::path dir = fs::path(data_root()) / relative_dir;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string zoo_file(const std::string& relative_dir, const std::string& name) {
  namespace fs = std::filesystem;
  if (name.empty() || name.find('/') != std::string::npos) return "";
  fs::path path = fs::path(data_root()) / relative_dir / (name + ".json");
  return is_existing_file(path) ? path.string() : "";
}

bool is_existing_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

bool is_existing_directory(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

}  // namespace ppsim
