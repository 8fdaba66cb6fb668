// The compute work of one GPU for one microbatch, as a list of ops per transformer layer.
//
// Each layer is broken into the kernels Megatron-LM runs (REFERENCE.md 1.5 structure):
//   input_norm, qkv_proj, rotary, attention_core, attn_out_proj, attn_residual_add,
//   post_attn_norm, then either the dense MLP
//     mlp_up_gate (swiglu) | mlp_up (gelu), swiglu_act | gelu_act, mlp_down
//   or the MoE block
//     moe_router, moe_permute, moe_expert_up_gate | moe_expert_up, moe_expert_act,
//     moe_expert_down, moe_expert_bias (experts with biases only), moe_unpermute
//   and mlp_residual_add.
// A hybrid model's layer (ModelSpec::hybrid_layer_pattern) holds one block behind its own
// input_norm: the attention block without post_attn_norm ('*'), the dense MLP or the MoE block
// with mlp_residual_add ('-', 'E'), or a Mamba-2 mixer ('M'):
//   input_norm, mamba_in_proj, mamba_conv1d, mamba_scan, mamba_gated_norm, mamba_out_proj,
//   mamba_residual_add
// (in and out projections split like qkv_proj and attn_out_proj, the heads and groups over tp;
// layer_ops.cc add_mamba_block gives each op's traffic). With cp > 1 the mixer runs
// Megatron-Core's all-to-all context parallelism (MambaContextParallel): in_proj on the rank's
// T tokens, then one all-to-all per in_proj output (z, x, B, C, dt) over the cp group trades
// them for all b*s tokens of 1/cp of the heads, the conv1d and scan run over the whole
// sequence, and y goes back to the sequence split before the norm (Op::context_all_to_alls).
// When a tp rank holds fewer groups than cp, each group's B and C are repeated to the cp ranks
// that share it, and each of those ranks scans its heads against the whole group.
// The embedding is "embedding" (+ "position_embedding" for learned positions); the head is
// final_norm, output_proj, cross_entropy.
//
// Every number is per GPU, already divided by the plan's parallelism:
//   T  = b*s/cp tokens enter each GEMM (a cp rank holds s/cp query tokens; GEMMs are split
//        over tp by columns or rows, so every tp rank sees all T tokens);
//   Tn = T/tp tokens go through norms and residual adds with sequence parallelism, T without;
//   heads a/tp per GPU; kv heads g/tp, or 1 (replicated) when g < tp; F/tp of the MLP.
// FLOPs count a multiply-add as 2. Each op has three passes: forward (F), input gradient (B,
// "dgrad") and weight gradient (W, "wgrad"), so zero-bubble schedules can split B from W:
//   GEMM  Y[m,n] = X[m,k] W[k,n]:  F = 2mnk, B = dX = dY W^T: 2mnk, W = dW = X^T dY: 2mnk.
//   Causal flash attention per GPU: F = 4*b*(s/cp)*s*d*(a/tp)/2 (the /2 is the causal mask,
//     the 4 is QK^T plus PV at 2 FLOPs each), i.e. 2*b*s^2*d*a/(cp*tp); B = 2.5 F, W = 0.
//     2.5x is flash attention's backward (five matmuls against the forward's two, because it
//     recomputes the scores blockwise instead of storing them); Dao-AILab/flash-attention
//     benchmarks/benchmark_flash_attention.py: flops(mode="bwd") = 2.5 * flops(mode="fwd").
//     Megatron's model-FLOPs formula (model_stats.h) counts 2 F for the backward instead,
//     so hardware FLOPs here exceed model FLOPs by 0.5 F per layer.
//   Context parallelism with Megatron's load balancing (each rank holds chunks i and
//     2cp-1-i of 2cp) gives every rank exactly 1/cp of the causal work, so the formula is exact.
//   Memory-bound ops carry rough elementwise FLOP counts (a few per element); only their
//     bytes matter for time, and Megatron's formula leaves them out.
// Bytes are HBM traffic per pass (reads + writes). Activations are 2 bytes (bf16/fp16; with
// fp8, Transformer Engine feeds GEMMs fp8 operands, 1 byte, and with nvfp4 NVFP4 operands,
// 0.5625 bytes with their block scales, but writes bf16 outputs and keeps norms, attention,
// elementwise ops and the output layer in bf16). Weight gradients accumulate into fp32 main
// grads (Megatron's gradient_accumulation_fusion): 8 bytes read+write per weight in W.
//
// MoE (Megatron's alltoall token dispatcher with Transformer Engine's grouped experts):
//   each GPU routes its Tn = T/tp tokens (Megatron requires sequence parallelism for MoE with
//   tp > 1, so this holds whatever the flag), permutes them into R = Tn*top_k rows and
//   all-to-alls them over the ep group; with expert tensor parallelism etp > 1 (Plan::etp,
//   default tp) the received rows are all-gathered over the etp group before the experts and
//   reduce-scattered after them (expert_gather_bytes). The critical ep rank, which every
//   all-to-all waits for, receives lambda*R rows: lambda = 1 + (imbalance - 1)/(E/ep) for
//   dropless routing (one hot expert at moe.imbalance x the mean beside average ones), or
//   capacity_factor with token drop (each expert padded to capacity). Its E/ep local experts
//   each see m = lambda*R*etp/(E/ep) rows (tokens per expert = tokens x top_k / experts, per
//   microbatch, times ep*etp/tp and lambda) and hold F_e/etp of their MLP; TE's GroupedLinear
//   launches one GEMM per local expert and pass. Shared experts run as a dense MLP of their
//   summed width on every token, split by tp. The router (h x E, replicated) and the
//   permutes are not in Megatron's FLOPs formula; their kernel counts follow Megatron's code
//   (layer_ops.cc). The token passes around the all-to-alls depend on the dispatcher
//   (OpShape::moe_dispatcher, model/moe_dispatch.h):
//     alltoall  moe_permute reads the Tn rows and writes R in expert order before the
//               dispatch and, with several local experts, sorts the received chunks by expert
//               after it (read + write lambda*R); moe_unpermute mirrors both before and after
//               the combine (Megatron's MoEAlltoAllTokenDispatcher, sort_chunks_by_idxs);
//     deepep    DeepEP takes the rows as they are and each GPU expands a received token to its
//               local experts after the dispatch: read the U = share*lambda*R received rows
//               (one per token and destination GPU, destination_gpu_share), write lambda*R;
//               moe_unpermute sums them back to U rows (probs applied) before the combine;
//     hybridep  HybridEP permutes inside its dispatch and unpermutes inside its combine
//               (deep_ep hybrid_ep dispatch_with_permute / combine_with_unpermute): no pass
//               over the rows of its own, only the preprocess kernels.
//   Megatron-LM's moe_perf baselines (H100, ep 8, 4,096 tokens; tests/data/kernels/
//   megatron_moe_perf_h100.json) measure these: a DeepSeek-like layer (32 experts, 4 per GPU)
//   is 0.76x as long forward under HybridEP as under the alltoall, a Mixtral-like one (one
//   expert per GPU, nothing to sort or deduplicate) 1.00x.
// MLA (ModelSpec::mla): q and kv down projections replicated on every tp rank, up projections
// and the output projection split by heads; the attention core has qk = nope + rope and v
// head dims. Sliding windows shorten the keys each query sees (model_stats.h
// mean_keys_per_query).
//
// Recompute (Plan::recompute) marks ops whose forward runs again inside backward, before B:
//   selective: the attention core only. Megatron's "core_attn" checkpoint re-runs it
//     (attention.py _checkpointed_attention_forward). Korthikanti et al. 2022 chose it because
//     its activations are large (the s x s scores, softmax and dropout mask) and its FLOPs
//     small. Flash attention never stores the scores: its backward already recomputes them
//     blockwise (the 2.5x above), keeping only Q, K, V, the output and a per-row log-sum-exp.
//     So with flash attention, selective recompute is nearly free in time (one attention
//     forward, small next to the layer's GEMMs when s << 6h) and also saves little memory;
//     the memory model (memory_model.h) decides what it saves.
//     Other modules (Plan::recompute_modules, Megatron-Core --recompute-modules) re-run their
//     ops: layernorm input_norm and post_attn_norm; mla_up_proj the MLA up projections
//     (mla_q_up or mla_q_proj, mla_kv_up) and rotary; moe_act moe_expert_act; mlp the dense
//     MLP (mlp_up_gate | mlp_up, the activation, mlp_down); shared_experts moe_shared_*; moe
//     the whole MoE block (router, permutes, experts, shared experts; its all-to-alls re-run
//     too, cost/chunk_price.h). recompute_module_of() names each op's module.
//   full: every op of the layer (Megatron --recompute-granularity full, one layer per
//     checkpoint); embedding and head are never recomputed.
// Dropout is not modelled: ModelSpec has no dropout rate and current LLM recipes use 0; a
// nonzero rate would fuse into the residual adds (Megatron's bias_dropout_add) with a mask.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// How an op's time is estimated (cost_model.h).
enum class OpClass {
  kGemm,         // Tensor-core matmul: FLOPs at a shape-dependent efficiency.
  kAttention,    // Fused (flash) attention: FLOPs at the attention efficiency.
  kMemoryBound,  // Elementwise, norm, gather/scatter, softmax: bytes over HBM bandwidth.
};

