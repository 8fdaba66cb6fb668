# Causal attention kernels on one GPU through PyTorch SDPA: FlashAttention-2 (the flash
# backend) and cuDNN fused attention (the kernel family Transformer Engine calls), bf16,
# head_dim 128, 32 heads, 2K-16K tokens, forward and forward+backward. Times are the median of 7
# runs of 5 back-to-back calls between CUDA events. FLOPs count the causal half:
# forward 2 * 2 * b*h * s^2 * d / 2, backward 2.5x the forward. Prints JSON lines.
import json, torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F
dev = "cuda"
def timed(fn, reps=5):
    for _ in range(2): fn()
    torch.cuda.synchronize()
    st, en = torch.cuda.Event(True), torch.cuda.Event(True)
    ts = []
    for _ in range(7):
        st.record()
        for _ in range(reps): fn()
        en.record(); torch.cuda.synchronize()
        ts.append(st.elapsed_time(en) * 1e3 / reps)
    ts.sort(); return ts[3]
for backend, name in [(SDPBackend.FLASH_ATTENTION, "flash2"), (SDPBackend.CUDNN_ATTENTION, "cudnn")]:
    for s, b in [(2048, 8), (4096, 4), (8192, 2), (16384, 1)]:
        h, d = 32, 128
        q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        fwd_flops = 2 * 2 * b * h * s * s * d / 2
        rec = {"kernel": name, "batch": b, "heads": h, "seq": s, "head_dim": d}
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                grad = torch.randn_like(out)
                tf = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                def fb():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    o.backward(grad)
                tfb = timed(fb)
            rec.update({"fwd_us": tf, "fwd_tflops": fwd_flops / tf / 1e6,
                        "bwd_us": tfb - tf, "bwd_tflops": 2.5 * fwd_flops / (tfb - tf) / 1e6})
        except Exception as ex:
            rec["error"] = str(ex)[:200]
        print(json.dumps(rec), flush=True)
        del q, k, v
