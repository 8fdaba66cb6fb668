// Where ppsim finds its shipped data: models/, configs/clusters/, configs/plans/.
#pragma once

#include <string>
#include <vector>

namespace ppsim {

// The repository root holding the zoo: $PPSIM_HOME when set, else the source tree the binary
// was built from.
std::string data_root();

// Stems of the *.json files directly inside data_root()/relative_dir, sorted ("llama3-70b", ...).
std::vector<std::string> zoo_names(const std::string& relative_dir);

// data_root()/relative_dir/name.json when that file exists, else "".
std::string zoo_file(const std::string& relative_dir, const std::string& name);

}  // namespace ppsim
