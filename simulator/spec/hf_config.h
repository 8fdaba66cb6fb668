// Reads a HuggingFace transformers config.json as a ModelSpec.
//
// Supported model_type values (or, without model_type, the architectures[0] prefix:
// LlamaForCausalLM, MistralFor..., MixtralFor..., Qwen2MoeFor..., Qwen2For..., GPT2...,
// GPTNeoX..., DeepseekV2For..., DeepseekV3For..., Qwen3MoeFor..., Qwen3For..., GptOssFor...,
// Glm4MoeFor..., OlmoeFor..., Gemma2For..., Gemma3ForConditionalGeneration, Gemma3For...
// (text), Phi3For..., NemotronHFor...) and the fields read:
//   llama, mistral, qwen2, mixtral: num_hidden_layers, hidden_size, intermediate_size,
//     num_attention_heads, num_key_value_heads (default = heads), vocab_size, head_dim,
//     tie_word_embeddings (default false), hidden_act (silu -> swiglu); mixtral adds
//     num_local_experts, num_experts_per_tok (intermediate_size is then the expert width).
//     qwen2's q/k/v projections carry biases (qkv_bias, counted); its use_sliding_window with
//     max_window_layers is read as for qwen3. mistral and mixtral read sliding_window (null =
//     none) as one window on every layer. attention_bias true (biases on q, k, v and o) is
//     refused for llama, mistral and mixtral.
//   gpt2: n_layer, n_embd, n_head, n_inner (default 4*n_embd), vocab_size, n_positions (also the
//     sequence length: a learned table); gelu, layernorm, tied, learned positions, biases.
//   gpt_neox: num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
//     vocab_size, max_position_embeddings, tie_word_embeddings (default false); gelu,
//     layernorm, rope, biases.
//   qwen3 (Qwen3ForCausalLM): the llama fields with head_dim, plus qk_norm; attention_bias
//     true is refused (ppsim's linear_bias also adds MLP biases); use_sliding_window is read
//     with max_window_layers (all layers or none; a partial range is refused).
//   qwen3_moe (Qwen3MoeForCausalLM): qwen3 plus num_experts, num_experts_per_tok,
//     moe_intermediate_size (intermediate_size is the dense width), decoder_sparse_step n (the
//     last layer of each group of n is MoE: every_n_layers n, layer_offset n - 1) and
//     mlp_only_layers (only a prefix [0..k-1], read as first_k_dense k).
//   deepseek_v3 (DeepseekV3ForCausalLM): the llama fields (intermediate_size is the dense
//     width; num_key_value_heads must equal the heads) plus MLA q_lora_rank (null = full
//     query), kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; MoE
//     n_routed_experts (null = dense), num_experts_per_tok, moe_intermediate_size,
//     n_shared_experts, first_k_dense_replace, moe_layer_freq; num_nextn_predict_layers (MTP).
//     The router's score-correction bias (E per MoE layer) is not counted.
//   kimi_k2 (Moonshot AI's Kimi K2: model_type kimi_k2, or KimiK2ForCausalLM) and deepseek_v2
//     (DeepseekV2ForCausalLM: DeepSeek-V2, V2-Lite): read as deepseek_v3, whose keys they keep
//     (V2 has no num_nextn_predict_layers: no MTP).
//   qwen2_moe (Qwen2MoeForCausalLM: Qwen1.5-MoE, Qwen2-57B-A14B): the qwen2 fields (Q/K/V
//     biases) plus num_experts, num_experts_per_tok, moe_intermediate_size, one shared expert
//     of shared_expert_intermediate_size (0 or absent: none; its sigmoid gate, h parameters a
//     layer, is not counted), decoder_sparse_step and mlp_only_layers as for qwen3_moe.
//   glm4_moe (Glm4MoeForCausalLM: GLM-4.5, GLM-4.5-Air): the llama fields with head_dim;
//     attention_bias puts biases on q, k and v only (qkv_bias; Glm4MoeAttention's o_proj has
//     none); use_qk_norm is qk_norm; DeepSeek's MoE keys (n_routed_experts, n_shared_experts,
//     moe_intermediate_size, first_k_dense_replace, n_group/topk_group) and
//     num_nextn_predict_layers (MTP); partial_rotary_factor is priced as whole-head rotary
//     (a note says so).
//   olmoe (OlmoeForCausalLM): the llama fields (intermediate_size is the expert width) plus
//     num_experts, num_experts_per_tok; its q/k norms over whole projections are priced as
//     per-head qk_norm (a note gives the parameters not counted); clip_qkv is not priced.
//   llama4_text (Llama4ForCausalLM) and llama4 (Llama4ForConditionalGeneration, whose
//     text_config is read; errors name /text_config/...; the vision tower is not simulated):
//     the llama fields with intermediate_size_mlp the dense width, num_local_experts and
//     num_experts_per_tok routed experts of intermediate_size beside one shared expert of that
//     width, interleave_moe_layer_step n (the last layer of each group of n is MoE; moe_layers,
//     when given, must list exactly those), use_qk_norm (weightless L2 norms, priced as
//     qk_norm), and attention_chunk_size on the RoPE layers (no_rope_layers 1; default every
//     no_rope_layer_interval-th layer, 4, is NoPE and global), priced as a sliding window of
//     the chunk (exact up to one chunk of tokens; a note says so).
//   nemotron_h (NemotronHForCausalLM: Nemotron-H, Nemotron Nano 2, Nemotron 3 Nano): a hybrid
//     model, hybrid_override_pattern one of M * - E per layer (hybrid_layer_pattern); the
//     llama counts and widths (intermediate_size the '-' layers' MLP), head_dim or
//     attention_head_dim, no positional encoding, mlp_hidden_act relu2 (squared ReLU; others
//     are refused); Mamba-2 mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups (default
//     8), conv_kernel (4), chunk_size (128); MoE n_routed_experts, num_experts_per_tok,
//     moe_intermediate_size, one shared expert of moe_shared_expert_intermediate_size,
//     n_group/topk_group, moe_latent_size (LatentMoE: moe.latent_size); num_nextn_predict_layers
//     MTP depths of mtp_hybrid_override_pattern's layers (mtp_layer_pattern). Biases on the
//     projections are refused, not modelled.
//   gpt_oss (GptOssForCausalLM): the llama fields (intermediate_size is the expert width)
//     plus num_local_experts, num_experts_per_tok or experts_per_token, sliding_window and
//     layer_types (every layer sliding, or every n-th layer full; default alternating);
//     biases everywhere (attention_bias false is refused: the experts keep theirs). The
//     attention sinks (one scalar per head and layer) are not counted.
//   gemma2 (Gemma2ForCausalLM): the llama fields with Gemma2Config's defaults (head_dim 256,
//     vocab_size 256000, tie_word_embeddings true, sliding_window 4096); even layers slide,
//     odd layers are global (sliding_window_pattern 2), or layer_types when given.
//   gemma3_text (Gemma3ForCausalLM) and gemma3 (Gemma3ForConditionalGeneration, whose
//     text_config is read; errors name /text_config/...): the gemma2 fields with
//     Gemma3TextConfig's defaults (vocab_size 262208, head_dim 256, max_position_embeddings
//     131072, sliding_window 4096, sliding_window_pattern 6: layers 5, 11, ... global), plus
//     qk_norm. The vision tower is not simulated (a note says so).
//   For both Gemmas the GeGLU MLP is priced as swiglu (same matrices and GEMM FLOPs) and the
//     post-attention/post-MLP norms (2h a layer, 0.003% of Gemma 2 9B) are not counted.
//   phi3 (Phi3ForCausalLM): the llama fields; sliding_window on every layer (Phi-3-mini-4k:
//     2047); original_max_position_embeddings is the pre-training length.
// The default sequence length is the pre-training length when the config records it:
// original_max_position_embeddings (top level, as Phi-3 writes it) or
// rope_scaling.original_max_position_embeddings (Llama 3.1, DeepSeek-V3, GPT-OSS). Otherwise it
// is max_position_embeddings capped at 4,096, and a ModelSpec note says so when the cap applied
// (max_position_embeddings is the longest context, often reached only after a long-context
// extension: Qwen2.5-7B says 131,072). A plan's seq=N overrides it.
// Notes on what an import assumed or left out go to ModelSpec::notes (printed by the commands as
// "ppsim: note: ..."). A top-k above the expert count, or a shape the spec cannot express, is an
// InputError naming the file and the key.
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
