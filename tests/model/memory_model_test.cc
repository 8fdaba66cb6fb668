#include "simulator/model/memory_model.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>

#include "simulator/model/activation_memory.h"
#include "simulator/model/model_stats.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/units.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::gpt3_175b_shape;
using testing::llama2_70b_shape;
using testing::uniform_cluster;

// ---------------------------------------------------------------------------------------------
// The oracle: Megatron-LM's megatron/training/theoretical_memory_usage.py (NVIDIA/Megatron-LM @
// d98e8a64ddf3; REFERENCE.md 1.5), transcribed line by line and kept independent of ppsim's
// implementation (it reads Megatron's own argument names, not ppsim's structs).
// ---------------------------------------------------------------------------------------------
struct MegatronArgs {
  double hidden_size = 0, ffn_hidden_size = 0, num_attention_heads = 0, kv_channels = 0;
  double num_query_groups = 0;
  bool group_query_attention = false;
  double num_layers = 0, padded_vocab_size = 0, seq_length = 0, micro_batch_size = 0;
  bool swiglu = false;
  std::string normalization = "LayerNorm";
  bool untie_embeddings_and_output_weights = false;
  std::optional<double> num_experts;  // None for dense models.
  double moe_ffn_hidden_size = 0, moe_router_topk = 0;
  int64_t moe_layer_freq = 1;
  bool add_bias_linear = false;
  double tensor_model_parallel_size = 1, pipeline_model_parallel_size = 1;
  double data_parallel_size = 1, world_size = 1;
  double expert_model_parallel_size = 1, expert_tensor_parallel_size = 1;
  std::optional<double> virtual_pipeline_model_parallel_size;
  bool use_distributed_optimizer = false;
  bool sequence_parallel = false;
  std::string recompute_granularity;  // "", "selective" or "full".
};

double megatron_weight_and_optimizer_bytes(MegatronArgs args) {
  const double query_projection_size = args.kv_channels * args.num_attention_heads;
  const double query_projection_to_hidden_size_ratio = query_projection_size / args.hidden_size;
  if (!args.group_query_attention) args.num_query_groups = args.num_attention_heads;
  const double num_experts = args.num_experts ? *args.num_experts : 1;
  const double gated_linear_multiplier = args.swiglu ? 3.0 / 2 : 1;
  double num_dense_layers = args.num_layers, num_moe_layers = 0, moe_ffn_hidden_size = 0;
  if (args.num_experts) {
    num_moe_layers = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(args.num_layers); ++i) {
      if (i % args.moe_layer_freq == 0) num_moe_layers += 1;
    }
    num_dense_layers = args.num_layers - num_moe_layers;
    moe_ffn_hidden_size = args.moe_ffn_hidden_size;
  }
  const double norm_size = args.normalization == "RMSNorm" ? 1 : 2;
  const double self_attn_term = 2 * args.hidden_size * args.hidden_size *
                                ((1 + args.num_query_groups / args.num_attention_heads) *
                                 query_projection_to_hidden_size_ratio);
  const double embedding_size = args.hidden_size * args.padded_vocab_size;
  const double final_layernorm = norm_size * args.hidden_size;
  const double attention_params = self_attn_term;
  const double dense_mlp_params =
      2 * args.hidden_size * args.ffn_hidden_size * gated_linear_multiplier;
  const double shared_expert_params = 0;
  const double routed_expert_params =
      2 * args.hidden_size * moe_ffn_hidden_size * num_experts * gated_linear_multiplier;
  const double latent_projection_params = 0, shared_expert_gate_params = 0;
  const double layernorm_params = 2 * args.hidden_size * norm_size;
  const double router_params =
      args.num_experts ? args.hidden_size * num_experts + (args.add_bias_linear ? num_experts : 0)
                       : 0;
  const double t = args.tensor_model_parallel_size, p = args.pipeline_model_parallel_size;
  const double expert_data_parallel_size = std::floor(
      args.world_size / (args.expert_tensor_parallel_size * args.expert_model_parallel_size * p));
  const double tp_sharded_block = (attention_params + dense_mlp_params) * num_dense_layers +
                                  (attention_params + shared_expert_params) * num_moe_layers;
  const double replicated_block =
      layernorm_params * num_dense_layers +
      (layernorm_params + latent_projection_params + router_params + shared_expert_gate_params) *
          num_moe_layers +
      final_layernorm;
  const double expert_sharded_block = routed_expert_params * num_moe_layers;
  double tp_sharded_on_shard = (tp_sharded_block / p + embedding_size) / t;
  const double replicated_on_shard = replicated_block / p;
  const double expert_sharded_on_shard =
      (expert_sharded_block / p) /
      (args.expert_tensor_parallel_size * args.expert_model_parallel_size);
  if (args.untie_embeddings_and_output_weights && p == 1) tp_sharded_on_shard += embedding_size / t;
  auto bytes_per_parameter = [&](double data_parallel_size) {
    return args.use_distributed_optimizer ? 6 + 12 / data_parallel_size : 18;
  };
  return (tp_sharded_on_shard + replicated_on_shard) *
             bytes_per_parameter(args.data_parallel_size) +
         expert_sharded_on_shard * bytes_per_parameter(expert_data_parallel_size);
}

// Shared tail of both activation formulas: interleaving penalty or the min(1, M/p) discount.
double megatron_pipeline_factor(const MegatronArgs& args, std::optional<double> microbatches) {
  const double p = args.pipeline_model_parallel_size;
  if (args.virtual_pipeline_model_parallel_size) {
    return 1 + (p - 1) / (p * *args.virtual_pipeline_model_parallel_size);
  }
  if (p > 1 && microbatches) return std::min(1.0, *microbatches / p);
  return 1;
}

double megatron_activation_bytes_with_sp(const MegatronArgs& args,
                                         std::optional<double> microbatches) {
  const double s = args.seq_length, b = args.micro_batch_size, h = args.hidden_size;
  const double p = args.pipeline_model_parallel_size;
  double activation_memory = s * b * h * (18 + 4 * (args.ffn_hidden_size / h));
  activation_memory *= args.num_layers;
  activation_memory += 8 * s * b * p;
  activation_memory += s * b * h * p;
  activation_memory *= megatron_pipeline_factor(args, microbatches);
  if (p == 1) activation_memory += s * b * h * 4 * (1 + args.padded_vocab_size / h);
  return activation_memory / args.tensor_model_parallel_size;
}

