#include "simulator/model/layer_ops.h"

#include <algorithm>

#include "simulator/model/model_stats.h"
#include "simulator/model/moe_dispatch.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// Bytes per element of activations between ops (bf16/fp16, also under fp8 recipes).
constexpr double kActivationBytes = 2;
// fp32 main-grad accumulation in W: read 4 + write 4 bytes per weight element.
constexpr double kMainGradBytes = 8;
// Rough elementwise FLOPs per element (forward, backward). Only the FLOPs totals use them.
constexpr double kRmsNormFlops = 4;             // square, sum, scale, gamma
constexpr double kLayerNormFlops = 7;           // mean, centre, square, sum, scale, gamma, beta
constexpr double kSwigluFlops = 5;              // per output: sigmoid (~3), x*sigmoid, times up
constexpr double kGeluFlops = 8;                // tanh approximation
constexpr double kGegluFlops = kGeluFlops + 1;  // the tanh GELU of the gate, times up
constexpr double kSquaredReluFlops = 2;         // max(x, 0), squared
constexpr double kRotaryFlops = 3;              // x*cos + rotate(x)*sin
constexpr double kCrossEntropyFlopsFwd = 5;     // max, subtract, exp, sum, divide
constexpr double kCrossEntropyFlopsBwd = 3;     // subtract one-hot, scale, cast
// Megatron's vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py)
// copies the bf16 logits to fp32 and sweeps them in place: cast 2+4, max 4, subtract 8,
// exp 8, sum 4, divide 8 = 38 bytes per logit unfused; --cross-entropy-loss-fusion merges
// some passes, so 30. Backward rewrites the saved softmax in place (8), scales it (8, partly
// fused) and casts it to bf16 for the GEMM (4+2): about 14.
constexpr double kCrossEntropyBytesFwd = 30;
constexpr double kCrossEntropyBytesBwd = 14;
// fp32 bytes of an SSD chunk state element.
constexpr double kStateBytes = 4;

// Attention, norms and elementwise ops stay in 16-bit under fp8 and nvfp4 recipes.
Precision non_fp8(Precision precision) {
  return precision == Precision::kFp16 ? Precision::kFp16 : Precision::kBf16;
}

// Sizes every op of a layer shares.
struct Dims {
  double b = 0;          // Micro-batch size.
  double s = 0;          // Full sequence length.
  double tokens = 0;     // T = b*s/cp: tokens through each GEMM on this GPU.
  double sp_tokens = 0;  // Tn: tokens through norms and residual adds.
  double h = 0;
  double head_dim = 0;
  double heads = 0;     // Query heads on this GPU.
  double kv_heads = 0;  // Key/value heads on this GPU (replicated when g < tp).
  double q_width = 0;   // heads * head_dim.
  double kv_width = 0;  // kv_heads * head_dim.
  double tp = 1;
  double cp = 1;
  double ep = 1;
  double etp = 1;  // Expert tensor parallelism (OpShape::etp).
  bool sp = false;
  Precision gemm_precision = Precision::kBf16;
  Precision other_precision = Precision::kBf16;
};

Dims make_dims(const ModelSpec& model, const OpShape& shape) {
  PPSIM_CHECK(shape.micro_batch_size >= 1 && shape.seq_length >= 1, "empty microbatch");
  PPSIM_CHECK(shape.tp >= 1 && shape.cp >= 1 && shape.ep >= 1, "degrees must be >= 1");
  PPSIM_CHECK(shape.seq_length % shape.cp == 0, "cp must divide the sequence length");
  PPSIM_CHECK(model.num_attention_heads % shape.tp == 0, "tp must divide the attention heads");
  PPSIM_CHECK(model.num_kv_heads % shape.tp == 0 || shape.tp % model.num_kv_heads == 0,
              "tp and the kv heads must divide one another");
  Dims d;
  d.b = static_cast<double>(shape.micro_batch_size);
  d.s = static_cast<double>(shape.seq_length);
  d.tp = static_cast<double>(shape.tp);
  d.cp = static_cast<double>(shape.cp);
  d.ep = static_cast<double>(shape.ep);
  d.etp = static_cast<double>(shape.etp > 0 ? shape.etp : shape.tp);
  d.sp = shape.sequence_parallel && shape.tp > 1;
  d.tokens = d.b * d.s / d.cp;
  d.sp_tokens = d.sp ? d.tokens / d.tp : d.tokens;
  d.h = static_cast<double>(model.hidden_size);
  d.head_dim = static_cast<double>(model.head_dim);
  d.heads = static_cast<double>(model.num_attention_heads) / d.tp;
  d.kv_heads = std::max(1.0, static_cast<double>(model.num_kv_heads) / d.tp);
  d.q_width = d.heads * d.head_dim;
  d.kv_width = d.kv_heads * d.head_dim;
  d.gemm_precision = shape.precision;
  d.other_precision = non_fp8(shape.precision);
  return d;
}

double norm_parameters(const ModelSpec& model) {
  return model.norm == Norm::kRmsNorm ? model.hidden_size : 2.0 * model.hidden_size;
}

