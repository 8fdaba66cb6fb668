// Activation memory: the bytes one microbatch leaves saved for its backward pass on one GPU,
// per transformer layer and for the pipeline's two ends (embedding, output layer and loss).
//
// How many microbatches are alive at once is a separate question (inflight_microbatches.h, and
// later the simulated timeline); the sizes here are per microbatch and stay the same.
//
// Derivation. Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models" (arXiv 2205.05198), Section 4 and Table 2. Notation: s sequence length, b micro-batch
// size, h hidden size, a attention heads, t tensor-parallel degree; activations are 2-byte
// (bf16/fp16) tensors and dropout masks 1 byte. One layer with no parallelism saves
// sbh(34 + 5as/h) bytes:
//   attention 11sbh + 5as^2b: QKV-GEMM input 2sbh; Q and K for QK^T 4sbh; softmax output 2as^2b;
//             its dropout mask as^2b; the dropout output (input of the product with V) 2as^2b;
//             V 2sbh; output-projection input (the context) 2sbh; residual dropout mask sbh.
//   MLP       19sbh: fc1 input 2sbh; GeLU input 8sbh; fc2 input (GeLU output) 8sbh; mask sbh.
//   norms     4sbh: the inputs of the two layernorms.
// Tensor parallelism splits what lies between a column- and a row-parallel GEMM (Q, K, V, the
// scores, the context and the MLP intermediates: 24sbh + 5as^2b) and replicates the other 10sbh
// (norm inputs 4, QKV and fc1 inputs 4, masks 2): sbh(10 + 24/t + 5as/(ht)). Sequence
// parallelism splits those 10sbh along the sequence: sbh(34/t + 5as/(ht)). Selective recompute
// recomputes the attention core and saves none of its 5as^2b. Full recompute saves only each
// layer's input, 2sbh (split by t under sequence parallelism).
//
// ppsim's generalisation (all terms below are per microbatch, per GPU, in bytes):
// - Widths. Q = a*d (query and context width), K = g*d (key/value width, smaller under GQA),
//   F the MLP width. Attention keeps Q and the context 2sbQ each and K, V 2sbK each, so the
//   tensor-split attention part is sb(4Q + 4K) (8sbh for MHA). When tp exceeds the kv heads g,
//   Megatron replicates them so each tp rank keeps one: K/t becomes K/g. GeLU keeps fc1's output
//   and the GeLU output, 4sbF (16sbh at F = 4h); SwiGLU keeps fc1's 2F-wide output and the F-wide
//   gated product, 6sbF. With sequence parallelism and selective recompute a dense MHA GeLU layer
//   therefore saves sb(10h + 8h + 4F)/t = sbh(18 + 4F/h)/t, which is Megatron-LM's
//   theoretical_memory_usage formula (REFERENCE.md 1.5) for any F; for GQA or SwiGLU the
//   formula (which only knows h and F) and ppsim differ by sb(4K - 4h)/t and 2sbF/t.
// - Flash attention (the default, as Megatron with Transformer Engine runs) never materialises
//   the a*s^2 scores: the 5as^2b term is gone. Its backward needs Q, K, V, the output O (the same
//   tensor as the output-projection input, counted once) and the fp32 logsumexp, 4·a·s·b bytes
//   (split by t). Selective recompute reruns the attention core, so it saves no logsumexp either.
//   Without flash attention, dropout on the probabilities is kept as the paper counts it.
// - Selective recompute by module (Plan::recompute_modules, Megatron-Core --recompute-modules;
//   the default is core_attn, the paragraph above). What each module stops saving, its input
//   kept (output-discarding modules keep their input and drop their output):
//     layernorm     the two norms' outputs, the QKV and MLP (or router) inputs: 4sbh of the
//                   8sbh norm_and_gemm_inputs;
//     mla_up_proj   MLA's Q, K and V, rebuilt from the latents the up projections read
//                   (q rank + kv rank + rope per token, sharded like the norms); the context
//                   stays;
//     moe_act       per routed copy, the activation's output (the down projection's input),
//                   F_e of the 2F_e (GeLU) or 3F_e (SwiGLU) intermediates (/t);
//     mlp           a dense layer's MLP intermediates;
//     shared_experts  the shared experts' intermediates;
//     moe           the MoE block's router logits, dispatch buffers, expert and shared-expert
//                   activations (all of `mlp` and `router`).
//   Modules the layer lacks (moe on a dense layer) save nothing, as in Megatron.
// - Context parallelism splits the sequence: s is seq/cp in every term. Non-flash scores are
//   (seq/cp) x seq per head (local queries against all keys).
// - MoE layers. Attention, norms and masks as above. The router keeps its fp32 logits, 4·s·b·E
//   (replicated like the norms). Each token goes to top_k experts; with balanced routing a GPU
//   processes k·s·b token copies whatever ep is. Expert tensor parallelism equals tp (Megatron's
//   default), and the dispatcher gathers the tp group's tokens, so each copy keeps its expert
//   input 2h (whole), the expert MLP intermediates (4F_e or 6F_e)/t and its share of the expert
//   output 2h/t (kept by the combine step for the routing-probability gradient). A latent MoE
//   (MoeSpec::latent_size l) keeps l-wide rows instead of h-wide, plus the inputs of its two
//   projections: the combined l-wide rows and, quantized, the down projection's copy of h.
// - Precision. Activations are 2 bytes, except the inputs linears keep for their weight
//   gradient under fp8 and nvfp4 where the runtime keeps them quantized (Transformer Engine's
//   Linear, LayerNormLinear and GroupedLinear save the quantized column-wise input, 1 byte per
//   element for fp8, 0.5625 for nvfp4, block scales included; torchao's Float8Linear keeps
//   bf16; RuntimeTraits::quantized_gemm_inputs): the QKV and MLP inputs (the norms' outputs;
//   not the router's, a bf16 GEMM), the output projection's input (a quantized copy of the
//   context; the bf16 context stays for the attention backward unless core_attn is
//   recomputed), the down projection's input (the activation's output, dense and expert),
//   the experts' dispatched inputs and MLA's up-projection latents. The activation's input,
//   Q, K, V, norm inputs and the expert outputs stay bf16. Megatron's estimator (REFERENCE.md
//   1.5) counts bf16 throughout, so for fp8 plans ppsim sits below it.
// - Hybrid layers (ModelSpec::hybrid_layer_pattern) hold one block each behind one norm and
//   one residual: the norm's input 2sbh, its output (the block's GEMM input), one mask sbh,
//   and the block's own terms above (attention, MLP or MoE). A Mamba-2 layer, as Megatron's
//   default memory-efficient path (mamba_ssm mamba_split_conv1d_scan_combined) saves it: the
//   in_proj output [z, x, B, C, dt] (2D + 2GN + H wide, D = heads x head_dim, G groups of N
//   states, H heads) and the scan output (D) in bf16, the gated norm's output at the GEMM
//   input size (D); the conv1d output is rebuilt in the backward. Split by t with the heads.
// - torchtitan's selective recompute is its op policy (ActivationConfig::selective, model/
//   op_sac.h): the block's input, the outputs of every odd aten.mm (wq, wv, w1, w2 of a Llama
//   block), the attention output and logsumexp, and the reduce-scatter and all-to-all outputs;
//   for Llama 3 8B (h 4096, K 1024, F 14336, 32 heads) 2(4h + K + F) + 4*32 = 63,616 bytes per
//   token and layer, against Megatron's selective 2(4h + 2h + 2K) + 6F + 2h masks = 147,456.
// - Dropout masks (1 byte per element) are counted as the paper and Megatron's estimator count
//   them, even for models usually trained without dropout (ModelSpec has no dropout field).
//
// Pipeline ends:
// - Embedding (on the rank holding the first virtual stage): the int64 token ids, 8·s·b (each
//   tensor-parallel rank holds all of them), and the embedding-dropout mask s·b·h (split by t
//   under sequence parallelism).
// - Loss (on the rank holding the last virtual stage): the final norm's input and the output
//   layer's input, 2sbh each (split by t under sequence parallelism), and the fp32 logits that
//   Megatron's vocab-parallel cross-entropy turns into softmax in place and keeps for the
//   backward, 4·s·b·V/t with V the padded vocabulary. Transiently, the bf16 logits (forward) or
//   their bf16 gradient (backward) also exist, 2·s·b·V/t, for one microbatch at a time.
#pragma once