double megatron_activation_bytes_without_sp(const MegatronArgs& args,
                                            std::optional<double> microbatches) {
  const double s = args.seq_length, b = args.micro_batch_size, h = args.hidden_size;
  const double p = args.pipeline_model_parallel_size, t = args.tensor_model_parallel_size;
  double total = s * b * h * (10 + 24 / t) * args.num_layers;
  total += 8 * s * b * p;
  total += s * b * h * p;
  total *= megatron_pipeline_factor(args, microbatches);
  if (p == 1) total += (s * b * args.padded_vocab_size / t + s * b * h) * 2;
  return total * 1.05;
}

// report_theoretical_memory's choice of formula.
double megatron_activation_bytes(const MegatronArgs& args, std::optional<double> microbatches) {
  if (args.sequence_parallel && args.recompute_granularity == "selective") {
    return megatron_activation_bytes_with_sp(args, microbatches);
  }
  return megatron_activation_bytes_without_sp(args, microbatches);
}

// Megatron's arguments for a ppsim model and plan (the mapping a launcher would write).
MegatronArgs megatron_args(const ModelSpec& model, const Plan& plan) {
  MegatronArgs args;
  args.hidden_size = model.hidden_size;
  args.ffn_hidden_size = model.ffn_hidden_size;
  args.num_attention_heads = model.num_attention_heads;
  args.kv_channels = model.head_dim;
  args.group_query_attention = model.num_kv_heads != model.num_attention_heads;
  args.num_query_groups = model.num_kv_heads;
  args.num_layers = model.num_layers;
  const int64_t multiple = 128 * plan.tp;  // --make-vocab-size-divisible-by 128, times tp.
  args.padded_vocab_size =
      static_cast<double>((model.vocab_size + multiple - 1) / multiple * multiple);
  args.seq_length = plan.seq_length.value_or(model.seq_length);
  args.micro_batch_size = plan.micro_batch_size;
  args.swiglu = model.activation == Activation::kSwiglu;
  args.normalization = model.norm == Norm::kRmsNorm ? "RMSNorm" : "LayerNorm";
  args.untie_embeddings_and_output_weights = !model.tied_embeddings;
  if (model.moe) {
    args.num_experts = model.moe->num_experts;
    args.moe_ffn_hidden_size = model.moe->expert_ffn_hidden_size;
    args.moe_router_topk = model.moe->top_k;
    args.moe_layer_freq = model.moe->every_n_layers;
  }
  args.add_bias_linear = model.linear_bias;
  args.tensor_model_parallel_size = plan.tp;
  args.pipeline_model_parallel_size = plan.pp;
  args.data_parallel_size = plan.dp;
  args.world_size = plan.tp * plan.pp * plan.dp * plan.cp;
  args.expert_model_parallel_size = plan.ep;
  args.expert_tensor_parallel_size = plan.tp;  // Megatron's default ETP.
  if (plan.schedule == ScheduleKind::kInterleaved1F1B && plan.vpp > 1) {
    args.virtual_pipeline_model_parallel_size = plan.vpp;
  }
  args.use_distributed_optimizer = plan.zero_stage >= 1;
  args.sequence_parallel = plan.sequence_parallel;
  args.recompute_granularity = plan.recompute == Recompute::kSelective ? "selective"
                               : plan.recompute == Recompute::kFull    ? "full"
                                                                       : "";
  return args;
}

// ---------------------------------------------------------------------------------------------
// The documented differences between ppsim's physical model and Megatron's formula, each an
// explicit term so the tests can hold the rest to equality:
//  (a) Megatron spreads the final norm over the stages (replicated_block / p); ppsim puts it on
//      the last stage only: stage 0 has final_norm * bpp / p fewer bytes when p > 1.
//  (b) With SP Megatron divides the int64 token ids by t; every tp rank holds all of them:
//      ppsim has 8sb * in_flight * (1 - 1/t) more bytes.
//  (c) Interleaved: Megatron scales the embedding terms by the stage's factor; ppsim counts the
//      microbatches chunk 0 holds at the peak (the first virtual stage's own count).
//  (d) Without SP Megatron multiplies by 1.05 (allocator slack); ppsim does not.
//  (e) GQA and SwiGLU: Megatron's formula knows only h and F; ppsim keeps K, V at the kv width
//      and SwiGLU's 3F-wide intermediates: sb(4K - 4h + 2F)/t more (less under GQA) per layer.
//  (f) p == 1 without SP: Megatron counts bf16 logits and one sbh; ppsim counts the fp32
//      softmax Megatron's cross-entropy keeps (4sbV/t) and both the final-norm and output-layer
//      inputs (4sbh).
//  (g) With recompute none, flash attention keeps the logsumexp, 4asb/t per layer (the formula
//      has no attention-core term at all).
// ---------------------------------------------------------------------------------------------

double final_norm_params(const ModelSpec& model) {
  return model.norm == Norm::kRmsNorm ? model.hidden_size : 2.0 * model.hidden_size;
}

double bytes_per_param(const Plan& plan) { return plan.zero_stage >= 1 ? 6 + 12.0 / plan.dp : 18; }

Plan base_plan(int64_t tp, int64_t pp, int64_t dp, int64_t mbs, int64_t gbs) {
  Plan plan;
  plan.tp = tp;
  plan.pp = pp;
  plan.dp = dp;
  plan.micro_batch_size = mbs;
  plan.global_batch_size = gbs;
  return plan;
}

// Stage 0's persistent bytes, the quantity Megatron's weight_and_optimizer formula gives.
double weights_grads_optimizer(const StageMemory& stage) {
  return stage.weights_bytes + stage.gradients_bytes + stage.optimizer_bytes;
}

void require_valid(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan) {
  std::optional<std::string> problem = plan_problem(plan, model, cluster);
  INFO((problem ? *problem : std::string("valid")));
  REQUIRE_FALSE(problem.has_value());
}

