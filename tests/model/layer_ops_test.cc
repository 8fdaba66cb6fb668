#include "simulator/model/layer_ops.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "simulator/model/model_stats.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::llama2_7b_shape;
using testing::tiny_dense_model;
using testing::tiny_moe_model;

OpShape shape_of(int64_t b, int64_t s, int64_t tp = 1, int64_t cp = 1, int64_t ep = 1,
                 bool sp = false) {
  OpShape shape;
  shape.micro_batch_size = b;
  shape.seq_length = s;
  shape.tp = tp;
  shape.cp = cp;
  shape.ep = ep;
  shape.sequence_parallel = sp;
  return shape;
}

std::vector<std::string> names(const OpList& ops) {
  std::vector<std::string> result;
  for (const Op& op : ops) result.emplace_back(op.name);
  return result;
}

const Op& op_named(const OpList& ops, std::string_view name) {
  const Op* op = ops.find(name);
  REQUIRE(op != nullptr);
  return *op;
}

// Megatron's FLOPs counted from the op list: every GEMM but the router (fwd + B + W), and the
// attention core at 3x its forward (Megatron's backward is 2x; flash attention's is 2.5x).
double megatron_flops_from_ops(const OpList& ops) {
  double flops = 0;
  for (const Op& op : ops) {
    if (op.op_class == OpClass::kGemm && op.name != "moe_router") {
      flops += op.flops_fwd + op.flops_b + op.flops_w;
    } else if (op.op_class == OpClass::kAttention) {
      flops += 3 * op.flops_fwd;
    }
  }
  return flops;
}

TEST_CASE("LayerOps: a dense layer lists Megatron's kernels in forward order") {
  OpList ops = layer_ops(tiny_dense_model(), shape_of(1, 32), 0);
  CHECK(names(ops) == std::vector<std::string>{"input_norm", "qkv_proj", "rotary", "attention_core",
                                               "attn_out_proj", "attn_residual_add",
                                               "post_attn_norm", "mlp_up_gate", "swiglu_act",
                                               "mlp_down", "mlp_residual_add"});
  ModelSpec gelu = testing::gpt3_175b_shape();
  gelu.position_embedding = PositionEmbedding::kLearned;
  OpList gelu_ops = layer_ops(gelu, shape_of(1, 2048), 0);
  CHECK(gelu_ops.find("rotary") == nullptr);
  CHECK(gelu_ops.find("mlp_up") != nullptr);
  CHECK(gelu_ops.find("gelu_act") != nullptr);
}

TEST_CASE("LayerOps: geglu has swiglu's GEMMs and bytes; its tanh-GELU gate costs more FLOPs") {
  ModelSpec geglu = tiny_dense_model();
  geglu.activation = Activation::kGeglu;
  OpList swiglu_ops = layer_ops(tiny_dense_model(), shape_of(2, 32), 0);
  OpList geglu_ops = layer_ops(geglu, shape_of(2, 32), 0);
  CHECK(geglu_ops.find("swiglu_act") == nullptr);
  const Op& swiglu_act = op_named(swiglu_ops, "swiglu_act");
  const Op& geglu_act = op_named(geglu_ops, "geglu_act");
  CHECK(op_named(geglu_ops, "mlp_up_gate").flops_fwd ==
        op_named(swiglu_ops, "mlp_up_gate").flops_fwd);
  CHECK(geglu_act.bytes_fwd == swiglu_act.bytes_fwd);
  CHECK(geglu_act.bytes_b == swiglu_act.bytes_b);
  // T = 64 tokens x F = 256 outputs: 9 FLOPs each (tanh GELU 8, times up 1) against SiLU's 5.
  CHECK(geglu_act.flops_fwd == 9.0 * 64 * 256);
  CHECK(swiglu_act.flops_fwd == 5.0 * 64 * 256);
}

