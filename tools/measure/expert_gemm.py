# Expert GEMM device time on one GPU, launch overhead removed (CUDA graphs): per-expert cuBLAS
# GEMMs in a loop (one stream) and torch._grouped_mm, bf16, forward shapes of Qwen3-30B-A3B and
# DeepSeek-V3 experts, tokens per expert 64..4096. Prints JSON lines. Needs PyTorch and a GPU;
# its H200 run is tests/data/kernels/h200_expert_gemm.json (tests/cost/expert_gemm_test.cc).
import json, torch
from cuda_graph_time import graph_time  # Beside this script.
dev = "cuda"
shapes = [("qwen3-30b fc1", 2048, 1536, 16), ("qwen3-30b fc2", 768, 2048, 16),
          ("dsv3 fc1", 7168, 4096, 32), ("dsv3 fc2", 2048, 7168, 32)]
for name, k, n, e in shapes:
    for tpe in [64, 128, 256, 512, 1024, 2048, 4096]:
        m = tpe * e
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(e, k, n, device=dev, dtype=torch.bfloat16) * 0.02
        offs = torch.arange(tpe, m + 1, tpe, device=dev, dtype=torch.int32)
        xs = list(x.split(tpe)); ws = [w[i] for i in range(e)]
        outs = [torch.empty(tpe, n, device=dev, dtype=torch.bfloat16) for _ in range(e)]
        def loop():
            for i in range(e): torch.mm(xs[i], ws[i], out=outs[i])
        flops = 2.0 * m * k * n
        rec = {"shape": name, "k": k, "n": n, "experts": e, "tokens_per_expert": tpe}
        t = graph_time(loop); rec["loop_us"] = t; rec["loop_tflops"] = flops / t / 1e6
        try:
            t = graph_time(lambda: torch._grouped_mm(x, w, offs=offs))
            rec["grouped_us"] = t; rec["grouped_tflops"] = flops / t / 1e6
        except Exception as ex:
            rec["grouped_error"] = str(ex)[:160]
        print(json.dumps(rec), flush=True)
        del x, w, xs, ws, outs
