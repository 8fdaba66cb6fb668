// libFuzzer target: a profile JSON (ppsim profile's output, read by --profile).
#include "simulator/cost/profile.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ppsim::fuzz_parser(
      [&] { (void)ppsim::parse_profile(ppsim::fuzz_text(data, size), "profile.json"); });
}