// The shape of a (batched) GEMM in the forward pass: `batch` independent products
// Y[m,n] = X[m,k] W[k,n]. Dimensions are averages and may be fractional (tokens per expert).
// B computes dX[m,k] from dY[m,n] (shape m,k,n); W computes dW[k,n] (shape k,n,m).
struct GemmShape {
  double m = 0;      // Output rows: tokens (per expert for MoE).
  double n = 0;      // Output columns: the weight's output width on this GPU.
  double k = 0;      // Reduction dimension: the weight's input width on this GPU.
  double batch = 1;  // Independent GEMMs of this shape (local experts); 1 otherwise.
};

// The shape of a fused attention call on one GPU.
struct AttentionShape {
  double batch_heads = 0;  // b * query heads on this GPU.
  double q_tokens = 0;     // Query tokens per sequence on this GPU: s/cp.
  double kv_tokens = 0;    // Key/value tokens each query block can see: s (causal).
  double head_dim = 0;     // d.
  // Keys one query tile sweeps in one kernel call, on average: the keys a query sees (s/2
  // causal, about the window under a sliding window) spread over the cp ring's calls. Sets how
  // far the kernel's per-tile prologue and epilogue are amortised (cost_model.h).
  double keys_per_call = 0;
};

// One kernel (or fused group of kernels) of the step, with its work per pass.
// Invariant: a pass with no kernels has zero FLOPs and bytes.
struct Op {
  std::string_view name;  // Static name, e.g. "qkv_proj" (header list above).
  OpClass op_class = OpClass::kMemoryBound;
  Precision precision = Precision::kBf16;      // Math precision; attention and memory-bound ops
                                               // never run in fp8 or nvfp4 (bf16 instead).
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // kGemm at fp8: how its casts scale.
  GemmShape gemm;                              // kGemm only: the forward shape.
  AttentionShape attention;                    // kAttention only.

