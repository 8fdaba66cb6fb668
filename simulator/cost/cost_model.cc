#include "simulator/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "simulator/cost/profile_table.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

constexpr std::string_view kNoFp8 = "no fp8 tensor cores on this GPU: fp8 GEMMs at the bf16 peak";
constexpr std::string_view kNoBf16 = "no bf16 tensor cores on this GPU: fp16 peak used";
constexpr std::string_view kNoFp16 = "no fp16 tensor-core peak on this GPU: bf16 peak used";
constexpr std::string_view kNoFp4 =
    "no fp4 tensor cores on this GPU: nvfp4 GEMMs at the fp8 (or bf16) peak";

int index_of(Precision precision) { return static_cast<int>(precision); }

// Bytes per element of an fp8 cast: read 2 (bf16), write 1 (fp8).
constexpr double kFp8ReadBytes = 2;
constexpr double kFp8CastBytes = kFp8ReadBytes + 1;
// Current scaling's amax pass reads the bf16 tensor once more before the cast.
constexpr double kFp8AmaxBytes = 2;
// Bytes per element of an NVFP4 quantization of a GEMM's activation operand (Transformer
// Engine's NVFP4BlockScaling: 1x16 blocks with E4M3 scales under an fp32 tensor scale, the
// W pass's operand rotated by a 16-point random Hadamard transform; NVIDIA, "Pretraining Large
// Language Models with NVFP4", arXiv 2509.25149, section 4): the amax kernel reads the bf16
// tensor (2; the tensor scale must be known before any block is encoded), the quantize kernel
// reads it again (2) and writes the row-wise copy and the column-wise rotated copy, half a byte
// each, with one scale byte per 16 elements each (2 x 0.5625): 5.125.
constexpr double kNvfp4QuantizeBytes = 5.125;

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

int quantize_kernels(Precision precision) {
  return precision == Precision::kNvfp4 ? 2 : precision == Precision::kFp8 ? 1 : 0;
}

QuantizeCost quantize_cost(Precision used, Fp8Recipe recipe, bool transposed_copy) {
  if (used == Precision::kNvfp4) return {2, false, kNvfp4QuantizeBytes};
  if (used != Precision::kFp8) return {};
  // Per-tensor scaling's cast-transpose writes the transposed fp8 copy beside the row-wise one
  // where the weight-gradient GEMM needs it (header).
  const double cast = kFp8CastBytes + (transposed_copy ? 1 : 0);
  switch (recipe) {
    case Fp8Recipe::kDelayed:
      return {1, false, cast};
    case Fp8Recipe::kTensorwise:
      return {3, true, kFp8AmaxBytes + cast};
    case Fp8Recipe::kMxfp8:
      return {1, true, kFp8ReadBytes + 2 * (1 + 1.0 / 32)};
    case Fp8Recipe::kBlockwise:
      return {1, true, kFp8ReadBytes + 2 * (1 + 4.0 / 128)};
  }
  return {1, false, cast};
}

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
  PeakFlops fp4{gpu_.peak_fp4_flops, Precision::kNvfp4, {}};
  if (fp4.flops <= 0) fp4 = {fp8.flops, fp8.used, kNoFp4};
  peaks_[index_of(Precision::kNvfp4)] = fp4;
  kernel_gap_ = efficiency_.overheads(runtime_).kernel_gap_s;
  attention_ = runtime_traits(runtime_).attention;
}

CostModel::CostModel(GpuSpec gpu, EfficiencyTable efficiency, const ProfileTable* profile,
                     Runtime runtime, std::optional<AttentionKernel> attention,
                     bool attention_stand_in)
    : CostModel(std::move(gpu), efficiency) {
  profile_ = profile;
  runtime_ = runtime;
  kernel_gap_ = efficiency_.overheads(runtime).kernel_gap_s;
  attention_ = attention.value_or(runtime_traits(runtime).attention);
  profile_attention_impls_ =
      profile_attention_impls(attention_stand_in ? AttentionKernel::kUnfused : attention_);
}

bool CostModel::attention_unprofiled() const {
  return profile_ != nullptr && !profile_->profile().attention.empty() &&
         !profile_->has_attention(profile_attention_impls_);
}

