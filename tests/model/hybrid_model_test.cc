// Hybrid Mamba-2 models (ModelSpec::hybrid_layer_pattern, MambaSpec): parameters, FLOPs, the
// ops of each layer kind and their saved activations, against counts worked out by hand from
// Nemotron 3 Nano's config (h 2688; 23 Mamba layers of 64 heads x 64 with 8 groups of 128
// states, 6 GQA attention layers of 32 x 128 heads with 2 kv heads, 23 MoE layers of 128
// squared-ReLU experts of 1856, top 6, one shared expert of 3712; vocabulary 131072, untied),
// and Nemotron 3 Super's latent MoE and hybrid MTP block against its checkpoint's weights.
#include <catch2/catch.hpp>

#include "simulator/model/activation_memory.h"
#include "simulator/model/layer_ops.h"
#include "simulator/model/model_stats.h"
#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

ModelSpec nano() { return load_model_spec("nemotron-3-nano-30b-a3b"); }

// One microbatch of 8192 tokens at tp 2 with sequence parallelism: 32 Mamba heads and 4 groups
// per tp rank.
OpShape tp2_shape() {
  OpShape shape;
  shape.seq_length = 8192;
  shape.tp = 2;
  shape.sequence_parallel = true;
  return shape;
}

// By hand (model_stats.h): a Mamba layer is in_proj 2688 x (2*4096 + 2*8*128 + 64 = 10304),
// conv1d (4096 + 2048 channels) x (4 taps + bias), A, D and dt bias 3 x 64, gated norm 4096,
// out_proj 4096 x 2688 and its pre-norm 2688: 38,744,896. An attention layer is
// 2688 x (4096 + 2 x 256) + 4096 x 2688 + 2688 = 23,399,040. An MoE layer is 128 experts of
// 2 x 2688 x 1856, the shared expert 2 x 2688 x 3712, the router 2688 x 128 and the norm:
// 1,297,468,032, of which a token uses 6 experts: 80,169,600. Embedding and output layer
// 131072 x 2688 each, one final norm.
constexpr double kMambaLayer = 38744896;
constexpr double kAttentionLayer = 23399040;
constexpr double kMoeLayer = 1297468032;
constexpr double kMoeLayerActive = 80169600;
constexpr double kEmbedding = 131072.0 * 2688;

TEST_CASE("Hybrid: Nemotron 3 Nano's layers are the pattern's kinds") {
  const ModelSpec model = nano();
  REQUIRE(model.is_hybrid());
  CHECK(model.is_mamba_layer(0));
  CHECK_FALSE(model.has_attention(0));
  CHECK_FALSE(model.has_feed_forward(0));
  CHECK(model.is_moe_layer(1));  // "ME...": layer 1 is MoE.
  CHECK(model.has_attention(5));  // "MEMEM*".
  CHECK_FALSE(model.is_moe_layer(5));
  CHECK_FALSE(model.has_feed_forward(5));
  CHECK(model.num_moe_layers() == 23);
  // tp collectives: a Mamba or attention layer one block, an MoE layer with a shared expert
  // one (its shared expert's), a transformer layer two.
  CHECK(model.tensor_parallel_blocks(0) == 1);
  CHECK(model.tensor_parallel_blocks(1) == 1);
  CHECK(model.tensor_parallel_blocks(5) == 1);
  CHECK(load_model_spec("llama3-8b").tensor_parallel_blocks(0) == 2);
  CHECK(load_model_spec("qwen3-30b-a3b").tensor_parallel_blocks(0) == 1);
}

TEST_CASE("Hybrid: Nemotron 3 Nano's parameters, by hand and as published") {
  const ModelSpec model = nano();
  CHECK(layer_parameters(model, 0).total() == kMambaLayer);
  CHECK(layer_parameters(model, 5).total() == kAttentionLayer);
  CHECK(layer_parameters(model, 1).total() == kMoeLayer);
  CHECK(layer_parameters(model, 1).active() == kMoeLayerActive);
  const ParameterCounts counts = count_parameters(model);
  const double total = 23 * kMambaLayer + 6 * kAttentionLayer + 23 * kMoeLayer + 2 * kEmbedding +
                       2688;
  CHECK(counts.total == total);
  CHECK(counts.total == 31577937344.0);
  CHECK(counts.active == total - 23 * (kMoeLayer - kMoeLayerActive));
  // NVIDIA's model card: 31.6B in total; 3.2B active, 3.6B with the embeddings (the card
  // rounds to a tenth of a billion: each count must round to its figure).
  CHECK(counts.total == Approx(31.6e9).margin(0.05e9));
  CHECK(counts.active == Approx(3.6e9).margin(0.05e9));
  CHECK(counts.active - counts.embedding == Approx(3.2e9).margin(0.05e9));
}

