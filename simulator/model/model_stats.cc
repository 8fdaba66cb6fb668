#include "simulator/model/model_stats.h"

namespace ppsim {
namespace {

double norm_parameters(const ModelSpec& model) {
  return model.norm == Norm::kRmsNorm ? model.hidden_size : 2.0 * model.hidden_size;
}

// Weights (and biases) of one MLP of width `ffn`.
double mlp_parameters(const ModelSpec& model, int64_t ffn) {
  double h = model.hidden_size;
  bool gated = model.activation == Activation::kSwiglu;
  double weights = (gated ? 3.0 : 2.0) * h * ffn;
  double biases = model.linear_bias ? (gated ? 2.0 * ffn : ffn) + h : 0.0;
  return weights + biases;
}

}  // namespace

LayerParameters layer_parameters(const ModelSpec& model, int64_t index) {
  double h = model.hidden_size;
  double q = model.query_width();
  double kv = model.kv_width();
  LayerParameters layer;
  layer.attention = h * (q + 2 * kv) + q * h;
  if (model.linear_bias) layer.attention += q + 2 * kv + h;
  layer.norms = 2 * norm_parameters(model);
  if (model.is_moe_layer(index)) {
    double expert = mlp_parameters(model, model.moe->expert_ffn_hidden_size);
    layer.mlp = expert * model.moe->num_experts;
    layer.mlp_active = expert * model.moe->top_k;
    layer.router = h * model.moe->num_experts;
  } else {
    layer.mlp = mlp_parameters(model, model.ffn_hidden_size);
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
  counts.total = counts.transformer_layers + outside_layers;
  counts.active = layers_active + outside_layers;
  return counts;
}

double training_flops_per_token(const ModelSpec& model, int64_t seq_length) {
  double h = model.hidden_size;
  double q = model.query_width();
  double kv = model.kv_width();
  double gated = model.activation == Activation::kSwiglu ? 3.0 : 2.0;
  double mlp = 0;
  for (int64_t i = 0; i < model.num_layers; ++i) {
    if (model.is_moe_layer(i)) {
      mlp += 6.0 * h * model.moe->expert_ffn_hidden_size * model.moe->top_k * gated;
    } else {
      mlp += 6.0 * h * model.ffn_hidden_size * gated;
    }
  }
  double layers = model.num_layers;
  double attention_linear = layers * 6.0 * (h * (q + 2 * kv) + q * h);
  double logits = 6.0 * h * model.vocab_size;
  // Causal attention scores and values: 6*s*L*Q per token (the S2 term divided by B*s).
  double attention_core = 6.0 * static_cast<double>(seq_length) * layers * q;
  return mlp + attention_linear + logits + attention_core;
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