// Y[m,n] = X[m,k] W[k,n], `batch` times, with `bias` parameters beside the weights.
Op gemm_op(std::string_view name, double m, double n, double k, double batch, Precision precision,
           double bias) {
  Op op;
  op.name = name;
  op.op_class = OpClass::kGemm;
  op.precision = precision;
  op.gemm = GemmShape{m, n, k, batch};
  double flops = 2.0 * m * n * k * batch;
  op.flops_fwd = flops;
  op.flops_b = flops;
  op.flops_w = flops;
  double in = gemm_operand_bytes(precision);
  op.bytes_fwd = batch * ((m * k + k * n) * in + m * n * kActivationBytes);
  op.bytes_b = batch * ((m * n + n * k) * in + m * k * kActivationBytes);
  op.bytes_w = batch * ((m * k + m * n) * in + k * n * kMainGradBytes);
  op.kernels_fwd = 1;
  op.kernels_b = 1;
  op.kernels_w = 1;
  op.parameters = batch * (k * n + bias);
  return op;
}

// A memory-bound op with forward and input-gradient work only.
Op memory_op(std::string_view name, Precision precision, double flops_fwd, double bytes_fwd,
             double flops_b, double bytes_b) {
  Op op;
  op.name = name;
  op.op_class = OpClass::kMemoryBound;
  op.precision = precision;
  op.flops_fwd = flops_fwd;
  op.bytes_fwd = bytes_fwd;
  op.flops_b = flops_b;
  op.bytes_b = bytes_b;
  op.kernels_fwd = 1;
  op.kernels_b = 1;
  return op;
}

// Norm over `tokens` rows of width h. Backward reads x and dy and writes dx; the gamma
// (and beta) gradient is reduced by a second kernel of the same pass, so it counts in B.
Op norm_op(std::string_view name, const ModelSpec& model, const Dims& d, double tokens) {
  double elements = tokens * d.h;
  double per_element = model.norm == Norm::kRmsNorm ? kRmsNormFlops : kLayerNormFlops;
  Op op =
      memory_op(name, d.other_precision, per_element * elements, 2 * elements * kActivationBytes,
                2 * per_element * elements, 3 * elements * kActivationBytes);
  op.kernels_b = 2;
  op.parameters = norm_parameters(model);
  return op;
}

// out = x + branch over Tn tokens; backward sums the two incoming gradients.
Op residual_op(std::string_view name, const Dims& d) {
  double elements = d.sp_tokens * d.h;
  return memory_op(name, d.other_precision, elements, 3 * elements * kActivationBytes, elements,
                   3 * elements * kActivationBytes);
}

// The MLP activation over `outputs` output elements: a gated one (swiglu, geglu) reads two
// inputs per output (gate and up), gelu one; backward reads the saved inputs and dy and writes
// dinputs.
Op activation_op(std::string_view name, const ModelSpec& model, const Dims& d, double outputs) {
  if (is_gated(model.activation)) {
    double flops = model.activation == Activation::kSwiglu ? kSwigluFlops : kGegluFlops;
    return memory_op(name, d.other_precision, flops * outputs, 3 * outputs * kActivationBytes,
                     2 * flops * outputs, 5 * outputs * kActivationBytes);
  }
  const double flops =
      model.activation == Activation::kSquaredRelu ? kSquaredReluFlops : kGeluFlops;
  return memory_op(name, d.other_precision, flops * outputs, 2 * outputs * kActivationBytes,
                   2 * flops * outputs, 3 * outputs * kActivationBytes);
}

// The dense MLP's activation op name.
std::string_view activation_op_name(Activation activation) {
  switch (activation) {
    case Activation::kSwiglu:
      return "swiglu_act";
    case Activation::kGeglu:
      return "geglu_act";
    case Activation::kSquaredRelu:
      return "squared_relu_act";
    case Activation::kGelu:
      break;
  }
  return "gelu_act";
}

double gated_factor(const ModelSpec& model) { return is_gated(model.activation) ? 2.0 : 1.0; }

Op attention_op(const ModelSpec& model, const Dims& d, const OpShape& shape, int64_t layer) {
  Op op;
  op.name = "attention_core";
  op.op_class = OpClass::kAttention;
  op.precision = d.other_precision;
  // QK^T and PV at 2 FLOPs per multiply-add over the keys a query sees on average: s/2 causal
  // (4 * b*heads * (s/cp) * s * d / 2), w - w^2/2s under a sliding window; MLA's values are
  // v_head_dim wide. See the header for the cp balance.
  const double keys = mean_keys_per_query(shape.seq_length, model.attention_window(layer));
  // Under cp a query's keys are split over the ring's calls, one per chunk of s/(2 cp) keys
  // they reach (all cp calls for full causal attention, one for a short window).
  const double calls = std::clamp(keys / (d.s / (2 * d.cp)), 1.0, d.cp);
  op.attention = AttentionShape{d.b * d.heads, d.s / d.cp, d.s, d.head_dim, keys / calls};
  const double v_dim = model.mla ? static_cast<double>(model.mla->v_head_dim) : d.head_dim;
  op.flops_fwd =
      2.0 * op.attention.batch_heads * op.attention.q_tokens * keys * (d.head_dim + v_dim);
  op.flops_b = 2.5 * op.flops_fwd;
  double q = d.tokens * d.q_width;                // Q, O, dO, dQ elements.
  double kv = d.b * d.s * d.kv_width;             // K or V elements; cp's ring passes the whole
                                                  // sequence's K and V through every rank.
  double lse = d.b * d.heads * (d.s / d.cp) * 4;  // fp32 log-sum-exp per query row.
  op.bytes_fwd = (2 * q + 2 * kv) * kActivationBytes + lse;
  op.bytes_b = (4 * q + 4 * kv) * kActivationBytes + lse;
  // Megatron's cp runs one flash call per ring step; flash-attention's backward launches
  // three kernels (dot(dO, O) preprocess, the main dq/dk/dv kernel, the dQ conversion).
  op.kernels_fwd = static_cast<int>(shape.cp);
  op.kernels_b = 3 * static_cast<int>(shape.cp);
  return op;
}

