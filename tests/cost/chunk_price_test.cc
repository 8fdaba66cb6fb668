// Chunk prices: the bound the planner uses never exceeds the price the simulator uses, pass by
// pass; a price made from layer prices equals one made directly (the screen's path and the step
// builder's give the same numbers); exact relations on hand-checkable cases.
#include "simulator/cost/chunk_price.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "simulator/cost/collective_timing.h"
#include "simulator/model/activation_offload.h"
#include "simulator/model/chunk_layout.h"
#include "simulator/model/layer_ops.h"
#include "simulator/model/moe_dispatch.h"
#include "simulator/model/parameter_bytes.h"
#include "simulator/spec/data_root.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/plan.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

Plan make_plan(const std::string& text) { return parse_plan(text, "test"); }

// One tensor-parallel collective of llama2-7b's activations at mbs 2, seq 4096 (bf16) over tp
// GPUs of one node.
double tp_collective_seconds(Collective kind, int64_t tp, const NodeGroup& group,
                             const CollectiveEfficiency& collective) {
  const double tensor = 2.0 * 4096 * 4096 * 2;
  return collective_time(kind, tensor, collective_group(tp, tp, group), collective, nullptr, false)
      .seconds;
}

// Prices every chunk of `plan` on the cluster's first node group, directly and from layers.
void check_plan(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan) {
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
  const NodeGroup& group = cluster.nodes.front();
  CostModel costs(group.gpu, efficiency, nullptr);
  ChunkLayout layout = chunk_layout(plan, model);
  CommCounts tp_comm;
  TensorParallelPrice tp = pricer.tensor_parallel(group, tp_comm);
  for (int64_t c = 0; c < layout.num_chunks(); ++c) {
    INFO("plan " << plan_to_inline(plan) << " chunk " << c);
    const int64_t first = layout.chunk_first_layer[c], layers = layout.chunk_layers[c];
    ChunkPrice price = pricer.chunk(costs, group, first, layers, c == 0, c == layout.loss_chunk());
    CHECK(price.bound.forward <= price.forward);
    CHECK(price.bound.backward_input <= price.backward_input);
    CHECK(price.bound.backward_weight == price.backward_weight);
    CHECK(price.forward_comm >= 0);
    CHECK(price.parameters.total() > 0);
    std::vector<LayerPrice> layer_prices;
    for (int64_t layer = first; layer < first + layers; ++layer) {
      layer_prices.push_back(pricer.layer(costs, group, tp, layer));
    }
    ChunkPrice from_layers = pricer.chunk_from_layers(costs, group, layer_prices.data(), first,
                                                      layers, c == 0, c == layout.loss_chunk());
    CHECK(from_layers.forward == price.forward);
    CHECK(from_layers.backward_input == price.backward_input);
    CHECK(from_layers.backward_weight == price.backward_weight);
    CHECK(from_layers.bound.forward == price.bound.forward);
    CHECK(from_layers.bound.backward_input == price.bound.backward_input);
    CHECK(from_layers.parameters.dense == price.parameters.dense);
    CHECK(from_layers.parameters.expert == price.parameters.expert);
    CHECK(from_layers.activation_bytes == price.activation_bytes);
  }
}

TEST_CASE("ChunkPrice: the bound is below the price for TP, SP, ZeRO-3, EP, CP and recompute") {
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  ModelSpec dense = testing::llama2_7b_shape();
  check_plan(dense, cluster, make_plan("tp=2,pp=2,dp=4,mbs=1,gbs=32"));
  check_plan(dense, cluster,
             make_plan("tp=4,pp=2,dp=2,mbs=2,gbs=32,sequence_parallel=true,recompute=full"));
  check_plan(dense, cluster, make_plan("tp=1,pp=2,dp=8,mbs=1,gbs=32,zero_stage=3"));
  check_plan(dense, cluster, make_plan("tp=2,pp=2,dp=2,cp=2,mbs=1,gbs=32"));
  check_plan(dense, cluster, make_plan("tp=2,pp=2,dp=4,mbs=1,gbs=64,schedule=zbv,vpp=2"));
  ModelSpec moe = testing::tiny_moe_model();
  check_plan(moe, cluster, make_plan("tp=2,pp=1,dp=8,ep=4,mbs=1,gbs=32"));
  // A hybrid model under cp: Mamba all-to-alls (in the bound), the ring only where attention is.
  ModelSpec hybrid = load_model_spec("nemotron-3-nano-30b-a3b");
  check_plan(hybrid, cluster, make_plan("tp=2,pp=2,dp=1,cp=4,ep=2,mbs=1,gbs=8,seq=16384"));
  check_plan(hybrid, cluster,
             make_plan("tp=1,pp=2,dp=2,cp=4,ep=8,mbs=1,gbs=8,seq=16384,recompute=full"));
}

TEST_CASE("ChunkPrice: with free links and no ZeRO-3 the price is the bound plus the dispatch") {
  ModelSpec model = testing::llama2_7b_shape();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1);
  Plan plan = make_plan("tp=2,pp=2,dp=2,mbs=1,gbs=16,sequence_parallel=true");
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  ChunkPricer pricer(model, plan, efficiency, collective, nullptr, /*ideal_links=*/true);
  CostModel costs(cluster.nodes.front().gpu, efficiency, nullptr);
  ChunkPrice price = pricer.chunk(costs, cluster.nodes.front(), 0, 16, true, false);
  CHECK(price.forward_comm == 0);
  CHECK(price.backward_comm == 0);
  const double dispatch = efficiency.overheads(plan.runtime).microbatch_overhead_s;
  CHECK(dispatch > 0);
  CHECK(price.forward == price.bound.forward + dispatch);
  CHECK(price.backward_input == price.bound.backward_input + dispatch);
  CHECK(price.comm.modelled == 0);
  // Layers 0-15 of Llama-2-7B on tp 2: each layer's 4h^2 + 3hF weights and its two RMSNorm
  // weights (2h), all divided by tp as the step's gradient buckets count them (Megatron keeps the
  // norms whole on every TP rank; the memory model does, a 0.05% difference the price keeps),
  // plus the first chunk's embedding V*h / 2.
  const double h = 4096, f = 11008, v = 32000;
  const double layer = (4 * h * h + 3 * h * f + 2 * h) / 2;
  CHECK(price.parameters.dense == Approx(16 * layer + v * h / 2).epsilon(1e-12));
  CHECK(price.parameters.expert == 0);
}