void CostModel::apply_profile(const Op& op, const GemmShape& gemm, bool backward, double flops,
                              double bytes, int kernels, PassCost& cost) const {
  if (!profile_ || kernels == 0) return;
  std::optional<ProfileEstimate> measured;
  switch (op.op_class) {
    case OpClass::kGemm:
      measured = profile_->gemm(op.precision, gemm);
      break;
    case OpClass::kAttention:
      if (flops > 0) {
        measured = profile_->attention(op.precision, backward, op.attention.head_dim, flops,
                                       profile_attention_impls_);
      }
      break;
    case OpClass::kMemoryBound:
      measured = profile_->memory(
          op.name.find("norm") != std::string_view::npos ? "norm" : "elementwise", bytes);
      break;
  }
  if (!measured) return;
  cost.seconds = measured->seconds + kernels * kernel_gap_;
  cost.source = CostSource::kProfile;
  cost.extrapolated = measured->extrapolated;
}

const PeakFlops& CostModel::peak(Precision precision) const { return peaks_[index_of(precision)]; }

double CostModel::gemm_efficiency(const GemmShape& shape, Precision precision,
                                  Fp8Recipe recipe) const {
  const EfficiencyTable& e = efficiency_;
  const Precision used = peak(precision).used;
  const KernelDatasheet& k = gpu_.kernels;
  double max =
      e.kernel_scale * (used == Precision::kNvfp4 ? k.gemm_fp4
                        : used == Precision::kFp8
                            ? (recipe == Fp8Recipe::kBlockwise ? k.gemm_fp8_blockwise : k.gemm_fp8)
                            : k.gemm_bf16);
  double tiles = shape.batch * (shape.m / e.gemm_tile) * (shape.n / e.gemm_tile);
  return max * saturate(tiles, e.gemm_half_tiles) * saturate(shape.k, e.gemm_half_k);
}

double CostModel::attention_efficiency(const AttentionShape& shape, bool backward) const {
  const EfficiencyTable& e = efficiency_;
  double tiles = shape.batch_heads * shape.q_tokens / e.attention_q_tile;
  const KernelDatasheet& k = gpu_.kernels;
  // The Triton port is priced against FlashAttention-2's datasheet by its published ratio
  // alone: flash2_scale is fitted on rows that call flash-attn 2 (header).
  const bool flash2_datasheet =
      attention_ == AttentionKernel::kFlash2 || attention_ == AttentionKernel::kTriton;
  double kernel = flash2_datasheet ? (backward ? k.flash2_bwd : k.flash2_fwd)
                                   : (backward ? k.fused_bwd : k.fused_fwd);
  const double family = attention_ == AttentionKernel::kFlash2   ? e.flash2_scale
                        : attention_ == AttentionKernel::kTriton ? kTritonOverFlash2
                                                                 : e.kernel_scale;
  double depth = 1;  // A shape without keys_per_call (built by hand) takes the ceiling.
  if (shape.keys_per_call > 0) {
    depth = saturate(shape.keys_per_call / e.attention_kv_block,
                     backward ? e.attention_tile_overhead_bwd : e.attention_tile_overhead_fwd);
  }
  return family * kernel * saturate(tiles, e.gemm_half_tiles) * depth;
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
  cost.seconds =
      smooth_max(compute, memory, efficiency_.roofline_sharpness) + kernels * kernel_gap_;
  return cost;
}