// Multi-head latent attention (DeepSeek-V2/V3; Megatron's MLASelfAttention): the down
// projections (h -> q rank, h -> kv rank + rope) are replicated on every tp rank, the up
// projections and the output projection are split by heads like qkv_proj and attn_out_proj.
void add_mla_projections(const ModelSpec& model, const Dims& d, OpList& ops) {
  const MlaSpec& mla = *model.mla;
  const double heads = d.heads;
  const double qk = static_cast<double>(mla.qk_head_dim());
  const double kv_rank = static_cast<double>(mla.kv_lora_rank);
  const double rope = static_cast<double>(mla.qk_rope_head_dim);
  if (mla.q_lora_rank > 0) {
    const double q_rank = static_cast<double>(mla.q_lora_rank);
    ops.push_back(gemm_op("mla_q_down", d.tokens, q_rank, d.h, 1, d.gemm_precision, 0));
    Op q_norm = norm_op("mla_q_norm", model, d, d.tokens);
    q_norm.bytes_fwd *= q_rank / d.h;
    q_norm.bytes_b *= q_rank / d.h;
    q_norm.parameters = q_rank;
    ops.push_back(q_norm);
    ops.push_back(gemm_op("mla_q_up", d.tokens, heads * qk, q_rank, 1, d.gemm_precision, 0));
  } else {
    ops.push_back(gemm_op("mla_q_proj", d.tokens, heads * qk, d.h, 1, d.gemm_precision, 0));
  }
  ops.push_back(gemm_op("mla_kv_down", d.tokens, kv_rank + rope, d.h, 1, d.gemm_precision, 0));
  Op kv_norm = norm_op("mla_kv_norm", model, d, d.tokens);
  kv_norm.bytes_fwd *= kv_rank / d.h;
  kv_norm.bytes_b *= kv_rank / d.h;
  kv_norm.parameters = kv_rank;
  ops.push_back(kv_norm);
  const double kv_up = heads * static_cast<double>(mla.qk_nope_head_dim + mla.v_head_dim);
  ops.push_back(gemm_op("mla_kv_up", d.tokens, kv_up, kv_rank, 1, d.gemm_precision, 0));
}

void add_attention_block(const ModelSpec& model, const OpShape& shape, const Dims& d, int64_t layer,
                         OpList& ops) {
  bool bias = model.linear_bias;
  ops.push_back(norm_op("input_norm", model, d, d.sp_tokens));
  if (model.mla) {
    add_mla_projections(model, d, ops);
    // Rotary on the queries' rope part and the one shared rope key.
    double elements = d.tokens * (d.heads + 1) * static_cast<double>(model.mla->qk_rope_head_dim);
    ops.push_back(memory_op("rotary", d.other_precision, kRotaryFlops * elements,
                            2 * elements * kActivationBytes, kRotaryFlops * elements,
                            2 * elements * kActivationBytes));
    ops.push_back(attention_op(model, d, shape, layer));
    double out_width = d.heads * static_cast<double>(model.mla->v_head_dim);
    ops.push_back(
        gemm_op("attn_out_proj", d.tokens, d.h, out_width, 1, d.gemm_precision, bias ? d.h : 0));
    ops.push_back(residual_op("attn_residual_add", d));
    if (!model.is_hybrid()) ops.push_back(norm_op("post_attn_norm", model, d, d.sp_tokens));
    return;
  }
  double qkv_width = d.q_width + 2 * d.kv_width;
  ops.push_back(gemm_op("qkv_proj", d.tokens, qkv_width, d.h, 1, d.gemm_precision,
                        bias || model.qkv_bias ? qkv_width : 0));
  if (model.qk_norm) {
    // RMSNorm over each query and key head (Qwen3): a norm of width head_dim per head.
    double elements = d.tokens * (d.q_width + d.kv_width);
    Op qk = memory_op("qk_norm", d.other_precision, kRmsNormFlops * elements,
                      2 * elements * kActivationBytes, 2 * kRmsNormFlops * elements,
                      3 * elements * kActivationBytes);
    qk.kernels_fwd = 2;
    qk.kernels_b = 4;
    qk.parameters = 2 * d.head_dim;
    ops.push_back(qk);
  }
  if (model.position_embedding == PositionEmbedding::kRope) {
    double elements = d.tokens * (d.q_width + d.kv_width);
    ops.push_back(memory_op("rotary", d.other_precision, kRotaryFlops * elements,
                            2 * elements * kActivationBytes, kRotaryFlops * elements,
                            2 * elements * kActivationBytes));
  }
  ops.push_back(attention_op(model, d, shape, layer));
  // Row-parallel: the output bias (h) is whole on every tp rank.
  ops.push_back(
      gemm_op("attn_out_proj", d.tokens, d.h, d.q_width, 1, d.gemm_precision, bias ? d.h : 0));
  ops.push_back(residual_op("attn_residual_add", d));
  if (!model.is_hybrid()) ops.push_back(norm_op("post_attn_norm", model, d, d.sp_tokens));
}

