# One GPU's local share of an MoE layer, op by op, launch overhead removed (CUDA graphs): the
# device work that ppsim's moe_router, moe_permute, moe_expert_*, moe_expert_act and
# moe_unpermute ops price (simulator/model/layer_ops.cc), without the all-to-alls. Shapes of
# Qwen3-30B-A3B at ep 8 (hidden 2048, 128 experts of width 768, top-8; 4,096 tokens routed per
# GPU, its 16 local experts receiving 2,048 rows each under balanced routing) and of
# DeepSeek-V3 at ep 8 (hidden 7168, 256 experts of width 2048, 32 local). bf16, PyTorch only
# (torch._grouped_mm for the experts, as tools/measure/expert_gemm.py). Forward ops and the
# backward's kernels written out (input and weight gradients of the grouped GEMMs, the
# activation's and the gathers' backward). Prints JSON lines, one per op and pass, then a
# total per shape. Needs PyTorch and a GPU; not yet run (written 2026-12-05 without a GPU):
# its purpose is the missing MoE device time of docs/moe.md "Host".
import json, torch
from cuda_graph_time import graph_time  # Beside this script.
dev, dt = "cuda", torch.bfloat16

def measure(shape, tokens, hidden, experts, ffn, top_k, ep):
    local = experts // ep
    rows = tokens * top_k  # Every GPU sends tokens*k rows and, balanced, receives as many.
    per_expert = rows // local
    x = torch.randn(tokens, hidden, device=dev, dtype=dt)
    wr = torch.randn(hidden, experts, device=dev, dtype=dt) * 0.02
    w1 = torch.randn(local, hidden, 2 * ffn, device=dev, dtype=dt) * 0.02
    w2 = torch.randn(local, ffn, hidden, device=dev, dtype=dt) * 0.02
    offs = torch.arange(per_expert, rows + 1, per_expert, device=dev, dtype=torch.int32)
    # Balanced routing: token t goes to experts (t + j * experts / top_k) mod experts.
    idx = (torch.arange(tokens, device=dev)[:, None] * 7 +
           torch.arange(top_k, device=dev)[None, :] * (experts // top_k)) % experts
    order = torch.argsort(idx.flatten(), stable=True)
    src = order // top_k                      # Source token of each dispatched row.
    sort_idx = torch.randperm(rows, device=dev)  # Received chunks into expert order.
    probs = torch.rand(rows, device=dev, dtype=dt)
    xp = x[src]
    h1 = torch.randn(rows, 2 * ffn, device=dev, dtype=dt)
    a = torch.randn(rows, ffn, device=dev, dtype=dt)
    y = torch.randn(rows, hidden, device=dev, dtype=dt)
    out = torch.zeros(tokens, hidden, device=dev, dtype=dt)
    dy = torch.randn_like(y); dh1 = torch.randn_like(h1); da = torch.randn_like(a)
    dlogits = torch.randn(tokens, experts, device=dev, dtype=dt)
    ops = {
        ("router", "fwd"): lambda: torch.topk(torch.softmax((x @ wr).float(), -1), top_k, -1),
        ("router", "b"): lambda: (torch.mm(dlogits, wr.t()), torch.mm(x.t(), dlogits)),
        ("permute", "fwd"): lambda: x.index_select(0, src).index_select(0, sort_idx),
        ("permute", "b"): lambda: torch.zeros_like(x).index_add_(
            0, src, y.index_select(0, sort_idx)),
        ("expert_up", "fwd"): lambda: torch._grouped_mm(xp, w1, offs=offs),
        ("expert_up", "b"): lambda: torch._grouped_mm(dh1, w1.transpose(1, 2), offs=offs),
        ("expert_up", "w"): lambda: torch._grouped_mm(xp.t(), dh1, offs=offs),
        ("expert_act", "fwd"): lambda: torch.nn.functional.silu(h1[:, :ffn]) * h1[:, ffn:],
        ("expert_act", "b"): lambda: torch.cat((torch.ops.aten.silu_backward(
            da * h1[:, ffn:], h1[:, :ffn]), da * torch.nn.functional.silu(h1[:, :ffn])), 1),
        ("expert_down", "fwd"): lambda: torch._grouped_mm(a, w2, offs=offs),
        ("expert_down", "b"): lambda: torch._grouped_mm(dy, w2.transpose(1, 2), offs=offs),
        ("expert_down", "w"): lambda: torch._grouped_mm(a.t(), dy, offs=offs),
        ("unpermute", "fwd"): lambda: out.zero_().index_add_(
            0, src, (y.index_select(0, sort_idx) * probs[:, None])),
        ("unpermute", "b"): lambda: (x.index_select(0, src) * probs[:, None]).index_select(
            0, sort_idx),
    }
    total = 0.0
    for (op, p), fn in ops.items():
        rec = {"shape": shape, "op": op, "pass": p, "tokens": tokens, "rows": rows,
               "local_experts": local, "tokens_per_expert": per_expert}
        try:
            t = graph_time(fn); rec["us"] = t; total += t
        except Exception as ex:
            rec["error"] = str(ex)[:200]
        print(json.dumps(rec), flush=True)
    print(json.dumps({"shape": shape, "op": "total", "us": total}), flush=True)

print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__}))
for mbs in (1, 4):
    measure(f"qwen3-30b-a3b ep8 mbs{mbs}", 4096 * mbs, 2048, 128, 768, 8, 8)
measure("deepseek-v3 ep8 mbs1", 4096, 7168, 256, 2048, 8, 8)