TEST_CASE("MemoryModel: GPT-3 175B tp8 pp16, SP + selective, matches Megatron's formula") {
  ModelSpec model = gpt3_175b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 128);
  for (int64_t gbs : {64, 1536}) {  // m = 8 < p (Megatron's min(1, M/p)) and m = 192 >= p.
    INFO("gbs=" << gbs);
    Plan plan = base_plan(8, 16, 8, 1, gbs);
    plan.sequence_parallel = true;
    plan.recompute = Recompute::kSelective;
    require_valid(model, cluster, plan);
    MemoryReport report = estimate_memory(model, cluster, plan);
    const StageMemory& stage0 = report.stages.at(0);
    MegatronArgs args = megatron_args(model, plan);
    const double m = num_microbatches(plan);

    // (a) only.
    CHECK(weights_grads_optimizer(stage0) + final_norm_params(model) * 18 / 16 ==
          Approx(megatron_weight_and_optimizer_bytes(args)).epsilon(1e-12));
    // (b) only.
    const double s = 2048, b = 1, in_flight = std::min(16.0, m);
    CHECK(stage0.microbatches_in_flight == in_flight);
    CHECK(stage0.activations_bytes - 8 * s * b * in_flight * (1 - 1.0 / 8) ==
          Approx(megatron_activation_bytes(args, m)).epsilon(1e-12));
    CHECK(stage0.logits_bytes == 0);  // The loss is on stage 15.
  }
}

TEST_CASE("MemoryModel: Llama-2-70B tp8 pp4 with the distributed optimizer (GQA, SwiGLU)") {
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(8, 4, 8, 1, 512);
  plan.zero_stage = 1;
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kSelective;
  require_valid(model, cluster, plan);
  MemoryReport report = estimate_memory(model, cluster, plan);
  const StageMemory& stage0 = report.stages.at(0);
  MegatronArgs args = megatron_args(model, plan);
  const double m = num_microbatches(plan);  // 64

  // GQA and SwiGLU parameter counts agree; (a) is the only difference. 6 + 12/dp bytes.
  CHECK(bytes_per_param(plan) == 7.5);
  CHECK(weights_grads_optimizer(stage0) + final_norm_params(model) * 7.5 / 4 ==
        Approx(megatron_weight_and_optimizer_bytes(args)).epsilon(1e-12));
  // Activations: (b) and (e). 20 layers per stage, 4 microbatches in flight on stage 0.
  const double s = 4096, b = 1, h = 8192, t = 8, kv = 8 * 128, ffn = 28672;
  const double per_layer_difference = s * b * (4 * kv - 4 * h + 2 * ffn) / t;
  CHECK(stage0.microbatches_in_flight == 4);
  CHECK(stage0.activations_bytes - 20 * 4 * per_layer_difference - 8 * s * b * 4 * (1 - 1 / t) ==
        Approx(megatron_activation_bytes(args, m)).epsilon(1e-12));
}

TEST_CASE("MemoryModel: a one-stage model adds the output layer and loss (p == 1)") {
  // GPT-3 XL shape (h 2048, 24 layers, 16 heads), untied: Megatron adds a second h*V/t.
  ModelSpec model = gpt3_175b_shape();
  model.name = "gpt3-xl-shape";
  model.num_layers = 24;
  model.hidden_size = 2048;
  model.ffn_hidden_size = 8192;
  model.num_attention_heads = 16;
  model.num_kv_heads = 16;
  model.tied_embeddings = false;
  ClusterSpec cluster = uniform_cluster("A100-SXM-80GB", 1);
  Plan plan = base_plan(2, 1, 4, 2, 64);
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kSelective;
  require_valid(model, cluster, plan);
  MemoryReport report = estimate_memory(model, cluster, plan);
  REQUIRE(report.stages.size() == 1);
  const StageMemory& stage0 = report.stages[0];
  MegatronArgs args = megatron_args(model, plan);

  // Exactly equal: with p == 1 the final norm is on this stage in both.
  CHECK(weights_grads_optimizer(stage0) ==
        Approx(megatron_weight_and_optimizer_bytes(args)).epsilon(1e-12));
  // Megatron's activations include the output layer and loss: s*b*h*4*(1 + V/h)/t, which is
  // ppsim's loss_activation_bytes; one microbatch in flight. (b) remains.
  const double s = 2048, b = 2, t = 2;
  CHECK(stage0.microbatches_in_flight == 1);
  CHECK(stage0.activations_bytes + stage0.logits_bytes - 8 * s * b * (1 - 1 / t) ==
        Approx(megatron_activation_bytes(args, num_microbatches(plan))).epsilon(1e-12));

  SECTION("without SP the loss terms differ as documented in (f), and by 1.05 (d)") {
    plan.sequence_parallel = false;
    MemoryReport no_sp = estimate_memory(model, cluster, plan);
    const StageMemory& only = no_sp.stages[0];
    MegatronArgs no_sp_args = megatron_args(model, plan);
    const double h = 2048, v = 50432;  // 50257 padded to a multiple of 128 * 2.
    double megatron_loss = 2 * (s * b * v / t + s * b * h);
    double ppsim_loss = 4 * s * b * h + 4 * s * b * v / t;
    CHECK(only.logits_bytes == ppsim_loss);
    CHECK((only.activations_bytes + only.logits_bytes - ppsim_loss + megatron_loss) * 1.05 ==
          Approx(megatron_activation_bytes(no_sp_args, num_microbatches(plan))).epsilon(1e-12));
  }
}

TEST_CASE("MemoryModel: interleaved 1F1B (vpp 2) matches Megatron's interleaving factor") {
  ModelSpec model = gpt3_175b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 64);
  Plan plan = base_plan(8, 8, 8, 1, 512);  // m = 64, 12 layers per rank, 6 per chunk.
  plan.schedule = ScheduleKind::kInterleaved1F1B;
  plan.vpp = 2;
  plan.zero_stage = 1;
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kSelective;
  require_valid(model, cluster, plan);
  MemoryReport report = estimate_memory(model, cluster, plan);
  const StageMemory& stage0 = report.stages.at(0);
  MegatronArgs args = megatron_args(model, plan);

  CHECK(weights_grads_optimizer(stage0) + final_norm_params(model) * bytes_per_param(plan) / 8 ==
        Approx(megatron_weight_and_optimizer_bytes(args)).epsilon(1e-12));
  // Stage 0: (8-1)*2 + 8 + 1 = 23 chunk-microbatches: 15 of chunk 0 and 8 of chunk 1, i.e.
  // 11.5 whole-rank microbatches = 8 * (1 + 7/16), Megatron's factor.
  CHECK(stage0.chunk_microbatches_in_flight == std::vector<int64_t>{15, 8});
  CHECK(stage0.microbatches_in_flight == 8 * (1 + 7.0 / 16));
  // (b) and (c): the embedding extras, counted by each side's convention.
  const double s = 2048, b = 1, h = 12288, t = 8;
  double ppsim_embedding = (8 * s * b + s * b * h / t) * 15;
  double megatron_embedding = (8 * s * b * 8 + s * b * h * 8) * (1 + 7.0 / 16) / t;
  CHECK(stage0.activations_bytes - ppsim_embedding ==
        Approx(megatron_activation_bytes(args, num_microbatches(plan)) - megatron_embedding)
            .epsilon(1e-12));
}

