// torchtitan's selective op activation checkpointing (model/op_sac.h): the bytes a layer keeps,
// by hand, and the out-of-memory cases torchtitan published.
#include "simulator/model/op_sac.h"

#include <catch2/catch.hpp>
#include <string>

#include "simulator/model/activation_memory.h"
#include "simulator/model/memory_model.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/plan.h"

namespace ppsim {
namespace {

TEST_CASE("Op policy: an MoE layer keeps its all-to-alls' received rows, not its experts'") {
  // The router and the routed experts' grouped GEMMs re-run; the dispatch and combine outputs
  // are on the save list. With ep 1 there is no all-to-all and nothing of the experts stays.
  const ModelSpec model = load_model_spec("qwen3-30b-a3b");
  const Plan local = parse_plan("dp=8,mbs=1,gbs=8,recompute=selective,runtime=torchtitan", "t");
  const Plan spread =
      parse_plan("dp=8,ep=8,mbs=1,gbs=8,recompute=selective,runtime=torchtitan", "t");
  const int64_t moe_layer = 0;
  REQUIRE(model.is_moe_layer(moe_layer));
  double all_to_all = 0;
  for (const Op& op : layer_ops(model, op_shape(spread, model), moe_layer)) {
    all_to_all += op.all_to_all_bytes;
  }
  CHECK(all_to_all > 0);
  CHECK(op_policy_saved_bytes(model, op_shape(spread, model), moe_layer) ==
        Approx(op_policy_saved_bytes(model, op_shape(local, model), moe_layer) + all_to_all));
  // Attention (4 mms: wq, wv kept) and no counted MLP mm: block input, wq, wv, the attention
  // output and logsumexp. Qwen3-30B-A3B: h 2048, 32 query heads and 4 kv heads of 128.
  const double tokens = 4096, h = 2048, q = 32 * 128, k = 4 * 128;
  CHECK(op_policy_saved_bytes(model, op_shape(local, model), moe_layer) ==
        Approx(tokens * (2 * (h + q + k + q) + 4 * 32)));
}

TEST_CASE("Op policy: the bytes a layer keeps, by hand") {
  const ModelSpec model = load_model_spec("llama3-8b");
  const double h = 4096, q = 4096, k = 1024, f = 14336, heads = 32;
  SECTION("no tensor parallelism: 2(h + Q + K + Q + F + h) + 4 a per token") {
    const Plan plan = parse_plan("dp=8,mbs=2,gbs=16,recompute=selective,runtime=torchtitan", "t");
    const double tokens = 2 * 8192;
    // Block input, wq, wv, the attention output (and fp32 logsumexp), w1, w2.
    const double expected = tokens * (2 * (h + q + k + q + f + h) + 4 * heads);
    CHECK(tokens * 63616 == expected);  // The figure activation_memory.h quotes.
    CHECK(op_policy_saved_bytes(model, op_shape(plan, model), 0) == Approx(expected));
    const LayerActivationBytes bytes =
        layer_activation_bytes(model, activation_config(plan, model), 0);
    CHECK(bytes.total() == Approx(expected));
    CHECK(bytes.op_policy == bytes.total());
  }
  SECTION("tp 2 with sequence parallelism: sharded widths, w2's partial sum whole, two "
          "reduce-scatter outputs") {
    const Plan plan = parse_plan(
        "tp=2,dp=4,mbs=1,gbs=4,recompute=selective,sequence_parallel=true,runtime=torchtitan", "t");
    const double tokens = 8192;
    const double expected =
        tokens * (2 * h / 2            // Block input, sequence-sharded.
                  + 2 * q / 2          // wq.
                  + 2 * k / 2          // wv (4 of the 8 kv heads).
                  + 2 * q / 2 + 4 * heads / 2  // Attention output and logsumexp.
                  + 2 * f / 2          // w1.
                  + 2 * h              // w2's output before its reduce-scatter.
                  + 2 * (2 * h / 2));  // The reduce-scatters after wo and w2.
    CHECK(op_policy_saved_bytes(model, op_shape(plan, model), 0) == Approx(expected));
  }
  SECTION("the backward rebuilds the rest: recompute_working_bytes is no-AC minus kept") {
    const Plan plan = parse_plan("dp=8,mbs=2,gbs=16,recompute=selective,runtime=torchtitan", "t");
    const ActivationConfig config = activation_config(plan, model);
    const ActivationConfig none = activation_config(without_recompute(plan), model);
    CHECK(recompute_working_bytes(model, config, 0) ==
          Approx(layer_activation_bytes(model, none, 0).total() -
                 layer_activation_bytes(model, config, 0).total()));
  }
}

// torchtitan docs/performance.md (first version, April 2024): FSDP2 on 64 A100 80GB, 4,096
// tokens: Llama 2 70B at local batch 2 runs out of memory with selective op AC and with
// selective layer AC (every second block), and runs at local batch 1 with op AC (355
// tokens/s/GPU) and at local batch 2 with full AC (353); Llama 2 13B runs at local batch 2
// without AC (2,162). Megatron's selective recompute would keep 2.3x the op policy's bytes and
// put even the published local-batch-1 run out of memory.
TEST_CASE("Op policy: torchtitan's published 70B out-of-memory cases on 64 A100s") {
  const ClusterSpec cluster = load_cluster_spec("dgx-a100:8");
  auto fits = [&](const std::string& model, const std::string& plan) {
    return estimate_memory(load_model_spec(model), cluster,
                           parse_plan(plan + ",dp=64,zero_stage=3,runtime=torchtitan", "test"))
        .fits;
  };
  CHECK_FALSE(fits("llama2-70b", "mbs=2,gbs=128,recompute=selective"));
  CHECK_FALSE(fits("llama2-70b", "mbs=2,gbs=128,recompute=full,recompute_num_layers=40"));
  CHECK(fits("llama2-70b", "mbs=1,gbs=64,recompute=selective"));
  CHECK(fits("llama2-70b", "mbs=2,gbs=128,recompute=full"));
  CHECK(fits("llama2-13b", "mbs=2,gbs=128"));
  CHECK(fits("llama2-13b", "mbs=2,gbs=128,recompute=selective"));
}

}  // namespace
}  // namespace ppsim
