#include "profiler/benchmark_shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "simulator/model/layer_ops.h"
#include "simulator/spec/data_root.h"
#include "simulator/spec/model_file.h"

namespace ppsim {

namespace {

using ShapeSet = std::set<std::tuple<double, int64_t, int64_t, int64_t, int64_t>>;

// The op lists whose shapes a model's plan runs: its first dense layer, its first MoE layer
// (when it has both kinds), and the head.
std::vector<OpList> representative_ops(const ModelSpec& model, const OpShape& shape) {
  std::vector<OpList> lists = {layer_ops(model, shape, 0), head_ops(model, shape)};
  if (model.is_moe()) {
    for (int64_t layer = 0; layer < model.num_layers; ++layer) {
      if (model.is_moe_layer(layer) != model.is_moe_layer(0)) {
        lists.push_back(layer_ops(model, shape, layer));
        break;
      }
    }
  }
  return lists;
}

// The zoo's grid: tp in {1, 2, 4, 8} dividing the heads, micro-batch in {1, 2, 4, 8}.
std::vector<OpShape> zoo_op_shapes(const ModelSpec& model) {
  std::vector<OpShape> shapes;
  for (int64_t tp : {1, 2, 4, 8}) {
    if (model.num_attention_heads % tp != 0) continue;
    for (int64_t mbs : {1, 2, 4, 8}) {
      OpShape shape;
      shape.micro_batch_size = mbs;
      shape.seq_length = model.seq_length;
      shape.tp = tp;
      shapes.push_back(shape);
    }
  }
  return shapes;
}

// Adds a model's F, B and W GEMM shapes (at or under max_flops) to `unique`.
void add_model_gemms(const ModelSpec& model, const std::vector<OpShape>& shapes, double max_flops,
                     ShapeSet& unique) {
  auto add = [&](double m, double n, double k, double batch) {
    BenchGemm g{std::llround(m), std::llround(n), std::llround(k), std::llround(batch)};
    if (g.m < 1 || g.n < 1 || g.k < 1 || g.batch < 1 || g.flops() > max_flops) return;
    unique.insert({g.flops(), g.m, g.n, g.k, g.batch});
  };
  for (const OpShape& shape : shapes) {
    for (const OpList& ops : representative_ops(model, shape)) {
      for (const Op& op : ops) {
        if (op.op_class != OpClass::kGemm) continue;
        const GemmShape& g = op.gemm;
        add(g.m, g.n, g.k, g.batch);
        add(g.m, g.k, g.n, g.batch);
        add(g.k, g.n, g.m, g.batch);
      }
    }
  }
}

std::vector<BenchGemm> ascending(const ShapeSet& unique) {
  std::vector<BenchGemm> all;
  for (const auto& [flops, m, n, k, batch] : unique) all.push_back({m, n, k, batch});
  return all;
}

}  // namespace

std::vector<BenchGemm> model_gemm_shapes(const ModelSpec& model,
                                         const std::vector<OpShape>& shapes) {
  ShapeSet unique;
  add_model_gemms(model, shapes, std::numeric_limits<double>::infinity(), unique);
  return ascending(unique);
}

std::vector<BenchAttention> model_attention_shapes(const ModelSpec& model,
                                                   const std::vector<OpShape>& shapes) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> unique;
  for (const OpShape& shape : shapes) {
    for (const Op& op : layer_ops(model, shape, 0)) {
      if (op.op_class != OpClass::kAttention) continue;
      const AttentionShape& a = op.attention;
      unique.insert(
          {std::llround(a.batch_heads), std::llround(a.q_tokens), std::llround(a.head_dim)});
    }
  }
  std::vector<BenchAttention> out;
  for (const auto& [batch_heads, seq, dim] : unique) out.push_back({batch_heads, seq, dim});
  return out;
}

std::vector<BenchGemm> zoo_gemm_shapes(double max_flops, int max_shapes) {
  ShapeSet unique;
  for (const std::string& name : zoo_names("models")) {
    ModelSpec model = load_model_spec(name);
    add_model_gemms(model, zoo_op_shapes(model), max_flops, unique);
  }
  std::vector<BenchGemm> all = ascending(unique);
  if (static_cast<int>(all.size()) <= max_shapes || all.size() < 2) return all;
  // Thin evenly in log(FLOPs): keep the first shape at or above each of max_shapes targets.
  std::vector<BenchGemm> kept;
  double lo = std::log(all.front().flops()), hi = std::log(all.back().flops());
  size_t next = 0;
  for (int i = 0; i < max_shapes && next < all.size(); ++i) {
    double target = lo + (hi - lo) * i / (max_shapes - 1);
    while (next < all.size() && std::log(all[next].flops()) < target) ++next;
    if (next < all.size()) kept.push_back(all[next++]);
  }
  return kept;
}

std::vector<BenchGemm> quick_gemm_shapes() {
  return {{1024, 1024, 1024, 1}, {2048, 2048, 2048, 1}, {4096, 4096, 4096, 1},
          {8192, 8192, 8192, 1}, {4096, 12288, 4096, 1}, {4096, 4096, 14336, 1},
          {4096, 28672, 8192, 1}, {8192, 1024, 4096, 1}, {16384, 8192, 8192, 1},
          {4096, 14336, 4096, 1}, {14336, 4096, 4096, 1}, {1024, 4096, 14336, 8}};
}

std::vector<BenchAttention> attention_shapes(bool quick) {
  std::vector<BenchAttention> shapes;
  std::vector<int64_t> dims = quick ? std::vector<int64_t>{128} : std::vector<int64_t>{64, 128};
  std::vector<int64_t> seqs =
      quick ? std::vector<int64_t>{1024, 4096} : std::vector<int64_t>{1024, 2048, 4096, 8192};
  for (int64_t d : dims) {
    for (int64_t s : seqs) shapes.push_back({32768 / s * 8, s, d});
  }
  return shapes;
}

}  // namespace ppsim