TEST_CASE("ChunkPrice: a context-parallel ring hidden under attention costs its contention") {
  // Llama-2-7B's shape at 32K tokens, cp 2 x tp 2 in one node: each rank sends its 16K tokens'
  // K and V (2 x 4096 / tp 2 wide, bf16) once per ring step, cp - 1 steps, under the forward's
  // attention kernel, which outlasts it. The forward then pays overlap_slowdown x the ring, the
  // share every overlapped collective pays (collective_cost.h), and nothing without it.
  ModelSpec model = testing::llama2_7b_shape();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1);
  const NodeGroup& group = cluster.nodes.front();
  Plan plan = make_plan("tp=2,pp=2,dp=1,cp=2,mbs=1,gbs=4,seq=32768");
  EfficiencyTable efficiency;
  CollectiveEfficiency contended;
  CollectiveEfficiency free_overlap = contended;
  free_overlap.overlap_slowdown = 0;
  CostModel costs(group.gpu, efficiency, nullptr);
  auto forward_comm = [&](const CollectiveEfficiency& collective) {
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    return pricer.chunk(costs, group, 1, 1, false, false).forward_comm;
  };
  const double kv = 16384.0 * 2 * 4096 / 2 * 2;
  const double ring = collective_time(Collective::kSendRecv, kv, collective_group(2, 2, group),
                                      contended, nullptr, false)
                          .seconds;
  const OpList ops = layer_ops(model, op_shape(plan, model), 1);
  const double attention = costs.op_cost(*ops.find("attention_core")).fwd.seconds;
  REQUIRE(ring < attention);
  CHECK(forward_comm(contended) - forward_comm(free_overlap) ==
        Approx(contended.overlap_slowdown * ring).epsilon(1e-9));
  CHECK(contended.overlap_slowdown > 0);
}

TEST_CASE("ChunkPrice: ZeRO-3 shows the gather that outlasts a small chunk's compute") {
  // One layer per chunk on 8-way data parallelism across two nodes: the all-gather of its
  // parameters is longer than its forward at one short sequence, so the excess is exposed.
  ModelSpec model = testing::llama2_7b_shape();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  Plan plan = make_plan("tp=1,pp=2,dp=8,mbs=1,gbs=16,seq=128,zero_stage=3");
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  ChunkPricer with_zero(model, plan, efficiency, collective, nullptr, false);
  Plan plain = plan;
  plain.zero_stage = 1;
  ChunkPricer without_zero(model, plain, efficiency, collective, nullptr, false);
  CostModel costs(cluster.nodes.front().gpu, efficiency, nullptr);
  ChunkPrice sharded = with_zero.chunk(costs, cluster.nodes.front(), 1, 1, false, false);
  ChunkPrice replicated = without_zero.chunk(costs, cluster.nodes.front(), 1, 1, false, false);
  CHECK(sharded.forward > replicated.forward);
  CHECK(sharded.forward_comm > 0);
  CHECK(sharded.bound.forward > replicated.bound.forward);
  CHECK(sharded.bound.forward <= sharded.forward);
}

TEST_CASE("ChunkPrice: torchtitan's FSDP under pipelining gathers nothing per microbatch") {
  // The case above, run by torchtitan: with pp its FSDP2 keeps the stage gathered and its
  // gradients unsharded until the last microbatch (plan.h zero_stage_in_force), so a
  // microbatch's passes pay no gather or scatter: the price of the ZeRO-1 plan. Without
  // pipelining it gathers per pass as ZeRO-3 does.
  ModelSpec model = testing::llama2_7b_shape();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  CostModel costs(cluster.nodes.front().gpu, efficiency, nullptr);
  auto price = [&](const std::string& text) {
    const Plan plan = make_plan(text);  // The pricer keeps a reference.
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    return pricer.chunk(costs, cluster.nodes.front(), 1, 1, false, false);
  };
  const std::string shape = "tp=1,pp=2,dp=8,mbs=1,gbs=16,seq=128,runtime=torchtitan";
  const ChunkPrice fsdp = price(shape + ",zero_stage=3");
  const ChunkPrice zero1 = price(shape + ",zero_stage=1");
  CHECK(fsdp.forward == zero1.forward);
  CHECK(fsdp.backward_input == zero1.backward_input);
  CHECK(fsdp.backward_weight == zero1.backward_weight);
  CHECK(fsdp.forward_comm == zero1.forward_comm);
  const std::string flat = "tp=1,pp=1,dp=16,mbs=1,gbs=16,seq=128,runtime=torchtitan";
  CHECK(price(flat + ",zero_stage=3").forward > price(flat + ",zero_stage=1").forward);
}

TEST_CASE("ChunkPrice: ZeRO-3 gathers and scatters each layer, each paying its ring latency") {
  // At a sequence so short that compute is negligible, ZeRO-3's exposed forward is the sum over
  // the chunk's layers of one all-gather each (plus the overlap contention of the compute it
  // hides): 4 layers cost 4 gathers of one layer, not one gather of four (whose latency would be
  // paid once).
  ModelSpec model = testing::llama2_7b_shape();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 8);
  Plan plan = make_plan("tp=1,pp=1,dp=64,mbs=1,gbs=64,seq=16,zero_stage=3");
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
  CostModel costs(cluster.nodes.front().gpu, efficiency, nullptr);
  const NodeGroup& group = cluster.nodes.front();
  ChunkPrice one = pricer.chunk(costs, group, 1, 1, false, false);
  ChunkPrice four = pricer.chunk(costs, group, 1, 4, false, false);
  CHECK(four.forward_comm == Approx(4 * one.forward_comm).epsilon(1e-9));
  CHECK(four.backward_comm == Approx(4 * one.backward_comm).epsilon(1e-9));
  // One layer's gather alone: the collective's time over 64 ranks on 8 nodes.
  const double layer_parameters = one.parameters.total();
  PassCost gather = collective_time(Collective::kAllGather, layer_parameters * kStepParameterBytes,
                                    collective_group(64, 8, group), collective, nullptr, false);
  // Exposed: the gather less the part of it the layer's (tiny) compute hides.
  CHECK(one.forward_comm <= gather.seconds);
  CHECK(one.forward_comm > 0.9 * gather.seconds);
  // Its latency is NCCL's ring over 64 ranks: 56 intra steps and 7 across nodes.
  CHECK(gather.seconds > collective.base_latency + 56 * 3e-6 + 7 * group.nic.link.latency);
}

