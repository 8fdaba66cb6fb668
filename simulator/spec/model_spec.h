// ModelSpec: the shape of a decoder-only transformer, and its parsers.
//
// JSON keys (models/*.json; DESIGN.md "Specs"):
//   {"name", "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
//    "num_kv_heads", "vocab_size", "seq_length", "activation": "swiglu|gelu",
//    "norm": "rmsnorm|layernorm", "tied_embeddings": bool,
//    "moe": {"num_experts", "top_k", "expert_ffn_hidden_size", "every_n_layers"}?}
// plus optional keys beside them: "head_dim" (default hidden_size / num_attention_heads),
// "linear_bias" (default false), "position_embedding": "rope|learned" (default "rope"),
// "max_position_embeddings" (default seq_length; sizes the learned table), "source" (a
// citation string). A HuggingFace config.json (Llama, Mistral, Mixtral, Qwen2, GPT-2,
// GPT-NeoX) is accepted wherever a model is; see hf_config.h.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ppsim {

enum class Activation { kSwiglu, kGelu };
enum class Norm { kRmsNorm, kLayerNorm };
enum class PositionEmbedding { kRope, kLearned };

// Mixture-of-experts feed-forward layers.
struct MoeSpec {
  int64_t num_experts = 0;             // Routed experts per MoE layer. Required, >= 1.
  int64_t top_k = 0;                   // Experts each token is routed to. Required, 1..num_experts.
  int64_t expert_ffn_hidden_size = 0;  // Width of one expert's MLP. Required.
  int64_t every_n_layers = 1;          // Layer i is MoE when i % every_n_layers == 0. Default 1.
};

struct ModelSpec {
  std::string name;              // Display name, e.g. "llama3-70b". Required.
  int64_t num_layers = 0;        // Transformer layers L. Required, >= 1.
  int64_t hidden_size = 0;       // h. Required.
  int64_t ffn_hidden_size = 0;   // Dense MLP width F (per gate for SwiGLU). Required.
  int64_t num_attention_heads = 0;  // a. Required; divides hidden_size unless head_dim is given.
  int64_t num_kv_heads = 0;      // Key/value heads g (GQA); == a for MHA. Required, divides a.
  int64_t vocab_size = 0;        // V (unpadded). Required.
  int64_t seq_length = 0;        // Default training sequence length s. Required.
  int64_t head_dim = 0;          // Per-head size; JSON "head_dim", default h / a.
  Activation activation = Activation::kSwiglu;  // Required: "swiglu" or "gelu".
  Norm norm = Norm::kRmsNorm;                   // Required: "rmsnorm" or "layernorm".
  bool tied_embeddings = false;  // Output layer shares the input embedding. Required.
  bool linear_bias = false;      // Linear layers carry biases (GPT-2/3, NeoX). Default false.
  PositionEmbedding position_embedding = PositionEmbedding::kRope;  // Default rope.
  int64_t max_position_embeddings = 0;  // Learned position table rows; default seq_length.
  std::optional<MoeSpec> moe;    // Absent for dense models.
  std::string source;            // Where the numbers come from (citation). Optional.

  bool is_moe() const { return moe.has_value(); }
  // True when layer `index` (0-based) has an MoE feed-forward block.
  bool is_moe_layer(int64_t index) const {
    return moe && index % moe->every_n_layers == 0;
  }
  int64_t num_moe_layers() const;
  // Query projection width a * head_dim and key/value width g * head_dim.
  int64_t query_width() const { return num_attention_heads * head_dim; }
  int64_t kv_width() const { return num_kv_heads * head_dim; }
};

// Reads ppsim's own model format (the keys above) from parsed JSON; does not validate
// (validate_model_spec does). Errors throw InputError naming `source` and the JSON path.
// model_file.h reads a model from text or a file in either format.
ModelSpec parse_ppsim_model_json(const nlohmann::json& json, const std::string& source);

// Checks cross-field consistency (heads divide, positive sizes); throws InputError.
void validate_model_spec(const ModelSpec& model, const std::string& source);

}  // namespace ppsim
