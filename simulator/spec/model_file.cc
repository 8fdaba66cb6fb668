#include "simulator/spec/model_file.h"

#include <fmt/format.h>

#include <filesystem>

#include "simulator/spec/data_root.h"
#include "simulator/spec/error.h"
#include "simulator/spec/hf_config.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {

ModelSpec parse_model_spec(const std::string& text, const std::string& source) {
  nlohmann::json json = parse_json_text(text, source);
  ModelSpec model;
  if (is_hf_config(json)) {
    std::filesystem::path path(source);
    std::string name = path.stem().string() == "config" && path.has_parent_path()
                           ? path.parent_path().filename().string()
                           : path.stem().string();
    model = parse_hf_config(json, source, name);
  } else {
    model = parse_ppsim_model_json(json, source);
  }
  validate_model_spec(model, source);
  return model;
}

ModelSpec load_model_spec(const std::string& path_or_name) {
  namespace fs = std::filesystem;
  if (is_existing_directory(path_or_name) &&
      is_existing_file(fs::path(path_or_name) / "config.json")) {
    std::string path = (fs::path(path_or_name) / "config.json").string();
    return parse_model_spec(read_text_file(path), path);
  }
  if (is_existing_file(path_or_name)) {
    return parse_model_spec(read_text_file(path_or_name), path_or_name);
  }
  std::string zoo_path = zoo_file("models", path_or_name);
  if (!zoo_path.empty()) return parse_model_spec(read_text_file(zoo_path), zoo_path);
  std::vector<std::string> names = zoo_names("models");
  throw InputError("--model", "",
                   fmt::format("'{}' is neither a file nor a zoo model{}; zoo models: {}",
                               path_or_name, did_you_mean(path_or_name, names), join_names(names)));
}

}  // namespace ppsim