TEST_CASE("ChunkPrice: ZeRO-3 gathers routed experts over the expert data-parallel group") {
  // A MoE layer's unit is two gathers: its dense parameters over all 64 ranks (8 per node), its
  // routed experts (ep 8, one expert group per node) over the 8 expert data-parallel ranks, one
  // per node. What shows of them is their excess over the layer's forward plus the contention
  // share of what it hides (zero3_exposure), on top of the ZeRO-1 price of the same layer.
  ModelSpec model = testing::tiny_moe_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 8);
  Plan plan = make_plan("tp=1,pp=1,dp=64,ep=8,mbs=1,gbs=64,seq=16,zero_stage=3");
  Plan plain = plan;
  plain.zero_stage = 1;
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
  ChunkPricer without_zero(model, plain, efficiency, collective, nullptr, false);
  CostModel costs(cluster.nodes.front().gpu, efficiency, nullptr);
  const NodeGroup& group = cluster.nodes.front();
  REQUIRE(pricer.expert_dp_ranks_per_node(group) == 1);
  CommCounts comm;
  ChunkPrice layer = pricer.chunk(costs, group, 1, 1, false, false);
  ChunkPrice replicated = without_zero.chunk(costs, group, 1, 1, false, false);
  // The experts' 8 x 3 x h x F_e weights split over ep 8; attention, norms and router dense.
  CHECK(layer.parameters.expert == Approx(3.0 * 64 * 128).epsilon(1e-12));
  CHECK(layer.parameters.dense == Approx(2 * 64 * 64 + 2 * 64 * 32 + 2 * 64 + 64 * 8).epsilon(1e-12));
  const double dense =
      collective_time(Collective::kAllGather, layer.parameters.dense * kStepParameterBytes,
                      collective_group(64, 8, group), collective, nullptr, false)
          .seconds;
  const double expert =
      collective_time(Collective::kAllGather, layer.parameters.expert * kStepParameterBytes,
                      collective_group(8, 1, group), collective, nullptr, false)
          .seconds;
  const double gather = dense + expert;
  // The layer's forward as the unit overlaps it: device compute and its exposed all-to-alls.
  const LayerPrice price = pricer.layer(costs, group, pricer.tensor_parallel(group, comm), 1);
  const double forward = price.compute.fwd + price.forward_comm;
  CHECK(layer.forward_comm - replicated.forward_comm ==
        Approx(std::max(0.0, gather - forward) +
               collective.overlap_slowdown * std::min(gather, forward))
            .epsilon(1e-9));
}

TEST_CASE("ChunkPrice: offloaded activations leave the chunk and their copies show") {
  // Llama 3 8B on DGX H100 (PCIe Gen5, 64 GB/s a direction): its first 4 layers offloaded. The
  // chunk keeps all but one of their saved bytes off the GPU and adds what activation_offload
  // says of the same layers' prices.
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:1");
  const NodeGroup& group = cluster.nodes.front();
  Plan plain = make_plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=1");
  Plan offloaded = plain;
  offloaded.activation_offload_layers = 4;
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  ChunkPricer without(model, plain, efficiency, collective, nullptr, false);
  ChunkPricer with(model, offloaded, efficiency, collective, nullptr, false);
  CostModel costs(group.gpu, efficiency, nullptr);
  const int64_t layers = model.num_layers;
  const ChunkPrice before = without.chunk(costs, group, 0, layers, true, true);
  const ChunkPrice after = with.chunk(costs, group, 0, layers, true, true);
  CommCounts comm;
  const TensorParallelPrice tp = with.tensor_parallel(group, comm);
  std::vector<OffloadLayer> offload_layers;
  for (int64_t i = 0; i < layers; ++i) {
    const LayerPrice layer = with.layer(costs, group, tp, i);
    offload_layers.push_back({layer.activation_bytes,
                              layer.compute.fwd + layer.forward_comm + layer.host_wait_fwd,
                              layer.compute.recompute + layer.compute.b + layer.compute.w +
                                  layer.backward_comm + layer.host_wait_bwd});
  }
  REQUIRE(group.gpu.pcie_bandwidth == 64e9);
  const ActivationOffload expected = activation_offload(offload_layers, 4, 64e9);
  REQUIRE(expected.gpu_saving_bytes > 0);
  CHECK(before.activation_bytes - after.activation_bytes ==
        Approx(expected.gpu_saving_bytes).epsilon(1e-12));
  CHECK(after.forward - before.forward == Approx(expected.forward_seconds).margin(1e-12));
  CHECK(after.backward_input - before.backward_input ==
        Approx(expected.backward_seconds).margin(1e-12));
  // At 64 GB/s a layer's ~1 GB takes longer than the next layer's forward: the copies show.
  CHECK(expected.forward_seconds > 0);
}

TEST_CASE("ChunkPrice: tensor-parallel traffic per layer, forward and backward (Megatron SP)") {
  // Korthikanti et al. 2022, 4.2.2: with sequence parallelism each layer's forward runs an
  // all-gather before and a reduce-scatter after attention and the MLP (2 AG + 2 RS); without,
  // two all-reduces. The backward mirrors it; Megatron also re-gathers SP's sharded input for
  // the weight gradient, and overlaps the input-gradient collectives with the GEMMs.
  ModelSpec model = testing::llama2_7b_shape();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1);
  const NodeGroup& group = cluster.nodes.front();
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  auto time = [&](Collective kind) { return tp_collective_seconds(kind, 8, group, collective); };
  const double ag = time(Collective::kAllGather), rs = time(Collective::kReduceScatter),
               ar = time(Collective::kAllReduce);
  auto price = [&](const std::string& inline_plan) {
    Plan plan = make_plan(inline_plan);
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    CommCounts comm;
    return pricer.tensor_parallel(group, comm);
  };
  TensorParallelPrice sp = price("tp=8,mbs=2,gbs=2,seq=4096,sequence_parallel=true");
  CHECK(sp.forward == Approx(2 * ag + 2 * rs));
  CHECK(sp.backward_blocking == Approx(2 * ag));
  CHECK(sp.backward_overlapped == Approx(2 * ag + 2 * rs));
  TensorParallelPrice plain = price("tp=8,mbs=2,gbs=2,seq=4096");
  CHECK(plain.forward == Approx(2 * ar));
  CHECK(plain.backward_blocking == 0);
  CHECK(plain.backward_overlapped == Approx(2 * ar));
  // An all-reduce moves the bytes of an all-gather plus a reduce-scatter: SP's forward moves
  // what two all-reduces do (bus bytes equal; only latency differs).
  CHECK(bus_bandwidth_factor(Collective::kAllReduce, 8) ==
        Approx(bus_bandwidth_factor(Collective::kAllGather, 8) +
               bus_bandwidth_factor(Collective::kReduceScatter, 8)));
  // DTensor TP (torchtitan) keeps the gathered input and runs the mirror blocking.
  TensorParallelPrice titan = price("tp=8,mbs=2,gbs=2,seq=4096,sequence_parallel=true,runtime=torchtitan");
  CHECK(titan.forward == Approx(2 * ag + 2 * rs));
  CHECK(titan.backward_blocking == Approx(2 * ag + 2 * rs));
  CHECK(titan.backward_overlapped == 0);
  // Full recompute re-runs the forward's collectives inside the backward.
  CHECK(price("tp=8,mbs=2,gbs=2,seq=4096,recompute=full").recompute == Approx(2 * ar));
  // Under tp_comm_overlap the last step of each forward reduce-scatter runs after its GEMM.
  CHECK(sp.overlap_fill == Approx(2 * rs / 8));
  // Under fp8 (nvfp4) Transformer Engine gathers the quantized operand, 1 (0.5625) byte per
  // element (layernorm_linear.py / linear.py gather with the quantizer); the reduce-scatters
  // carry the bf16 outputs. torchao's DTensor TP gathers bf16.
  const double tensor = 2.0 * 4096 * 4096;  // Tokens x hidden of mbs 2 at 4,096.
  auto gather_of = [&](double bytes_per_element) {
    return collective_time(Collective::kAllGather, tensor * bytes_per_element,
                           collective_group(8, 8, group), collective, nullptr, false)
        .seconds;
  };
  REQUIRE(gather_of(2) == Approx(ag));
  const std::string sp_plan = "tp=8,mbs=2,gbs=2,seq=4096,sequence_parallel=true";
  for (auto [precision, bytes] : {std::pair{"fp8", 1.0}, std::pair{"nvfp4", 0.5625}}) {
    INFO(precision);
    TensorParallelPrice quantized = price(sp_plan + ",precision=" + precision);
    CHECK(quantized.forward == Approx(2 * gather_of(bytes) + 2 * rs));
    CHECK(quantized.backward_blocking == Approx(2 * gather_of(bytes)));
    CHECK(quantized.backward_overlapped == Approx(2 * gather_of(bytes) + 2 * rs));
    CHECK(gather_of(bytes) < ag);
  }
  TensorParallelPrice titan_fp8 = price(sp_plan + ",precision=fp8,runtime=torchtitan");
  CHECK(titan_fp8.forward == Approx(2 * ag + 2 * rs));
}