TEST_CASE("LayerOps: GEMM FLOPs are 2mnk, the same in F, B and W") {
  // tiny: h 64, 4 heads x 16, 2 kv heads, F 256; b 2, s 32 -> T = 64 tokens.
  OpList ops = layer_ops(tiny_dense_model(), shape_of(2, 32), 0);
  struct Expected {
    const char* name;
    double m, n, k;
  };
  const Expected expected[] = {
      {"qkv_proj", 64, 64 + 2 * 32, 64},  // Q width 64, K and V 32 each.
      {"attn_out_proj", 64, 64, 64},
      {"mlp_up_gate", 64, 2 * 256, 64},  // Gate and up fused.
      {"mlp_down", 64, 64, 256},
  };
  for (const Expected& e : expected) {
    INFO(e.name);
    const Op& op = op_named(ops, e.name);
    CHECK(op.op_class == OpClass::kGemm);
    CHECK(op.gemm.m == e.m);
    CHECK(op.gemm.n == e.n);
    CHECK(op.gemm.k == e.k);
    CHECK(op.flops_fwd == 2 * e.m * e.n * e.k);
    CHECK(op.flops_b == op.flops_fwd);
    CHECK(op.flops_w == op.flops_fwd);
    CHECK(op.parameters == e.n * e.k);
  }
  CHECK(op_named(ops, "qkv_proj").flops_fwd == 1048576);
  CHECK(op_named(ops, "mlp_down").flops_fwd == 2097152);
}

TEST_CASE("LayerOps: causal flash attention is 4bs^2dh/2 forward, 2.5x that in B, no W") {
  OpList ops = layer_ops(tiny_dense_model(), shape_of(2, 32), 0);
  const Op& attention = op_named(ops, "attention_core");
  double forward = 4.0 * 2 * 32 * 32 * 16 * 4 / 2;  // b s s d heads / 2
  CHECK(attention.flops_fwd == forward);
  CHECK(attention.flops_fwd == 262144);
  CHECK(attention.flops_b == 2.5 * forward);
  CHECK(attention.flops_w == 0);
  CHECK(attention.kernels_w == 0);
  CHECK(attention.parameters == 0);
}

TEST_CASE("LayerOps: tp=2 halves every per-GPU GEMM and the attention") {
  ModelSpec model = tiny_dense_model();
  OpList one = layer_ops(model, shape_of(2, 32, 1), 0);
  OpList two = layer_ops(model, shape_of(2, 32, 2), 0);
  for (const char* name :
       {"qkv_proj", "attn_out_proj", "mlp_up_gate", "mlp_down", "attention_core"}) {
    INFO(name);
    CHECK(op_named(two, name).flops_fwd == op_named(one, name).flops_fwd / 2);
    CHECK(op_named(two, name).flops_b == op_named(one, name).flops_b / 2);
    CHECK(op_named(two, name).parameters == op_named(one, name).parameters / 2);
  }
  // Column-parallel GEMMs split n, row-parallel ones split k; all see every token.
  CHECK(op_named(two, "mlp_up_gate").gemm.n == 256);
  CHECK(op_named(two, "mlp_down").gemm.k == 128);
  CHECK(op_named(two, "mlp_down").gemm.m == 64);
  // Norms are replicated (and run on every token without sequence parallelism).
  CHECK(op_named(two, "input_norm").parameters == 64);
  CHECK(op_named(two, "input_norm").bytes_fwd == op_named(one, "input_norm").bytes_fwd);
}

TEST_CASE("LayerOps: sequence parallelism puts norms and residuals on s/tp tokens") {
  ModelSpec model = tiny_dense_model();
  OpList plain = layer_ops(model, shape_of(2, 32, 2, 1, 1, false), 0);
  OpList sp = layer_ops(model, shape_of(2, 32, 2, 1, 1, true), 0);
  for (const char* name :
       {"input_norm", "post_attn_norm", "attn_residual_add", "mlp_residual_add"}) {
    INFO(name);
    CHECK(op_named(sp, name).bytes_fwd == op_named(plain, name).bytes_fwd / 2);
    CHECK(op_named(sp, name).flops_fwd == op_named(plain, name).flops_fwd / 2);
  }
  CHECK(op_named(sp, "qkv_proj").flops_fwd == op_named(plain, "qkv_proj").flops_fwd);
}

TEST_CASE("LayerOps: cp=2 halves the tokens of every GEMM and the attention work") {
  ModelSpec model = tiny_dense_model();
  OpList one = layer_ops(model, shape_of(2, 32, 1, 1), 0);
  OpList two = layer_ops(model, shape_of(2, 32, 1, 2), 0);
  CHECK(op_named(two, "qkv_proj").gemm.m == 32);
  CHECK(op_named(two, "mlp_down").flops_fwd == op_named(one, "mlp_down").flops_fwd / 2);
  const Op& attention = op_named(two, "attention_core");
  CHECK(attention.attention.q_tokens == 16);
  CHECK(attention.attention.kv_tokens == 32);
  CHECK(attention.flops_fwd == op_named(one, "attention_core").flops_fwd / 2);
}

