// libFuzzer target: a cluster JSON (node groups, links, GPU overrides, stragglers).
#include "simulator/spec/cluster_spec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ppsim::fuzz_parser([&] {
    ppsim::ClusterSpec cluster =
        ppsim::parse_cluster_spec(ppsim::fuzz_text(data, size), "cluster.json");
    (void)cluster.num_gpus();
  });
}