TEST_CASE("ChunkPrice: tp_comm_overlap shows only what outlasts the tensor-parallel GEMMs") {
  // Transformer Engine's userbuffers (Megatron-Core --tp-comm-overlap) run each SP all-gather
  // and reduce-scatter under the GEMM it feeds or drains. Hand oracle per pass, with C the
  // collectives, G the layer's tensor-parallel GEMM time and s the contention share:
  // max(0, C - G) + s * min(C, G), plus in the forward each reduce-scatter's last step.
  ModelSpec model = testing::llama2_7b_shape();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1);
  const NodeGroup& group = cluster.nodes.front();
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  CostModel costs(group.gpu, efficiency, nullptr);
  auto time = [&](Collective kind, int64_t tp) {
    return tp_collective_seconds(kind, tp, group, collective);
  };
  auto layer = [&](const std::string& inline_plan) {
    Plan plan = make_plan(inline_plan);
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    CommCounts comm;
    return pricer.layer(costs, group, pricer.tensor_parallel(group, comm), 0);
  };
  const double s = collective.overlap_slowdown;
  auto shown = [s](double comm, double under) {
    return std::max(0.0, comm - under) + s * std::min(comm, under);
  };
  for (int64_t tp : {2, 8}) {
    INFO("tp " << tp);
    const std::string base =
        fmt::format("tp={},mbs=2,gbs=2,seq=4096,sequence_parallel=true", tp);
    Plan plan = make_plan(base);
    OpList ops = layer_ops(model, op_shape(plan, model), 0);
    double gemm_fwd = 0, gemm_bwd = 0;
    for (const char* name : {"qkv_proj", "attn_out_proj", "mlp_up_gate", "mlp_down"}) {
      const Op* op = ops.find(name);
      REQUIRE(op != nullptr);
      OpCost cost = costs.op_cost(*op);
      gemm_fwd += cost.fwd.seconds;
      gemm_bwd += cost.b.seconds + cost.w.seconds;  // 1F1B runs W inside the backward.
    }
    const double ag = time(Collective::kAllGather, tp), rs = time(Collective::kReduceScatter, tp);
    LayerPrice on = layer(base + ",tp_comm_overlap=true");
    CHECK(on.forward_comm == Approx(shown(2 * ag + 2 * rs, gemm_fwd) + 2 * rs / tp));
    CHECK(on.backward_comm == Approx(shown(4 * ag + 2 * rs, gemm_bwd)));
    // Without it: the forward's collectives block; the backward's re-gathers block too.
    LayerPrice off = layer(base + ",tp_comm_overlap=false");
    CHECK(off.forward_comm == Approx(2 * ag + 2 * rs));
    CHECK(off.backward_comm ==
          Approx(2 * ag + shown(2 * ag + 2 * rs, off.compute.b + off.compute.w)));
    CHECK(on.forward_comm < off.forward_comm);
    // Megatron-Core's default with SP is the overlap; torchtitan's async TP, which it runs
    // only when told, is priced the same (the same tp ring steps under the same GEMMs).
    CHECK(layer(base).forward_comm == on.forward_comm);
    LayerPrice async = layer(base + ",runtime=torchtitan,tp_comm_overlap=true");
    CHECK(async.forward_comm == Approx(shown(2 * ag + 2 * rs, gemm_fwd) + 2 * rs / tp));
    CHECK(layer(base + ",runtime=torchtitan").forward_comm == Approx(2 * ag + 2 * rs));
    // The planner's bound keeps only the excess over the GEMMs: never above the price.
    CHECK(on.bound.forward == Approx(on.compute.fwd + std::max(0.0, 2 * ag + 2 * rs - gemm_fwd)));
    CHECK(on.bound.forward <= on.compute.fwd + on.forward_comm);
  }
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

// One layer's forward (with its exposed communication and host wait) on `cluster`.
double moe_layer_forward(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan) {
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
  const NodeGroup& group = cluster.nodes.front();
  CostModel costs(group.gpu, efficiency, nullptr);
  CommCounts comm;
  LayerPrice price = pricer.layer(costs, group, pricer.tensor_parallel(group, comm), 0);
  return price.compute.fwd + price.forward_comm + price.host_wait_fwd;
}