TEST_CASE("LayerOps: parameters over a tp=1 layer equal model_stats' layer_parameters") {
  ModelSpec biased = testing::gpt3_175b_shape();
  biased.linear_bias = true;
  biased.num_layers = 2;
  ModelSpec grouped = testing::llama2_70b_shape();
  const ModelSpec models[] = {tiny_dense_model(), tiny_moe_model(), llama2_7b_shape(), biased,
                              grouped};
  for (const ModelSpec& model : models) {
    INFO(model.name);
    for (int64_t layer = 0; layer < 2; ++layer) {
      OpTotals totals = sum_ops(layer_ops(model, shape_of(1, 128), layer));
      CHECK(totals.parameters == layer_parameters(model, layer).total());
    }
  }
}

TEST_CASE("LayerOps: embedding and head hold the padded vocabulary, split over tp") {
  ModelSpec model = llama2_7b_shape();  // V 32000 = 250 x 128.
  OpTotals embedding = sum_ops(embedding_ops(model, shape_of(1, 4096)));
  CHECK(embedding.parameters == 32000.0 * 4096);
  CHECK(embedding.flops_b == 0);
  OpList head = head_ops(model, shape_of(1, 4096));
  CHECK(names(head) == std::vector<std::string>{"final_norm", "output_proj", "cross_entropy"});
  CHECK(op_named(head, "output_proj").flops_fwd == 2.0 * 4096 * 32000 * 4096);
  CHECK(op_named(head, "output_proj").parameters == 32000.0 * 4096);
  // tp=8 pads 32000 to a multiple of 1024: 32768, 4096 rows per GPU.
  OpList split = head_ops(model, shape_of(1, 4096, 8));
  CHECK(op_named(split, "output_proj").gemm.n == 4096);
  model.tied_embeddings = true;
  CHECK(op_named(head_ops(model, shape_of(1, 4096)), "output_proj").parameters == 0);
  // Learned positions add a whole (not vocab-parallel) table.
  ModelSpec gpt = testing::gpt3_175b_shape();
  gpt.position_embedding = PositionEmbedding::kLearned;
  OpList gpt_embedding = embedding_ops(gpt, shape_of(1, 2048, 8));
  CHECK(op_named(gpt_embedding, "position_embedding").parameters == 2048.0 * 12288);
}

TEST_CASE("LayerOps: GEMM FLOPs per token match Megatron's formula exactly") {
  // The vocabularies are multiples of 128, so padding at tp=1 changes nothing.
  ModelSpec gpt = testing::gpt3_175b_shape();
  gpt.vocab_size = 51200;
  gpt.num_layers = 4;
  const ModelSpec models[] = {tiny_dense_model(), tiny_moe_model(), llama2_7b_shape(), gpt};
  for (const ModelSpec& model : models) {
    INFO(model.name);
    int64_t b = 2;
    int64_t s = model.seq_length;
    OpShape shape = shape_of(b, s);
    double flops = megatron_flops_from_ops(head_ops(model, shape));
    for (int64_t layer = 0; layer < model.num_layers; ++layer) {
      flops += megatron_flops_from_ops(layer_ops(model, shape, layer));
    }
    double megatron = training_flops_per_token(model, s) * static_cast<double>(b * s);
    CHECK(flops == Approx(megatron).epsilon(1e-12));
  }
}

TEST_CASE(
    "LayerOps: all FLOPs exceed Megatron's by flash attention's recompute, norms and "
    "the loss") {
  // Llama-2-7B at s=4096. Flash attention's backward adds 0.5 forward per layer: 1/6 of
  // Megatron's attention term 6sLQ = 3.2e9 per token, i.e. 0.54e9 of the ~4.4e10 total
  // (1.2%); norms, rotary, activations and cross entropy add well under 0.1%.
  ModelSpec model = llama2_7b_shape();
  OpShape shape = shape_of(1, 4096);
  double flops = sum_ops(head_ops(model, shape)).flops_total() +
                 sum_ops(embedding_ops(model, shape)).flops_total();
  for (int64_t layer = 0; layer < model.num_layers; ++layer) {
    flops += sum_ops(layer_ops(model, shape, layer)).flops_total();
  }
  double per_token = flops / 4096;
  double megatron = training_flops_per_token(model, 4096);
  double attention_extra = 6.0 * 4096 * 32 * 4096 / 6;  // 0.5 x forward, per token.
  CHECK(per_token > megatron + attention_extra);
  CHECK(per_token < (megatron + attention_extra) * 1.001);
  CHECK(per_token / megatron == Approx(1.012).epsilon(0.002));
}

