#include "simulator/model/model_stats.h"

namespace ppsim {
namespace {

double norm_parameters(const ModelSpec& model) {
  return model.norm == Norm::kRmsNorm ? model.hidden_size : 2.0 * model.hidden_size;
}

// Weights (and biases) of one MLP of width `ffn` on rows of `width` (the hidden size, or a
// latent MoE's latent size).
double mlp_parameters(const ModelSpec& model, int64_t ffn, int64_t width) {
  const double w = static_cast<double>(width);
  bool gated = is_gated(model.activation);
  double weights = (gated ? 3.0 : 2.0) * w * ffn;
  double biases = model.linear_bias ? (gated ? 2.0 * ffn : ffn) + w : 0.0;
  return weights + biases;
}

// Weights of the attention block's projections (and their biases and head norms).
double attention_parameters(const ModelSpec& model) {
  double h = model.hidden_size;
  if (model.mla) {
    const MlaSpec& mla = *model.mla;
    double a = model.num_attention_heads;
    double q = mla.q_lora_rank > 0
                   ? h * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * a * mla.qk_head_dim()
                   : h * a * mla.qk_head_dim();
    double kv = h * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank +
                mla.kv_lora_rank * a * (mla.qk_nope_head_dim + mla.v_head_dim);
    double out = a * mla.v_head_dim * h;
    return q + kv + out + (model.linear_bias ? h : 0.0);
  }
  double q = model.query_width();
  double kv = model.kv_width();
  double weights = h * (q + 2 * kv) + q * h;
  if (model.linear_bias) {
    weights += q + 2 * kv + h;
  } else if (model.qkv_bias) {
    weights += q + 2 * kv;  // Qwen2: Q, K, V biases; the output projection has none.
  }
  if (model.qk_norm) weights += 2.0 * model.head_dim;
  return weights;
}

// A Mamba-2 mixer's weights (header); biases on its projections with linear_bias.
double mamba_parameters(const ModelSpec& model) {
  const MambaSpec& mamba = *model.mamba;
  const double h = model.hidden_size;
  const double inner = static_cast<double>(mamba.inner_width());
  const double in_width = static_cast<double>(mamba.in_proj_width());
  const double conv = static_cast<double>(mamba.conv_width());
  double weights = h * in_width + conv * static_cast<double>(mamba.conv_kernel + 1) +
                   3.0 * static_cast<double>(mamba.num_heads) + inner + inner * h;
  if (model.linear_bias) weights += in_width + h;
  return weights;
}

}  // namespace

double mamba_scan_flops_per_token(const MambaSpec& mamba) {
  const double q = static_cast<double>(mamba.chunk_size);
  const double p = static_cast<double>(mamba.head_dim);
  const double n = static_cast<double>(mamba.state_size);
  const double heads = static_cast<double>(mamba.num_heads);
  const double groups = static_cast<double>(mamba.num_groups);
  return q * n * groups + q * p * heads + 4 * n * p * heads;
}

LayerParameters layer_parameters(const ModelSpec& model, int64_t index) {
  double h = model.hidden_size;
  LayerParameters layer;
  if (model.has_attention(index)) layer.attention = attention_parameters(model);
  if (model.is_mamba_layer(index)) layer.mamba = mamba_parameters(model);
  layer.norms = (model.is_hybrid() ? 1 : 2) * norm_parameters(model);
  if (!model.has_feed_forward(index)) return layer;
  if (model.is_moe_layer(index)) {
    const MoeSpec& moe = *model.moe;
    double expert = mlp_parameters(model, moe.expert_ffn_hidden_size,
                                   moe.routed_width(model.hidden_size));
    layer.shared_experts =
        moe.num_shared_experts > 0 ? mlp_parameters(model, moe.shared_width(), model.hidden_size)
                                   : 0;
    layer.mlp = expert * moe.num_experts + layer.shared_experts;
    layer.mlp_active = expert * moe.top_k + layer.shared_experts;
    layer.router = h * moe.num_experts + (model.linear_bias ? moe.num_experts : 0.0);
    if (moe.latent_size > 0) {
      const double latent = static_cast<double>(moe.latent_size);
      layer.latent_projections = 2 * h * latent + (model.linear_bias ? latent + h : 0.0);
    }
  } else {
    layer.mlp = mlp_parameters(model, model.ffn_hidden_size, model.hidden_size);
    layer.mlp_active = layer.mlp;
  }
  return layer;
}

ParameterCounts count_parameters(const ModelSpec& model) {
  ParameterCounts counts;
  double layers_active = 0;
  for (int64_t i = 0; i < model.num_layers; ++i) {
    LayerParameters layer = layer_parameters(model, i);
    counts.transformer_layers += layer.total();
    layers_active += layer.active();
  }
  double h = model.hidden_size;
  counts.embedding = static_cast<double>(model.vocab_size) * h;
  if (model.position_embedding == PositionEmbedding::kLearned) {
    counts.position_embedding = static_cast<double>(model.max_position_embeddings) * h;
  }
  counts.output_layer = model.tied_embeddings ? 0.0 : counts.embedding;
  counts.final_norm = norm_parameters(model);
  double outside_layers =
      counts.embedding + counts.position_embedding + counts.output_layer + counts.final_norm;
  if (model.mtp_layers > 0) {
    // Each depth: its block's layers, the [2h -> h] projection and three norms (of the
    // embedding, of the hidden state, and the block's output: Megatron's enorm, hnorm and
    // final_layernorm; DeepSeek-V3's shared_head.norm).
    double block = 0;
    for (int64_t layer : model.mtp_block_layers()) block += layer_parameters(model, layer).total();
    counts.mtp = model.mtp_layers * (block + 2.0 * h * h + 3 * norm_parameters(model));
  }
  counts.total = counts.transformer_layers + outside_layers + counts.mtp;
  counts.active = layers_active + outside_layers;
  return counts;
}

double mean_keys_per_query(int64_t seq_length, int64_t window) {
  double s = static_cast<double>(seq_length);
  if (window <= 0 || window >= seq_length) return s / 2;
  double w = static_cast<double>(window);
  return w - w * w / (2 * s);
}

namespace {

// One layer's training FLOPs per token (header formula).
double layer_flops_per_token(const ModelSpec& model, int64_t index, int64_t seq_length) {
  double h = model.hidden_size;
  double gated = is_gated(model.activation) ? 3.0 : 2.0;
  if (model.is_mamba_layer(index)) {
    const MambaSpec& mamba = *model.mamba;
    const double projections = static_cast<double>(mamba.in_proj_width() + mamba.inner_width()) * h;
    return 6.0 * projections + 3.0 * mamba_scan_flops_per_token(mamba);
  }
  double mlp = 0;
  if (!model.has_feed_forward(index)) {
    // A hybrid attention layer: no MLP.
  } else if (model.is_moe_layer(index)) {
    const MoeSpec& moe = *model.moe;
    // Routed experts at their row width (the latent size, with its two h x latent projections:
    // Megatron's moe_layer_flops), shared experts at h.
    const double width = static_cast<double>(moe.routed_width(model.hidden_size));
    mlp = 6.0 * gated *
              (width * static_cast<double>(moe.expert_ffn_hidden_size) * moe.top_k +
               h * static_cast<double>(moe.shared_width())) +
          (moe.latent_size > 0 ? 6.0 * 2.0 * h * width : 0.0);
  } else {
    mlp = 6.0 * h * model.ffn_hidden_size * gated;
  }
  if (!model.has_attention(index)) return mlp;
  double attention_linear = 0;
  double qk_width = model.query_width();
  double v_width = qk_width;
  if (model.mla) {
    // Every projection weight is used once per token (norm gains excluded).
    const MlaSpec& mla = *model.mla;
    attention_linear = 6.0 * (attention_parameters(model) - mla.kv_lora_rank -
                              (mla.q_lora_rank > 0 ? mla.q_lora_rank : 0));
    v_width = model.attention_output_width();
  } else {
    double q = model.query_width();
    double kv = model.kv_width();
    attention_linear = 6.0 * (h * (q + 2 * kv) + q * h);
  }
  // Scores (QK^T) and values (PV): 2 FLOPs per multiply-add per key the query sees, forward
  // once and backward twice: 6 * keys * (qk + v). Standard causal attention (keys = s/2,
  // qk = v = Q) gives 6*s*Q, the S2 term divided by B*s.
  double keys = mean_keys_per_query(seq_length, model.attention_window(index));
  double attention_core = 6.0 * keys * (qk_width + v_width);
  return mlp + attention_linear + attention_core;
}

}  // namespace

double training_flops_per_token(const ModelSpec& model, int64_t seq_length) {
  double h = model.hidden_size;
  double total = 0;
  for (int64_t i = 0; i < model.num_layers; ++i)
    total += layer_flops_per_token(model, i, seq_length);
  double logits = 6.0 * h * model.vocab_size;
  total += logits;
  if (model.mtp_layers > 0) {
    double mtp_layer = 6.0 * 2.0 * h * h + logits;
    for (int64_t layer : model.mtp_block_layers()) {
      mtp_layer += layer_flops_per_token(model, layer, seq_length);
    }
    total += model.mtp_layers * mtp_layer;
  }
  return total;
}

double training_flops_per_iteration(const ModelSpec& model, int64_t global_batch,
                                    int64_t seq_length) {
  double tokens = static_cast<double>(global_batch) * seq_length;
  return tokens * training_flops_per_token(model, seq_length);
}

int64_t padded_vocab_size(int64_t vocab_size, int64_t tp, int64_t divisible_by) {
  int64_t multiple = divisible_by * tp;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

}  // namespace ppsim