// Qwen3-30B-A3B's layer shape with 64 experts (so ep 16 holds 4 each).
ModelSpec small_expert_model() {
  ModelSpec model = testing::tiny_moe_model();
  model.hidden_size = 2048;
  model.moe->expert_ffn_hidden_size = 768;
  model.moe->num_experts = 64;
  model.moe->top_k = 8;
  model.seq_length = 4096;
  model.num_attention_heads = 16;
  model.num_kv_heads = 4;
  model.head_dim = 128;
  return model;
}

TEST_CASE("ChunkPrice: imbalance raises an MoE layer; an NVLink domain keeps the all-to-all off "
          "the NICs; MoE layers wait on the host") {
  ModelSpec model = small_expert_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 4, 4);  // Nodes of 4 GPUs.
  Plan plan = make_plan("dp=16,ep=16,mbs=1,gbs=16");
  const double balanced = moe_layer_forward(model, cluster, plan);
  model.moe->imbalance = 2.0;
  const double hot = moe_layer_forward(model, cluster, plan);
  // The critical rank holds one expert at 2x beside 3 average ones (64 experts / ep 16):
  // 1 + (2 - 1) / 4 = 1.25x the mean tokens, so its dispatch bytes and expert FLOPs grow by
  // exactly 1.25 and the layer (attention unchanged) by more than 1 and at most 1.25.
  auto expert_totals = [&](const ModelSpec& m) {
    double flops = 0, a2a = 0;
    for (const Op& op : layer_ops(m, op_shape(plan, m), 0)) {
      a2a += op.all_to_all_bytes;
      if (op.name.rfind("moe_expert", 0) == 0 && op.op_class == OpClass::kGemm)
        flops += op.flops_fwd;
    }
    return std::pair{flops, a2a};
  };
  ModelSpec even = model;
  even.moe->imbalance = 1.0;
  const auto [hot_flops, hot_a2a] = expert_totals(model);
  const auto [even_flops, even_a2a] = expert_totals(even);
  REQUIRE(even_flops > 0);
  CHECK(hot_flops / even_flops == Approx(1.25));
  CHECK(hot_a2a / even_a2a == Approx(1.25));
  CHECK(hot > balanced);
  CHECK(hot <= 1.25 * balanced);
  model.moe->imbalance = 1.0;
  // The same 16 GPUs as one 16-GPU NVLink domain: the ep all-to-all never crosses a NIC.
  ClusterSpec rack = cluster;
  rack.nodes.front().gpus_per_node = 16;
  rack.nodes.front().count = 1;
  rack.nodes.front().host_gpus = 4;
  CHECK(moe_layer_forward(model, rack, plan) < balanced);
  // Megatron-Core (the default runtime) reads every MoE layer's token counts on the host
  // (TEGroupedMLP's tokens_per_expert.tolist()): each pass adds exactly its kernels' issue time
  // to its device time, dropless or not (bf16: no fp8 casts).
  Plan tiny = make_plan("dp=16,ep=16,mbs=1,gbs=16,seq=128");
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  const NodeGroup& group = cluster.nodes.front();
  CostModel costs(group.gpu, efficiency, nullptr);
  CommCounts comm;
  double launches_fwd = 0, launches_bwd = 0;
  for (const Op& op : layer_ops(model, op_shape(tiny, model), 0)) {
    launches_fwd += op.kernels_fwd;
    launches_bwd += op.kernels_b + op.kernels_w;
  }
  REQUIRE(runtime_traits(tiny.runtime).moe_host_sync);
  ChunkPricer core(model, tiny, efficiency, collective, nullptr, false);
  LayerPrice synced = core.layer(costs, group, core.tensor_parallel(group, comm), 0);
  CHECK(synced.host_wait_fwd == Approx(launches_fwd * kHostSecondsPerKernel));
  CHECK(synced.host_wait_bwd == Approx(launches_bwd * kHostSecondsPerKernel));
  // The wait is in the task times the step uses: the chunk's forward is the layer's device
  // time plus it.
  model.moe->capacity_factor = 1.0;
  ChunkPricer core_padded(model, tiny, efficiency, collective, nullptr, false);
  LayerPrice synced_padded =
      core_padded.layer(costs, group, core_padded.tensor_parallel(group, comm), 0);
  CHECK(synced_padded.host_wait_fwd == Approx(launches_fwd * kHostSecondsPerKernel));
  ChunkPrice chunk = core_padded.chunk(costs, group, 0, 1, false, false);
  CHECK(chunk.forward == Approx(synced_padded.compute.fwd + synced_padded.forward_comm +
                                synced_padded.host_wait_fwd +
                                efficiency.overheads(tiny.runtime).microbatch_overhead_s));
  model.moe->capacity_factor = 0;
  // A runtime without that read (DeepSpeed's capacity-padded experts): a dropless layer still
  // copies its all-to-all splits to the host, so its forward takes at least its launches x
  // kHostSecondsPerKernel; with a capacity factor the host runs ahead.
  Plan tiny_ds = make_plan("dp=16,ep=16,mbs=1,gbs=16,seq=128,runtime=deepspeed");
  REQUIRE_FALSE(runtime_traits(tiny_ds.runtime).moe_host_sync);
  ChunkPricer dropless(model, tiny_ds, efficiency, collective, nullptr, false);
  LayerPrice waits = dropless.layer(costs, group, dropless.tensor_parallel(group, comm), 0);
  CHECK(waits.host_wait_fwd > 0);
  CHECK(waits.compute.fwd + waits.forward_comm + waits.host_wait_fwd ==
        Approx(launches_fwd * kHostSecondsPerKernel));
  model.moe->capacity_factor = 1.0;
  ChunkPricer padded(model, tiny_ds, efficiency, collective, nullptr, false);
  LayerPrice ahead = padded.layer(costs, group, padded.tensor_parallel(group, comm), 0);
  CHECK(ahead.host_wait_fwd == 0);
}

// Layer 0 of a model priced under an inline plan on four nodes of four H100s (default
// efficiencies, no profile).
struct SmallNodeLayers {
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 4, 4);
  const NodeGroup& group = cluster.nodes.front();
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  CostModel costs{group.gpu, efficiency, nullptr};

  LayerPrice price(const ModelSpec& model, const std::string& plan_text) const {
    const Plan plan = make_plan(plan_text);  // The pricer keeps a reference.
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    CommCounts comm;
    return pricer.layer(costs, group, pricer.tensor_parallel(group, comm), 0);
  }
};