TEST_CASE("LayerOps: MoE experts split by ep and tp with balanced routing") {
  ModelSpec model = tiny_moe_model();  // 8 experts, top-2, F_e 128, h 64.
  OpList ops = layer_ops(model, shape_of(2, 32, 1, 1, 1), 0);
  CHECK(names(ops) == std::vector<std::string>{
                          "input_norm", "qkv_proj", "rotary", "attention_core", "attn_out_proj",
                          "attn_residual_add", "post_attn_norm", "moe_router", "moe_permute",
                          "moe_expert_up_gate", "moe_expert_act", "moe_expert_down",
                          "moe_unpermute", "mlp_residual_add"});
  // ep=1: all 8 experts, each with 64 tokens * 2 / 8 = 16 rows.
  const Op& up = op_named(ops, "moe_expert_up_gate");
  CHECK(up.gemm.batch == 8);
  CHECK(up.gemm.m == 16);
  CHECK(up.gemm.n == 256);
  CHECK(up.flops_fwd == 2.0 * 64 * 2 * 256 * 64);  // T * top_k tokens through one expert.
  CHECK(op_named(ops, "moe_router").flops_fwd == 2.0 * 64 * 8 * 64);
  CHECK(op_named(ops, "moe_permute").all_to_all_bytes == 64.0 * 2 * 64 * 2);

  // ep=4 (tp=2, sp): 2 local experts of F_e/2, each with 64*2*4/8 = 64 rows; the same
  // FLOPs per GPU as tp=2 alone; a quarter of the expert weights.
  OpList split = layer_ops(model, shape_of(2, 32, 2, 1, 4, true), 0);
  const Op& split_up = op_named(split, "moe_expert_up_gate");
  CHECK(split_up.gemm.batch == 2);
  CHECK(split_up.gemm.m == 64);
  CHECK(split_up.gemm.n == 128);
  CHECK(split_up.flops_fwd == up.flops_fwd / 2);
  CHECK(split_up.parameters == up.parameters / 8);
  CHECK(op_named(split, "moe_expert_down").flops_fwd ==
        op_named(ops, "moe_expert_down").flops_fwd / 2);
  // Each GPU routes and dispatches its T/tp = 32 tokens.
  CHECK(op_named(split, "moe_router").gemm.m == 32);
  CHECK(op_named(split, "moe_unpermute").all_to_all_bytes == 32.0 * 2 * 64 * 2);
  CHECK(op_named(split, "moe_router").parameters == 64 * 8);  // Replicated.
}

TEST_CASE("LayerOps: experts with biases add them per expert after fc2 (Megatron's _apply_bias)") {
  // tiny_moe_model with biases: 8 experts, top-2, h 64, b*s = 64 tokens. At ep 4 each GPU runs
  // 2 local experts on 64 * 2 = 128 rows (balanced). fc2's bias is added per expert with its
  // routing probs and the rows concatenated: 6 bf16 passes over 128 x 64 elements each way.
  ModelSpec model = tiny_moe_model();
  model.linear_bias = true;
  OpList ops = layer_ops(model, shape_of(2, 32, 1, 1, 4), 0);
  const Op& bias = op_named(ops, "moe_expert_bias");
  CHECK(bias.bytes_fwd == 6.0 * 128 * 64 * 2);
  CHECK(bias.bytes_b == 6.0 * 128 * 64 * 2);
  CHECK(bias.kernels_fwd == 2 * 2 + 1);  // b * p and the add per expert, then the cat.
  CHECK(bias.kernels_b == 4 * 2);        // dB and dP: a product and a reduction each.
  CHECK(bias.parameters == 0);           // The biases are fc2's (moe_expert_down).
  CHECK(op_named(ops, "moe_expert_down").parameters == 2 * (128.0 * 64 + 64));
  // Right after fc2, before the combine; experts without biases have no such op.
  const std::vector<std::string> order = names(ops);
  const auto at = std::find(order.begin(), order.end(), "moe_expert_bias");
  REQUIRE(at != order.end());
  CHECK(*(at - 1) == "moe_expert_down");
  CHECK(*(at + 1) == "moe_unpermute");
  model.linear_bias = false;
  const std::vector<std::string> plain = names(layer_ops(model, shape_of(2, 32, 1, 1, 4), 0));
  CHECK(std::find(plain.begin(), plain.end(), "moe_expert_bias") == plain.end());
}

