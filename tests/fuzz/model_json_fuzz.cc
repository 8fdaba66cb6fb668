// libFuzzer target: a model file as ppsim reads it (its own JSON or a HuggingFace config.json,
// told apart by content), then the model statistics every command derives from it.
#include "simulator/model/model_stats.h"
#include "simulator/spec/model_file.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ppsim::fuzz_parser([&] {
    ppsim::ModelSpec model = ppsim::parse_model_spec(ppsim::fuzz_text(data, size), "fuzz.json");
    (void)ppsim::count_parameters(model);
    (void)ppsim::training_flops_per_token(model, model.seq_length);
  });
}