OpCost CostModel::op_cost(const Op& op) const {
  OpCost cost;
  switch (op.op_class) {
    case OpClass::kGemm: {
      const GemmShape& g = op.gemm;
      cost.fwd = pass(op, op.flops_fwd, op.bytes_fwd, op.kernels_fwd,
                      gemm_efficiency(g, op.precision, op.fp8_recipe));
      cost.b =
          pass(op, op.flops_b, op.bytes_b, op.kernels_b,
               gemm_efficiency(GemmShape{g.m, g.k, g.n, g.batch}, op.precision, op.fp8_recipe));
      cost.w =
          pass(op, op.flops_w, op.bytes_w, op.kernels_w,
               gemm_efficiency(GemmShape{g.k, g.n, g.m, g.batch}, op.precision, op.fp8_recipe));
      cost.note = peak(op.precision).note;
      apply_profile(op, g, false, op.flops_fwd, op.bytes_fwd, op.kernels_fwd, cost.fwd);
      apply_profile(op, GemmShape{g.m, g.k, g.n, g.batch}, true, op.flops_b, op.bytes_b,
                    op.kernels_b, cost.b);
      apply_profile(op, GemmShape{g.k, g.n, g.m, g.batch}, true, op.flops_w, op.bytes_w,
                    op.kernels_w, cost.w);
      const Precision used = peak(op.precision).used;
      if ((used == Precision::kFp8 || used == Precision::kNvfp4) && op.kernels_fwd > 0) {
        // fp8 recipes (Transformer Engine, torchao Float8) quantize each pass's activation
        // operand first, X forward and dY backward (W reuses both), as the recipe does it
        // (quantize_cost, header). Small GEMMs lose much of fp8's gain to it.
        // NVFP4 quantizes the same operands in two kernels (amax, then quantize).
        // Transformer Engine quantizes a sequence-parallel operand before its all-gather, so
        // each GPU casts its 1/tp shard (Op::input_gathered_over; layernorm_linear.py and
        // linear.py gather with the quantizer); torchao casts the gathered tensor.
        const bool transformer_engine = runtime_traits(runtime_).quantized_gemm_inputs;
        const QuantizeCost quantize =
            quantize_cost(used, op.fp8_recipe, transformer_engine && fp8_gemm_needs_tn(gpu_));
        const double bytes = quantize.bytes_per_element;
        const int kernels =
            quantize.kernels * (quantize.per_expert ? static_cast<int>(g.batch) : 1);
        const double x_shards = transformer_engine ? op.input_gathered_over : 1;
        const double dy_shards = transformer_engine ? op.grad_gathered_over : 1;
        Op cast = op;
        cast.op_class = OpClass::kMemoryBound;
        cost.fwd.seconds +=
            pass(cast, 0, bytes * g.batch * g.m * g.k / x_shards, kernels, 1).seconds;
        cost.b.seconds +=
            pass(cast, 0, bytes * g.batch * g.m * g.n / dy_shards, kernels, 1).seconds;
      }
      break;
    }
    case OpClass::kAttention:
      if (attention_ == AttentionKernel::kUnfused) {
        cost = unfused_attention(op);
      } else {
        cost.fwd = pass(op, op.flops_fwd, op.bytes_fwd, op.kernels_fwd,
                        attention_efficiency(op.attention, false));
        cost.b = pass(op, op.flops_b, op.bytes_b, op.kernels_b,
                      attention_efficiency(op.attention, true));
        cost.w = pass(op, op.flops_w, op.bytes_w, op.kernels_w,
                      attention_efficiency(op.attention, true));
        cost.note = peak(op.precision).note;
      }
      apply_profile(op, {}, false, op.flops_fwd, op.bytes_fwd, op.kernels_fwd, cost.fwd);
      apply_profile(op, {}, true, op.flops_b, op.bytes_b, op.kernels_b, cost.b);
      apply_profile(op, {}, true, op.flops_w, op.bytes_w, op.kernels_w, cost.w);
      break;
    case OpClass::kMemoryBound:
      cost.fwd = pass(op, op.flops_fwd, op.bytes_fwd, op.kernels_fwd, 1);
      cost.b = pass(op, op.flops_b, op.bytes_b, op.kernels_b, 1);
      cost.w = pass(op, op.flops_w, op.bytes_w, op.kernels_w, 1);
      apply_profile(op, {}, false, op.flops_fwd, op.bytes_fwd, op.kernels_fwd, cost.fwd);
      apply_profile(op, {}, false, op.flops_b, op.bytes_b, op.kernels_b, cost.b);
      apply_profile(op, {}, false, op.flops_w, op.bytes_w, op.kernels_w, cost.w);
      break;
  }
  return cost;
}

// Per score element (b * heads * q * kv): forward writes the QK^T output (2 bytes), the fused
// scale-mask-softmax reads and writes it (4), dropout reads it and writes its output and a
// 1-byte mask (5), and PV reads the dropout output (2): 13 bytes. Backward: dP written by the
// dO V^T GEMM (2), dropout backward (read dP and mask, write: 5), softmax backward (read P and
// dP, write dS: 6), dS read by the dQ and dK GEMMs (4) and P read by dV (2): 19 bytes.
// Megatron-LM megatron/model/transformer.py CoreAttention and fused_softmax.py.
constexpr double kUnfusedScoreBytesFwd = 13;
constexpr double kUnfusedScoreBytesBwd = 19;

