#include "simulator/model/op_sac.h"

#include <array>
#include <string_view>

namespace ppsim {
namespace {

// Element sizes of what the policy keeps (activation_memory.h reads this file, so its own
// constants are not included here): bf16 activations, the fp32 logsumexp.
constexpr double kKeptElementBytes = 2;
constexpr double kLogsumexpBytes = 4;

// The aten.mm calls one op stands for, as shares of its output width (header): qkv_proj's wq,
// wk, wv; a gated MLP's w1 and w3; one for any other counted GEMM; none for the ops the policy
// re-runs whatever the count (the router and the routed experts' grouped GEMMs) and non-GEMMs.
struct OpMms {
  int count = 0;
  std::array<double, 3> width_share{};
};

OpMms op_mms(const Op& op, const ModelSpec& model, const OpShape& shape) {
  if (op.op_class != OpClass::kGemm) return {};
  const std::string_view name = op.name;
  if (name == "moe_router" || name.starts_with("moe_expert_")) return {};
  if (name == "qkv_proj") {
    // n = Q/t + 2 K_local (layer_ops.cc; K_local counts whole kv heads when tp > g).
    const double q_share =
        static_cast<double>(model.query_width()) / static_cast<double>(shape.tp) / op.gemm.n;
    const double kv_share = (1 - q_share) / 2;
    return {3, {q_share, kv_share, kv_share}};
  }
  if ((name == "mlp_up_gate" || name == "moe_shared_up") && is_gated(model.activation)) {
    return {2, {0.5, 0.5, 0}};
  }
  return {1, {1, 0, 0}};
}

}  // namespace

double op_policy_saved_bytes(const ModelSpec& model, const OpShape& shape, int64_t layer_index) {
  const OpList ops = layer_ops(model, shape, layer_index);
  const double tokens = static_cast<double>(shape.micro_batch_size) *
                        static_cast<double>(shape.seq_length / shape.cp);
  const double h = static_cast<double>(model.hidden_size);
  const bool sequence_parallel = shape.sequence_parallel && shape.tp > 1;
  const double sharded_tokens = sequence_parallel ? tokens / static_cast<double>(shape.tp) : tokens;
  double bytes = kKeptElementBytes * sharded_tokens * h;  // The checkpoint's input.
  int mm_count = 0;
  bool attention_output_pending = false;
  for (const Op& op : ops) {
    // The odd mms' outputs, in the block's order.
    const OpMms mms = op_mms(op, model, shape);
    for (int i = 0; i < mms.count; ++i) {
      if (++mm_count % 2 == 1) {
        bytes += kKeptElementBytes * mms.width_share[i] * op.gemm.m * op.gemm.n *
                 op.gemm.batch;
      }
    }
    if (op.op_class == OpClass::kAttention) {
      // Its fp32 logsumexp per query head and token; its output, at the width the output
      // projection reads (MLA's v head dim), is counted there.
      bytes += kLogsumexpBytes * op.attention.batch_heads * op.attention.q_tokens;
      attention_output_pending = true;
    } else if (op.name == "attn_out_proj" && attention_output_pending) {
      bytes += kKeptElementBytes * op.gemm.m * op.gemm.k;
      attention_output_pending = false;
    }
    // Kept whatever the count: a row-parallel linear's reduce-scatter output (sequence
    // parallelism) and the expert all-to-alls' received rows (ep > 1; without expert
    // parallelism no all-to-all runs and the permuted rows are re-run).
    if (sequence_parallel && op.grad_gathered_over > 1) {
      bytes += kKeptElementBytes * sharded_tokens * h;
    }
    if (shape.ep > 1) bytes += op.all_to_all_bytes;
  }
  return bytes;
}

}  // namespace ppsim