TEST_CASE("MemoryModel: without SP Megatron's formula is ppsim's times 1.05") {
  ModelSpec model = gpt3_175b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(4, 8, 8, 1, 256);  // m = 32.
  plan.recompute = Recompute::kSelective;  // Megatron uses the no-SP formula: SP is off.
  require_valid(model, cluster, plan);
  MegatronArgs args = megatron_args(model, plan);
  const double m = num_microbatches(plan);
  MemoryReport report = estimate_memory(model, cluster, plan);
  const StageMemory& stage0 = report.stages.at(0);

  CHECK(weights_grads_optimizer(stage0) + final_norm_params(model) * 18 / 8 ==
        Approx(megatron_weight_and_optimizer_bytes(args)).epsilon(1e-12));
  // Per layer sbh(10 + 24/t), embedding extras not divided by t: only (d) remains.
  CHECK(stage0.activations_bytes * 1.05 ==
        Approx(megatron_activation_bytes(args, m)).epsilon(1e-12));

  SECTION("recompute none with flash attention adds the logsumexp (g)") {
    plan.recompute = Recompute::kNone;
    MemoryReport none = estimate_memory(model, cluster, plan);
    const double s = 2048, b = 1, a = 96, t = 4, layers = 12, in_flight = 8;
    CHECK((none.stages[0].activations_bytes - layers * in_flight * 4 * a * s * b / t) * 1.05 ==
          Approx(megatron_activation_bytes(megatron_args(model, plan), m)).epsilon(1e-12));
  }
}

TEST_CASE("MemoryModel: MoE weights shard experts over ep*etp and expert-DP (Mixtral-like)") {
  ModelSpec model = llama2_70b_shape();
  model.name = "mixtral-8x7b-shape";
  model.num_layers = 32;
  model.hidden_size = 4096;
  model.ffn_hidden_size = 14336;
  model.num_attention_heads = 32;
  model.num_kv_heads = 8;
  model.vocab_size = 32000;
  model.moe = MoeSpec{8, 2, 14336, 1};
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 8);
  Plan plan = base_plan(2, 4, 8, 1, 256);
  plan.ep = 4;
  plan.zero_stage = 1;
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kSelective;
  require_valid(model, cluster, plan);
  MemoryReport report = estimate_memory(model, cluster, plan);
  MegatronArgs args = megatron_args(model, plan);
  // Dense parts at 6 + 12/8 bytes, experts at 6 + 12/2 (expert DP = 64 / (2*4*4) = 2).
  CHECK(weights_grads_optimizer(report.stages[0]) + final_norm_params(model) * 7.5 / 4 ==
        Approx(megatron_weight_and_optimizer_bytes(args)).epsilon(1e-12));
  StageParameters params = stage_parameters(model, plan, 0);
  const double expert_params = 8 * 3.0 * 4096 * 14336 * 8 / (4 * 2);  // 8 layers x 8 experts.
  CHECK(params.expert == expert_params);
}

TEST_CASE("MemoryModel: tp beyond the kv heads replicates the K and V projections") {
  ModelSpec model = llama2_70b_shape();
  model.num_layers = 4;
  model.num_kv_heads = 1;  // Multi-query attention: one kv head of 128.
  Plan plan = base_plan(4, 1, 1, 1, 8);
  const double h = 8192, d = 128, q = 8192, ffn = 28672;
  StageParameters params = stage_parameters(model, plan, 0);
  const double per_layer = (2 * h * q + 3 * h * ffn) / 4 + 2 * h * d + 2 * h;  // + 2 RMSNorms.
  const double vocab = 32256;  // 32000 padded to a multiple of 512.
  CHECK(params.dense == Approx(4 * per_layer + 2 * vocab * h / 4 + h).epsilon(1e-12));
}

TEST_CASE("MemoryModel: full recompute keeps 2sbh/t per layer per microbatch in flight") {
  ModelSpec model = gpt3_175b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 128);
  Plan plan = base_plan(8, 16, 8, 1, 1536);
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kFull;
  MemoryReport report = estimate_memory(model, cluster, plan);
  const StageMemory& stage0 = report.stages[0];
  // 6 layers x 2*2048*12288/8 = 37,748,736; embedding 8*2048 + 2048*12288/8 = 3,162,112;
  // 16 microbatches in flight.
  CHECK(stage0.activations_per_microbatch_bytes == 37748736.0 + 3162112.0);
  CHECK(stage0.activations_bytes == 16 * (37748736.0 + 3162112.0));
  // Stage 7 holds 16 - 7 = 9 microbatches of 6 layers, no embedding.
  CHECK(report.stages[7].activations_bytes == 9 * 37748736.0);
  // The backward rebuilds one layer: its no-recompute (flash) bytes minus its input.
  const double s = 2048, h = 12288, t = 8, a = 96;
  double one_layer = s * h * 34 / t + 4 * a * s / t;
  CHECK(stage0.transient_bytes == Approx(one_layer - 2 * s * h / t));
}

TEST_CASE("MemoryModel: partial full recompute keeps the other layers' activations whole") {
  // The test above with recompute_num_layers=2 (Megatron's block method): of each stage's 6
  // layers, 2 keep their input (2sbh/t) and 4 everything (flash, SP: 34sbh/t + 4as/t).
  ModelSpec model = gpt3_175b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 128);
  Plan plan = base_plan(8, 16, 8, 1, 1536);
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kFull;
  plan.recompute_num_layers = 2;
  MemoryReport report = estimate_memory(model, cluster, plan);
  const StageMemory& stage0 = report.stages[0];
  const double s = 2048, h = 12288, t = 8, a = 96;
  const double input = 2 * s * h / t;
  const double whole = s * h * 34 / t + 4 * a * s / t;
  CHECK(stage0.activations_per_microbatch_bytes == Approx(2 * input + 4 * whole + 3162112.0));
  CHECK(report.stages[7].activations_bytes == Approx(9 * (2 * input + 4 * whole)));
  // The backward still rebuilds one recomputed layer at a time.
  CHECK(stage0.transient_bytes == Approx(whole - input));
}