OpCost CostModel::unfused_attention(const Op& op) const {
  const AttentionShape& a = op.attention;
  const double scores = a.batch_heads * a.q_tokens * a.kv_tokens;
  const double q = a.batch_heads * a.q_tokens * a.head_dim;  // Q, O, dO, dQ elements.
  const double kv = a.batch_heads * a.kv_tokens * a.head_dim;
  const double bytes = 2;                        // bf16/fp16 elements.
  const double flops = 2 * scores * a.head_dim;  // One of the four (or six) GEMMs.
  // Scores = Q K^T: (q x d) (d x kv); context = P V: (q x kv) (kv x d).
  const GemmShape scores_gemm{a.q_tokens, a.kv_tokens, a.head_dim, a.batch_heads};
  const GemmShape context_gemm{a.q_tokens, a.head_dim, a.kv_tokens, a.batch_heads};
  // Backward: dP = dO V^T (q x d)(d x kv); dV = P^T dO (kv x q)(q x d);
  // dQ = dS K (q x kv)(kv x d); dK = dS^T Q (kv x q)(q x d).
  const GemmShape weight_like{a.kv_tokens, a.head_dim, a.q_tokens, a.batch_heads};
  Op gemm = op;
  gemm.op_class = OpClass::kGemm;
  Op elementwise = op;
  elementwise.op_class = OpClass::kMemoryBound;
  auto add = [](PassCost& total, const PassCost& part) { total.seconds += part.seconds; };
  OpCost cost;
  add(cost.fwd, pass(gemm, flops, (q + kv) * bytes + scores * bytes, 1,
                     gemm_efficiency(scores_gemm, op.precision, op.fp8_recipe)));
  add(cost.fwd, pass(elementwise, 0, (kUnfusedScoreBytesFwd - 4) * scores, 2, 1));
  add(cost.fwd, pass(gemm, flops, scores * bytes + kv * bytes + q * bytes, 1,
                     gemm_efficiency(context_gemm, op.precision, op.fp8_recipe)));
  add(cost.b, pass(gemm, flops, (q + kv) * bytes + scores * bytes, 1,
                   gemm_efficiency(scores_gemm, op.precision, op.fp8_recipe)));
  add(cost.b, pass(gemm, flops, scores * bytes + (q + kv) * bytes, 1,
                   gemm_efficiency(weight_like, op.precision, op.fp8_recipe)));
  add(cost.b, pass(elementwise, 0, (kUnfusedScoreBytesBwd - 8) * scores, 2, 1));
  add(cost.b, pass(gemm, flops, scores * bytes + kv * bytes + q * bytes, 1,
                   gemm_efficiency(context_gemm, op.precision, op.fp8_recipe)));
  add(cost.b, pass(gemm, flops, scores * bytes + (q + kv) * bytes, 1,
                   gemm_efficiency(weight_like, op.precision, op.fp8_recipe)));
  cost.note = peak(op.precision).note;
  return cost;
}

std::array<RuntimeOverheads, kRuntimeCount> EfficiencyTable::shipped_runtime_overheads() {
  std::array<RuntimeOverheads, kRuntimeCount> overheads;
  for (Runtime runtime : all_runtimes()) {
    overheads[static_cast<size_t>(runtime)] = runtime_traits(runtime).overheads;
  }
  // `ppsim accuracy --runs configs/accuracy/public-runs.csv --fit` (docs/accuracy.md) for the
  // runtimes with published rows; megatron-core and deepspeed have none and keep runtime.h's
  // priors. Kernel gap, per-microbatch dispatch, per-step host time, seconds.
  overheads[static_cast<size_t>(Runtime::kMegatronLm)] = {8.538e-6, 2.72e-4, 0.07852};
  overheads[static_cast<size_t>(Runtime::kTorchtitan)] = {1.625e-6, 1.207e-3, 0.09326};
  overheads[static_cast<size_t>(Runtime::kPytorchFsdp)] = {1.2e-5, 1.177e-4, 0.03051};
  return overheads;
}

LayerCost CostModel::cost(const OpList& ops) const {
  LayerCost total;
  for (const Op& op : ops) {
    OpCost c = op_cost(op);
    total.fwd += c.fwd.seconds;
    total.b += c.b.seconds;
    total.w += c.w.seconds;
    if (op.recomputed) total.recompute += c.fwd.seconds;
    // A pass with no kernels counts as whatever the others are.
    auto measured = [](const PassCost& p) {
      return p.source == CostSource::kProfile || p.seconds == 0;
    };
    bool profiled = c.fwd.source == CostSource::kProfile && measured(c.b) && measured(c.w);
    ++(profiled ? total.profile_ops : total.roofline_ops);
    if (profiled && (c.fwd.extrapolated || c.b.extrapolated || c.w.extrapolated)) {
      ++total.extrapolated_ops;
    }
    for (const PassCost* p : {&c.fwd, &c.b, &c.w}) {
      if (p->seconds == 0) continue;
      ++(p->source == CostSource::kProfile ? total.profile_passes : total.roofline_passes);
      if (p->source == CostSource::kProfile && p->extrapolated) ++total.extrapolated_passes;
    }
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
