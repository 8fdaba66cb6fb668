#include "simulator/cost_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "simulator/error.h"

namespace ppsim {
namespace {

constexpr std::string_view kNoFp8 = "no fp8 tensor cores on this GPU: fp8 GEMMs at the bf16 peak";
constexpr std::string_view kNoBf16 = "no bf16 tensor cores on this GPU: fp16 peak used";
constexpr std::string_view kNoFp16 = "no fp16 tensor-core peak on this GPU: bf16 peak used";

int index_of(Precision precision) { return static_cast<int>(precision); }

// x / (x + half), 1 when half is 0 (the factor switched off).
double saturate(double x, double half) { return half > 0 ? x / (x + half) : 1.0; }

// (a^r + b^r)^(1/r), computed without overflow; max(a, b) for r = infinity.
double smooth_max(double a, double b, double r) {
  double hi = std::max(a, b);
  double lo = std::min(a, b);
  if (hi <= 0) return 0;
  if (std::isinf(r)) return hi;
  return hi * std::pow(1.0 + std::pow(lo / hi, r), 1.0 / r);
}

}  // namespace

CostModel::CostModel(GpuSpec gpu, EfficiencyTable efficiency)
    : gpu_(std::move(gpu)), efficiency_(efficiency) {
  PPSIM_CHECK(gpu_.peak_bf16_flops > 0 || gpu_.peak_fp16_flops > 0,
              "GPU " + gpu_.name + " has no 16-bit tensor-core peak");
  PPSIM_CHECK(gpu_.memory_bandwidth > 0, "GPU " + gpu_.name + " has no memory bandwidth");
  PeakFlops bf16{gpu_.peak_bf16_flops, Precision::kBf16, {}};
  if (bf16.flops <= 0) bf16 = {gpu_.peak_fp16_flops, Precision::kFp16, kNoBf16};
  PeakFlops fp16{gpu_.peak_fp16_flops, Precision::kFp16, {}};
  if (fp16.flops <= 0) fp16 = {gpu_.peak_bf16_flops, Precision::kBf16, kNoFp16};
  PeakFlops fp8{gpu_.peak_fp8_flops, Precision::kFp8, {}};
  if (fp8.flops <= 0) fp8 = {bf16.flops, bf16.used, kNoFp8};
  peaks_[index_of(Precision::kBf16)] = bf16;
  peaks_[index_of(Precision::kFp16)] = fp16;
  peaks_[index_of(Precision::kFp8)] = fp8;
}

const PeakFlops& CostModel::peak(Precision precision) const { return peaks_[index_of(precision)]; }

double CostModel::gemm_efficiency(const GemmShape& shape, Precision precision) const {
  const EfficiencyTable& e = efficiency_;
  double max = peak(precision).used == Precision::kFp8 ? e.gemm_max_fp8 : e.gemm_max_bf16;
  double tiles = shape.batch * (shape.m / e.gemm_tile) * (shape.n / e.gemm_tile);
  return max * saturate(tiles, e.gemm_half_tiles) * saturate(shape.k, e.gemm_half_k);
}

double CostModel::attention_efficiency(const AttentionShape& shape, bool backward) const {
  const EfficiencyTable& e = efficiency_;
  double tiles = shape.batch_heads * shape.q_tokens / e.attention_q_tile;
  return (backward ? e.attention_bwd : e.attention_fwd) * saturate(tiles, e.gemm_half_tiles);
}

PassCost CostModel::pass(const Op& op, double flops, double bytes, int kernels,
                         double efficiency) const {
  PassCost cost;
  if (kernels == 0) return cost;
  double compute = 0;
  if (op.op_class != OpClass::kMemoryBound && flops > 0) {
    compute = flops / (peak(op.precision).flops * efficiency);
  }
  double memory = bytes / (gpu_.memory_bandwidth * efficiency_.memory);
  cost.seconds = smooth_max(compute, memory, efficiency_.roofline_sharpness) +
                 kernels * efficiency_.kernel_overhead;
  return cost;
}

OpCost CostModel::op_cost(const Op& op) const {
  OpCost cost;
  switch (op.op_class) {
    case OpClass::kGemm: {
      const GemmShape& g = op.gemm;
      cost.fwd =
          pass(op, op.flops_fwd, op.bytes_fwd, op.kernels_fwd, gemm_efficiency(g, op.precision));
      cost.b = pass(op, op.flops_b, op.bytes_b, op.kernels_b,
                    gemm_efficiency(GemmShape{g.m, g.k, g.n, g.batch}, op.precision));
      cost.w = pass(op, op.flops_w, op.bytes_w, op.kernels_w,
                    gemm_efficiency(GemmShape{g.k, g.n, g.m, g.batch}, op.precision));
      cost.note = peak(op.precision).note;
      break;
    }
    case OpClass::kAttention:
      cost.fwd = pass(op, op.flops_fwd, op.bytes_fwd, op.kernels_fwd,
                      attention_efficiency(op.attention, false));
      cost.b =
          pass(op, op.flops_b, op.bytes_b, op.kernels_b, attention_efficiency(op.attention, true));
      cost.w =
          pass(op, op.flops_w, op.bytes_w, op.kernels_w, attention_efficiency(op.attention, true));
      cost.note = peak(op.precision).note;
      break;
    case OpClass::kMemoryBound:
      cost.fwd = pass(op, op.flops_fwd, op.bytes_fwd, op.kernels_fwd, 1);
      cost.b = pass(op, op.flops_b, op.bytes_b, op.kernels_b, 1);
      cost.w = pass(op, op.flops_w, op.bytes_w, op.kernels_w, 1);
      break;
  }
  return cost;
}

LayerCost CostModel::cost(const OpList& ops) const {
  LayerCost total;
  for (const Op& op : ops) {
    OpCost c = op_cost(op);
    total.fwd += c.fwd.seconds;
    total.b += c.b.seconds;
    total.w += c.w.seconds;
    if (op.recomputed) total.recompute += c.fwd.seconds;
    bool profiled = c.fwd.source == CostSource::kProfile && c.b.source == CostSource::kProfile &&
                    c.w.source == CostSource::kProfile;
    ++(profiled ? total.profile_ops : total.roofline_ops);
    if (total.note.empty()) total.note = c.note;
  }
  return total;
}

LayerCost CostModel::layer_cost(const ModelSpec& model, const OpShape& shape,
                                int64_t layer_index) const {
  return cost(layer_ops(model, shape, layer_index));
}

LayerCost CostModel::embedding_cost(const ModelSpec& model, const OpShape& shape) const {
  return cost(embedding_ops(model, shape));
}

LayerCost CostModel::head_cost(const ModelSpec& model, const OpShape& shape) const {
  return cost(head_ops(model, shape));
}

std::string_view cost_source_name(CostSource source) {
  switch (source) {
    case CostSource::kRoofline:
      return "roofline";
    case CostSource::kProfile:
      return "profile";
  }
  return "?";
}

}  // namespace ppsim
