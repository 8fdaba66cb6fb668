// Reads a HuggingFace transformers config.json as a ModelSpec.
//
// Supported model_type values and the fields read:
//   llama, mistral, qwen2, mixtral: num_hidden_layers, hidden_size, intermediate_size,
//     num_attention_heads, num_key_value_heads (default = heads), vocab_size,
//     max_position_embeddings (or rope_scaling.original_max_position_embeddings when the
//     context was extended after pretraining), head_dim, tie_word_embeddings (default false),
//     hidden_act (silu -> swiglu); mixtral adds num_local_experts, num_experts_per_tok
//     (intermediate_size is then the expert width). qwen2 has q/k/v biases only; they are
//     ignored (under 0.01% of parameters).
//   gpt2: n_layer, n_embd, n_head, n_inner (default 4*n_embd), vocab_size, n_positions;
//     gelu, layernorm, tied, learned positions, biases.
//   gpt_neox: num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
//     vocab_size, max_position_embeddings, tie_word_embeddings (default false); gelu,
//     layernorm, rope, biases.
// HuggingFace configs carry many fields ppsim does not need; those are ignored, not rejected.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simulator/spec/model_spec.h"

namespace ppsim {

// True when the JSON looks like a HuggingFace config ("model_type" or "architectures").
bool is_hf_config(const nlohmann::json& json);

// REQUIRES: is_hf_config(json). `default_name` names the model when the config does not.
ModelSpec parse_hf_config(const nlohmann::json& json, const std::string& source,
                          const std::string& default_name);

}  // namespace ppsim
