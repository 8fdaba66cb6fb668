// Where ppsim finds its shipped data: models/, configs/clusters/, configs/plans/.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ppsim {

// The repository root holding the zoo: $PPSIM_HOME when set, else the source tree the binary
// was built from.
std::string data_root();

// Stems of the *.json files directly inside data_root()/relative_dir, sorted ("llama3-70b", ...).
std::vector<std::string> zoo_names(const std::string& relative_dir);

// True when `path` names a regular file (or a directory). Never throws: a name too long for the
// file system, or one the process may not stat, is simply not a file, so the caller's "not
// found" error (exit 2) names it instead of an uncaught filesystem_error (found by fuzzing).
bool is_existing_file(const std::filesystem::path& path);
bool is_existing_directory(const std::filesystem::path& path);

// data_root()/relative_dir/name.json when that file exists, else "".
std::string zoo_file(const std::string& relative_dir, const std::string& name);

}  // namespace ppsim
