// The report of `ppsim inspect`: a model's size, FLOPs and per-layer op table.
//
// JSON fields: name, source, shape {num_layers, hidden_size, ffn_hidden_size,
// num_attention_heads, num_kv_heads, head_dim, vocab_size, seq_length, activation, norm,
// tied_embeddings, moe? {num_experts, top_k, expert_ffn_hidden_size, every_n_layers,
// layer_offset, moe_layers (how many layers are MoE)}}, parameters, active_parameters,
// parameter_breakdown {transformer_layers, embedding, position_embedding, output_layer,
// final_norm}, flops_per_token (Megatron-LM's
// training FLOPs per token, forward + backward: 6N-like terms plus causal attention),
// flops_per_token_6n (6 x active parameters, for comparison), op_shape {micro_batch_size,
// seq_length, tp, cp, ep}, and ops: [{part ("layer", "moe_layer", "embedding", "head"), name,
// class, gemm_m, gemm_n, gemm_k, gemm_batch (GEMMs only), flops_fwd, flops_b, flops_w,
// bytes_fwd, all_to_all_bytes, context_all_to_alls, context_all_to_all_bytes, parameters}] for
// one microbatch on one GPU (layer_ops.h Op gives each field's meaning).
#pragma once

#include <string>

#include "simulator/model/layer_ops.h"
#include "simulator/spec/model_spec.h"

namespace ppsim {

std::string inspect_report_text(const ModelSpec& model, const OpShape& shape);
std::string inspect_report_json(const ModelSpec& model, const OpShape& shape);

}  // namespace ppsim
