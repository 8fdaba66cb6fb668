# Device time of one call of `fn`, launch overhead removed: `reps` calls captured in one CUDA
# graph after a warm-up on a side stream, the graph replayed 7 times, the median per call in
# microseconds. Shared by the measurement scripts beside it (expert_gemm.py, moe_layer.py).
import torch


def graph_time(fn, reps=10):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps): fn()
    for _ in range(3): g.replay()
    torch.cuda.synchronize()
    st, en = torch.cuda.Event(True), torch.cuda.Event(True)
    ts = []
    for _ in range(7):
        st.record(); g.replay(); en.record(); torch.cuda.synchronize()
        ts.append(st.elapsed_time(en) * 1e3 / reps)
    ts.sort(); return ts[3]
