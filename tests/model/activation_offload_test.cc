#include "simulator/model/activation_offload.h"

#include <catch2/catch.hpp>

#include "simulator/model/activation_memory.h"
#include "simulator/model/memory_model.h"
#include "simulator/spec/error.h"
#include "simulator/engine/engine.h"
#include "simulator/spec/model_file.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

// Three layers saving 10, 20 and 30 bytes over a 10 bytes/s link, the first two offloaded:
// copies of 1 s and 2 s. Forward: layer 1 (0.5 s) hides 0.5 of layer 0's copy, layer 2 (3 s)
// all of layer 1's: 0.5 s shows. Backward: layer 1's (1.5 s) hides layer 0's reload, layer 2's
// (1 s) half of layer 1's: 1 s shows. Host 10 + 20; the GPU keeps the larger, 20.
TEST_CASE("ActivationOffload: hand-computed copies, exposure and bytes") {
  const std::vector<OffloadLayer> layers = {{10, 2.0, 4.0}, {20, 0.5, 1.5}, {30, 3.0, 1.0}};
  const ActivationOffload offload = activation_offload(layers, 2, 10.0);
  CHECK(offload.host_bytes == 30);
  CHECK(offload.gpu_saving_bytes == 10);
  CHECK(offload.forward_seconds == Approx(0.5));
  CHECK(offload.backward_seconds == Approx(1.0));
  // Nothing offloaded: nothing moves.
  const ActivationOffload none = activation_offload(layers, 0, 10.0);
  CHECK(none.host_bytes == 0);
  CHECK(none.gpu_saving_bytes == 0);
  CHECK(none.forward_seconds == 0);
  CHECK(none.backward_seconds == 0);
  // A faster link hides every copy.
  CHECK(activation_offload(layers, 2, 1000.0).forward_seconds == 0);
  CHECK_THROWS_AS(activation_offload(layers, 4, 10.0), InternalError);
  // The bytes alone, as the memory model asks for them.
  const ActivationOffload bytes = offloaded_activation_bytes({10, 20, 30}, 2);
  CHECK(bytes.host_bytes == 30);
  CHECK(bytes.gpu_saving_bytes == 10);
  CHECK(bytes.forward_seconds == 0);
}

// Llama 3 8B on one DGX H100, dp 8: its 32 layers save the same bytes b each; offloading 8 of
// them leaves 7 b less on the GPU (one layer's copy in flight) and puts 8 b per GPU, 64 b per
// node, in host memory.
TEST_CASE("ActivationOffload: the memory model keeps one offloaded layer on the GPU") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:1");
  Plan plan = parse_plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=1", "test");
  const double layer =
      layer_activation_bytes(model, activation_config(plan, model), 1).total();
  const MemoryReport plain = estimate_memory(model, cluster, plan);
  plan.activation_offload_layers = 8;
  const MemoryReport offloaded = estimate_memory(model, cluster, plan);
  CHECK(plain.stages[0].activations_bytes - offloaded.stages[0].activations_bytes ==
        Approx(7 * layer));
  CHECK(offloaded.stages[0].host_activation_bytes == Approx(8 * layer));
  CHECK(plain.stages[0].host_activation_bytes == 0);
  REQUIRE(offloaded.host.nodes.size() == 1);
  CHECK(offloaded.host.nodes[0].bytes == Approx(8 * 8 * layer));
}

// simulate checks the nodes' host memory for offloaded activations as memory does: a node too
// small for its GPUs' offloaded layers does not fit, though every GPU does.
TEST_CASE("ActivationOffload: simulate counts the host memory it takes") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:1");
  Plan plan = parse_plan(
      "tp=1,pp=1,dp=8,mbs=1,gbs=8,seq=2048,zero_stage=1,activation_offload_layers=8", "test");
  auto simulate = [&] {
    Step step = build_step(model, cluster, plan, {});
    Timeline timeline = simulate_graph(step.lowered.graph);
    return compute_metrics(model, cluster, plan, step, timeline);
  };
  const StepMetrics roomy = simulate();
  REQUIRE(roomy.host_memory.has_value());
  CHECK(roomy.host_memory->fits);
  CHECK(roomy.fits);
  CHECK(roomy.host_memory->nodes[0].bytes ==
        Approx(estimate_memory(model, cluster, plan).host.nodes[0].bytes));
  cluster.nodes[0].host_memory_bytes = roomy.host_memory->nodes[0].bytes / 2;
  const StepMetrics cramped = simulate();
  CHECK_FALSE(cramped.host_memory->fits);
  CHECK_FALSE(cramped.fits);
}

}  // namespace
}  // namespace ppsim
