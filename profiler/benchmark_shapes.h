// The shapes `ppsim profile` measures on a GPU: the GEMMs and attention calls that the model
// zoo's layers produce, so the cost model's lookups land between measured points.
//
// GEMMs: for every zoo model (models/*.json), tp in {1, 2, 4, 8} dividing its heads, micro-batch
// in {1, 2, 4, 8} at the model's sequence length, the forward, input-gradient and
// weight-gradient shapes (layer_ops.h) of its first dense and first MoE layer and its head,
// rounded to whole elements and deduplicated; shapes over `max_flops` are left out (they take
// seconds each and sit on the flat part of the efficiency curve), and the rest are thinned to
// at most `max_shapes`, evenly in log(FLOPs).
//
// Thread-safety: pure functions (they read the zoo files).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ppsim {

struct ModelSpec;
struct OpShape;

struct BenchGemm {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  double flops() const { return 2.0 * m * n * k * batch; }
  bool operator==(const BenchGemm&) const = default;
};

struct BenchAttention {
  int64_t batch_heads = 0, seq_len = 0, head_dim = 0;
  bool operator==(const BenchAttention&) const = default;
};

// Appends the shapes of `extra` that `shapes` does not hold yet, in their order.
template <typename Shape>
void append_missing(std::vector<Shape>& shapes, const std::vector<Shape>& extra) {
  for (const Shape& s : extra) {
    if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  }
}

// The zoo's GEMM shapes (header), ascending by FLOPs then (m, n, k, batch).
std::vector<BenchGemm> zoo_gemm_shapes(double max_flops, int max_shapes);
// One model's GEMMs under these op shapes (layer_ops.h: micro-batch, sequence, tp, cp, ep): the
// forward, input-gradient and weight-gradient shapes of its first dense and first MoE layer and
// its head, deduplicated, ascending as zoo_gemm_shapes. What `ppsim profile --model` adds, so
// the lookups of that model's plan hit measured shapes.
std::vector<BenchGemm> model_gemm_shapes(const ModelSpec& model, const std::vector<OpShape>& shapes);
// The same model's attention calls under these op shapes (batch x heads on one GPU, its query
// tokens, head size), deduplicated.
std::vector<BenchAttention> model_attention_shapes(const ModelSpec& model,
                                                   const std::vector<OpShape>& shapes);
// A fixed dozen covering 1e9 to 1e13 FLOPs, square and transformer-thin, for --quick.
std::vector<BenchGemm> quick_gemm_shapes();
// Attention calls: head_dim 64 and 128, seq_len 1K to 8K (quick: 128 only, 1K and 4K), batch
// x heads chosen so every call covers 256K query rows (8 x 32K).
std::vector<BenchAttention> attention_shapes(bool quick);

}  // namespace ppsim
