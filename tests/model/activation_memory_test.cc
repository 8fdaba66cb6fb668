#include "simulator/model/activation_memory.h"

#include <catch2/catch.hpp>

namespace ppsim {
namespace {

// A GPT-style layer: h 4096, 32 heads of 128, F = 4h, GeLU (Korthikanti's setting).
ModelSpec gpt_layer_model() {
  ModelSpec model;
  model.name = "gpt-4096";
  model.num_layers = 4;
  model.hidden_size = 4096;
  model.ffn_hidden_size = 4 * 4096;
  model.num_attention_heads = 32;
  model.num_kv_heads = 32;
  model.head_dim = 128;
  model.vocab_size = 51200;
  model.seq_length = 2048;
  model.activation = Activation::kGelu;
  model.norm = Norm::kLayerNorm;
  return model;
}

ActivationConfig config_for(int64_t tp, bool sp, Recompute recompute, bool flash) {
  ActivationConfig config;
  config.seq_length = 2048;
  config.micro_batch_size = 2;
  config.tp = tp;
  config.sequence_parallel = sp;
  config.recompute = recompute;
  config.flash_attention = flash;
  return config;
}

// s, b, h, a of the configs above.
constexpr double s = 2048, b = 2, h = 4096, a = 32;

TEST_CASE("ActivationMemory: Korthikanti Table 2 per layer, non-flash attention") {
  ModelSpec model = gpt_layer_model();
  SECTION("no parallelism: sbh(34 + 5as/h)") {
    auto config = config_for(1, false, Recompute::kNone, false);
    CHECK(layer_activation_bytes(model, config, 0).total() ==
          Approx(s * b * h * (34 + 5 * a * s / h)).epsilon(1e-12));
  }
  SECTION("tensor parallel: sbh(10 + 24/t + 5as/(ht))") {
    auto config = config_for(4, false, Recompute::kNone, false);
    CHECK(layer_activation_bytes(model, config, 0).total() ==
          Approx(s * b * h * (10 + 24.0 / 4 + 5 * a * s / (h * 4))).epsilon(1e-12));
  }
  SECTION("tensor + sequence parallel: sbh(34/t + 5as/(ht))") {
    auto config = config_for(4, true, Recompute::kNone, false);
    CHECK(layer_activation_bytes(model, config, 0).total() ==
          Approx(s * b * h * (34.0 / 4 + 5 * a * s / (h * 4))).epsilon(1e-12));
  }
  SECTION("selective recompute drops 5as/h: sbh*34/t with SP, sbh(10 + 24/t) without") {
    auto with_sp = config_for(4, true, Recompute::kSelective, false);
    CHECK(layer_activation_bytes(model, with_sp, 0).total() ==
          Approx(s * b * h * 34.0 / 4).epsilon(1e-12));
    auto without_sp = config_for(4, false, Recompute::kSelective, false);
    CHECK(layer_activation_bytes(model, without_sp, 0).total() ==
          Approx(s * b * h * (10 + 24.0 / 4)).epsilon(1e-12));
  }
  SECTION("full recompute keeps the layer input: 2sbh, /t with SP") {
    auto without_sp = config_for(4, false, Recompute::kFull, false);
    CHECK(layer_activation_bytes(model, without_sp, 0).total() == 2 * s * b * h);
    auto with_sp = config_for(4, true, Recompute::kFull, false);
    LayerActivationBytes bytes = layer_activation_bytes(model, with_sp, 0);
    CHECK(bytes.total() == 2 * s * b * h / 4);
    CHECK(bytes.layer_input == bytes.total());
  }
  SECTION("parts: 8sbh inputs and 2sbh masks replicated, 8sbh attention, 16sbh MLP split") {
    auto config = config_for(4, false, Recompute::kSelective, false);
    LayerActivationBytes bytes = layer_activation_bytes(model, config, 0);
    CHECK(bytes.norm_and_gemm_inputs == 8 * s * b * h);
    CHECK(bytes.dropout_masks == 2 * s * b * h);
    CHECK(bytes.attention == 8 * s * b * h / 4);
    CHECK(bytes.mlp == 16 * s * b * h / 4);
    CHECK(bytes.attention_core == 0);
    CHECK(bytes.router == 0);
  }
}

TEST_CASE("ActivationMemory: Megatron's sbh(18 + 4F/h) for any MLP width (SP + selective)") {
  ModelSpec model = gpt_layer_model();
  for (int64_t ffn : {11008, 16384, 20480}) {
    model.ffn_hidden_size = ffn;
    for (int64_t tp : {2, 4, 8}) {
      INFO("F=" << ffn << " tp=" << tp);
      auto config = config_for(tp, true, Recompute::kSelective, true);
      CHECK(layer_activation_bytes(model, config, 0).total() ==
            Approx(s * b * h * (18 + 4.0 * ffn / h) / tp).epsilon(1e-12));
    }
  }
}

TEST_CASE("ActivationMemory: GQA shrinks K and V, SwiGLU keeps 6sbF") {
  ModelSpec model = gpt_layer_model();
  model.num_kv_heads = 8;  // K = 8 * 128 = 1024.
  model.activation = Activation::kSwiglu;
  model.ffn_hidden_size = 11008;
  auto config = config_for(4, true, Recompute::kSelective, true);
  LayerActivationBytes bytes = layer_activation_bytes(model, config, 0);
  // Q and the context 2sbQ each, K and V 2sbK each.
  CHECK(bytes.attention == 2 * s * b * (2 * 4096 + 2 * 1024) / 4);
  // fc1's 2F-wide output and the F-wide product.
  CHECK(bytes.mlp == 2 * s * b * (2 * 11008 + 11008) / 4);
  // Against Megatron's formula: sb(4K - 4h)/t for GQA plus 2sbF/t for SwiGLU.
  double megatron = s * b * h * (18 + 4.0 * 11008 / h) / 4;
  CHECK(bytes.total() - megatron ==
        Approx(s * b * (4 * 1024 - 4 * h) / 4 + 2 * s * b * 11008 / 4).epsilon(1e-12));
}

TEST_CASE("ActivationMemory: tp beyond the kv heads keeps one kv head per rank") {
  ModelSpec model = gpt_layer_model();
  model.num_kv_heads = 2;  // K = 256; at tp 4 each rank still keeps one head of 128.
  auto config = config_for(4, true, Recompute::kSelective, true);
  CHECK(layer_activation_bytes(model, config, 0).attention ==
        2 * s * b * (2 * 4096.0 / 4 + 2 * 128));
}

TEST_CASE("ActivationMemory: flash attention saves the logsumexp instead of the scores") {
  ModelSpec model = gpt_layer_model();
  auto flash = config_for(4, true, Recompute::kNone, true);
  LayerActivationBytes bytes = layer_activation_bytes(model, flash, 0);
  CHECK(bytes.attention_core == 4 * a * s * b / 4);  // fp32 per head per query row.
  CHECK(bytes.total() == Approx(s * b * h * 34.0 / 4 + 4 * a * s * b / 4).epsilon(1e-12));
  // Selective recompute reruns the attention core: no logsumexp either.
  auto selective = config_for(4, true, Recompute::kSelective, true);
  CHECK(layer_activation_bytes(model, selective, 0).attention_core == 0);
}

TEST_CASE("ActivationMemory: context parallelism splits the sequence") {
  ModelSpec model = gpt_layer_model();
  auto whole = config_for(4, true, Recompute::kNone, false);
  auto split = whole;
  split.cp = 2;
  LayerActivationBytes one = layer_activation_bytes(model, whole, 0);
  LayerActivationBytes two = layer_activation_bytes(model, split, 0);
  CHECK(two.attention == one.attention / 2);
  CHECK(two.mlp == one.mlp / 2);
  CHECK(two.norm_and_gemm_inputs == one.norm_and_gemm_inputs / 2);
  // Local queries (s/2) against all s keys: half the scores.
  CHECK(two.attention_core == 5 * a * (s / 2) * s * b / 4);
  CHECK(two.attention_core == one.attention_core / 2);
}

TEST_CASE("ActivationMemory: MoE layers keep router logits and top_k expert copies") {
  ModelSpec model = gpt_layer_model();
  model.activation = Activation::kSwiglu;
  model.moe = MoeSpec{8, 2, 14336, 2};  // Layers 0, 2 are MoE; 1, 3 dense.
  model.moe->imbalance = 1.0;           // Balanced: Korthikanti's formula's assumption.
  auto config = config_for(4, true, Recompute::kSelective, true);
  LayerActivationBytes moe = layer_activation_bytes(model, config, 0);
  LayerActivationBytes dense = layer_activation_bytes(model, config, 1);
  CHECK(moe.router == 4 * s * b * 8 / 4);
  CHECK(dense.router == 0);
  // Per token copy: input 2h whole, SwiGLU intermediates 6F_e/t, output share 2h/t.
  CHECK(moe.mlp == s * b * 2 * (2 * h + 6.0 * 14336 / 4 + 2 * h / 4));
  CHECK(moe.attention == dense.attention);
  CHECK(moe.norm_and_gemm_inputs == dense.norm_and_gemm_inputs);
}

TEST_CASE("ActivationMemory: selective recompute saves by module") {
  ModelSpec model = gpt_layer_model();
  model.activation = Activation::kSwiglu;
  model.moe = MoeSpec{8, 2, 14336, 2};  // Layers 0, 2 are MoE; 1, 3 dense.
  model.moe->imbalance = 1.0;
  auto with = [](RecomputeModules modules) {
    auto config = config_for(4, true, Recompute::kSelective, true);
    config.recompute_modules = modules;
    return config;
  };
  auto bit = recompute_module_bit;
  const auto core = with(0);  // Megatron's default: core_attn.
  CHECK(core.recompute_modules == 0);
  const LayerActivationBytes moe_core = layer_activation_bytes(model, core, 0);
  const LayerActivationBytes dense_core = layer_activation_bytes(model, core, 1);
  CHECK(moe_core.attention_core == 0);
  // Without core_attn the logsumexp stays (4 bytes per head and query row, /t).
  CHECK(layer_activation_bytes(model, with(bit(RecomputeModule::kMoeAct)), 0).attention_core ==
        4 * a * s * b / 4);
  // layernorm: the norms' outputs go, their inputs stay: 8sbh/t -> 4sbh/t.
  CHECK(dense_core.norm_and_gemm_inputs == 8 * s * b * h / 4);
  CHECK(layer_activation_bytes(model, with(bit(RecomputeModule::kLayernorm)), 1)
            .norm_and_gemm_inputs == 4 * s * b * h / 4);
  // moe_act: per routed copy (s*b*top_k of them), the F_e-wide activation output, /t.
  const double copies = s * b * 2;
  CHECK(moe_core.mlp - layer_activation_bytes(model, with(bit(RecomputeModule::kMoeAct)), 0).mlp ==
        Approx(copies * 2 * 14336 / 4).epsilon(1e-12));
  // ...and nothing on a dense layer, as in Megatron.
  CHECK(layer_activation_bytes(model, with(bit(RecomputeModule::kMoeAct)), 1).mlp == dense_core.mlp);
  // mlp: a dense layer's intermediates (SwiGLU 6sbF/t, F = 4h); MoE layers keep theirs.
  CHECK(dense_core.mlp == 2 * s * b * 3 * (4 * h) / 4);
  CHECK(layer_activation_bytes(model, with(bit(RecomputeModule::kMlp)), 1).mlp == 0);
  CHECK(layer_activation_bytes(model, with(bit(RecomputeModule::kMlp)), 0).mlp == moe_core.mlp);
  // moe: the router logits and every expert activation; attention and norms as before.
  const LayerActivationBytes moe_block =
      layer_activation_bytes(model, with(bit(RecomputeModule::kMoe)), 0);
  CHECK(moe_block.mlp == 0);
  CHECK(moe_block.router == 0);
  CHECK(moe_block.attention == moe_core.attention);
  CHECK(moe_block.attention_core == 4 * a * s * b / 4);
  // shared_experts: a dense MLP of their width per token, only with shared experts.
  model.moe->num_shared_experts = 1;
  model.moe->shared_expert_ffn_hidden_size = 4096;
  const double shared = 2 * s * b * 3 * 4096 / 4;
  CHECK(layer_activation_bytes(model, core, 0).mlp -
            layer_activation_bytes(model, with(bit(RecomputeModule::kSharedExperts)), 0).mlp ==
        Approx(shared).epsilon(1e-12));
  // The working set a backward rebuilds grows by what the module stopped saving.
  CHECK(recompute_working_bytes(model, with(bit(RecomputeModule::kMoe)), 0) ==
        Approx(layer_activation_bytes(model, config_for(4, true, Recompute::kNone, true), 0).total() -
               moe_block.total()));
}

TEST_CASE("ActivationMemory: mla_up_proj keeps the context and the latents, not Q, K, V") {
  ModelSpec model = gpt_layer_model();
  model.num_attention_heads = 32;
  model.num_kv_heads = 32;
  model.mla = MlaSpec{1536, 512, 128, 64, 128};  // q rank, kv rank, nope, rope, v.
  auto config = config_for(4, true, Recompute::kSelective, true);
  config.recompute_modules = recompute_module_bit(RecomputeModule::kMlaUpProj);
  // Context a*v/t per token; latents (1536 + 512 + 64) split like the norms (SP, /t).
  CHECK(layer_activation_bytes(model, config, 0).attention ==
        Approx(2 * s * b * (32.0 * 128 / 4 + (1536.0 + 512 + 64) / 4)).epsilon(1e-12));
  config.recompute_modules = 0;
  // Without it: Q (a*(nope+rope)) and the context, K and V.
  CHECK(layer_activation_bytes(model, config, 0).attention ==
        Approx(2 * s * b * (2 * 32.0 * 192 / 4 + 2 * 32.0 * 128 / 4)).epsilon(1e-12));
}

TEST_CASE("ActivationMemory: fp8 linears keep their inputs quantized under Transformer Engine") {
  ModelSpec model = gpt_layer_model();
  model.activation = Activation::kSwiglu;
  model.ffn_hidden_size = 11008;
  auto bf16 = config_for(4, true, Recompute::kNone, true);
  auto fp8 = bf16;
  fp8.gemm_input_bytes = 1;
  const LayerActivationBytes wide = layer_activation_bytes(model, bf16, 0);
  const LayerActivationBytes narrow = layer_activation_bytes(model, fp8, 0);
  const double T = s * b;
  // Norm inputs 2 + 2 bytes, the QKV and fc1 inputs 1 + 1: 6Th/t instead of 8Th/t (SP).
  CHECK(narrow.norm_and_gemm_inputs == 6 * T * h / 4);
  CHECK(wide.norm_and_gemm_inputs == 8 * T * h / 4);
  // Q, K, V bf16; the context twice: bf16 for the attention backward, fp8 for the projection.
  CHECK(narrow.attention == T * (2 * (4096.0 / 4 + 2 * 4096.0 / 4) + 3 * 4096.0 / 4));
  CHECK(wide.attention == T * 2 * (4 * 4096.0 / 4));
  // The SwiGLU input 2F in bf16, the product (fc2's input) F in fp8.
  CHECK(narrow.mlp == T * (2 * 2 * 11008.0 + 1 * 11008.0) / 4);
  CHECK(wide.mlp == T * 2 * 3 * 11008.0 / 4);
  // Under core_attn recompute the attention keeps no output: only the fp8 copy stays.
  auto fp8_selective = config_for(4, true, Recompute::kSelective, true);
  fp8_selective.gemm_input_bytes = 1;
  CHECK(layer_activation_bytes(model, fp8_selective, 0).attention ==
        T * (2 * (4096.0 / 4 + 2 * 4096.0 / 4) + 1 * 4096.0 / 4));
  // MoE: the dispatched expert input and the expert activation's output quantized; the router
  // input stays bf16.
  model.moe = MoeSpec{8, 2, 14336, 1};
  model.moe->imbalance = 1.0;
  const LayerActivationBytes moe = layer_activation_bytes(model, fp8, 0);
  CHECK(moe.norm_and_gemm_inputs == (2 + 2 + 1 + 2) * T * h / 4);
  CHECK(moe.mlp == T * 2 * (1 * h + (2 * 2 * 14336.0 + 14336.0) / 4 + 2 * h / 4));
  // activation_config: Transformer Engine runtimes keep the quantized copy, torchtitan bf16.
  Plan plan;
  plan.global_batch_size = 8;
  plan.precision = Precision::kFp8;
  CHECK(activation_config(plan, model).gemm_input_bytes == 1);
  plan.precision = Precision::kNvfp4;
  CHECK(activation_config(plan, model).gemm_input_bytes == 0.5625);
  plan.precision = Precision::kBf16;
  CHECK(activation_config(plan, model).gemm_input_bytes == 2);
  plan.precision = Precision::kFp8;
  plan.runtime = Runtime::kTorchtitan;
  CHECK(activation_config(plan, model).gemm_input_bytes == 2);
  for (Runtime runtime : {Runtime::kMegatronLm, Runtime::kDeepSpeed, Runtime::kPytorchFsdp}) {
    plan.runtime = runtime;
    CHECK(activation_config(plan, model).gemm_input_bytes == 1);
  }
}

TEST_CASE("ActivationMemory: embedding and loss extras") {
  ModelSpec model = gpt_layer_model();  // V = 51200 = 50 * 1024: already padded for tp 4, 8.
  auto with_sp = config_for(4, true, Recompute::kSelective, true);
  auto without_sp = config_for(4, false, Recompute::kSelective, true);
  // int64 token ids (whole on every tp rank) + 1-byte dropout mask.
  CHECK(embedding_activation_bytes(model, with_sp) == 8 * s * b + s * b * h / 4);
  CHECK(embedding_activation_bytes(model, without_sp) == 8 * s * b + s * b * h);
  // Final-norm and output-layer inputs 2sbh each, fp32 softmax over V/t.
  CHECK(loss_activation_bytes(model, with_sp) == 4 * s * b * h / 4 + 4 * s * b * 51200 / 4);
  CHECK(loss_activation_bytes(model, without_sp) == 4 * s * b * h + 4 * s * b * 51200 / 4);
  CHECK(loss_working_bytes(model, with_sp) == 2 * s * b * 51200 / 4);
  // The vocabulary is padded to a multiple of 128 * tp: 50257 -> 50688 at tp 4.
  model.vocab_size = 50257;
  CHECK(loss_working_bytes(model, with_sp) == 2 * s * b * 50688 / 4);
}

TEST_CASE("ActivationMemory: the recompute working set is what recompute did not save") {
  ModelSpec model = gpt_layer_model();
  auto none = config_for(4, true, Recompute::kNone, false);
  auto full = config_for(4, true, Recompute::kFull, false);
  auto selective = config_for(4, true, Recompute::kSelective, false);
  double everything = layer_activation_bytes(model, none, 0).total();
  CHECK(recompute_working_bytes(model, none, 0) == 0);
  CHECK(recompute_working_bytes(model, full, 0) == Approx(everything - 2 * s * b * h / 4));
  CHECK(recompute_working_bytes(model, selective, 0) == Approx(5 * a * s * s * b / 4));
}

TEST_CASE("ActivationMemory: activation_config reads the plan") {
  ModelSpec model = gpt_layer_model();
  Plan plan;
  plan.tp = 8;
  plan.cp = 2;
  plan.micro_batch_size = 4;
  plan.seq_length = 8192;
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kSelective;
  ActivationConfig config = activation_config(plan, model);
  CHECK(config.seq_length == 8192);
  CHECK(config.micro_batch_size == 4);
  CHECK(config.tp == 8);
  CHECK(config.cp == 2);
  CHECK(config.sequence_parallel);
  CHECK(config.recompute == Recompute::kSelective);
  CHECK(config.flash_attention);
}

}  // namespace
}  // namespace ppsim