// Mamba context parallelism's `count` all-to-alls of `elements` bf16 elements in all, before
// `op` in the forward (mirrored in the backward), and the copies around them: each tensor into
// the send layout and out of the load-balanced chunk order, two read-and-write passes over the
// elements each way, in `copy_kernels` launches.
void add_context_all_to_alls(Op& op, int count, double elements, int copy_kernels) {
  op.context_all_to_alls = count;
  op.context_all_to_all_bytes = elements * kActivationBytes;
  op.bytes_fwd += 4 * elements * kActivationBytes;
  op.bytes_b += 4 * elements * kActivationBytes;
  op.kernels_fwd += copy_kernels;
  op.kernels_b += copy_kernels;
}

// A Mamba-2 mixer (model_spec.h MambaSpec) as Megatron-Core's MambaMixer runs it on its
// default memory-efficient path (mamba_ssm's mamba_split_conv1d_scan_combined): heads and
// groups split over tp, T tokens per GPU through the projections; with cp > 1 the conv1d and
// scan see all b*s tokens of 1/cp of the heads (header, MambaContextParallel).
void add_mamba_block(const ModelSpec& model, const Dims& d, OpList& ops) {
  const MambaSpec& mamba = *model.mamba;
  const auto tp = static_cast<int64_t>(d.tp);
  const auto cp = static_cast<int64_t>(d.cp);
  PPSIM_CHECK(!mamba_split_problem(mamba, tp, cp).has_value(),
              "tp and cp must split the Mamba heads and groups");
  const bool bias = model.linear_bias;
  MambaSpec local_tp = mamba;  // This tp rank's heads and groups (the projections, the norm).
  local_tp.num_heads = mamba.num_heads / tp;
  local_tp.num_groups = mamba.num_groups / tp;
  // The conv1d's and scan's heads and groups on this GPU: 1/cp of the tp rank's, a group
  // repeated to the cp/groups ranks that share it when the tp rank holds fewer than cp.
  const int64_t group_repeat = local_tp.num_groups < cp ? cp / local_tp.num_groups : 1;
  MambaSpec local = local_tp;
  local.num_heads = local_tp.num_heads / cp;
  local.num_groups = local_tp.num_groups * group_repeat / cp;
  const double scan_tokens = d.tokens * d.cp;  // The whole sequence of b sequences.
  const double heads = static_cast<double>(local.num_heads);
  const double inner = static_cast<double>(local.inner_width());
  const double conv = static_cast<double>(local.conv_width());
  const double in_width = static_cast<double>(local_tp.in_proj_width());
  ops.push_back(norm_op("input_norm", model, d, d.sp_tokens));
  ops.push_back(gemm_op("mamba_in_proj", d.tokens, in_width, d.h, 1, d.gemm_precision,
                        bias ? in_width : 0));
  // Depthwise causal conv1d and SiLU over x, B and C: read and write each channel (the k taps
  // hit in cache). The backward re-runs it (the memory-efficient path keeps only in_proj's
  // output), then reads the input and dy and writes dx, the weight and bias gradients
  // reduced in the same kernel.
  const double conv_elements = scan_tokens * conv;
  const double taps = static_cast<double>(mamba.conv_kernel);
  Op conv1d = memory_op("mamba_conv1d", d.other_precision, 2 * taps * conv_elements,
                        2 * conv_elements * kActivationBytes, 3 * 2 * taps * conv_elements,
                        5 * conv_elements * kActivationBytes);
  conv1d.kernels_b = 2;
  conv1d.parameters = static_cast<double>(local_tp.conv_width()) * (taps + 1);
  if (cp > 1) {
    // One all-to-all per in_proj output (z, x, B, C, dt), B and C repeated first, the
    // received tensors reordered out of the load-balanced chunks
    // (_undo_attention_load_balancing) and concatenated.
    const int64_t sent_groups = local_tp.num_groups * group_repeat;
    const double sent = d.tokens * static_cast<double>(2 * local_tp.inner_width() +
                                                       2 * sent_groups * mamba.state_size +
                                                       local_tp.num_heads);
    add_context_all_to_alls(conv1d, 5, sent, 11);
  }
  ops.push_back(conv1d);
  // The chunked SSD scan (mamba_ssm ssd_combined.py): five Triton kernels forward (dt cumsum,
  // chunk states, state passing, C B^T, chunk scan) on tensor-core tiles of the chunk's Q
  // tokens, a head's P channels and the N-wide state; priced as the batched Q x P x N products
  // of every chunk and head (model_stats.h mamba_scan_flops_per_token). Its HBM traffic is the
  // inputs x, B, C, dt and the output y in bf16, the C B^T blocks written and read in fp32,
  // and the chunk states: written in fp32 by the chunk-state kernel, read and rewritten in
  // bf16 by state passing, read by the chunk scan (12 bytes per element). The backward
  // recomputes the states and runs the gradient of each product against both operands:
  // about 2.5x the forward in FLOPs and bytes, in about ten kernels.
  const double q = static_cast<double>(mamba.chunk_size);
  const double p = static_cast<double>(mamba.head_dim);
  const double n = static_cast<double>(mamba.state_size);
  const double chunks = scan_tokens / q;
  Op scan;
  scan.name = "mamba_scan";
  scan.op_class = OpClass::kGemm;
  scan.precision = d.other_precision;
  scan.gemm = GemmShape{q, p, n, chunks * heads};
  scan.flops_fwd = scan_tokens * mamba_scan_flops_per_token(local);
  scan.flops_b = 2.5 * scan.flops_fwd;
  const double state_elements = chunks * heads * p * n;
  const double cb_elements = chunks * static_cast<double>(local.num_groups) * q * q;
  scan.bytes_fwd = scan_tokens * (conv + heads + inner) * kActivationBytes +
                   state_elements * (kStateBytes + kStateBytes + 2 * kActivationBytes) +
                   2 * cb_elements * kStateBytes;
  scan.bytes_b = 2.5 * scan.bytes_fwd;
  scan.kernels_fwd = 5;
  scan.kernels_b = 10;
  // A, D and the dt bias per head of the tp rank (each cp rank slices its heads' out of them).
  scan.parameters = 3 * static_cast<double>(local_tp.num_heads);
  ops.push_back(scan);
  // Gated RMSNorm: y * silu(z), normalised per group; reads y and z, writes the output;
  // backward reads y, z and dy, writes dy and dz. The same elements on either side of the cp
  // all-to-all (b*s tokens of 1/cp of the heads, or T tokens of all of them).
  const double inner_elements = scan_tokens * inner;
  Op gated_norm =
      memory_op("mamba_gated_norm", d.other_precision, (kRmsNormFlops + 4) * inner_elements,
                3 * inner_elements * kActivationBytes, 2 * (kRmsNormFlops + 4) * inner_elements,
                5 * inner_elements * kActivationBytes);
  gated_norm.parameters = static_cast<double>(local_tp.inner_width());
  if (cp > 1) {
    // y back to the sequence split (_all_to_all_hp2cp after _redo_attention_load_balancing).
    add_context_all_to_alls(gated_norm, 1, inner_elements, 2);
  }
  ops.push_back(gated_norm);
  // Row-parallel: the output bias (h) is whole on every tp rank.
  ops.push_back(gemm_op("mamba_out_proj", d.tokens, d.h,
                        static_cast<double>(local_tp.inner_width()), 1, d.gemm_precision,
                        bias ? d.h : 0));
  ops.push_back(residual_op("mamba_residual_add", d));
}

