// What every fuzz target shares: the input as text, and the rule that bad input may only ever
// end in InputError (anything else escaping the parser is a finding: libFuzzer reports it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "simulator/spec/error.h"

namespace ppsim {

inline std::string fuzz_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs `parse` on the input; InputError is the expected outcome for most inputs.
template <typename Parse>
int fuzz_parser(Parse&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
  return 0;
}

}  // namespace ppsim
