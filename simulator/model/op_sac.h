// torchtitan's selective op activation checkpointing (activation_checkpoint.mode = "selective",
// selective_ac_option = "op"; RuntimeTraits::selective_recompute kOpPolicy): what a layer keeps
// for its backward, which activation_memory.h reads for a torchtitan plan's `selective`.
//
// The policy (torchtitan parallelize_llama.py _save_list and _custom_policy at 9dec370,
// 2024-12, the benchmarks' version; the same rule in distributed/activation_checkpoint.py
// SelectiveAC today): inside each block's checkpoint, keep the outputs of the attention kernel
// (SDPA flash / efficient / cuDNN: the output and its fp32 logsumexp), of the tensor-parallel
// reduce-scatters and the expert all-to-alls, and of every aten.mm whose count within the block
// is odd; re-run everything else in the backward: every second mm, the norms, rotary, the
// activation, the residual adds, the sequence-parallel all-gathers, the router (its gate is
// force-recomputed and not counted, force_recompute_mm_shapes_by_fqns) and the routed experts'
// grouped GEMMs (not on the list). The checkpoint itself keeps the block's input.
//
// The mms count in the order the block's forward issues them: wq, wk, wv, wo, then the MLP's
// w1, w3, w2 (SwiGLU: silu(w1 x) * w3 x; a plain MLP w1, w2; shared experts likewise). ppsim's
// fused ops hold several: qkv_proj is wq, wk, wv (widths Q/t, K/t, K/t) and mlp_up_gate or
// moe_shared_up of a gated MLP is w1, w3 (half each). So a Llama block keeps the outputs of wq,
// wv, w1 and w2 and re-runs wk, wo and w3. An mm's output is m x n elements in bf16 (a
// row-parallel linear's is its partial sum over all b*s/cp tokens, before the reduce-scatter).
//
// Time: the re-run share of each op (K/(Q+2K) of qkv_proj, all of attn_out_proj, half of
// mlp_up_gate, the elementwise ops, the all-gathers) is not priced yet; a torchtitan plan's
// selective recompute runs the attention core again, as Megatron's does (docs/accuracy.md
// "Known limits": torchtitan's own table puts op AC at 0.881x of no AC on Llama 2 13B).
//
// Out-of-memory cases torchtitan published (docs/performance.md, 64 A100 80GB, Llama 2 70B at
// 4,096 tokens) hold: tests/model/op_sac_test.cc.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>

#include "simulator/model/layer_ops.h"
#include "simulator/spec/model_spec.h"

namespace ppsim {

// Bytes one layer keeps for one microbatch under the policy, on one GPU: the block's input
// 2*(b*s/cp)*h (/t with sequence parallelism), the kept mm outputs, the attention output and
// logsumexp, the reduce-scatter outputs (2*(b*s/cp)*h/t each, tp > 1) and the all-to-all
// outputs (the critical ep rank's received rows, dispatch and combine).
double op_policy_saved_bytes(const ModelSpec& model, const OpShape& shape, int64_t layer_index);

}  // namespace ppsim