  double flops_fwd = 0;  // FLOP in the forward pass.
  double flops_b = 0;    // FLOP in the input-gradient pass.
  double flops_w = 0;    // FLOP in the weight-gradient pass (0 for ops without weights).
  double bytes_fwd = 0;  // HBM bytes read + written, forward.
  double bytes_b = 0;    // HBM bytes read + written, input gradient.
  double bytes_w = 0;    // HBM bytes read + written, weight gradient.
  int kernels_fwd = 0;   // Kernel launches per pass (each pays CostModel's launch overhead).
  int kernels_b = 0;
  int kernels_w = 0;

  double parameters = 0;  // Parameters this GPU holds for this op (weights + biases).
  // moe_permute: bytes this GPU dispatches in the ep all-to-all after it (nccl-tests "size":
  // the whole send buffer, of which (ep-1)/ep leaves the GPU); moe_unpermute: the same for the
  // combine all-to-all before it. 0 for every other op.
  double all_to_all_bytes = 0;
  // moe_permute: bytes the expert-tensor-parallel all-gather after the dispatch outputs (the
  // received rows of all etp ranks); moe_unpermute: the reduce-scatter before the combine.
  // 0 unless etp > 1.
  double expert_gather_bytes = 0;
  // Mamba context parallelism (cp > 1, header): the all-to-alls over the cp group before this
  // op in the forward (mamba_conv1d: the five of in_proj's outputs; mamba_gated_norm: y's one)
  // and their summed send buffers, bytes (nccl-tests "size", (cp-1)/cp of which leaves the
  // GPU). The backward runs the mirror. 0 for every other op.
  int context_all_to_alls = 0;
  double context_all_to_all_bytes = 0;
  bool recomputed = false;  // Forward re-run inside backward under the shape's recompute.
  // Sequence parallelism (tp > 1): the tp group this GEMM's activation operand is all-gathered
  // over before it runs, 1 where none is: the forward input X of the column-parallel linears
  // (qkv_proj, mlp_up_gate / mlp_up, moe_shared_up) and the backward output gradient dY of the
  // row-parallel ones (attn_out_proj, mlp_down, moe_shared_down). A runtime that quantizes
  // before the gather (Transformer Engine) casts only this GPU's 1/tp shard (cost_model.h).
  int64_t input_gathered_over = 1;
  int64_t grad_gathered_over = 1;
};