void add_dense_mlp(const ModelSpec& model, const Dims& d, OpList& ops) {
  bool bias = model.linear_bias;
  bool gated = is_gated(model.activation);
  double ffn = static_cast<double>(model.ffn_hidden_size) / d.tp;
  double up_width = gated_factor(model) * ffn;
  ops.push_back(gemm_op(gated ? "mlp_up_gate" : "mlp_up", d.tokens, up_width, d.h, 1,
                        d.gemm_precision, bias ? up_width : 0));
  ops.push_back(activation_op(activation_op_name(model.activation), model, d, d.tokens * ffn));
  ops.push_back(gemm_op("mlp_down", d.tokens, d.h, ffn, 1, d.gemm_precision, bias ? d.h : 0));
}

void add_moe_mlp(const ModelSpec& model, const OpShape& shape, const Dims& d, OpList& ops) {
  const MoeSpec& moe = *model.moe;
  PPSIM_CHECK(moe.num_experts % shape.ep == 0, "ep must divide the experts");
  bool bias = model.linear_bias;
  bool gated = is_gated(model.activation);
  double experts = static_cast<double>(moe.num_experts);
  double top_k = static_cast<double>(moe.top_k);
  double local_experts = experts / d.ep;
  int grouped_launches = static_cast<int>(local_experts);
  // Tokens this GPU routes: its sequence-parallel share (see the header).
  double routed = d.tokens / d.tp;
  double load = moe_critical_rank_load(moe, shape.ep);
  // The rows' width: h, or a latent MoE's latent size (dispatch, experts and combine at it).
  const double width = static_cast<double>(moe.routed_width(model.hidden_size));
  double dispatched = routed * top_k * width;          // Elements this GPU sends.
  double received = dispatched * load;                 // Elements the critical rank receives.
  double expert_rows = routed * top_k * load * d.etp;  // Rows through its experts, after ETP.

  // Router: the h x E gating GEMM (replicated, fp32 logits), then top-k, the score function,
  // the routing map and the load-balancing loss: Megatron's TopKRouter.forward and
  // moe_utils.topk_routing_with_score_function / switch_load_balancing_loss_func launch about
  // a dozen small kernels forward and eight backward.
  Op router = gemm_op("moe_router", routed, experts, d.h, 1, d.other_precision, 0);
  router.kernels_fwd = 13;
  router.kernels_b = 8;
  router.kernels_w = 1;
  if (bias) router.parameters += experts;
  ops.push_back(router);
  // Latent MoE: the routed tokens go down to the latent width before the dispatch
  // (fc1_latent_proj, replicated on every tp rank; Megatron's MoELayer.preprocess).
  if (moe.latent_size > 0) {
    ops.push_back(gemm_op("moe_latent_down", routed, width, d.h, 1, d.gemm_precision,
                          bias ? width : 0));
  }

  // Token counts per expert (and their exchange over the ep group), then the dispatcher's own
  // passes over the rows (header): the alltoall's permute into expert order and, with several
  // local experts, sort of received chunks by expert; DeepEP's expansion of each received
  // token to its local experts; nothing beside HybridEP's fused dispatch. Backward mirrors.
  const bool sorts = local_experts > 1;
  double permute_bytes = 0, unpermute_bytes = 0;
  int permute_kernels = 0, unpermute_kernels = 0;
  switch (shape.moe_dispatcher) {
    case MoeDispatcher::kAllToAll:
      permute_bytes = (routed * width + dispatched + (sorts ? 2 * received : 0)) * kActivationBytes;
      unpermute_bytes = permute_bytes;
      permute_kernels = unpermute_kernels = 2 + (sorts ? 2 : 0);
      break;
    case MoeDispatcher::kDeepEp: {
      const double unique = received * destination_gpu_share(moe, shape.ep, shape.moe_dispatcher);
      permute_bytes = unpermute_bytes = (unique + received) * kActivationBytes;
      permute_kernels = unpermute_kernels = 2;
      break;
    }
    case MoeDispatcher::kHybridEp:
      break;
  }
  Op permute = memory_op("moe_permute", d.other_precision, 0, permute_bytes, 0, permute_bytes);
  permute.kernels_fwd = kMoePreprocessKernels + permute_kernels;
  permute.kernels_b = permute_kernels;
  permute.all_to_all_bytes = received * kActivationBytes;
  permute.expert_gather_bytes = d.etp > 1 ? received * d.etp * kActivationBytes : 0;
  ops.push_back(permute);

  // Experts: E/ep local experts, each of F_e/etp columns; Transformer Engine's GroupedLinear
  // launches one GEMM per local expert and pass.
  double per_expert = expert_rows / local_experts;
  double ffn = static_cast<double>(moe.expert_ffn_hidden_size) / d.etp;
  double up_width = gated_factor(model) * ffn;
  Op up = gemm_op(gated ? "moe_expert_up_gate" : "moe_expert_up", per_expert, up_width, width,
                  local_experts, d.gemm_precision, bias ? up_width : 0);
  Op down = gemm_op("moe_expert_down", per_expert, width, ffn, local_experts, d.gemm_precision,
                    bias ? width : 0);
  for (Op* gemm : {&up, &down}) {
    gemm->kernels_fwd = gemm->kernels_b = gemm->kernels_w = grouped_launches;
  }
  ops.push_back(up);
  ops.push_back(activation_op("moe_expert_act", model, d, expert_rows * ffn));
  ops.push_back(down);
  // Experts with biases (GPT-OSS): fc1's bias rides its GEMM's epilogue, but fc2 skips the bias
  // add and Megatron's TEGroupedMLP._apply_bias adds each local expert's bias times its rows'
  // routing probs in a Python loop, then concatenates: torch.cat([t + b * p for each expert]).
  // Forward per expert: b * p writes the rows, t + that reads both and writes; the cat reads
  // and writes them once more (6 x 2 bytes per element); backward per expert: the gradients
  // of b and p, each a product and a reduction (6 x 2 bytes).
  if (bias) {
    const double elements = expert_rows * width;
    Op expert_bias = memory_op("moe_expert_bias", d.other_precision, 2 * elements,
                               6 * elements * kActivationBytes, 4 * elements,
                               6 * elements * kActivationBytes);
    expert_bias.kernels_fwd = 2 * grouped_launches + 1;
    expert_bias.kernels_b = 4 * grouped_launches;
    ops.push_back(expert_bias);
  }

  // Scatter rows back and sum each token's top_k outputs weighted by its routing probs (under
  // HybridEP, inside its combine).
  const double weighted = shape.moe_dispatcher == MoeDispatcher::kHybridEp ? 0 : 2 * dispatched;
  Op unpermute = memory_op("moe_unpermute", d.other_precision, weighted, unpermute_bytes, weighted,
                           unpermute_bytes);
  unpermute.kernels_fwd = unpermute.kernels_b = unpermute_kernels;
  unpermute.all_to_all_bytes = received * kActivationBytes;
  unpermute.expert_gather_bytes = permute.expert_gather_bytes;
  ops.push_back(unpermute);
  // Latent MoE: the combined output back to h (fc2_latent_proj).
  if (moe.latent_size > 0) {
    ops.push_back(gemm_op("moe_latent_up", routed, d.h, width, 1, d.gemm_precision,
                          bias ? d.h : 0));
  }

  // Shared experts: a dense MLP of their summed width on every token, split by tp.
  if (moe.num_shared_experts > 0) {
    double shared = static_cast<double>(moe.shared_width()) / d.tp;
    double shared_up = gated_factor(model) * shared;
    ops.push_back(gemm_op("moe_shared_up", d.tokens, shared_up, d.h, 1, d.gemm_precision,
                          bias ? shared_up : 0));
    ops.push_back(activation_op("moe_shared_act", model, d, d.tokens * shared));
    ops.push_back(
        gemm_op("moe_shared_down", d.tokens, d.h, shared, 1, d.gemm_precision, bias ? d.h : 0));
  }
}

}  // namespace