TEST_CASE("MemoryModel: the last stage holds the loss, and a tied embedding copy") {
  ModelSpec model = gpt3_175b_shape();  // Tied embeddings.
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 16);
  Plan plan = base_plan(8, 4, 4, 1, 64);
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kSelective;
  MemoryReport report = estimate_memory(model, cluster, plan);
  const double v = 51200, h = 12288, t = 8, s = 2048;  // 50257 padded to 1024.
  const StageMemory& last = report.stages[3];
  CHECK(last.logits_per_microbatch_bytes == 4 * s * h / t + 4 * s * v / t);
  CHECK(last.logits_bytes == last.logits_per_microbatch_bytes);  // 1f1b: one in flight.
  StageParameters first = stage_parameters(model, plan, 0);
  StageParameters final_stage = stage_parameters(model, plan, 3);
  // Both hold the (tied) embedding; the last also the final norm.
  CHECK(final_stage.dense - first.dense == 2 * h);
  SECTION("gpipe keeps every microbatch's loss buffers") {
    plan.schedule = ScheduleKind::kGpipe;
    MemoryReport gpipe = estimate_memory(model, cluster, plan);
    CHECK(gpipe.stages[3].logits_bytes == 16 * last.logits_per_microbatch_bytes);
    CHECK(gpipe.stages[0].microbatches_in_flight == 16);
  }
  SECTION("zbv puts embedding and loss on rank 0, and needs no second embedding copy") {
    plan.schedule = ScheduleKind::kZbv;
    plan.vpp = 2;
    MemoryReport zbv = estimate_memory(model, cluster, plan);
    CHECK(zbv.stages[0].logits_bytes == last.logits_per_microbatch_bytes);
    CHECK(zbv.stages[3].logits_bytes == 0);
    StageParameters rank0 = stage_parameters(model, plan, 0);
    StageParameters rank3 = stage_parameters(model, plan, 3);
    CHECK(rank0.dense - rank3.dense == v * h / t + 2 * h);
    CHECK(zbv.stages[0].microbatches_in_flight == 4);
  }
}

TEST_CASE("MemoryModel: ZeRO stages shard weights, gradients and optimizer states") {
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(8, 4, 8, 1, 512);
  const double n = stage_parameters(model, plan, 1).total();
  const double largest = stage_parameters(model, plan, 1).largest_layer;
  for (int zero = 0; zero <= 3; ++zero) {
    INFO("zero=" << zero);
    plan.zero_stage = zero;
    const StageMemory stage = estimate_memory(model, cluster, plan).stages[1];
    CHECK(stage.weights_bytes == Approx(zero >= 3 ? 2 * n / 8 : 2 * n));
    CHECK(stage.gradients_bytes == Approx(zero >= 2 ? 4 * n / 8 : 4 * n));
    CHECK(stage.optimizer_bytes == Approx(zero >= 1 ? 12 * n / 8 : 12 * n));
    // ZeRO-3 holds two gathered bf16 layers (the one computing and the prefetched next).
    double transient = (zero >= 3 ? 2 * 2 * largest : 0) + (zero >= 2 ? 4 * largest : 0);
    // Stage 1 holds no loss, and recompute none rebuilds nothing: only the ZeRO buffers.
    CHECK(stage.transient_bytes == Approx(transient));
  }
}

TEST_CASE("MemoryModel: ZeRO-3 gathers the embedding and the output layer as units of their own") {
  // Llama 3 8B (untied; vocab 128256 = 1002 x 128, h 4096) on pp 2: stage 0 holds the embedding
  // unit E = 128256 x 4096, the last stage the output unit H = E + 4096 (its final norm); each
  // is gathered beside a layer (the first one prefetched after the embedding, the last one
  // prefetched by the output's backward), and E > L here, so both ends outgrow two layers.
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 8);
  Plan plan = base_plan(1, 2, 4, 1, 64);
  plan.zero_stage = 3;
  const double unit = 128256.0 * 4096;
  const StageParameters first = stage_parameters(model, plan, 0);
  const StageParameters last = stage_parameters(model, plan, 1);
  CHECK(first.embedding_unit == unit);
  CHECK(first.head_unit == 0);
  CHECK(last.embedding_unit == 0);
  CHECK(last.head_unit == unit + 4096);
  CHECK_FALSE(first.tied_unit);
  const double layer = first.largest_layer;
  CHECK(layer == last.largest_layer);
  CHECK(unit > layer);
  // bf16 gathered units, fp32 gradients of the largest unit (Megatron-Core's default).
  CHECK(parameter_bytes(first, plan).zero_transient == Approx(2 * (unit + layer) + 4 * unit));
  CHECK(parameter_bytes(last, plan).zero_transient ==
        Approx(2 * (unit + 4096 + layer) + 4 * (unit + 4096)));
  // The whole of it is in the stage's transient: ZeRO-1 has none of these buffers.
  Plan zero1 = plan;
  zero1.zero_stage = 1;
  for (int64_t stage = 0; stage < 2; ++stage) {
    INFO("stage " << stage);
    const StageParameters params = stage_parameters(model, plan, stage);
    CHECK(estimate_memory(model, cluster, plan).stages[stage].transient_bytes -
              estimate_memory(model, cluster, zero1).stages[stage].transient_bytes ==
          Approx(parameter_bytes(params, plan).zero_transient));
  }
  // A middle stage holds neither end: two layers, as before.
  Plan pp4 = base_plan(1, 4, 2, 1, 64);
  pp4.zero_stage = 3;
  const StageParameters middle = stage_parameters(model, pp4, 1);
  CHECK(middle.embedding_unit == 0);
  CHECK(middle.head_unit == 0);
  CHECK(parameter_bytes(middle, pp4).zero_transient == Approx(2 * 2 * layer + 4 * layer));
}

