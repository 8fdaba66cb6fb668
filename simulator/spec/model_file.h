// Reading a model: ppsim's model JSON (model_spec.h) or a HuggingFace config.json (hf_config.h),
// from text, a file, a directory holding config.json, or a zoo name (models/<name>.json).
//
// Thread-safety: pure functions, apart from load_model_spec's file reads.
#pragma once

#include <string>

#include "simulator/spec/model_spec.h"

namespace ppsim {

// Parses a model from JSON text: either ppsim's model format or a HuggingFace config.json
// (detected by "model_type" or "architectures"). Pure; errors throw InputError naming `source`.
ModelSpec parse_model_spec(const std::string& text, const std::string& source);

// Resolves a model argument: an existing file path, or a zoo name looked up as
// models/<name>.json under the source tree (e.g. "llama3-70b"). Unknown names list the zoo.
ModelSpec load_model_spec(const std::string& path_or_name);

}  // namespace ppsim