TEST_CASE("LayerOps: recompute marks the attention core (selective) or the layer (full)") {
  ModelSpec model = llama2_7b_shape();
  OpShape shape = shape_of(1, 4096);
  OpTotals none = sum_ops(layer_ops(model, shape, 0));
  CHECK(none.recompute_flops == 0);
  shape.recompute = Recompute::kSelective;
  OpList selective = layer_ops(model, shape, 0);
  CHECK(sum_ops(selective).recompute_flops == op_named(selective, "attention_core").flops_fwd);
  shape.recompute = Recompute::kFull;
  OpTotals full = sum_ops(layer_ops(model, shape, 0));
  CHECK(full.recompute_flops == full.flops_fwd);
  CHECK(full.flops_fwd == none.flops_fwd);
  CHECK_FALSE(sum_ops(head_ops(model, shape)).recompute_flops > 0);
}

TEST_CASE("LayerOps: selective recompute re-runs the ops of its modules") {
  auto bit = recompute_module_bit;
  // The ops each module marks, on a dense, an MoE-with-shared-experts and an MLA layer.
  auto marked = [](const ModelSpec& model, RecomputeModules modules) {
    OpShape shape = shape_of(2, 32);
    shape.recompute = Recompute::kSelective;
    shape.recompute_modules = modules;
    std::vector<std::string> result;
    for (const Op& op : layer_ops(model, shape, 0)) {
      if (op.recomputed) result.emplace_back(op.name);
    }
    return result;
  };
  using Names = std::vector<std::string>;
  const ModelSpec dense = tiny_dense_model();
  CHECK(marked(dense, 0) == Names{"attention_core"});  // Megatron's default, core_attn.
  CHECK(marked(dense, bit(RecomputeModule::kLayernorm)) == Names{"input_norm", "post_attn_norm"});
  CHECK(marked(dense, bit(RecomputeModule::kMlp)) ==
        Names{"mlp_up_gate", "swiglu_act", "mlp_down"});
  CHECK(marked(dense, bit(RecomputeModule::kMoe) | bit(RecomputeModule::kMoeAct)).empty());
  ModelSpec moe = tiny_moe_model();
  moe.moe->num_shared_experts = 1;
  CHECK(marked(moe, bit(RecomputeModule::kMoeAct)) == Names{"moe_expert_act"});
  CHECK(marked(moe, bit(RecomputeModule::kSharedExperts)) ==
        Names{"moe_shared_up", "moe_shared_act", "moe_shared_down"});
  CHECK(marked(moe, bit(RecomputeModule::kMoe)) ==
        Names{"moe_router", "moe_permute", "moe_expert_up_gate", "moe_expert_act",
              "moe_expert_down", "moe_unpermute", "moe_shared_up", "moe_shared_act",
              "moe_shared_down"});
  CHECK(marked(moe, bit(RecomputeModule::kMlp)).empty());
  ModelSpec mla = tiny_dense_model();
  mla.mla = MlaSpec{32, 16, 8, 4, 8};
  mla.num_kv_heads = mla.num_attention_heads;
  CHECK(marked(mla, bit(RecomputeModule::kMlaUpProj)) == Names{"mla_q_up", "mla_kv_up", "rotary"});
  // The recomputed FLOPs are the marked ops' forward FLOPs.
  OpShape shape = shape_of(2, 32);
  shape.recompute = Recompute::kSelective;
  shape.recompute_modules = bit(RecomputeModule::kMoeAct) | bit(RecomputeModule::kLayernorm);
  OpList ops = layer_ops(moe, shape, 0);
  CHECK(sum_ops(ops).recompute_flops == op_named(ops, "moe_expert_act").flops_fwd +
                                            op_named(ops, "input_norm").flops_fwd +
                                            op_named(ops, "post_attn_norm").flops_fwd);
  // op_shape keeps the plan's modules.
  Plan plan;
  plan.global_batch_size = 8;
  plan.recompute = Recompute::kSelective;
  plan.recompute_modules = bit(RecomputeModule::kMoe);
  CHECK(op_shape(plan, moe).recompute_modules == bit(RecomputeModule::kMoe));
}

