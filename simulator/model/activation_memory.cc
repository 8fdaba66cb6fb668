#include "simulator/model/activation_memory.h"

#include <algorithm>

#include "simulator/model/layer_ops.h"
#include "simulator/model/model_stats.h"
#include "simulator/model/op_sac.h"
#include "simulator/spec/error.h"
#include "simulator/spec/runtime.h"

namespace ppsim {
namespace {

// Divisor of the tensors outside the tensor-parallel GEMM pairs: t with sequence parallelism.
double replicated_divisor(const ActivationConfig& config) {
  return config.sequence_parallel && config.tp > 1 ? static_cast<double>(config.tp) : 1.0;
}

// Tokens of one microbatch on this GPU's share of the sequence: s*b/cp.
double local_tokens(const ActivationConfig& config) {
  PPSIM_CHECK(config.seq_length > 0 && config.micro_batch_size > 0 && config.cp > 0);
  PPSIM_CHECK(config.seq_length % config.cp == 0, "cp must divide the sequence length");
  return static_cast<double>(config.seq_length / config.cp) * config.micro_batch_size;
}

// Bytes per token an MLP of width `ffn` keeps between its two GEMMs (before the tp split): the
// activation's input in bf16 (GeLU: fc1's F-wide output; SwiGLU: its 2F-wide output) and its
// output, the down projection's input, at `fc2_input_bytes` per element (bf16, or its
// quantized copy: ActivationConfig::gemm_input_bytes).
double mlp_intermediate_bytes_per_token(const ModelSpec& model, int64_t ffn,
                                        double fc2_input_bytes) {
  const double activation_input = is_gated(model.activation) ? 2.0 * ffn : 1.0 * ffn;
  return kActivationElementBytes * activation_input + fc2_input_bytes * ffn;
}

}  // namespace

ActivationConfig activation_config(const Plan& plan, const ModelSpec& model) {
  ActivationConfig config;
  config.seq_length = effective_seq_length(plan, model);
  config.micro_batch_size = plan.micro_batch_size;
  config.tp = plan.tp;
  config.cp = plan.cp;
  config.ep = plan.ep;
  config.sequence_parallel = plan.sequence_parallel;
  config.recompute = plan.recompute;
  config.recompute_modules = plan.recompute_modules;
  config.selective = runtime_traits(plan.runtime).selective_recompute;
  const bool quantized = plan.precision == Precision::kFp8 || plan.precision == Precision::kNvfp4;
  if (quantized && runtime_traits(plan.runtime).quantized_gemm_inputs) {
    config.gemm_input_bytes = gemm_operand_bytes(plan.precision);
  }
  config.flash_attention = attention_kernel(plan) != AttentionKernel::kUnfused;
  config.loss_working_bytes_per_logit = runtime_traits(plan.runtime).loss_working_bytes_per_logit;
  return config;
}

LayerActivationBytes layer_activation_bytes(const ModelSpec& model, const ActivationConfig& config,
                                            int64_t layer_index) {
  const double tokens = local_tokens(config);
  const double h = model.hidden_size;
  const double t = config.tp;
  const double replicated = replicated_divisor(config);
  LayerActivationBytes bytes;
  if (config.recompute == Recompute::kFull) {
    bytes.layer_input = kActivationElementBytes * tokens * h / replicated;
    return bytes;
  }
  if (config.recompute == Recompute::kSelective &&
      config.selective == SelectiveRecompute::kOpPolicy) {
    OpShape shape;
    shape.micro_batch_size = config.micro_batch_size;
    shape.seq_length = config.seq_length;
    shape.tp = config.tp;
    shape.cp = config.cp;
    shape.ep = config.ep;
    shape.sequence_parallel = config.sequence_parallel && config.tp > 1;
    bytes.op_policy = op_policy_saved_bytes(model, shape, layer_index);
    return bytes;
  }
  const RecomputeModules modules = recomputed_modules(config.recompute, config.recompute_modules);
  auto recomputes = [modules](RecomputeModule module) {
    return (modules & recompute_module_bit(module)) != 0;
  };
  const bool moe_layer = model.is_moe_layer(layer_index);
  // GEMM inputs the weight gradient needs, at their saved size (header "Precision").
  const double gemm_input = config.gemm_input_bytes;
  const bool quantized = gemm_input < kActivationElementBytes;
  // The two norm inputs always; the norms' outputs (the QKV and MLP inputs) unless layernorm
  // recompute discards them. An MoE layer's second one is the router's bf16 input (and, when
  // quantized, the shared experts' copy beside it). A hybrid layer has one norm and one
  // residual (header "Hybrid layers"); its norm's output feeds the one block it holds.
  const bool hybrid = model.is_hybrid();
  const double norms = hybrid ? 1.0 : 2.0;
  double norm_outputs = 0;
  if (!recomputes(RecomputeModule::kLayernorm)) {
    const bool shared = moe_layer && model.moe->num_shared_experts > 0;
    const double feed_forward_input = (moe_layer ? kActivationElementBytes : gemm_input) +
                                      (shared && quantized ? gemm_input : 0.0);
    norm_outputs = !hybrid                               ? gemm_input + feed_forward_input
                   : model.has_feed_forward(layer_index) ? feed_forward_input
                                                         : gemm_input;
  }
  bytes.norm_and_gemm_inputs =
      (norms * kActivationElementBytes + norm_outputs) * tokens * h / replicated;
  bytes.dropout_masks = norms * kDropoutMaskBytes * tokens * h / replicated;
  if (model.is_mamba_layer(layer_index)) {
    // Megatron's memory-efficient Mamba path keeps in_proj's output (z, x, B, C, dt) and the
    // scan's output in bf16 and out_proj's input (the gated norm's output) at the GEMM input
    // size; the conv1d re-runs in the backward. All split by t with the heads; under cp the
    // scan's saved inputs and output are b*s tokens of 1/cp of them, the same bytes (a group's
    // B and C repeated over cp ranks add a few per cent, left out).
    const MambaSpec& mamba = *model.mamba;
    const double inner = static_cast<double>(mamba.inner_width());
    bytes.mamba = tokens *
                  (kActivationElementBytes * (static_cast<double>(mamba.in_proj_width()) + inner) +
                   gemm_input * inner) /
                  t;
    return bytes;
  }
  if (model.has_attention(layer_index)) {
    const double q = model.query_width();
    // Each tp rank holds at least one key/value head (Megatron replicates them when tp > g).
    const double kv_local = model.kv_width() * std::max(1.0 / t, 1.0 / model.num_kv_heads);
    // The context: the attention's output (bf16, for its backward) is the output projection's
    // input. One tensor in bf16; quantized, the projection keeps its own copy and the bf16 one
    // stays only while the attention core keeps its outputs (not under core_attn recompute).
    const double context_bytes =
        quantized ? gemm_input + (recomputes(RecomputeModule::kCoreAttn) ? 0.0
                                                                        : kActivationElementBytes)
                  : kActivationElementBytes;
    if (model.mla && recomputes(RecomputeModule::kMlaUpProj)) {
      // Q, K and V are rebuilt from the latents the up projections read (q rank, kv rank and
      // the rope key, sharded like the norms); the context stays.
      const MlaSpec& mla = *model.mla;
      const double latents = static_cast<double>(mla.q_lora_rank + mla.kv_lora_rank +
                                                 mla.qk_rope_head_dim);
      bytes.attention = tokens * (context_bytes * model.attention_output_width() / t +
                                  gemm_input * latents / replicated);
    } else {
      bytes.attention = tokens * (kActivationElementBytes * (q / t + 2 * kv_local) +
                                  context_bytes * q / t);
    }
    if (!recomputes(RecomputeModule::kCoreAttn)) {
      const double heads = model.num_attention_heads;
      if (config.flash_attention) {
        bytes.attention_core = kFp32Bytes * heads * tokens / t;
      } else {
        // Softmax output (2 bytes), its dropout mask (1) and the dropout output (2) per score;
        // local queries (tokens) against all seq_length keys.
        const double scores = heads * tokens * static_cast<double>(config.seq_length);
        bytes.attention_core = (2 * kActivationElementBytes + kDropoutMaskBytes) * scores / t;
      }
    }
  }
  if (!model.has_feed_forward(layer_index)) return bytes;
  if (moe_layer) {
    const MoeSpec& moe = *model.moe;
    // The critical ep rank holds load x its share of the dispatched rows (layer_ops.h): the
    // permuted expert inputs (the dispatch buffer the weight gradient needs), the expert
    // intermediates and outputs; shared experts keep a dense MLP's activations.
    // moe recompute keeps only the block's input (the norm output, counted above).
    if (recomputes(RecomputeModule::kMoe)) return bytes;
    const double copies = tokens * moe.top_k * moe_critical_rank_load(moe, config.ep);
    // moe_act discards the activation's output, the down projection's input (F_e wide).
    const double fc2_input = recomputes(RecomputeModule::kMoeAct) ? 0.0 : gemm_input;
    // Rows are h wide, or a latent MoE's latent size (layer_ops.h).
    const double width = static_cast<double>(moe.routed_width(model.hidden_size));
    bytes.router = kFp32Bytes * tokens * moe.num_experts / replicated;
    bytes.mlp = copies *
                (gemm_input * width +
                 mlp_intermediate_bytes_per_token(model, moe.expert_ffn_hidden_size, fc2_input) /
                     t +
                 kActivationElementBytes * width / t);
    if (moe.latent_size > 0) {
      // The latent projections' inputs: the up projection's (the combined latent rows) and,
      // quantized, the down projection's own copy of the router's input.
      bytes.mlp += tokens * (gemm_input * width + (quantized ? gemm_input * h : 0.0)) / replicated;
    }
    if (moe.num_shared_experts > 0 && !recomputes(RecomputeModule::kSharedExperts)) {
      bytes.mlp +=
          tokens * mlp_intermediate_bytes_per_token(model, moe.shared_width(), gemm_input) / t;
    }
  } else if (!recomputes(RecomputeModule::kMlp)) {
    bytes.mlp =
        tokens * mlp_intermediate_bytes_per_token(model, model.ffn_hidden_size, gemm_input) / t;
  }
  return bytes;
}

double recompute_working_bytes(const ModelSpec& model, const ActivationConfig& config,
                               int64_t layer_index) {
  if (config.recompute == Recompute::kNone) return 0;
  ActivationConfig full = config;
  full.recompute = Recompute::kNone;
  return layer_activation_bytes(model, full, layer_index).total() -
         layer_activation_bytes(model, config, layer_index).total();
}

double embedding_activation_bytes(const ModelSpec& model, const ActivationConfig& config) {
  const double tokens = local_tokens(config);
  return kTokenIdBytes * tokens +
         kDropoutMaskBytes * tokens * model.hidden_size / replicated_divisor(config);
}

double loss_activation_bytes(const ModelSpec& model, const ActivationConfig& config) {
  const double tokens = local_tokens(config);
  const double vocab = padded_vocab_size(model.vocab_size, config.tp);
  const double norm_and_output_inputs =
      2 * kActivationElementBytes * tokens * model.hidden_size / replicated_divisor(config);
  return norm_and_output_inputs + kFp32Bytes * tokens * vocab / config.tp;
}

double loss_working_bytes(const ModelSpec& model, const ActivationConfig& config) {
  const double vocab = padded_vocab_size(model.vocab_size, config.tp);
  return config.loss_working_bytes_per_logit * local_tokens(config) * vocab / config.tp;
}

}  // namespace ppsim
