// Reads a HuggingFace transformers config.json as a ModelSpec.
//
// Supported model_type values (or, without model_type, the architectures[0] prefix:
// LlamaForCausalLM, MistralFor..., MixtralFor..., Qwen2For..., GPT2..., GPTNeoX...,
// DeepseekV3For..., Qwen3MoeFor..., Qwen3For..., GptOssFor...) and the fields read:
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
//   qwen3 (Qwen3ForCausalLM): the llama fields with head_dim, plus qk_norm; attention_bias
//     true is refused (ppsim's linear_bias also adds MLP biases); use_sliding_window is read
//     with max_window_layers (all layers or none; a partial range is refused).
//   qwen3_moe (Qwen3MoeForCausalLM): qwen3 plus num_experts, num_experts_per_tok,
//     moe_intermediate_size (intermediate_size is the dense width), decoder_sparse_step (only
//     1 is expressible) and mlp_only_layers (only a prefix [0..k-1], read as first_k_dense k).
//   deepseek_v3 (DeepseekV3ForCausalLM): the llama fields (intermediate_size is the dense
//     width; num_key_value_heads must equal the heads) plus MLA q_lora_rank (null = full
//     query), kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; MoE
//     n_routed_experts (null = dense), num_experts_per_tok, moe_intermediate_size,
//     n_shared_experts, first_k_dense_replace, moe_layer_freq; num_nextn_predict_layers (MTP).
//     The router's score-correction bias (E per MoE layer) is not counted.
//   gpt_oss (GptOssForCausalLM): the llama fields (intermediate_size is the expert width)
//     plus num_local_experts, num_experts_per_tok or experts_per_token, sliding_window and
//     layer_types (every layer sliding, or every n-th layer full; default alternating);
//     biases everywhere (attention_bias false is refused: the experts keep theirs). The
//     attention sinks (one scalar per head and layer) are not counted.
// The context is rope_scaling.original_max_position_embeddings when present, else
// max_position_embeddings. A top-k above the expert count, or a shape the spec cannot
// express, is an InputError naming the file and the key.
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