TEST_CASE("LayerOps: passes without kernels carry no work") {
  const ModelSpec models[] = {tiny_dense_model(), tiny_moe_model(), llama2_7b_shape()};
  for (const ModelSpec& model : models) {
    OpShape shape = shape_of(1, 64, 2, 2, 1, true);
    shape.precision = Precision::kFp8;
    for (const OpList& ops :
         {layer_ops(model, shape, 0), embedding_ops(model, shape), head_ops(model, shape)}) {
      for (const Op& op : ops) {
        INFO(model.name << " " << op.name);
        if (op.kernels_fwd == 0) CHECK(op.bytes_fwd + op.flops_fwd == 0);
        if (op.kernels_b == 0) CHECK(op.bytes_b + op.flops_b == 0);
        if (op.kernels_w == 0) CHECK(op.bytes_w + op.flops_w == 0);
        if (op.op_class != OpClass::kGemm) CHECK(op.precision != Precision::kFp8);
        CHECK(op.bytes_fwd >= 0);
      }
    }
  }
}

TEST_CASE("LayerOps: fp8 halves GEMM operand bytes but not outputs") {
  ModelSpec model = tiny_dense_model();
  OpShape shape = shape_of(2, 32);
  const Op bf16 = op_named(layer_ops(model, shape, 0), "mlp_down");
  shape.precision = Precision::kFp8;
  const Op fp8 = op_named(layer_ops(model, shape, 0), "mlp_down");
  // m 64, n 64, k 256: operands m*k + k*n, output m*n.
  CHECK(bf16.bytes_fwd == (64.0 * 256 + 256 * 64) * 2 + 64 * 64 * 2);
  CHECK(fp8.bytes_fwd == (64.0 * 256 + 256 * 64) * 1 + 64 * 64 * 2);
  CHECK(fp8.flops_fwd == bf16.flops_fwd);
  // The output layer stays bf16 under fp8 (Megatron: not a TE module; torchao skips "output").
  const Op head = op_named(head_ops(model, shape), "output_proj");
  CHECK(head.precision == Precision::kBf16);
  CHECK(op_named(layer_ops(model, shape, 0), "qkv_proj").precision == Precision::kFp8);
}