TEST_CASE("ChunkPrice: CUDA graphs take an MoE layer's kernels off the host") {
  ModelSpec model = small_expert_model();
  const SmallNodeLayers layers_on;
  const NodeGroup& group = layers_on.group;
  const EfficiencyTable& efficiency = layers_on.efficiency;
  const CollectiveEfficiency& collective = layers_on.collective;
  const CostModel& costs = layers_on.costs;
  auto layer_price = [&](const ModelSpec& m, const std::string& graphs) {
    return layers_on.price(m, "dp=16,ep=16,mbs=1,gbs=16,seq=128,cuda_graphs=" + graphs);
  };
  Plan eager = make_plan("dp=16,ep=16,mbs=1,gbs=16,seq=128");
  double launches_fwd = 0, launches_bwd = 0;
  for (const Op& op : layer_ops(model, op_shape(eager, model), 0)) {
    launches_fwd += op.kernels_fwd;
    launches_bwd += op.kernels_b + op.kernels_w;
  }
  const LayerPrice none = layer_price(model, "none");
  REQUIRE(none.host_wait_fwd == Approx(launches_fwd * kHostSecondsPerKernel));
  // moe-router: the router's 13 forward kernels and its 8 + 1 backward ones become one replay
  // per pass, and the preprocess's 4 token-count kernels one more: 15 fewer forward launches,
  // 8 fewer backward ones.
  const LayerPrice router = layer_price(model, "moe-router");
  CHECK(router.host_wait_fwd == Approx((launches_fwd - 15) * kHostSecondsPerKernel));
  CHECK(router.host_wait_bwd == Approx((launches_bwd - 8) * kHostSecondsPerKernel));
  CHECK(router.compute.fwd == none.compute.fwd);  // The device does the same work.
  // The full iteration graph: no host issue at all, dropless included, and no per-task
  // dispatch: the chunk's forward is the layer's device time and communication.
  const LayerPrice full = layer_price(model, "full-iteration");
  CHECK(full.host_wait_fwd == 0);
  CHECK(full.host_wait_bwd == 0);
  Plan full_plan = make_plan("dp=16,ep=16,mbs=1,gbs=16,seq=128,cuda_graphs=full-iteration");
  ChunkPricer full_pricer(model, full_plan, efficiency, collective, nullptr, false);
  ChunkPrice chunk = full_pricer.chunk(costs, group, 0, 1, false, false);
  CHECK(chunk.forward == Approx(full.compute.fwd + full.forward_comm));
  // Whole-layer graphs (token drop): no host wait, the per-task dispatch stays.
  model.moe->capacity_factor = 1.0;
  // Under alltoall token drop Megatron graphs the router alone: 12 fewer forward launches.
  const LayerPrice router_only = layer_price(model, "moe-router");
  CHECK(router_only.host_wait_fwd == Approx((launches_fwd - 12) * kHostSecondsPerKernel));
  const LayerPrice layers = layer_price(model, "layers");
  CHECK(layers.host_wait_fwd == 0);
  CHECK(layers.host_wait_bwd == 0);
  Plan layers_plan = make_plan("dp=16,ep=16,mbs=1,gbs=16,seq=128,cuda_graphs=layers");
  ChunkPricer layers_pricer(model, layers_plan, efficiency, collective, nullptr, false);
  CHECK(layers_pricer.chunk(costs, group, 0, 1, false, false).forward ==
        Approx(layers.compute.fwd + layers.forward_comm +
               efficiency.overheads(layers_plan.runtime).microbatch_overhead_s));
}

TEST_CASE("ChunkPrice: a per-expert fp8 recipe casts each local expert's rows in a host call "
          "of its own") {
  const ModelSpec model = small_expert_model();  // 64 experts, so 4 per GPU at ep 16.
  const SmallNodeLayers layers_on;
  const std::string plan = "dp=16,ep=16,mbs=1,gbs=16,seq=128,precision=fp8,fp8_recipe=";
  const LayerPrice delayed = layers_on.price(model, plan + "delayed");
  const LayerPrice tensorwise = layers_on.price(model, plan + "tensorwise");
  // Delayed scaling casts a grouped GEMM's 4 splits in one multi_cast_transpose; current
  // scaling quantizes each split alone (Transformer Engine's split_quantize): 3 more host calls
  // for each of the two expert GEMMs, X in the forward and dY in the backward.
  CHECK(tensorwise.host_wait_fwd - delayed.host_wait_fwd ==
        Approx(2 * 3 * kHostSecondsPerKernel));
  CHECK(tensorwise.host_wait_bwd - delayed.host_wait_bwd ==
        Approx(2 * 3 * kHostSecondsPerKernel));
  // The same launches as the op list says: the grouped GEMM's casts count its experts.
  Op expert_up = *layer_ops(model, op_shape(make_plan(plan + "tensorwise"), model), 0)
                      .find("moe_expert_up_gate");
  REQUIRE(expert_up.gemm.batch == 4);
  const HostLaunches per_split = host_launches(expert_up, false, false);
  CHECK(per_split.forward == expert_up.kernels_fwd + 4);
  CHECK(per_split.backward == expert_up.kernels_b + expert_up.kernels_w + 4);
  expert_up.fp8_recipe = Fp8Recipe::kDelayed;
  CHECK(host_launches(expert_up, false, false).forward == expert_up.kernels_fwd + 1);
}

TEST_CASE("ChunkPrice: recomputed modules re-run their collectives and host issue in the "
          "backward") {
  ModelSpec model = small_expert_model();
  const SmallNodeLayers layers_on;
  const CostModel& costs = layers_on.costs;
  auto layer_price = [&](const ModelSpec& m, const std::string& text) {
    return layers_on.price(m, text);
  };
  const std::string base = "dp=16,ep=16,mbs=1,gbs=16,seq=128";
  const LayerPrice eager = layer_price(model, base);
  // No tp and no cp: the forward's communication is the dispatch and combine all-to-alls.
  REQUIRE(eager.forward_comm > 0);
  // moe: the block re-runs in the backward, all-to-alls included, and its forward kernels are
  // issued again from the host (Megatron-Core reads the token counts there).
  const LayerPrice moe = layer_price(model, base + ",recompute_modules=moe");
  CHECK(moe.forward_comm == eager.forward_comm);
  CHECK(moe.backward_comm == Approx(eager.backward_comm + eager.forward_comm));
  double moe_launches = 0, moe_forward = 0;
  for (const Op& op : layer_ops(model, op_shape(make_plan(base), model), 0)) {
    if (!op.name.starts_with("moe_")) continue;
    moe_launches += op.kernels_fwd;
    moe_forward += costs.op_cost(op).fwd.seconds;
  }
  CHECK(moe.host_wait_fwd == eager.host_wait_fwd);
  CHECK(moe.host_wait_bwd == Approx(eager.host_wait_bwd + moe_launches * kHostSecondsPerKernel));
  CHECK(moe.compute.recompute == Approx(moe_forward));
  // moe_act: one activation kernel again, no collective.
  const LayerPrice act = layer_price(model, base + ",recompute_modules=moe_act");
  CHECK(act.backward_comm == eager.backward_comm);
  CHECK(act.host_wait_bwd == Approx(eager.host_wait_bwd + kHostSecondsPerKernel));
  // Full recompute re-runs the all-to-alls too.
  CHECK(layer_price(model, base + ",recompute=full").backward_comm ==
        Approx(eager.backward_comm + eager.forward_comm));
  // A dense layer's mlp module re-runs the MLP half of the tensor-parallel collectives (two of
  // the forward's four sequence-parallel ones); core_attn re-runs none.
  ModelSpec dense = testing::llama2_7b_shape();
  const std::string tp = "tp=4,dp=4,mbs=1,gbs=16,seq=1024,sequence_parallel=true,"
                         "tp_comm_overlap=false";
  const LayerPrice core = layer_price(dense, tp + ",recompute=selective");
  const LayerPrice none = layer_price(dense, tp);
  CHECK(core.backward_comm == none.backward_comm);
  const LayerPrice mlp = layer_price(dense, tp + ",recompute_modules=mlp");
  CHECK(mlp.backward_comm == Approx(core.backward_comm + core.forward_comm / 2));
}

