// The MoE block of a layer (router, permutes, all-to-alls, experts, shared expert, and the host
// issue they wait for) against Megatron-LM's published MoE layer timings on H100
// (tests/data/kernels/megatron_moe_perf_h100.json): a Mixtral-like and a DeepSeek-like layer,
// ep 8 on one DGX H100, 4,096 tokens, under the alltoall, DeepEP and HybridEP dispatchers, in
// bf16 and Transformer Engine's blockwise fp8.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/cost/chunk_price.h"
#include "simulator/cost/cost_model.h"
#include "simulator/model/layer_ops.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/plan.h"
#include "simulator/spec/runtime.h"

namespace ppsim {
namespace {

struct Case {
  std::string name, model, dispatcher, precision;
  double forward_ms = 0, backward_ms = 0;
};

nlohmann::json measured() {
  std::ifstream in(std::string(PPSIM_TEST_DATA) + "/kernels/megatron_moe_perf_h100.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::vector<Case> measured_cases() {
  std::vector<Case> cases;
  const nlohmann::json data = measured();
  for (const nlohmann::json& c : data.at("cases")) {
    Case one;
    one.name = c.at("name").get<std::string>();
    one.model = c.at("model").get<std::string>();
    one.dispatcher = c.at("dispatcher").get<std::string>();
    one.precision = c.at("precision").get<std::string>();
    one.forward_ms = c.at("forward_ms").get<double>();
    one.backward_ms = c.at("backward_ms").get<double>();
    cases.push_back(one);
  }
  REQUIRE(cases.size() == 12);
  return cases;
}

// The benchmark's MoELayer as a one-layer model (its attention is built but not timed).
ModelSpec proxy_model(const std::string& name) {
  const nlohmann::json data = measured();
  const nlohmann::json& m = data.at("models").at(name);
  nlohmann::json spec = {{"name", name + "-proxy"},
                         {"num_layers", 1},
                         {"hidden_size", m.at("hidden_size")},
                         {"ffn_hidden_size", m.at("moe_ffn_hidden_size")},
                         {"num_attention_heads", 8},
                         {"num_kv_heads", 8},
                         {"vocab_size", 32000},
                         {"seq_length", 4096},
                         {"activation", "swiglu"},
                         {"norm", "rmsnorm"},
                         {"tied_embeddings", false},
                         {"linear_bias", false},
                         {"position_embedding", "rope"}};
  nlohmann::json moe = {{"num_experts", m.at("num_experts")},
                        {"top_k", m.at("router_topk")},
                        {"expert_ffn_hidden_size", m.at("moe_ffn_hidden_size")},
                        {"imbalance", 1.0}};  // moe_router_force_load_balancing.
  if (m.contains("moe_router_num_groups")) {
    moe["num_groups"] = m.at("moe_router_num_groups");
    moe["group_topk"] = m.at("moe_router_group_topk");
  }
  if (m.contains("moe_shared_expert_intermediate_size")) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_ffn_hidden_size"] = m.at("moe_shared_expert_intermediate_size");
  }
  spec["moe"] = moe;
  return parse_model_spec(spec.dump(), name + " proxy (test)");
}

struct BlockSeconds {
  double forward = 0, backward = 0;
};

// ppsim's price of the MoE block alone: its ops' passes, the expert all-to-alls (tp 1: the
// layer's only collectives) and, where the layer waits for the host, its ops' launches at
// kHostSecondsPerKernel (cost/chunk_price.h "host"). The datasheet curves alone
// (kernel_scale 1), as a microbenchmark of a few dozen iterations runs.
BlockSeconds model_block(const Case& c) {
  const ModelSpec model = proxy_model(c.model);
  std::string inline_plan = "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,precision=" + c.precision +
                            ",moe_dispatcher=" + c.dispatcher;
  if (c.precision == "fp8") inline_plan += ",fp8_recipe=blockwise";
  const Plan plan = load_plan(inline_plan);
  const ClusterSpec cluster = load_cluster_spec("dgx-h100:1");
  const NodeGroup& group = cluster.nodes[0];
  EfficiencyTable efficiency;
  efficiency.kernel_scale = 1;
  const CostModel costs(group.gpu, efficiency, nullptr, plan.runtime, plan.attention);
  const CollectiveEfficiency collective;  // The pricer keeps references: locals outlive it.
  const ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
  CommCounts counts;
  const LayerPrice layer = pricer.layer(costs, group, pricer.tensor_parallel(group, counts), 0);
  BlockSeconds block{layer.forward_comm, layer.backward_comm};
  REQUIRE(layer.host_wait_fwd > 0);  // Megatron-Core's grouped experts read the counts.
  for (const Op& op : layer_ops(model, op_shape(plan, model), 0)) {
    if (op.name.rfind("moe_", 0) != 0) continue;
    const OpCost cost = costs.op_cost(op);
    const HostLaunches launches = host_launches(op, false, false);  // No CUDA graphs.
    block.forward += cost.fwd.seconds + launches.forward * kHostSecondsPerKernel;
    block.backward += cost.b.seconds + cost.w.seconds + launches.backward * kHostSecondsPerKernel;
  }
  return block;
}

struct Compared {
  Case measured;
  BlockSeconds model;
};

std::map<std::string, Compared> compared() {
  std::map<std::string, Compared> all;
  for (const Case& c : measured_cases()) all[c.name] = {c, model_block(c)};
  return all;
}

TEST_CASE(
    "MoE layer vs Megatron-LM's H100 measurements: relative costs within 12% across "
    "shapes, dispatchers and precisions") {
  // One common factor remains: at kernel_scale 1 ppsim's block is 1.07-1.27x the measured one
  // (the harness's short bursts run above the sustained clocks the datasheet fractions assume).
  // What must hold is the relative cost of each case: every ratio within 12% of their
  // geometric mean. Before the dispatchers' own token passes and Hopper's blockwise GEMM rate
  // were modelled the ratios spread from 0.90 to 1.40.
  const std::map<std::string, Compared> all = compared();
  std::vector<double> ratios;
  for (const auto& [name, c] : all) {
    ratios.push_back(c.model.forward / (c.measured.forward_ms * 1e-3));
    ratios.push_back(c.model.backward / (c.measured.backward_ms * 1e-3));
  }
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  const double mean = std::exp(log_sum / ratios.size());
  CHECK(mean > 1.0);
  CHECK(mean < 1.3);
  size_t i = 0;
  for (const auto& [name, c] : all) {
    INFO(name << ": forward " << ratios[i] << ", backward " << ratios[i + 1] << " (mean " << mean
              << ")");
    CHECK(ratios[i] / mean == Approx(1).margin(0.12));
    CHECK(ratios[i + 1] / mean == Approx(1).margin(0.12));
    i += 2;
  }
}

TEST_CASE("MoE layer vs Megatron-LM's H100 measurements: what DeepEP and HybridEP save") {
  const std::map<std::string, Compared> all = compared();
  auto saving = [&all](const std::string& model, const std::string& dispatcher,
                       const std::string& precision, bool forward) {
    const Compared& base = all.at(model + "_a2a_tp1ep8_" + precision);
    const Compared& other = all.at(model + "_" + dispatcher + "_tp1ep8_" + precision);
    const double measured = forward ? other.measured.forward_ms / base.measured.forward_ms
                                    : other.measured.backward_ms / base.measured.backward_ms;
    const double modelled = forward ? other.model.forward / base.model.forward
                                    : other.model.backward / base.model.backward;
    return std::make_pair(modelled, measured);
  };
  for (const std::string precision : {"bf16", "fp8"}) {
    for (const std::string dispatcher : {"deepep", "hybridep"}) {
      for (bool forward : {true, false}) {
        // DeepSeek-like (4 experts per GPU, group-limited to 4 GPUs per token): the flex
        // dispatchers send a token once per GPU, and skip the alltoall's sort of received
        // chunks (HybridEP its permutes too): measured 0.68-0.86x of the alltoall's time.
        auto [deepseek_model, deepseek_measured] =
            saving("deepseek", dispatcher, precision, forward);
        INFO("deepseek " << dispatcher << " " << precision << (forward ? " forward" : " backward"));
        CHECK(deepseek_model == Approx(deepseek_measured).margin(0.06));
        CHECK(deepseek_model < 0.9);
        // Mixtral-like (one expert per GPU, top-2): nothing to deduplicate or sort, measured
        // within 7% of the alltoall.
        auto [mixtral_model, mixtral_measured] = saving("mixtral", dispatcher, precision, forward);
        CHECK(mixtral_model == Approx(mixtral_measured).margin(0.08));
        CHECK(mixtral_model > 0.95);
      }
    }
  }
}

TEST_CASE("MoE layer vs Megatron-LM's H100 measurements: blockwise fp8 on Hopper") {
  // The Mixtral-like layer is GEMM-bound (8,192 rows per expert): its fp8 over bf16 time is
  // the blockwise GEMM's gain, measured 0.875 forward and 0.861 backward. At the per-tensor
  // fp8 rate ppsim gave 0.72 and 0.68.
  const std::map<std::string, Compared> all = compared();
  for (const std::string dispatcher : {"a2a", "deepep", "hybridep"}) {
    const Compared& bf16 = all.at("mixtral_" + dispatcher + "_tp1ep8_bf16");
    const Compared& fp8 = all.at("mixtral_" + dispatcher + "_tp1ep8_fp8");
    INFO(dispatcher);
    CHECK(fp8.model.forward / bf16.model.forward ==
          Approx(fp8.measured.forward_ms / bf16.measured.forward_ms).margin(0.05));
    CHECK(fp8.model.backward / bf16.model.backward ==
          Approx(fp8.measured.backward_ms / bf16.measured.backward_ms).margin(0.05));
  }
}

}  // namespace
}  // namespace ppsim