TEST_CASE("Hybrid: training FLOPs per token of Nemotron 3 Nano") {
  // Mamba: 6 x (10304 + 4096) x 2688 for the projections plus 3x the scan's forward,
  // 128*128*8 + 128*64*64 + 4*128*64*64 = 2,752,512 (model_stats.h): 240,500,736.
  // Attention at s 8192: 6 x 23,396,352 projections + 6 x 4096 keys x (4096 + 4096):
  // 341,704,704. MoE: 6 x 2688 x 2 x (6 x 1856 + 3712) = 478,937,088. Logits 6 x 2688 x 131072.
  CHECK(mamba_scan_flops_per_token(*nano().mamba) == 2752512.0);
  const double expected = 23 * 240500736.0 + 6 * 341704704.0 + 23 * 478937088.0 +
                          6.0 * 2688 * 131072;
  CHECK(training_flops_per_token(nano(), 8192) == expected);
}

TEST_CASE("Hybrid: a Mamba layer's ops on one GPU") {
  const ModelSpec model = nano();
  const OpList ops = layer_ops(model, tp2_shape(), 0);
  std::vector<std::string_view> names;
  for (const Op& op : ops) names.push_back(op.name);
  CHECK(names == std::vector<std::string_view>{"input_norm", "mamba_in_proj", "mamba_conv1d",
                                               "mamba_scan", "mamba_gated_norm",
                                               "mamba_out_proj", "mamba_residual_add"});
  // tp 2: 32 heads and 4 groups here; in_proj writes 2 x 2048 + 2 x 4 x 128 + 32 = 5152 columns.
  const Op* in_proj = ops.find("mamba_in_proj");
  REQUIRE(in_proj != nullptr);
  CHECK(in_proj->gemm.m == 8192);
  CHECK(in_proj->gemm.n == 5152);
  CHECK(in_proj->gemm.k == 2688);
  CHECK(in_proj->input_gathered_over == 2);  // Sequence parallel, as qkv_proj.
  const Op* out_proj = ops.find("mamba_out_proj");
  REQUIRE(out_proj != nullptr);
  CHECK(out_proj->gemm.n == 2688);
  CHECK(out_proj->gemm.k == 2048);
  CHECK(out_proj->grad_gathered_over == 2);
  // The scan: half the heads and groups, 1,376,256 FLOPs a token forward; 64 chunks of 128.
  const Op* scan = ops.find("mamba_scan");
  REQUIRE(scan != nullptr);
  CHECK(scan->flops_fwd == 8192 * 1376256.0);
  CHECK(scan->flops_b == 2.5 * scan->flops_fwd);
  CHECK(scan->gemm.batch == 64 * 32);
  CHECK(scan->flops_w == 0);
  // The GPU's ops hold half the layer's tp-split parameters, the pre-norm whole.
  double parameters = 0;
  for (const Op& op : ops) parameters += op.parameters;
  CHECK(parameters == Approx((kMambaLayer - 2688) / 2 + 2688));
}

TEST_CASE("Hybrid: context parallelism gives each GPU whole heads of the whole sequence") {
  // Megatron-Core's MambaContextParallel at tp 2 (32 heads, 4 groups per tp rank), seq 8192.
  const ModelSpec model = nano();
  OpShape shape = tp2_shape();
  const OpList whole = layer_ops(model, shape, 0);
  shape.cp = 4;  // 8 heads and 1 group per GPU: no group repeated.
  const OpList split = layer_ops(model, shape, 0);
  // in_proj and out_proj see the rank's 2048 tokens of every channel.
  CHECK(split.find("mamba_in_proj")->gemm.m == 2048);
  CHECK(split.find("mamba_in_proj")->gemm.n == 5152);
  CHECK(split.find("mamba_out_proj")->gemm.k == 2048);
  // The scan runs all 8192 tokens of 8 heads and 1 group: 128 x 128 x 1 + 128 x 64 x 8 +
  // 4 x 128 x 64 x 8 = 344,064 FLOPs a token, exactly a quarter of the cp 1 scan's work.
  const Op* scan = split.find("mamba_scan");
  CHECK(scan->flops_fwd == 8192 * 344064.0);
  CHECK(scan->flops_fwd * 4 == whole.find("mamba_scan")->flops_fwd);
  CHECK(scan->gemm.batch == 64 * 8);
  // Five all-to-alls before the conv1d send the rank's in_proj output (2048 tokens x 5152
  // columns, bf16); one after the scan sends y (8192 tokens x 512 channels).
  const Op* conv1d = split.find("mamba_conv1d");
  CHECK(conv1d->context_all_to_alls == 5);
  CHECK(conv1d->context_all_to_all_bytes == 2048.0 * 5152 * 2);
  const Op* norm = split.find("mamba_gated_norm");
  CHECK(norm->context_all_to_alls == 1);
  CHECK(norm->context_all_to_all_bytes == 8192.0 * 512 * 2);
  for (const Op& op : whole) CHECK(op.context_all_to_alls == 0);
  // The GPU holds the same parameters: cp ranks slice the tp rank's conv and head vectors.
  double whole_parameters = 0, split_parameters = 0;
  for (const Op& op : whole) whole_parameters += op.parameters;
  for (const Op& op : split) split_parameters += op.parameters;
  CHECK(split_parameters == whole_parameters);
  // cp 8 against 4 groups per tp rank: each group's B and C go to 2 ranks (4 heads each), so
  // the all-to-all sends 1024 x (2 x 2048 + 2 x 4 x 2 x 128 + 32) and the scan's group term
  // is paid twice: 128 x 128 x 1 + 128 x 64 x 4 + 4 x 128 x 64 x 4 = 180,224 a token.
  shape.cp = 8;
  const OpList repeated = layer_ops(model, shape, 0);
  CHECK(repeated.find("mamba_conv1d")->context_all_to_all_bytes == 1024.0 * 6176 * 2);
  CHECK(repeated.find("mamba_scan")->flops_fwd == 8192 * 180224.0);
}