// Of moe_permute's forward kernels, those of the dispatcher's preprocess (Megatron
// MoELayer.preprocess: the per-expert token counts, their all-gather over the tp x ep group, the
// split sums and their device-to-host copy), which a moe-router CUDA graph captures; the other
// two are the fused permute of the tokens and of their probabilities.
inline constexpr int kMoePreprocessKernels = 4;

// The largest op list one call produces (an MLA layer with shared experts has 23 ops).
inline constexpr int kMaxOps = 28;

// A fixed-capacity list of ops: no heap allocation, so building one in the planner's inner
// loop costs only arithmetic. Iterates in execution order of the forward pass.
class OpList {
 public:
  // REQUIRES: size() < kMaxOps.
  void push_back(const Op& op);
  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Op& operator[](int i) const { return ops_[i]; }
  Op& operator[](int i) { return ops_[i]; }
  const Op* begin() const { return ops_.data(); }
  const Op* end() const { return ops_.data() + size_; }
  Op* begin() { return ops_.data(); }
  Op* end() { return ops_.data() + size_; }
  // The first op named `name`, or nullptr.
  const Op* find(std::string_view name) const;

 private:
  std::array<Op, kMaxOps> ops_{};
  int size_ = 0;
};

// How one GPU runs a layer: the microbatch, the sequence and the parallel split.
struct OpShape {
  int64_t micro_batch_size = 1;            // b, sequences per microbatch. >= 1.
  int64_t seq_length = 0;                  // s, the full training sequence (before cp). Required.
  int64_t tp = 1;                          // Tensor-parallel degree; divides the attention heads.
  int64_t cp = 1;                          // Context-parallel degree; divides s.
  int64_t ep = 1;                          // Expert-parallel degree; divides the expert count.
  int64_t etp = 0;                         // Expert tensor-parallel degree; 0 = tp.
  bool sequence_parallel = false;          // Norms and residuals on s/tp tokens (tp > 1).
  Precision precision = Precision::kBf16;  // GEMM precision.
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // How fp8 GEMMs scale (plan.h fp8_recipe_in_force).
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;  // Which token passes run (above).
  Recompute recompute = Recompute::kNone;  // Which forwards re-run inside backward...
  RecomputeModules recompute_modules = 0;  // ...and which parts under selective (Plan's; 0 =
                                           // core_attn: plan.h recomputed_modules).
};