TEST_CASE("MemoryModel: PyTorch FSDP keeps a tied embedding gathered, DeepSpeed does not") {
  // GPT-3 175B's shape, tied, learned positions, pp 1: one unit E = 50304 x h + 2048 x h (vocab
  // padded to 393 x 128), used by the embedding and the output. FSDP1's root unit and
  // torchtitan's tied group are not resharded after forward, so E stays beside the two layers;
  // DeepSpeed gathers module by module: the tied weight at each use with the first (or last)
  // layer's largest linear prefetched beside it, M = 4h^2 (no biases), E + M < 2 layers.
  // L = 12 h^2 + 13 h > E > M.
  ModelSpec model = gpt3_175b_shape();
  model.position_embedding = PositionEmbedding::kLearned;
  ClusterSpec cluster = uniform_cluster("A100-SXM-80GB", 64);
  Plan plan = base_plan(1, 1, 64, 1, 64);
  plan.zero_stage = 3;
  const double h = model.hidden_size;
  const double unit = 50304 * h + 2048 * h;
  const StageParameters params = stage_parameters(model, plan, 0);
  CHECK(params.embedding_unit == unit);
  CHECK(params.head_unit == 0);
  CHECK(params.tied_unit);
  const double layer = params.largest_layer;
  CHECK(layer > unit);
  plan.runtime = Runtime::kPytorchFsdp;
  CHECK(parameter_bytes(params, plan).zero_transient == Approx(2 * (unit + 2 * layer) + 4 * layer));
  plan.runtime = Runtime::kDeepSpeed;
  const StageParameters modules = stage_parameters(model, plan, 0);
  const double module = 4 * h * h;  // The fc1 and fc2 linears.
  CHECK(modules.largest_module == module);
  CHECK(modules.largest_layer == layer);
  CHECK(unit > module);
  CHECK(unit + module < kDeepSpeedMaxLiveParameters * 2);
  // bf16 E and the prefetched linear; fp32 gradients of the largest unit, E.
  CHECK(parameter_bytes(modules, plan).zero_transient == Approx(2 * (unit + module) + 4 * unit));
}

TEST_CASE("MemoryModel: DeepSpeed ZeRO-3 gathers a module of 1e9 parameters or more alone") {
  // Megatron's 1T model (h 25,600, 4h MLP with biases, vocab 51,200, learned positions of
  // 2,048) as the DeepSpeed Azure post ran it: ZeRO-3 over 1,024 A100-80GB, fp16, full
  // recompute, micro-batch 8 of 1,024 tokens, optimizer on the host. fc1's 4h^2 + 4h = 2.62 G
  // parameters are past stage3_max_live_parameters (1e9), so DeepSpeed prefetches nothing
  // beside it (and nothing beside the 1.36 G embedding): one 2.62 G module gathered and its
  // fp16 gradient, 4 x 2.62 G = 10.5 GB, where two whole layers and a layer's gradient were
  // 2 x 2 x 7.87 G + 2 x 7.87 G = 47.2 GB and the plan did not fit.
  ModelSpec model = load_model_spec("megatron-1t");
  ClusterSpec cluster = uniform_cluster("A100-SXM-80GB", 128);
  Plan plan = parse_plan(
      "tp=1,pp=1,dp=1024,mbs=8,gbs=8192,seq=1024,runtime=deepspeed,zero_stage=3,"
      "recompute=full,precision=fp16,offload_optimizer=true",
      "test");
  const double h = 25600;
  const double module = 4 * h * h + 4 * h;
  const double embedding = (51200 + 2048) * h;
  const StageParameters params = stage_parameters(model, plan, 0);
  CHECK(params.largest_module == module);
  CHECK(params.embedding_unit == embedding);
  CHECK(embedding > kDeepSpeedMaxLiveParameters);
  CHECK(parameter_bytes(params, plan).zero_transient == Approx(2 * module + 2 * module));
  const MemoryReport deepspeed = estimate_memory(model, cluster, plan);
  CHECK(deepspeed.fits);
  // PyTorch FSDP's units are layers (L = 12h^2 + 13h), and its tied embedding stays gathered:
  // bf16 (E + 2L) and a layer's fp16 gradients; the same plan does not fit.
  plan.runtime = Runtime::kPytorchFsdp;
  const double layer = 12 * h * h + 13 * h;
  CHECK(params.largest_layer == layer);
  const MemoryReport fsdp = estimate_memory(model, cluster, plan);
  CHECK_FALSE(fsdp.fits);
  CHECK(fsdp.stages[0].transient_bytes - deepspeed.stages[0].transient_bytes ==
        Approx(2 * (embedding + 2 * layer) + 2 * layer - 4 * module));
}

TEST_CASE("MemoryModel: PyTorch FSDP's fp32 shards are the master weights (16 bytes/D, not 18)") {
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  // pp 4 (stage 1 holds no embedding or loss); torchtitan's FSDP under pipelining is below.
  Plan plan = base_plan(8, 4, 8, 1, 512);
  plan.zero_stage = 3;
  const double n = stage_parameters(model, plan, 1).total();
  {
    plan.runtime = Runtime::kPytorchFsdp;
    const StageMemory fsdp = estimate_memory(model, cluster, plan).stages[1];
    CHECK(fsdp.weights_bytes == Approx(4 * n / 8));     // fp32 shards.
    CHECK(fsdp.gradients_bytes == Approx(4 * n / 8));   // fp32 sharded gradients.
    CHECK(fsdp.optimizer_bytes == Approx(8 * n / 8));   // Adam m and v only.
  }
  {
    // torchtitan without pipelining: the same shards (one stage, 32 ranks to shard over).
    Plan titan = base_plan(8, 1, 32, 1, 512);
    titan.zero_stage = 3;
    titan.runtime = Runtime::kTorchtitan;
    const double all = stage_parameters(model, titan, 0).total();
    const StageMemory fsdp = estimate_memory(model, cluster, titan).stages[0];
    CHECK(fsdp.weights_bytes == Approx(4 * all / 32));
    CHECK(fsdp.gradients_bytes == Approx(4 * all / 32));
    CHECK(fsdp.optimizer_bytes == Approx(8 * all / 32));
  }
  // DeepSpeed ZeRO-3 and Megatron keep bf16 weights beside an fp32 master: 18 bytes/D.
  plan.runtime = Runtime::kDeepSpeed;
  const StageMemory deepspeed = estimate_memory(model, cluster, plan).stages[1];
  CHECK(deepspeed.weights_bytes + deepspeed.gradients_bytes + deepspeed.optimizer_bytes ==
        Approx(18 * n / 8));
  // Below ZeRO-3 FSDP keeps the Megatron layout's 18 bytes (no sharded parameters).
  plan.runtime = Runtime::kTorchtitan;
  plan.zero_stage = 1;
  const StageMemory zero1 = estimate_memory(model, cluster, plan).stages[1];
  CHECK(zero1.optimizer_bytes == Approx(12 * n / 8));
}

