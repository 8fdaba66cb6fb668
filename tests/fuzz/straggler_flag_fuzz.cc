// libFuzzer target: the --straggler and --jitter flags (the first byte picks which), and the
// text form a parsed straggler prints back.
#include "simulator/spec/straggler_spec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text = ppsim::fuzz_text(data + 1, size - 1);
  return ppsim::fuzz_parser([&] {
    if (data[0] & 1) {
      (void)ppsim::straggler_text(ppsim::parse_straggler_flag(text));
    } else {
      (void)ppsim::jitter_text(ppsim::parse_jitter_flag(text));
    }
  });
}