TEST_CASE("Hybrid: attention and MoE layers hold one block each") {
  const ModelSpec model = nano();
  OpShape shape;
  shape.seq_length = 8192;
  const OpList attention = layer_ops(model, shape, 5);
  CHECK(attention.find("attention_core") != nullptr);
  CHECK(attention.find("rotary") == nullptr);          // No positional encoding.
  CHECK(attention.find("post_attn_norm") == nullptr);  // Its one norm is input_norm.
  CHECK(attention.find("mlp_residual_add") == nullptr);
  const OpList moe = layer_ops(model, shape, 1);
  CHECK(moe.find("attention_core") == nullptr);
  CHECK(moe.find("input_norm") != nullptr);
  CHECK(moe.find("moe_router") != nullptr);
  CHECK(moe.find("moe_shared_up") != nullptr);
  CHECK(moe.find("moe_expert_act") != nullptr);
  double attention_parameters = 0, moe_parameters = 0;
  for (const Op& op : attention) attention_parameters += op.parameters;
  for (const Op& op : moe) moe_parameters += op.parameters;
  CHECK(attention_parameters == kAttentionLayer);
  CHECK(moe_parameters == kMoeLayer);
}

TEST_CASE("Hybrid: a Mamba layer's saved activations") {
  // bf16, no recompute, tp 1, mbs 1, s 8192: the pre-norm's input and output (2 + 2 bytes x
  // 2688), one residual mask (2688 bytes), in_proj's output and the scan's output in bf16
  // (2 x (10304 + 4096)) and out_proj's input (2 x 4096) per token.
  ActivationConfig config;
  config.seq_length = 8192;
  const LayerActivationBytes bytes = layer_activation_bytes(nano(), config, 0);
  CHECK(bytes.norm_and_gemm_inputs == 8192.0 * 4 * 2688);
  CHECK(bytes.dropout_masks == 8192.0 * 2688);
  CHECK(bytes.mamba == 8192.0 * (2 * (10304 + 4096) + 2 * 4096));
  CHECK(bytes.attention == 0);
  CHECK(bytes.mlp == 0);
  // An attention layer keeps one norm's tensors, Q, K, V and the context, and no MLP.
  const LayerActivationBytes attention = layer_activation_bytes(nano(), config, 5);
  CHECK(attention.norm_and_gemm_inputs == 8192.0 * 4 * 2688);
  CHECK(attention.attention == 8192.0 * 2 * (4096 + 2 * 256 + 4096));
  CHECK(attention.mamba == 0);
  CHECK(attention.mlp == 0);
}

ModelSpec super_model() { return load_model_spec("nemotron-3-super-120b-a12b"); }