TEST_CASE("MemoryModel: torchtitan's FSDP under pipelining keeps a stage gathered, fp32 gradients") {
  // reshard_after_forward=False with pp and no gradient sync before the last microbatch: the
  // stage's bf16 parameters (2) and fp32 accumulated gradients (4) whole, the fp32 master
  // shard and Adam (12/D) sharded -- Megatron's distributed optimizer, 6 + 12/D.
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(8, 4, 8, 1, 512);
  plan.zero_stage = 3;
  plan.runtime = Runtime::kTorchtitan;
  CHECK(zero_stage_in_force(plan) == 1);
  const double n = stage_parameters(model, plan, 1).total();
  const StageMemory titan = estimate_memory(model, cluster, plan).stages[1];
  CHECK(titan.weights_bytes == Approx(2 * n));
  CHECK(titan.gradients_bytes == Approx(4 * n));
  CHECK(titan.optimizer_bytes == Approx(12 * n / 8));
  // No gathered-layer buffers: everything is gathered already.
  CHECK(titan.transient_bytes == Approx(0));
  // The same plan as Megatron's distributed optimizer, byte for byte.
  Plan megatron = plan;
  megatron.runtime = Runtime::kMegatronCore;
  megatron.zero_stage = 1;
  const StageMemory zero1 = estimate_memory(model, cluster, megatron).stages[1];
  CHECK(titan.weights_bytes + titan.gradients_bytes + titan.optimizer_bytes ==
        Approx(zero1.weights_bytes + zero1.gradients_bytes + zero1.optimizer_bytes));
  // ZeRO-2 under pipelining alike (no gradient sync before the last microbatch either).
  plan.zero_stage = 2;
  CHECK(zero_stage_in_force(plan) == 1);
  CHECK(estimate_memory(model, cluster, plan).stages[1].gradients_bytes == Approx(4 * n));
  plan.zero_stage = 3;
  // PyTorch FSDP (FSDP1, no torch.distributed.pipelining) and pp = 1 keep ZeRO-3.
  plan.runtime = Runtime::kPytorchFsdp;
  CHECK(zero_stage_in_force(plan) == 3);
  plan.runtime = Runtime::kTorchtitan;
  plan.pp = 1;
  CHECK(zero_stage_in_force(plan) == 3);
}

TEST_CASE("MemoryModel: torchtitan's loss works in fp32 gradients, Megatron's in place") {
  // torchtitan: cross_entropy(pred.float(), labels) saves log_softmax's fp32 output (4 bytes a
  // logit, as Megatron's fused loss saves its softmax) and its backward holds the incoming and
  // outgoing fp32 gradients (8); Megatron works in one bf16 copy (2).
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 8);
  Plan plan = base_plan(8, 1, 1, 1, 1);
  plan.recompute = Recompute::kFull;
  const double logits = static_cast<double>(model.seq_length) *
                        static_cast<double>(padded_vocab_size(model.vocab_size, 8)) / 8;  // sbV/t
  const ActivationConfig megatron = activation_config(plan, model);
  CHECK(loss_working_bytes(model, megatron) == Approx(2 * logits));
  plan.runtime = Runtime::kTorchtitan;
  const ActivationConfig titan = activation_config(plan, model);
  CHECK(loss_working_bytes(model, titan) == Approx(8 * logits));
  CHECK(loss_activation_bytes(model, titan) == Approx(loss_activation_bytes(model, megatron)));
}

TEST_CASE("MemoryModel: fp16 keeps 2-byte gradients, bf16 and fp8 fp32 ones (Megatron)") {
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(8, 4, 8, 1, 512);
  const double n = stage_parameters(model, plan, 1).total();
  plan.precision = Precision::kBf16;
  const StageMemory bf16 = estimate_memory(model, cluster, plan).stages[1];
  plan.precision = Precision::kFp8;
  const StageMemory fp8 = estimate_memory(model, cluster, plan).stages[1];
  plan.precision = Precision::kFp16;
  const StageMemory fp16 = estimate_memory(model, cluster, plan).stages[1];
  CHECK(bf16.gradients_bytes == Approx(4 * n));
  CHECK(fp8.gradients_bytes == Approx(4 * n));
  CHECK(fp16.gradients_bytes == Approx(2 * n));
  CHECK(fp16.peak_bytes == Approx(bf16.peak_bytes - 2 * n));
  // ZeRO-2 shards them, and its transient unsharded layer shrinks the same way.
  plan.zero_stage = 2;
  const double largest = stage_parameters(model, plan, 1).largest_layer;
  const StageMemory fp16_zero2 = estimate_memory(model, cluster, plan).stages[1];
  CHECK(fp16_zero2.gradients_bytes == Approx(2 * n / 8));
  CHECK(fp16_zero2.transient_bytes == Approx(2 * largest));
}

TEST_CASE("MemoryModel: grad_reduce_in_fp32 sets the gradient buffer's bytes (4 or 2)") {
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(8, 4, 8, 1, 512);
  const double n = stage_parameters(model, plan, 1).total();
  const StageMemory fp32 = estimate_memory(model, cluster, plan).stages[1];
  plan.grad_reduce_in_fp32 = false;
  const StageMemory bf16 = estimate_memory(model, cluster, plan).stages[1];
  CHECK(fp32.gradients_bytes == Approx(4 * n));
  CHECK(bf16.gradients_bytes == Approx(2 * n));
  CHECK(bf16.peak_bytes == Approx(fp32.peak_bytes - 2 * n));
  // An fp16 plan that accumulates in fp32 (--accumulate-allreduce-grads-in-fp32).
  plan.precision = Precision::kFp16;
  plan.grad_reduce_in_fp32 = true;
  CHECK(estimate_memory(model, cluster, plan).stages[1].gradients_bytes == Approx(4 * n));
}

TEST_CASE("MemoryModel: optimizer offload moves master weights and Adam states to the host") {
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(8, 4, 8, 1, 512);
  plan.zero_stage = 1;
  MemoryReport on_gpu = estimate_memory(model, cluster, plan);
  plan.offload_optimizer = true;
  MemoryReport offloaded = estimate_memory(model, cluster, plan);
  for (int64_t stage = 0; stage < 4; ++stage) {
    const StageMemory& before = on_gpu.stages[stage];
    const StageMemory& after = offloaded.stages[stage];
    CHECK(after.optimizer_bytes == 0);
    CHECK(after.host_optimizer_bytes == before.optimizer_bytes);
    CHECK(after.weights_bytes == before.weights_bytes);
    CHECK(after.gradients_bytes == before.gradients_bytes);
    CHECK(after.peak_bytes == Approx(before.peak_bytes - before.optimizer_bytes));
  }
}