TEST_CASE("ChunkPrice: a Mamba layer's context-parallel all-to-alls block both passes") {
  // Nemotron 3 Nano's first layer is a Mamba mixer (no attention, no experts). At tp 1, cp 2
  // and seq 8192 each GPU sends its 4096 tokens of in_proj's 10304 columns in five
  // all-to-alls (z, x, B, C, dt) and gets y's 4096 x 4096 back in a sixth, over a cp group of
  // two GPUs on one node; nothing else crosses a link (no ring without attention).
  const ModelSpec model = load_model_spec("nemotron-3-nano-30b-a3b");
  REQUIRE(model.is_mamba_layer(0));
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2, 8);
  const NodeGroup& group = cluster.nodes.front();
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  CostModel costs(group.gpu, efficiency, nullptr);
  auto a2a = [&](double bytes) {
    return collective_time(Collective::kAllToAll, bytes, collective_group(2, 2, group),
                           collective, nullptr, false)
        .seconds;
  };
  const double expected = 5 * a2a(4096.0 * 10304 * 2 / 5) + a2a(4096.0 * 4096 * 2);
  REQUIRE(expected > 0);
  for (const char* recompute : {"none", "full"}) {
    INFO("recompute " << recompute);
    const Plan plan =
        make_plan(fmt::format("tp=1,cp=2,dp=8,ep=8,mbs=1,gbs=8,seq=8192,recompute={}", recompute));
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    CommCounts tp_comm;
    const LayerPrice layer = pricer.layer(costs, group, pricer.tensor_parallel(group, tp_comm), 0);
    CHECK(layer.forward_comm == Approx(expected));
    // The backward mirrors them, and re-runs the forward's under full recompute.
    CHECK(layer.backward_comm ==
          Approx((std::string(recompute) == "full" ? 2 : 1) * expected));
    // Free links: no communication at all.
    ChunkPricer ideal(model, plan, efficiency, collective, nullptr, true);
    CHECK(ideal.layer(costs, group, ideal.tensor_parallel(group, tp_comm), 0).forward_comm == 0);
  }
}

TEST_CASE("ChunkPrice: DeepEP sends a token once per remote node, and once per destination "
          "GPU over NVLink") {
  ModelSpec model = small_expert_model();
  model.moe->imbalance = 1.0;
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  auto a2a_forward = [&](const ClusterSpec& cluster, const std::string& text) {
    Plan plan = make_plan(text);
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    const NodeGroup& group = cluster.nodes.front();
    CostModel costs(group.gpu, efficiency, nullptr);
    CommCounts comm;
    return pricer.layer(costs, group, pricer.tensor_parallel(group, comm), 0).forward_comm;
  };
  // ep 16 over 4 nodes of 4: the all-to-alls cross the NICs; DeepEP's share of them follows
  // cross_domain_share (64 experts, top-8, 4 domains), and the NIC leg is what sets the time.
  ClusterSpec nodes = testing::uniform_cluster("H100-SXM-80GB", 4, 4);
  const double alltoall = a2a_forward(nodes, "dp=16,ep=16,mbs=1,gbs=16");
  const double deepep = a2a_forward(nodes, "dp=16,ep=16,mbs=1,gbs=16,moe_dispatcher=deepep");
  const double share = cross_domain_share(*model.moe, 16, 4, MoeDispatcher::kDeepEp);
  REQUIRE(share < 1);
  CHECK(deepep < alltoall);
  CHECK(deepep >= share * alltoall);  // Latencies are not deduplicated.
  // One node of 16 GPUs: nothing crosses a NIC, but HybridEP sends a token once per GPU that
  // holds any of its experts: 4 experts per GPU, top-8 of 64, so 15 (1 - C(60,8)/C(64,8)) =
  // 15 (1 - 8,814,960/15,249,024) = 6.329 copies against the alltoall's 8 x 15/16 = 7.5.
  const double gpu_share = destination_gpu_share(*model.moe, 16, MoeDispatcher::kHybridEp);
  CHECK(gpu_share == Approx(15 * (1 - 8814960.0 / 15249024.0) / 7.5));
  CHECK(destination_gpu_share(*model.moe, 16, MoeDispatcher::kAllToAll) == 1);
  ClusterSpec one = testing::uniform_cluster("H100-SXM-80GB", 1, 16);
  // Megabytes per all-to-all: the fixed latency is under 1% of it.
  CHECK(a2a_forward(one, "dp=16,ep=16,mbs=1,gbs=16,moe_dispatcher=hybridep") /
            a2a_forward(one, "dp=16,ep=16,mbs=1,gbs=16") ==
        Approx(gpu_share).epsilon(0.01));
}