TEST_CASE("Hybrid: Nemotron 3 Super's weights are its checkpoint's") {
  // The BF16 checkpoint's safetensors: 123,611,012,096 weights (without the 20,992 fp32
  // router score-correction biases), 2,942,324,736 of them in the MTP block. By hand (h 4096):
  // Mamba h x 18560 + 10240 x 5 + 384 + 8192 + 8192 x h + h; attention h x 4608 + 4096 x h + h;
  // MoE 512 experts of 2 x 1024 x 2688 on the latent, the shared expert 2 x h x 5376, the
  // latent projections 2 x h x 1024, the router h x 512 and the norm; MTP one attention and
  // one MoE layer, the 2h x h projection and three norms.
  const ParameterCounts counts = count_parameters(super_model());
  CHECK(counts.total == 123611012096.0);
  CHECK(counts.mtp == 2942324736.0);
  CHECK(counts.total - counts.mtp == 120668687360.0);
  // Active: 22 of 512 experts, both embeddings, no MTP: 12,770,216,960. The model card's
  // "12B active" counts without the input embedding (12.23B), "120B" the backbone.
  CHECK(counts.active == 12770216960.0);
  CHECK(counts.active - counts.embedding == Approx(12e9).margin(0.5e9));
  CHECK(counts.total - counts.mtp == Approx(120e9).epsilon(0.01));
  const LayerParameters moe = layer_parameters(super_model(), 1);
  CHECK(moe.latent_projections == 2.0 * 4096 * 1024);
  CHECK(moe.mlp - moe.shared_experts == 512 * 2.0 * 1024 * 2688);
}

TEST_CASE("Hybrid: a latent MoE moves latent-wide rows") {
  ModelSpec model = super_model();
  model.moe->imbalance = 1.0;  // Balanced: every ep rank receives what it sends.
  OpShape shape;
  shape.seq_length = 8192;
  shape.ep = 64;  // 8 local experts.
  const OpList ops = layer_ops(model, shape, 1);
  const Op* down = ops.find("moe_latent_down");
  const Op* up = ops.find("moe_latent_up");
  REQUIRE(down != nullptr);
  REQUIRE(up != nullptr);
  CHECK((down->gemm.m == 8192 && down->gemm.n == 1024 && down->gemm.k == 4096));
  CHECK((up->gemm.m == 8192 && up->gemm.n == 4096 && up->gemm.k == 1024));
  // 8192 tokens x 22 copies of 1024 bf16 elements dispatched, and as many combined.
  const Op* permute = ops.find("moe_permute");
  REQUIRE(permute != nullptr);
  CHECK(permute->all_to_all_bytes == 8192.0 * 22 * 1024 * 2);
  // Each of the 8 local experts: 8192 x 22 / 8 = 22,528 rows, 1024 -> 2688 -> 1024.
  const Op* expert_up = ops.find("moe_expert_up");
  const Op* expert_down = ops.find("moe_expert_down");
  REQUIRE(expert_up != nullptr);
  REQUIRE(expert_down != nullptr);
  CHECK((expert_up->gemm.m == 22528 && expert_up->gemm.n == 2688 && expert_up->gemm.k == 1024));
  CHECK(expert_up->gemm.batch == 8);
  CHECK((expert_down->gemm.n == 1024 && expert_down->gemm.k == 2688));
  // The shared expert stays at h.
  const Op* shared = ops.find("moe_shared_up");
  REQUIRE(shared != nullptr);
  CHECK(shared->gemm.k == 4096);
}

TEST_CASE("Hybrid: the MTP block's layers follow the decoder's") {
  const ModelSpec model = super_model();
  CHECK(model.mtp_block_layers() == std::vector<int64_t>{88, 89});
  CHECK(model.has_attention(88));
  CHECK(model.is_moe_layer(89));
  CHECK_FALSE(model.is_mamba_layer(88));
  OpShape shape;
  shape.seq_length = 8192;
  CHECK(layer_ops(model, shape, 88).find("attention_core") != nullptr);
  CHECK(layer_ops(model, shape, 89).find("moe_latent_down") != nullptr);
  // FLOPs per token: the decoder's, plus the block's two layers, its projection (6 x 2h x h)
  // and a second output layer (6 x h x V).
  ModelSpec without = model;
  without.mtp_layers = 0;
  without.mtp_layer_pattern.clear();
  const double h = 4096;
  const double mtp =
      training_flops_per_token(model, 8192) - training_flops_per_token(without, 8192);
  // Attention: 6 x (h x 4608 + 4096 x h) + 6 x 4096 keys x 8192; MoE: 6 x 2 x (1024 x 2688 x 22
  // + h x 5376) + 6 x 2 x h x 1024.
  const double attention = 6 * (h * 4608 + 4096 * h) + 6.0 * 4096 * 8192;
  const double moe = 6 * 2 * (1024.0 * 2688 * 22 + h * 5376) + 6 * 2 * h * 1024;
  CHECK(mtp == Approx(attention + moe + 6 * 2 * h * h + 6 * h * 131072).epsilon(1e-12));
}

}  // namespace
}  // namespace ppsim