TEST_CASE("MemoryModel: capacity, fits and over_bytes") {
  ModelSpec model = llama2_70b_shape();
  Plan plan = base_plan(8, 4, 8, 1, 512);
  plan.zero_stage = 1;
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kSelective;
  SECTION("a fitting plan") {
    ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
    MemoryReport report = estimate_memory(model, cluster, plan);
    CHECK(report.fits);
    CHECK(report.over_bytes == 0);
    for (const StageMemory& stage : report.stages) {
      CHECK(stage.capacity_bytes == cluster.nodes[0].gpu.memory_bytes);
      CHECK(stage.gpu == "H100-SXM-80GB");
      CHECK(stage.peak_bytes ==
            Approx(stage.weights_bytes + stage.gradients_bytes + stage.optimizer_bytes +
                   stage.activations_bytes + stage.logits_bytes + stage.transient_bytes +
                   stage.workspace_bytes));
      CHECK(stage.peak_bytes <= report.peak_bytes);
    }
  }
  SECTION("without the distributed optimizer 70B on tp8 pp2 overflows 80 GB") {
    plan.zero_stage = 0;
    plan.pp = 2;
    plan.dp = 16;
    ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
    MemoryReport report = estimate_memory(model, cluster, plan);
    CHECK_FALSE(report.fits);
    const StageMemory& worst = report.stages[report.worst_stage];
    CHECK(report.over_bytes == Approx(worst.peak_bytes - worst.capacity_bytes));
    for (const StageMemory& stage : report.stages) {
      CHECK(stage.headroom_bytes() >= worst.headroom_bytes());
    }
  }
  SECTION("placement puts stages on the node group it names") {
    ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 16);
    ClusterSpec a100 = uniform_cluster("A100-SXM-40GB", 16);
    cluster.nodes.push_back(a100.nodes[0]);
    plan.zero_stage = 0;  // 18 bytes/param: about 39 GB of state per GPU, too much for 40 GB.
    plan.placement = {0, 0, 1, 1};
    MemoryReport report = estimate_memory(model, cluster, plan);
    CHECK(report.stages[1].gpu == "H100-SXM-80GB");
    CHECK(report.stages[2].gpu == "A100-SXM-40GB");
    CHECK(report.stages[2].capacity_bytes == gib_to_bytes(40));
    CHECK(report.stages[2].node_group == 1);
    CHECK_FALSE(report.fits);
    CHECK(report.worst_stage >= 2);
    // In cluster order without placement: stages 0-1 on the first 128 GPUs (H100), 2-3 next.
    plan.placement.clear();
    MemoryReport in_order = estimate_memory(model, cluster, plan);
    CHECK(in_order.stages[1].node_group == 0);
    CHECK(in_order.stages[2].node_group == 1);
  }
}

TEST_CASE("MemoryModel: uneven stage layers") {
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(8, 4, 8, 1, 512);
  plan.sequence_parallel = true;
  plan.recompute = Recompute::kSelective;
  plan.stage_layers = {18, 22, 22, 18};
  require_valid(model, cluster, plan);
  MemoryReport report = estimate_memory(model, cluster, plan);
  ActivationConfig config = activation_config(plan, model);
  const double per_layer = layer_activation_bytes(model, config, 0).total();
  CHECK(report.stages[0].layers == 18);
  CHECK(report.stages[1].layers == 22);
  // Stage 1: 22 layers, 3 microbatches in flight.
  CHECK(report.stages[1].activations_bytes == Approx(22 * per_layer * 3));
  CHECK(report.stages[0].activations_bytes ==
        Approx(4 * (18 * per_layer + embedding_activation_bytes(model, config))));
  // Parameters follow the layers: stages 1 and 2 are alike, with 22/20 of an even split's.
  StageParameters one = stage_parameters(model, plan, 1);
  StageParameters two = stage_parameters(model, plan, 2);
  CHECK(one.total() == two.total());
  Plan even = plan;
  even.stage_layers.clear();
  CHECK(one.total() == Approx(stage_parameters(model, even, 1).total() * 22 / 20));
}

TEST_CASE("MemoryModel: workspace counts the plan's communicators") {
  ModelSpec model = llama2_70b_shape();
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 32);
  Plan plan = base_plan(8, 4, 8, 1, 512);
  MemoryReport report = estimate_memory(model, cluster, plan);
  // tp, dp and pp groups.
  CHECK(report.stages[1].workspace_bytes ==
        kCudaContextBytes + kCublasWorkspaceBytes + 3 * kNcclBytesPerCommunicator);
  // A MoE plan whose experts reduce over a group of their own (ep 8 of dp 32: 4 ranks) adds the
  // ep and the expert data-parallel communicators; ep = dp*cp leaves no expert group to reduce.
  ModelSpec moe = testing::tiny_moe_model();
  Plan folded = parse_plan("tp=1,pp=1,dp=32,ep=8,mbs=1,gbs=32", "test");
  CHECK(estimate_memory(moe, cluster, folded).stages[0].workspace_bytes ==
        kCudaContextBytes + kCublasWorkspaceBytes + 3 * kNcclBytesPerCommunicator);
  Plan whole = parse_plan("tp=1,pp=1,dp=32,ep=32,mbs=1,gbs=32", "test");
  CHECK(estimate_memory(moe, cluster, whole).stages[0].workspace_bytes ==
        kCudaContextBytes + kCublasWorkspaceBytes + 2 * kNcclBytesPerCommunicator);
  Plan single = base_plan(1, 1, 1, 1, 8);
  ModelSpec small = gpt3_175b_shape();
  small.num_layers = 2;
  small.hidden_size = 1024;
  small.ffn_hidden_size = 4096;
  small.num_attention_heads = 8;
  small.num_kv_heads = 8;
  MemoryReport one_gpu = estimate_memory(small, cluster, single);
  CHECK(one_gpu.stages[0].workspace_bytes == kCudaContextBytes + kCublasWorkspaceBytes);
}

}  // namespace
}  // namespace ppsim
