// libFuzzer target: a HuggingFace config.json (the part of the model reader that maps HF
// fields; inputs that are not HF configs stop after the JSON reader).
#include "simulator/spec/hf_config.h"
#include "simulator/spec/json_reader.h"
#include "simulator/spec/model_spec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ppsim::fuzz_parser([&] {
    nlohmann::json json = ppsim::parse_json_text(ppsim::fuzz_text(data, size), "config.json");
    if (!ppsim::is_hf_config(json)) return;
    ppsim::ModelSpec model = ppsim::parse_hf_config(json, "config.json", "fuzz");
    ppsim::validate_model_spec(model, "config.json");
  });
}