TEST_CASE("ChunkPrice: MoE dispatch inside one node against the Megatron-Core MoE report's "
          "measured latencies") {
  // arXiv 2603.07685 Table 7: DeepSeek-V3's hidden 7168, 4,096 tokens per GPU, 256 experts, ep 8
  // in one NVLink domain; dispatch latency, microseconds: NCCL all-to-all 1,265 (H100) and 735
  // (GB200), HybridEP 661 and 391. ppsim's forward prices the dispatch and the combine (the
  // same bytes): half of it is one dispatch. Within 25%: ppsim models the deduplication (0.662
  // of the copies), not HybridEP's copy engine. (This build: 1,153, 767, 582 and 389 us.)
  ModelSpec model = load_model_spec("deepseek-v3");
  model.moe->imbalance = 1.0;
  model.moe->num_groups = 0;  // The table states plain top-8 routing over the 256 experts.
  model.moe->group_topk = 0;
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  auto dispatch_us = [&](const std::string& cluster_name, const std::string& dispatcher) {
    ClusterSpec cluster = load_cluster_spec(cluster_name);
    Plan plan = make_plan("dp=8,ep=8,mbs=1,gbs=8,seq=4096,moe_dispatcher=" + dispatcher);
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    const NodeGroup& group = cluster.nodes.front();
    CostModel costs(group.gpu, efficiency, nullptr);
    CommCounts comm;
    const int64_t moe_layer = model.moe->first_k_dense;
    return pricer.layer(costs, group, pricer.tensor_parallel(group, comm), moe_layer)
               .forward_comm / 2 * 1e6;
  };
  CHECK(dispatch_us("dgx-h100:1", "alltoall") == Approx(1265).epsilon(0.25));
  CHECK(dispatch_us("dgx-h100:1", "hybridep") == Approx(661).epsilon(0.25));
  CHECK(dispatch_us("gb200-nvl72:1", "alltoall") == Approx(735).epsilon(0.25));
  CHECK(dispatch_us("gb200-nvl72:1", "hybridep") == Approx(391).epsilon(0.25));
}


// Every field of two layer prices, exactly.
void check_same_price(const LayerPrice& a, const LayerPrice& b) {
  CHECK(a.compute.fwd == b.compute.fwd);
  CHECK(a.compute.b == b.compute.b);
  CHECK(a.compute.w == b.compute.w);
  CHECK(a.compute.recompute == b.compute.recompute);
  CHECK(a.compute.roofline_passes == b.compute.roofline_passes);
  CHECK(a.compute.profile_passes == b.compute.profile_passes);
  CHECK(a.forward_comm == b.forward_comm);
  CHECK(a.backward_comm == b.backward_comm);
  CHECK(a.host_wait_fwd == b.host_wait_fwd);
  CHECK(a.host_wait_bwd == b.host_wait_bwd);
  CHECK(a.bound.forward == b.bound.forward);
  CHECK(a.bound.backward_input == b.bound.backward_input);
  CHECK(a.bound.backward_weight == b.bound.backward_weight);
  CHECK(a.activation_bytes == b.activation_bytes);
  CHECK(a.weight_stash_bytes == b.weight_stash_bytes);
  CHECK(a.comm.modelled == b.comm.modelled);
  CHECK(a.comm.profile == b.comm.profile);
}

TEST_CASE("ChunkPrice: partial full recompute re-runs the first N layers of each chunk") {
  // Llama-2-7B, 16 layers per chunk on tp 2 with SP: recompute_num_layers=N re-runs N layers'
  // forwards (and their TP collectives) and keeps the other 16 - N layers' activations, so
  // every partial term lies on the line from no recompute (N = 0 of 16) to full (16 of 16).
  ModelSpec model = testing::llama2_7b_shape();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1);
  const NodeGroup& group = cluster.nodes.front();
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  CostModel costs(group.gpu, efficiency, nullptr);
  auto price = [&](const std::string& recompute) {
    const Plan plan =
        make_plan("tp=2,pp=2,dp=2,mbs=1,gbs=16,sequence_parallel=true" + recompute);
    REQUIRE_FALSE(plan_problem(plan, model, cluster));
    ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
    return pricer.chunk(costs, group, 16, 16, false, false);
  };
  const ChunkPrice none = price("");
  const ChunkPrice full = price(",recompute=full");
  REQUIRE(full.backward_input > none.backward_input);
  REQUIRE(full.activation_bytes < none.activation_bytes);
  for (int64_t n : {1, 5, 15}) {
    INFO("recompute_num_layers=" << n);
    const ChunkPrice partial = price(fmt::format(",recompute_num_layers={}", n));
    const double share = n / 16.0;
    CHECK(partial.forward == Approx(none.forward).epsilon(1e-12));
    CHECK(partial.backward_weight == Approx(none.backward_weight).epsilon(1e-12));
    CHECK(partial.backward_input - none.backward_input ==
          Approx(share * (full.backward_input - none.backward_input)).epsilon(1e-9));
    CHECK(partial.activation_bytes - full.activation_bytes ==
          Approx((1 - share) * (none.activation_bytes - full.activation_bytes)).epsilon(1e-9));
    CHECK(partial.bound.backward_input <= partial.backward_input);
  }
  // N at or beyond the chunk's layers is full recompute.
  const ChunkPrice all = price(",recompute_num_layers=16");
  CHECK(all.backward_input == full.backward_input);
  CHECK(all.activation_bytes == full.activation_bytes);
}

TEST_CASE("ChunkPrice: layers of one kind price alike, so each kind is priced once (zoo)") {
  // The pricer keeps one price per ModelSpec::LayerKind: a layer's price must depend on its
  // index only through the kind. Every zoo model (dense, MoE with dense first layers, sliding
  // windows, MLA, hybrids with MTP) against each layer priced on its own, with and without
  // tensor and context parallelism and recompute.
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  const NodeGroup& group = cluster.nodes.front();
  EfficiencyTable efficiency;
  CollectiveEfficiency collective;
  CostModel costs(group.gpu, efficiency, nullptr);
  for (const std::string& name : zoo_names("models")) {
    const ModelSpec model = load_model_spec(name);
    const std::string ep = model.is_moe() ? ",ep=8" : "";
    for (const char* degrees : {"tp=1,dp=16,mbs=1,gbs=16,seq=4096",
                                "tp=2,dp=4,cp=2,mbs=1,gbs=8,seq=8192,recompute=selective,"
                                "sequence_parallel=true"}) {
      const Plan plan = make_plan(std::string(degrees) + ep);
      if (plan_problem(plan, model, cluster)) continue;
      INFO(name << " " << plan_to_inline(plan));
      ChunkPricer pricer(model, plan, efficiency, collective, nullptr, false);
      CommCounts comm;
      const TensorParallelPrice tp = pricer.tensor_parallel(group, comm);
      LayerPriceMemo memo;
      const int64_t layers = model.num_layers + static_cast<int64_t>(model.mtp_layer_pattern.size());
      for (int64_t layer = 0; layer < layers; ++layer) {
        INFO("layer " << layer);
        check_same_price(pricer.layer(costs, group, tp, layer, memo),
                         pricer.layer(costs, group, tp, layer));
      }
      CHECK(memo.size() < static_cast<size_t>(layers));
    }
  }
}

}  // namespace
}  // namespace ppsim