#include <cstdint>

#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// Element sizes used by the derivation above.
inline constexpr double kActivationElementBytes = 2;  // bf16/fp16 (also under fp8; see above).
inline constexpr double kDropoutMaskBytes = 1;        // torch bool/uint8 mask.
inline constexpr double kTokenIdBytes = 8;            // int64 token ids.
inline constexpr double kFp32Bytes = 4;               // logsumexp, router logits, loss logits.

// What the activation sizes depend on. Build it from a plan with activation_config().
struct ActivationConfig {
  int64_t seq_length = 0;        // Full training sequence length (before the cp split). > 0.
  int64_t micro_batch_size = 1;  // Sequences per microbatch. > 0.
  int64_t tp = 1;                // Tensor-parallel degree (also the expert tensor-parallel degree).
  int64_t cp = 1;                // Context-parallel degree; divides seq_length.
  int64_t ep = 1;                // Expert-parallel degree (the critical rank's load, MoE).
  bool sequence_parallel = false;  // Megatron sequence parallelism; ignored when tp == 1.
  Recompute recompute = Recompute::kNone;
  // Under selective recompute, the modules re-run (the plan's recompute_modules; 0 = core_attn,
  // plan.h recomputed_modules); what each saves: above.
  RecomputeModules recompute_modules = 0;
  // What selective recompute means on the plan's runtime: the modules above, or torchtitan's op
  // policy (model/op_sac.h: what it keeps is op_policy_saved_bytes).
  SelectiveRecompute selective = SelectiveRecompute::kModules;
  bool flash_attention = true;  // Fused/flash attention: no s^2 score matrix is saved.
  // Bytes per element a linear keeps of its input for the weight gradient: 2 (bf16), or the
  // quantized copy's 1 (fp8) or 0.5625 (nvfp4) where the runtime keeps that copy (header
  // "Precision"; RuntimeTraits::quantized_gemm_inputs).
  double gemm_input_bytes = kActivationElementBytes;
  // Bytes per logit element the loss's backward works in beside the saved fp32 probabilities
  // (RuntimeTraits::loss_working_bytes_per_logit: 2 for Megatron's fused cross entropy, 8 for
  // torchtitan's cross_entropy on fp32 logits).
  double loss_working_bytes_per_logit = kActivationElementBytes;
};