// The busiest expert-parallel rank's tokens over the mean (the critical rank every all-to-all
// waits for): token drop pads every expert to capacity_factor x the mean; dropless routing puts
// one hot expert (moe.imbalance x the mean) beside E/ep - 1 average ones on its rank:
// 1 + (imbalance - 1) / (E/ep).
double moe_critical_rank_load(const MoeSpec& moe, int64_t ep);

// Bytes per GEMM operand element at `precision`: fp8 1, NVFP4 half a byte plus one E4M3 scale
// per 16 elements (0.5625), else 2.
double gemm_operand_bytes(Precision precision);

// The selective-recompute module an op of a layer belongs to (layer_ops.h "Recompute"), or
// nullopt for ops no module re-runs (projections, residual adds, qk_norm). An op can sit in two
// modules (a shared expert's in moe and shared_experts): the bits of both.
RecomputeModules recompute_modules_of(const Op& op, bool mla);

// The OpShape of a plan: its degrees, micro-batch size, sequence length (the plan's or the
// model's), precision and recompute. Sequence parallelism only counts with tp > 1.
OpShape op_shape(const Plan& plan, const ModelSpec& model);

// The ops of transformer layer `layer_index` (0-based; MoE layers differ) on one GPU.
// REQUIRES: the shape fits the model (tp divides the heads, cp divides s, ep divides the
// experts); plan validation guarantees it, and a violation is a bug (PPSIM_CHECK).
OpList layer_ops(const ModelSpec& model, const OpShape& shape, int64_t layer_index);

// The first pipeline stage's extra ops: the vocab-parallel token embedding (V_pad/tp rows on
// each GPU, V_pad = padded_vocab_size(V, tp)) and, for learned positions, the position table.
OpList embedding_ops(const ModelSpec& model, const OpShape& shape);

// The last pipeline stage's extra ops: final_norm, output_proj (V_pad/tp columns; holds no
// parameters when tied, since the weight belongs to the embedding: with pp > 1 Megatron keeps
// a copy on the last stage, which the memory model adds) and the vocab-parallel cross_entropy.
OpList head_ops(const ModelSpec& model, const OpShape& shape);

// One multi-token-prediction layer's extra ops beside its transformer layer and output head
// (DeepSeek-V3 section 2.2, as Megatron's MTP block runs them): RMS norms of the hidden state
// and of the next token's embedding, and their [2h -> h] projection (column-parallel over tp).
OpList mtp_projection_ops(const ModelSpec& model, const OpShape& shape);

// Sums over an op list (a layer, the embedding or the head) on one GPU.
struct OpTotals {
  double flops_fwd = 0;
  double flops_b = 0;
  double flops_w = 0;
  double recompute_flops = 0;  // Forward FLOPs re-run inside backward (ops marked recomputed).
  double bytes_fwd = 0;
  double bytes_b = 0;
  double bytes_w = 0;
  double parameters = 0;
  double all_to_all_bytes = 0;     // Dispatch plus combine, per the field's definition.
  double expert_gather_bytes = 0;  // ETP all-gather plus reduce-scatter, per the field.
  int kernels = 0;                 // Launches over all three passes (recompute excluded).

  double flops_total() const { return flops_fwd + flops_b + flops_w; }
};

OpTotals sum_ops(const OpList& ops);

std::string_view op_class_name(OpClass op_class);

}  // namespace ppsim
