// libFuzzer target: a plan, as JSON ("{...}") or inline ("tp=8,pp=4,..."); parse_plan picks the
// form by the first character, so one target covers both. The parsed plan is printed back in
// both forms and the inline form must parse again.
#include "simulator/spec/plan.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ppsim::fuzz_parser([&] {
    ppsim::Plan plan = ppsim::parse_plan(ppsim::fuzz_text(data, size), "--plan");
    (void)ppsim::plan_to_json(plan);
    (void)ppsim::parse_plan(ppsim::plan_to_inline(plan), "round trip");
    (void)ppsim::num_microbatches(plan);
  });
}