// The plan's activation settings (sequence length from effective_seq_length(); flash_attention
// unless the plan's attention kernel is unfused, plan.h attention_kernel()).
ActivationConfig activation_config(const Plan& plan, const ModelSpec& model);

// Bytes one transformer layer saves for one microbatch, by part. The parts add up to total().
// Under full recompute only layer_input is non-zero.
struct LayerActivationBytes {
  double norm_and_gemm_inputs = 0;  // Two norm inputs, the QKV and fc1 (or router) inputs:
                                    // 8sbh in bf16 (less quantized or under layernorm
                                    // recompute), split by t only with sequence parallelism.
  double dropout_masks = 0;         // The two residual dropout masks: 2sbh (split likewise).
  double attention = 0;             // Q, K, V and the context: sb(4Q + 4K)/t in bf16 (K/g
                                    // per rank when tp > g; the context also quantized, and
                                    // MLA under mla_up_proj: "Precision", above).
  double attention_core = 0;        // Non-flash: 5·a·s^2·b scores; flash: 4·a·s·b logsumexp;
                                    // 0 under selective recompute. Split by t.
  double mlp = 0;                   // Dense MLP intermediates, or the experts' (MoE).
  double router = 0;                // MoE router logits, fp32 (0 for dense layers).
  double mamba = 0;                 // A Mamba layer's in_proj output, scan output and
                                    // out_proj input: sb(2(2D + 2GN + H) + 2D + D')/t, with D'
                                    // the GEMM input bytes ("Hybrid layers", above).
  double layer_input = 0;           // Full recompute: the checkpointed layer input 2sbh.
  double op_policy = 0;             // Selective under torchtitan's op policy: all it keeps
                                    // (model/op_sac.h op_policy_saved_bytes); the rest are 0.

  double total() const {
    return norm_and_gemm_inputs + dropout_masks + attention + attention_core + mlp + router +
           mamba + layer_input + op_policy;
  }
};

// Bytes layer `layer_index` (0-based; MoE layers differ) saves for one microbatch on one GPU.
// REQUIRES: config.seq_length divisible by config.cp; tp divides the heads.
LayerActivationBytes layer_activation_bytes(const ModelSpec& model, const ActivationConfig& config,
                                            int64_t layer_index);

// Bytes the backward of one layer rebuilds beyond what `config.recompute` saved: the layer's
// full (no-recompute) activations minus its saved ones. It exists for one layer and one
// microbatch at a time; 0 without recompute.
double recompute_working_bytes(const ModelSpec& model, const ActivationConfig& config,
                               int64_t layer_index);

// Bytes the embedding saves per microbatch: token ids 8sb plus the dropout mask sbh (/t with SP).
double embedding_activation_bytes(const ModelSpec& model, const ActivationConfig& config);

// Bytes the final norm, output layer and cross-entropy save per microbatch:
// 4sbh (/t with SP) plus the fp32 softmax 4·s·b·V/t (V padded as Megatron pads it for tp).
double loss_activation_bytes(const ModelSpec& model, const ActivationConfig& config);

// What the loss works in alongside the saved fp32 softmax, for one microbatch at a time:
// loss_working_bytes_per_logit·s·b·V/t (2: the bf16 logits or their gradient; 8 under
// torchtitan: log_softmax's incoming and outgoing fp32 gradients).
double loss_working_bytes(const ModelSpec& model, const ActivationConfig& config);

}  // namespace ppsim
