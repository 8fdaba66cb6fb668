# Host issue time of eager PyTorch kernels on one GPU, and what a device-to-host sync in the
# middle of a layer exposes (the mechanism docs/moe.md "Host" models for Megatron-Core's MoE
# layers). Prints JSON lines: host microseconds per eager kernel (2000 tiny adds, host wall
# clock, the GPU never the bottleneck), and the wall time of a layer of 40 GEMMs then 40 small
# elementwise kernels, without and with a .tolist() between them.
import json, time, torch
dev = "cuda"
a = torch.ones(16, device=dev)
for _ in range(200): a.add_(1.0)
torch.cuda.synchronize()
for rep in range(3):
    t0 = time.perf_counter()
    for _ in range(2000): a.add_(1.0)
    t1 = time.perf_counter(); torch.cuda.synchronize()
    print(json.dumps({"host_us_per_eager_kernel": (t1 - t0) / 2000 * 1e6}))
x = torch.randn(4096, 2048, device=dev, dtype=torch.bfloat16)
wq = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
cnt = torch.zeros(128, device=dev, dtype=torch.int64)
def layer(sync):
    y = x
    for _ in range(40): y = torch.relu(y @ wq) * 0.01
    if sync: cnt.tolist()
    for _ in range(40): y = y.add(1.0).mul(0.5)
    return y
for sync in (False, True):
    for _ in range(3): layer(sync)
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(20): layer(sync)
    torch.cuda.synchronize()
    print(json.dumps({"layer_sync": sync, "wall_us_per_layer": (time.perf_counter() - t0) / 20 * 1e6}))