TEST_CASE("LayerOps: op_shape reads the plan") {
  Plan plan;
  plan.tp = 4;
  plan.cp = 2;
  plan.ep = 2;
  plan.micro_batch_size = 3;
  plan.sequence_parallel = true;
  plan.precision = Precision::kFp8;
  plan.recompute = Recompute::kSelective;
  OpShape shape = op_shape(plan, llama2_7b_shape());
  CHECK(shape.seq_length == 4096);
  CHECK(shape.micro_batch_size == 3);
  CHECK(shape.tp == 4);
  CHECK(shape.cp == 2);
  CHECK(shape.ep == 2);
  CHECK(shape.sequence_parallel);
  CHECK(shape.precision == Precision::kFp8);
  CHECK(shape.recompute == Recompute::kSelective);
  plan.seq_length = 8192;
  plan.tp = 1;
  shape = op_shape(plan, llama2_7b_shape());
  CHECK(shape.seq_length == 8192);
  CHECK_FALSE(shape.sequence_parallel);
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("LayerOps: each MoE dispatcher's own passes over the rows (hand-computed bytes)") {
  // tiny-moe: 8 experts, top-2, h 64; b=2, s=32: T = 64 tokens per GPU, ep 4 (2 local
  // experts), balanced: R = 64 x 2 = 128 rows sent, lambda R = 128 received. Rows of h bf16.
  ModelSpec model = tiny_moe_model();
  OpShape shape = shape_of(2, 32, 1, 1, 4);
  shape.etp = 1;
  const double row = 64.0 * 2;  // Bytes per row.
  // alltoall: permute reads T rows and writes R, then sorts the received chunks by expert
  // (read + write lambda R); unpermute mirrors it. 4 + 2 + 2 kernels forward, 2 + 2 backward.
  OpList alltoall = layer_ops(model, shape, 0);
  const Op& a_permute = op_named(alltoall, "moe_permute");
  CHECK(a_permute.bytes_fwd == (64 + 128 + 2 * 128) * row);
  CHECK(a_permute.bytes_b == a_permute.bytes_fwd);
  CHECK(a_permute.kernels_fwd == kMoePreprocessKernels + 4);
  CHECK(a_permute.kernels_b == 4);
  CHECK(op_named(alltoall, "moe_unpermute").bytes_fwd == (64 + 128 + 2 * 128) * row);
  // deepep: a token goes once to each GPU holding any of its 2 experts: with 2 of the 8 experts
  // per GPU, P = 1 - C(6,2)/C(8,2) = 13/28 per GPU, 4 x 13/28 = 13/7 copies instead of 2:
  // U = 128 x 13/14 received rows, expanded to 128 expert rows (read U, write 128).
  shape.moe_dispatcher = MoeDispatcher::kDeepEp;
  OpList deepep = layer_ops(model, shape, 0);
  const double unique = 128.0 * 13 / 14;
  CHECK(op_named(deepep, "moe_permute").bytes_fwd == Approx((unique + 128) * row));
  CHECK(op_named(deepep, "moe_unpermute").bytes_b == Approx((unique + 128) * row));
  CHECK(op_named(deepep, "moe_permute").kernels_fwd == kMoePreprocessKernels + 2);
  // The all-to-all still carries the alltoall's bytes; the chunk pricer applies the share.
  CHECK(op_named(deepep, "moe_permute").all_to_all_bytes == a_permute.all_to_all_bytes);
  // hybridep: permute and unpermute happen inside the dispatch and combine kernels.
  shape.moe_dispatcher = MoeDispatcher::kHybridEp;
  OpList hybridep = layer_ops(model, shape, 0);
  CHECK(op_named(hybridep, "moe_permute").bytes_fwd == 0);
  CHECK(op_named(hybridep, "moe_permute").kernels_fwd == kMoePreprocessKernels);
  CHECK(op_named(hybridep, "moe_permute").kernels_b == 0);
  CHECK(op_named(hybridep, "moe_unpermute").bytes_fwd == 0);
  CHECK(op_named(hybridep, "moe_unpermute").kernels_fwd == 0);
  CHECK(op_named(hybridep, "moe_unpermute").all_to_all_bytes == a_permute.all_to_all_bytes);
  // The experts see the same rows under every dispatcher.
  CHECK(op_named(hybridep, "moe_expert_up_gate").flops_fwd ==
        op_named(alltoall, "moe_expert_up_gate").flops_fwd);
}

TEST_CASE("LayerOps: tokens per expert and all-to-all bytes follow top-k, ep, etp and load") {
  // tiny-moe: 8 experts, top-2, F_e 128, h 64; b=2, s=32: T = 64 tokens per GPU (tp 1).
  ModelSpec model = tiny_moe_model();
  OpShape shape = shape_of(2, 32, 1, 1, 4);
  shape.etp = 1;
  // Balanced: tokens x top_k / experts x ep = 64*2/8*4 = 64 rows per local expert (2 local).
  OpList balanced = layer_ops(model, shape, 0);
  CHECK(op_named(balanced, "moe_expert_up_gate").gemm.m == 64);
  CHECK(op_named(balanced, "moe_expert_up_gate").gemm.batch == 2);
  CHECK(op_named(balanced, "moe_permute").all_to_all_bytes == 64.0 * 2 * 64 * 2);
  CHECK(op_named(balanced, "moe_permute").expert_gather_bytes == 0);
  // One hot expert at 1.6x the mean beside one average expert: the rank gets 1 + 0.6/2 = 1.3x.
  model.moe->imbalance = 1.6;
  CHECK(moe_critical_rank_load(*model.moe, 4) == Approx(1.3));
  OpList hot = layer_ops(model, shape, 0);
  CHECK(op_named(hot, "moe_expert_up_gate").gemm.m == Approx(64 * 1.3));
  CHECK(op_named(hot, "moe_permute").all_to_all_bytes == Approx(64.0 * 2 * 64 * 2 * 1.3));
  CHECK(op_named(hot, "moe_unpermute").all_to_all_bytes == Approx(64.0 * 2 * 64 * 2 * 1.3));
  // Token drop pads every expert to capacity: 1.25 x 64 = 80 rows, whatever the imbalance.
  model.moe->capacity_factor = 1.25;
  CHECK(op_named(layer_ops(model, shape, 0), "moe_expert_up_gate").gemm.m == Approx(80));
  model.moe->capacity_factor = 0;
  model.moe->imbalance = 1.0;
  // tp 2 (sp), etp 2: each GPU routes T/tp = 32 tokens, sends 32*2 rows and all-gathers them
  // over etp: 128 rows of F_e/2 over 2 local experts = 64 each; the gather's output is etp x
  // the received rows: 32*2*64 elements x 2 ranks x 2 bytes.
  OpShape folded = shape_of(2, 32, 2, 1, 4, true);
  folded.etp = 2;
  OpList etp = layer_ops(model, folded, 0);
  CHECK(op_named(etp, "moe_expert_up_gate").gemm.m == 64);
  CHECK(op_named(etp, "moe_expert_up_gate").gemm.n == 128);
  CHECK(op_named(etp, "moe_permute").expert_gather_bytes == 32.0 * 2 * 64 * 2 * 2);
  // etp 1 under tp 2 (MoE parallel folding): whole experts, no gather, the same FLOPs per GPU.
  folded.etp = 1;
  OpList whole = layer_ops(model, folded, 0);
  CHECK(op_named(whole, "moe_expert_up_gate").gemm.n == 256);
  CHECK(op_named(whole, "moe_expert_up_gate").gemm.m == 32);
  CHECK(op_named(whole, "moe_permute").expert_gather_bytes == 0);
  CHECK(op_named(whole, "moe_expert_up_gate").flops_fwd ==
        op_named(etp, "moe_expert_up_gate").flops_fwd);
  // TE's grouped linear launches one GEMM per local expert and pass.
  CHECK(op_named(whole, "moe_expert_down").kernels_fwd == 2);
}

TEST_CASE("LayerOps: shared experts and dense first layers") {
  ModelSpec model = tiny_moe_model();
  model.moe->num_shared_experts = 2;
  model.moe->first_k_dense = 1;
  CHECK_FALSE(model.is_moe_layer(0));
  CHECK(model.is_moe_layer(1));
  OpList dense = layer_ops(model, shape_of(2, 32), 0);
  CHECK(dense.find("moe_router") == nullptr);
  OpList moe = layer_ops(model, shape_of(2, 32, 2, 1, 1, true), 1);
  // Two shared experts of F_e = 128: one dense MLP of width 256 on every token, split by tp.
  const Op& shared = op_named(moe, "moe_shared_up");
  CHECK(shared.gemm.m == 64);
  CHECK(shared.gemm.n == 2 * 256 / 2);
  CHECK(shared.gemm.k == 64);
}

TEST_CASE("LayerOps: MLA projections, head dims and sliding windows") {
  ModelSpec model = tiny_dense_model();
  model.mla = MlaSpec{32, 16, 8, 4, 8};  // q rank 32, kv rank 16, nope 8, rope 4, v 8.
  model.num_kv_heads = model.num_attention_heads;
  model.head_dim = 12;
  const double h = model.hidden_size, a = model.num_attention_heads;
  OpList ops = layer_ops(model, shape_of(2, 32), 0);
  double projections = 0;
  for (const char* name : {"mla_q_down", "mla_q_norm", "mla_q_up", "mla_kv_down", "mla_kv_norm",
                           "mla_kv_up", "attn_out_proj"}) {
    projections += op_named(ops, name).parameters;
  }
  // The attention parameters of model_stats.h: q = h*32 + 32 + 32*a*12, kv = h*(16+4) + 16 +
  // 16*a*(8+8), out = a*8*h.
  const double expected = h * 32 + 32 + 32 * a * 12 + h * 20 + 16 + 16 * a * 16 + a * 8 * h;
  CHECK(projections == expected);
  CHECK(layer_parameters(model, 0).attention == expected);
  // Causal core: 2 * b*heads * s * (s/2) * (qk + v) = 2*2a*32*16*(12 + 8).
  CHECK(op_named(ops, "attention_core").flops_fwd == 2.0 * 2 * a * 32 * 16 * 20);
  // A window of 8 keys: each query sees w - w^2/2s = 8 - 1 = 7 on average.
  ModelSpec windowed = tiny_dense_model();
  windowed.sliding_window = 8;
  windowed.sliding_window_pattern = 2;  // Layer 1 of every 2 keeps full attention.
  const double d = windowed.head_dim;
  CHECK(op_named(layer_ops(windowed, shape_of(2, 32), 0), "attention_core").flops_fwd ==
        2.0 * 2 * a * 32 * 7 * 2 * d);
  CHECK(op_named(layer_ops(windowed, shape_of(2, 32), 1), "attention_core").flops_fwd ==
        2.0 * 2 * a * 32 * 16 * 2 * d);
}

}  // namespace
}  // namespace ppsim
