// Parameter counts and training FLOPs of a model, as Megatron-LM counts them.
//
// Parameter counts are exact sums over the model's tensors (REFERENCE.md 1.5 structure):
//   attention  h*d*(2a + 2g)            (+ biases a*d + 2g*d + h with linear_bias)
//   dense MLP  3*h*F (swiglu) or 2*h*F  (+ biases 2F + h or F + h)
//   MoE MLP    E experts of the dense form with F_e, plus the router h*E; a latent MoE's
//              experts on rows of the latent size l, plus its projections 2*h*l
//   Mamba-2    h*(2 d_in + 2 G N + H) in_proj, (d_in + 2 G N)*(k + 1) conv1d weight and bias,
//              3 H (A, D, dt bias), d_in gated norm, d_in*h out_proj (model_spec.h MambaSpec)
//   norms      2 per transformer layer (1 per hybrid layer), h each (rmsnorm) or 2h
//              (layernorm); one final norm
//   embedding  V*h (+ learned positions max_pos*h); output layer V*h unless tied
// FLOPs follow megatron/training/training.py num_floating_point_operations (REFERENCE.md 1.6):
//   per token = 6*h*F*e*L_dense + 6*h*F_e*k*e*L_moe + L*6*(h*(Q+2K) + Q*h) + 6*h*V + 6*s*L*Q
// with e = 3 for swiglu, 2 for gelu; Q = a*d, K = g*d; the last term is causal attention.
// Generalised as Megatron's formula is for its newer models: shared experts add 6*h*F_s*e per
// MoE layer (a latent MoE's experts at the latent width, plus 6*2*h*l for its projections);
// MLA's projections count 6 FLOPs per weight; attention scores and values count
// 3*a*(d_qk + d_v) per key a query sees (s/2 causal, the window w - w^2/2s when sliding); each
// MTP depth adds its block's layers (the last layer, or a hybrid model's mtp_layer_pattern),
// its projection and another output layer. A Mamba layer counts 6
// FLOPs per projection weight and 3x the SSD scan's forward (mamba_scan_flops_per_token),
// where Megatron's hybrid formula takes 7*d_in*N for the scan with d_in = 2h.
#pragma once

#include <cstdint>

#include "simulator/spec/model_spec.h"

namespace ppsim {

// Parameters of one transformer layer, by part.
struct LayerParameters {
  double attention = 0;       // QKV and output projections (with biases).
  double mlp = 0;             // Dense MLP, or all routed experts of an MoE layer.
  double mlp_active = 0;      // What one token uses: dense MLP, or top_k experts.
  double router = 0;          // MoE router (0 for dense layers).
  double shared_experts = 0;  // MoE shared experts (in mlp and mlp_active too).
  double mamba = 0;           // A Mamba layer's mixer (projections, conv1d, A, D, norm).
  double latent_projections = 0;  // Latent MoE's h -> latent and latent -> h projections.
  double norms = 0;           // The layer's norms (two per transformer layer, one hybrid).

  double total() const { return attention + mamba + mlp + router + latent_projections + norms; }
  double active() const {
    return attention + mamba + mlp_active + router + latent_projections + norms;
  }
};

struct ParameterCounts {
  double total = 0;               // Every parameter.
  double active = 0;              // Parameters one token touches (differs for MoE).
  double transformer_layers = 0;  // Sum over layers.
  double embedding = 0;           // Token embedding V*h (the vocabulary as given, unpadded).
  double position_embedding = 0;  // Learned position table (0 for rope).
  double output_layer = 0;        // Untied output projection (0 when tied).
  double final_norm = 0;
  double mtp = 0;                 // Multi-token-prediction layers (in total, not in active).
};

// Parameters of layer `index` (0-based; MoE layers differ from dense ones).
LayerParameters layer_parameters(const ModelSpec& model, int64_t index);

ParameterCounts count_parameters(const ModelSpec& model);

// Forward FLOPs per token of the Mamba-2 SSD scan (chunk length Q, head dim P, state N, H
// heads, G groups), counting 2 per multiply-add: the causal C B^T within each chunk per group
// (Q N G), its product with x per head (Q P H), the chunk states B^T x and their contribution
// C h to the outputs (2 N P H each): Q N G + Q P H + 4 N P H.
double mamba_scan_flops_per_token(const MambaSpec& mamba);

// Keys one query attends to on average in a causal sequence of `seq_length` with a sliding
// window of `window` keys (0 = none): s/2 without a window (Megatron's convention), else
// w - w^2/(2s) for w < s.
double mean_keys_per_query(int64_t seq_length, int64_t window);

// Megatron-LM's model FLOPs for training one token at sequence length `seq_length`
// (forward and backward, no recompute). Used for MFU and model TFLOP/s.
double training_flops_per_token(const ModelSpec& model, int64_t seq_length);

// Megatron-LM's FLOPs for one iteration of `global_batch` sequences of `seq_length`.
double training_flops_per_iteration(const ModelSpec& model, int64_t global_batch,
                                    int64_t seq_length);

// Vocabulary padded as Megatron pads it: a multiple of divisible_by * tp.
int64_t padded_vocab_size(int64_t vocab_size, int64_t tp, int64_t divisible_by = 128);

}  // namespace ppsim