double moe_critical_rank_load(const MoeSpec& moe, int64_t ep) {
  if (!moe.dropless()) return moe.capacity_factor;
  const double local_experts = static_cast<double>(moe.num_experts) / static_cast<double>(ep);
  return 1.0 + (moe.imbalance - 1.0) / local_experts;
}

void OpList::push_back(const Op& op) {
  PPSIM_CHECK(size_ < kMaxOps, "OpList capacity exceeded");
  ops_[size_++] = op;
}

const Op* OpList::find(std::string_view name) const {
  for (const Op& op : *this) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

double gemm_operand_bytes(Precision precision) {
  return precision == Precision::kNvfp4 ? 0.5625 : precision == Precision::kFp8 ? 1.0 : 2.0;
}

RecomputeModules recompute_modules_of(const Op& op, bool mla) {
  auto bit = recompute_module_bit;
  const std::string_view name = op.name;
  if (op.op_class == OpClass::kAttention) return bit(RecomputeModule::kCoreAttn);
  if (name == "input_norm" || name == "post_attn_norm") return bit(RecomputeModule::kLayernorm);
  if (name == "mla_q_up" || name == "mla_q_proj" || name == "mla_kv_up" ||
      (mla && name == "rotary")) {
    return bit(RecomputeModule::kMlaUpProj);
  }
  if (name == "moe_expert_act") return bit(RecomputeModule::kMoeAct) | bit(RecomputeModule::kMoe);
  if (name.starts_with("moe_shared_")) {
    return bit(RecomputeModule::kSharedExperts) | bit(RecomputeModule::kMoe);
  }
  if (name.starts_with("moe_")) return bit(RecomputeModule::kMoe);
  if (name == "mlp_up_gate" || name == "mlp_up" || name == "mlp_down" || name == "swiglu_act" ||
      name == "geglu_act" || name == "gelu_act" || name == "squared_relu_act") {
    return bit(RecomputeModule::kMlp);
  }
  return 0;
}

OpShape op_shape(const Plan& plan, const ModelSpec& model) {
  OpShape shape;
  shape.micro_batch_size = plan.micro_batch_size;
  shape.seq_length = plan.seq_length.value_or(model.seq_length);
  shape.tp = plan.tp;
  shape.cp = plan.cp;
  shape.ep = plan.ep;
  shape.etp = plan.expert_tp();
  shape.sequence_parallel = plan.sequence_parallel && plan.tp > 1;
  shape.precision = plan.precision;
  shape.fp8_recipe = fp8_recipe_in_force(plan);
  shape.moe_dispatcher = plan.moe_dispatcher;
  shape.recompute = plan.recompute;
  shape.recompute_modules = plan.recompute_modules;
  return shape;
}

OpList layer_ops(const ModelSpec& model, const OpShape& shape, int64_t layer_index) {
  PPSIM_CHECK(layer_index >= 0 && layer_index < model.num_layers +
                                        static_cast<int64_t>(model.mtp_layer_pattern.size()),
              "layer index out of range");
  Dims d = make_dims(model, shape);
  OpList ops;
  if (model.has_attention(layer_index)) add_attention_block(model, shape, d, layer_index, ops);
  if (model.is_mamba_layer(layer_index)) add_mamba_block(model, d, ops);
  if (model.has_feed_forward(layer_index)) {
    // A hybrid MLP or MoE layer has its own pre-norm, as a transformer layer's attention.
    if (model.is_hybrid()) ops.push_back(norm_op("input_norm", model, d, d.sp_tokens));
    if (model.is_moe_layer(layer_index)) {
      add_moe_mlp(model, shape, d, ops);
    } else {
      add_dense_mlp(model, d, ops);
    }
    ops.push_back(residual_op("mlp_residual_add", d));
  }

  const bool mla = model.mla.has_value();
  const RecomputeModules modules = recomputed_modules(shape.recompute, shape.recompute_modules);
  for (Op& op : ops) {
    op.recomputed =
        shape.recompute == Recompute::kFull || (modules & recompute_modules_of(op, mla)) != 0;
    op.fp8_recipe = shape.fp8_recipe;
    if (shape.sequence_parallel) {
      // The sequence-parallel all-gathers (chunk_price.h "tp"): before each column-parallel
      // linear in the forward, of each row-parallel linear's output gradient in the backward.
      if (op.name == "qkv_proj" || op.name == "mlp_up_gate" || op.name == "mlp_up" ||
          op.name == "moe_shared_up" || op.name == "mamba_in_proj") {
        op.input_gathered_over = shape.tp;
      }
      if (op.name == "attn_out_proj" || op.name == "mlp_down" || op.name == "moe_shared_down" ||
          op.name == "mamba_out_proj") {
        op.grad_gathered_over = shape.tp;
      }
    }
  }
  return ops;
}

OpList embedding_ops(const ModelSpec& model, const OpShape& shape) {
  Dims d = make_dims(model, shape);
  double vocab = static_cast<double>(padded_vocab_size(model.vocab_size, shape.tp)) / d.tp;
  OpList ops;
  // Each tp rank looks up all T tokens in its vocabulary shard (about T/tp hits) and writes
  // a masked T x h output for the tp reduction. The backward is PyTorch's dense embedding
  // gradient: zero-fill the shard's V/tp x h bf16 gradient, scatter-add dY into it, then add
  // it to the fp32 main grad; there is no input gradient (token ids).
  Op embedding;
  embedding.name = "embedding";
  embedding.op_class = OpClass::kMemoryBound;
  embedding.precision = d.other_precision;
  embedding.bytes_fwd = (d.tokens * d.h / d.tp + d.tokens * d.h) * kActivationBytes;
  embedding.kernels_fwd = 2;
  embedding.flops_w = d.tokens * d.h + vocab * d.h;
  embedding.bytes_w =
      d.tokens * d.h * kActivationBytes + vocab * d.h * (2 * kActivationBytes + kMainGradBytes);
  embedding.kernels_w = 3;
  embedding.parameters = vocab * d.h;
  ops.push_back(embedding);
  if (model.position_embedding == PositionEmbedding::kLearned) {
    // A whole (not vocab-parallel) table: read s/cp rows and add them to the word embeddings.
    double table = static_cast<double>(model.max_position_embeddings);
    Op position;
    position.name = "position_embedding";
    position.op_class = OpClass::kMemoryBound;
    position.precision = d.other_precision;
    position.flops_fwd = d.tokens * d.h;
    position.bytes_fwd = 3 * d.tokens * d.h * kActivationBytes;
    position.kernels_fwd = 2;
    position.flops_w = d.tokens * d.h + table * d.h;
    position.bytes_w =
        d.tokens * d.h * kActivationBytes + table * d.h * (2 * kActivationBytes + kMainGradBytes);
    position.kernels_w = 3;
    position.parameters = table * d.h;
    ops.push_back(position);
  }
  return ops;
}

OpList head_ops(const ModelSpec& model, const OpShape& shape) {
  Dims d = make_dims(model, shape);
  double vocab = static_cast<double>(padded_vocab_size(model.vocab_size, shape.tp)) / d.tp;
  OpList ops;
  ops.push_back(norm_op("final_norm", model, d, d.sp_tokens));
  // The output layer stays in bf16 under fp8 recipes: Megatron's output layer is not a
  // Transformer Engine module, and torchao's Float8 conversion skips it (torchtitan's
  // float8 filter_fqns default ["output"]).
  Op output = gemm_op("output_proj", d.tokens, vocab, d.h, 1, d.other_precision, 0);
  if (model.tied_embeddings) output.parameters = 0;
  ops.push_back(output);
  double logits = d.tokens * vocab;
  Op loss = memory_op("cross_entropy", d.other_precision, kCrossEntropyFlopsFwd * logits,
                      kCrossEntropyBytesFwd * logits, kCrossEntropyFlopsBwd * logits,
                      kCrossEntropyBytesBwd * logits);
  loss.kernels_fwd = 6;  // Cast, max, subtract+exp, sum, divide, loss gather.
  loss.kernels_b = 3;
  ops.push_back(loss);
  return ops;
}

OpList mtp_projection_ops(const ModelSpec& model, const OpShape& shape) {
  Dims d = make_dims(model, shape);
  OpList ops;
  ops.push_back(norm_op("mtp_hidden_norm", model, d, d.sp_tokens));
  ops.push_back(norm_op("mtp_embedding_norm", model, d, d.sp_tokens));
  ops.push_back(gemm_op("mtp_projection", d.tokens, d.h / d.tp, 2.0 * d.h, 1, d.gemm_precision, 0));
  for (Op& op : ops) op.fp8_recipe = shape.fp8_recipe;
  return ops;
}

OpTotals sum_ops(const OpList& ops) {
  OpTotals totals;
  for (const Op& op : ops) {
    totals.flops_fwd += op.flops_fwd;
    totals.flops_b += op.flops_b;
    totals.flops_w += op.flops_w;
    if (op.recomputed) totals.recompute_flops += op.flops_fwd;
    totals.bytes_fwd += op.bytes_fwd;
    totals.bytes_b += op.bytes_b;
    totals.bytes_w += op.bytes_w;
    totals.parameters += op.parameters;
    totals.all_to_all_bytes += op.all_to_all_bytes;
    totals.expert_gather_bytes += op.expert_gather_bytes;
    totals.kernels += op.kernels_fwd + op.kernels_b + op.kernels_w;
  }
  return totals;
}

std::string_view op_class_name(OpClass op_class) {
  switch (op_class) {
    case OpClass::kGemm:
      return "gemm";
    case OpClass::kAttention:
      return "attention";
    case OpClass::kMemoryBound:
      return "memory_bound";
  }
  return "?";
}

}  // namespace ppsim
