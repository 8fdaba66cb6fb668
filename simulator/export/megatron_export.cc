#include "simulator/export/megatron_export.h"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/model/chunk_layout.h"
#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"

namespace ppsim {
namespace {

// One command-line argument: a flag and its value ("" for a store_true flag).
struct Arg {
  std::string flag;
  std::string value;
};

std::string bash_array(const std::string& name, const std::vector<Arg>& args) {
  std::string text = name + "=(\n";
  for (const Arg& arg : args) {
    text += "  " + arg.flag + (arg.value.empty() ? "" : " " + arg.value) + "\n";
  }
  return text + ")\n";
}

// --pipeline-model-parallel-layout: "E" embedding, "t" decoder layer, "m" MTP layer, "L" loss;
// virtual stages separated by "|", virtual stage i on rank i % pp; "t*n" repeats; commas are
// cosmetic (megatron/core/transformer/pipeline_parallel_layer_layout.py). The MTP layers go in
// the last virtual stage, after its decoder layers, as that file requires.
std::string megatron_layout(const std::vector<int64_t>& virtual_stage_layers, int64_t mtp_layers) {
  std::string layout;
  auto repeat = [](const char* symbol, int64_t n) {
    return n == 1 ? std::string(symbol) : n > 1 ? fmt::format("{}*{}", symbol, n) : "";
  };
  for (size_t i = 0; i < virtual_stage_layers.size(); ++i) {
    if (i) layout += "|";
    if (i == 0) layout += "E";
    layout += repeat("t", virtual_stage_layers[i]);
    if (i + 1 == virtual_stage_layers.size()) {
      if (mtp_layers > 0) layout += "," + repeat("m", mtp_layers);
      layout += ",L";
    }
  }
  return layout;
}

// --moe-layer-freq (arguments.py moe_freq_type): an integer N (layer i is MoE when i % N == 0);
// with MoE layers at another offset of groups that tile the layers, one group repeated as a
// Python list expression of 1 (MoE) and 0 (dense), "([0,1]*24)"; with dense layers first, the
// whole list run-length coded, "([0]*3+[1]*58)". "" when every layer is MoE (Megatron's
// default 1).
std::string megatron_moe_layer_freq(const ModelSpec& model) {
  const MoeSpec& moe = *model.moe;
  if (moe.first_k_dense == 0 && moe.layer_offset == 0) {
    return moe.every_n_layers == 1 ? "" : std::to_string(moe.every_n_layers);
  }
  // One group repeated, when the groups tile the layers: Llama 4 Maverick's "([0,1]*24)".
  if (moe.first_k_dense == 0 && model.num_layers % moe.every_n_layers == 0) {
    std::string group;
    for (int64_t i = 0; i < moe.every_n_layers; ++i) {
      group += fmt::format("{}{}", i ? "," : "", i == moe.layer_offset ? 1 : 0);
    }
    return fmt::format("\"([{}]*{})\"", group, model.num_layers / moe.every_n_layers);
  }
  std::string pattern;
  for (int64_t start = 0; start < model.num_layers;) {
    const bool moe = model.is_moe_layer(start);
    int64_t end = start;
    while (end < model.num_layers && model.is_moe_layer(end) == moe) ++end;
    pattern += fmt::format("{}[{}]*{}", start ? "+" : "", moe ? 1 : 0, end - start);
    start = end;
  }
  return "\"(" + pattern + ")\"";
}

// --hybrid-layer-pattern: the model's pattern with "|" between the plan's pipeline chunks (in
// model order; chunk_layout.h), which is how Megatron-Core places a hybrid model's layers on
// pipeline stages and derives their virtual stages (arguments.py: the segments, a multiple of
// pp, replace every other layout flag), then "/" and the MTP block per MTP depth. Quoted.
std::string megatron_hybrid_pattern(const ModelSpec& model, const Plan& plan) {
  std::string pattern;
  if (plan.pp == 1) {
    pattern = model.hybrid_layer_pattern;
  } else {
    const ChunkLayout layout = chunk_layout(plan, model);
    for (int64_t chunk = 0; chunk < layout.num_chunks(); ++chunk) {
      if (chunk) pattern += "|";
      pattern += model.hybrid_layer_pattern.substr(layout.chunk_first_layer[chunk],
                                                   layout.chunk_layers[chunk]);
    }
  }
  // MTP depths after "/", one block pattern each (arguments.py's unified MTP form).
  for (int64_t depth = 0; depth < model.mtp_layers; ++depth) {
    pattern += "/" + model.mtp_layer_pattern;
  }
  return "\"" + pattern + "\"";
}

// Pipeline schedule and layer split flags: 1F1B, or interleaved with the plan's vpp (the only
// schedules Megatron-LM runs; runtime_plan_problem refuses the others before export); a hybrid
// model's split is in its --hybrid-layer-pattern instead. Returns the virtual stages per rank
// the script runs.
int64_t megatron_pipeline_args(const ModelSpec& model, const Plan& plan, std::vector<Arg>& args) {
  if (plan.pp == 1) return 1;
  PPSIM_CHECK(schedule_traits(plan.schedule).megatron_native,
              "runtime_plan_problem refuses schedules Megatron-LM lacks");
  const int64_t chunks = is_interleaved(plan.schedule) ? plan.vpp : 1;
  // Megatron's default group is pp (ModelParallelConfig.__post_init__); written when given.
  if (plan.microbatch_group_size > 0) {
    args.push_back({"--microbatch-group-size-per-virtual-pipeline-stage",
                    std::to_string(plan.microbatch_group_size)});
  }
  if (model.is_hybrid()) return chunks;
  // Megatron's even and first/last splits divide every stage's layers evenly over its chunks;
  // any other split (a rank's chunks unequal: chunk_layout.h gives its first layers % v chunks
  // one more, or the plan's pipeline_layout says so) needs the explicit layout.
  const ChunkLayout layout = chunk_layout(plan, model);
  const std::vector<int64_t>& layers = layout.stage_layers;
  bool chunks_even = true;
  for (int64_t c = 0; c < layout.num_chunks(); ++c) {
    chunks_even = chunks_even && layout.chunk_layers[c] * chunks == layers[layout.chunk_rank[c]];
  }
  if (all_equal(layers) && chunks_even) {
    if (chunks > 1) {
      args.push_back(
          {"--num-layers-per-virtual-pipeline-stage", std::to_string(layers.front() / chunks)});
    }
    return chunks;
  }
  // Uneven: first/last flags when the middle stages are even and hold layers, else an explicit
  // layout (a layout's empty middle ranks are the layout's to say: Megatron's first/last split
  // is checked for divisibility alone, not written for stages without layers).
  const int64_t first = layers.front(), last = layers.back();
  std::vector<int64_t> middle(layers.begin() + 1, layers.end() - 1);
  bool middle_even = middle.empty() || (all_equal(middle) && middle.front() > 0);
  if (middle_even && first > 0 && last > 0 && chunks_even) {
    args.push_back({"--decoder-first-pipeline-num-layers", std::to_string(first)});
    args.push_back({"--decoder-last-pipeline-num-layers", std::to_string(last)});
    if (chunks > 1)
      args.push_back({"--num-virtual-stages-per-pipeline-rank", std::to_string(chunks)});
    return chunks;
  }
  args.push_back(
      {"--pipeline-model-parallel-layout",
       "\"" + megatron_layout(chunks > 1 ? layout.chunk_layers : layers, model.mtp_layers) + "\""});
  return chunks;
}

}  // namespace

LauncherOutput export_megatron(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan) {
  LauncherOutput out;
  std::vector<std::string>& warnings = out.warnings;
  const Launch launch = launch_shape(cluster, plan, "Megatron-LM", warnings);
  const int64_t seq = effective_seq_length(plan, model);
  const int64_t microbatches = launcher_microbatches(plan);

  std::vector<Arg> model_args = {
      {"--num-layers", std::to_string(model.num_layers)},
      {"--hidden-size", std::to_string(model.hidden_size)},
      {"--ffn-hidden-size", std::to_string(model.ffn_hidden_size)},
      {"--num-attention-heads", std::to_string(model.num_attention_heads)},
  };
  if (model.is_hybrid()) {
    // Megatron-Core's hybrid model (pretrain_hybrid.py); its layer count comes from the pattern.
    model_args.push_back({"--hybrid-layer-pattern", megatron_hybrid_pattern(model, plan)});
  }
  if (model.mamba) {
    const MambaSpec& mamba = *model.mamba;
    model_args.push_back({"--mamba-num-heads", std::to_string(mamba.num_heads)});
    model_args.push_back({"--mamba-head-dim", std::to_string(mamba.head_dim)});
    model_args.push_back({"--mamba-state-dim", std::to_string(mamba.state_size)});
    model_args.push_back({"--mamba-num-groups", std::to_string(mamba.num_groups)});
    if (mamba.conv_kernel != 4 || mamba.chunk_size != 128) {
      // megatron/core/ssm/mamba_mixer.py: MambaMixer(d_conv=4, chunk_size=128), no flags.
      warnings.push_back(fmt::format(
          "{} has a conv1d of {} taps and SSD chunks of {} tokens; Megatron-LM's MambaMixer "
          "fixes them at 4 and 128 (no command-line flag), so the script runs those",
          model.name, mamba.conv_kernel, mamba.chunk_size));
    }
  }
  if (model.mla) {
    // MLA replaces GQA (arguments.py asserts they are exclusive) and sizes its heads itself.
    model_args.push_back({"--multi-latent-attention", ""});
    if (model.mla->q_lora_rank > 0) {
      model_args.push_back({"--q-lora-rank", std::to_string(model.mla->q_lora_rank)});
    }
    model_args.push_back({"--kv-lora-rank", std::to_string(model.mla->kv_lora_rank)});
    model_args.push_back({"--qk-head-dim", std::to_string(model.mla->qk_nope_head_dim)});
    model_args.push_back({"--qk-pos-emb-head-dim", std::to_string(model.mla->qk_rope_head_dim)});
    model_args.push_back({"--v-head-dim", std::to_string(model.mla->v_head_dim)});
  } else {
    if (model.num_kv_heads != model.num_attention_heads) {
      model_args.push_back({"--group-query-attention", ""});
      model_args.push_back({"--num-query-groups", std::to_string(model.num_kv_heads)});
    }
    if (model.head_dim * model.num_attention_heads != model.hidden_size) {
      model_args.push_back({"--kv-channels", std::to_string(model.head_dim)});
    }
  }
  if (model.qk_norm) model_args.push_back({"--qk-layernorm", ""});
  if (model.sliding_window > 0) {
    // Transformer Engine's (left, right) window: a query sees W keys, itself and W-1 back (as
    // Megatron's GPT-OSS example writes HF sliding_window 128: "--window-size 127,0").
    model_args.push_back({"--window-size", fmt::format("{},0", model.sliding_window - 1)});
    if (model.sliding_window_pattern > 0) {
      model_args.push_back(
          {"--window-attn-skip-freq", std::to_string(model.sliding_window_pattern)});
    }
  }
  const bool learned = model.position_embedding == PositionEmbedding::kLearned;
  const int64_t positions = std::max(model.max_position_embeddings, seq);
  if (learned && seq > model.max_position_embeddings) {
    warnings.push_back(fmt::format(
        "{} has a learned position table of {} rows but the plan trains at sequence length {}; "
        "Megatron-LM needs --max-position-embeddings >= --seq-length, so the script sets {} (a "
        "larger table than the model's)",
        model.name, model.max_position_embeddings, seq, positions));
  }
  model_args.push_back({"--seq-length", std::to_string(seq)});
  model_args.push_back({"--max-position-embeddings", std::to_string(positions)});
  const bool rope = model.position_embedding == PositionEmbedding::kRope;
  model_args.push_back({"--position-embedding-type", learned ? "learned_absolute"
                                                     : rope  ? "rope"
                                                             : "none"});
  if (rope) model_args.push_back({"--rotary-base", fmt::format("{:g}", model.rope_theta)});
  // ppsim models no dropout (layer_ops.h); Megatron's default is 0.1 for both
  // (transformer_config.py hidden_dropout, attention_dropout).
  model_args.push_back({"--attention-dropout", "0.0"});
  model_args.push_back({"--hidden-dropout", "0.0"});
  if (is_gated(model.activation)) model_args.push_back({"--swiglu", ""});
  if (model.activation == Activation::kSquaredRelu) model_args.push_back({"--squared-relu", ""});
  if (model.activation == Activation::kGeglu) {
    // arguments.py offers --swiglu (and --squared-relu), no GeGLU: the gated SiLU MLP has the
    // same three matrices and step time, but it is not the model's function.
    warnings.push_back(fmt::format(
        "{} has a GeGLU MLP (tanh-GELU gate, as Gemma); Megatron-LM's command line has no GeGLU, "
        "so the script writes --swiglu: the same three matrices and step time with a SiLU gate. "
        "To train the model's own activation, build it with Megatron-Core's gated_linear_unit "
        "and a GELU activation_func (as Megatron-Bridge's Gemma providers do)",
        model.name));
  }
  model_args.push_back({"--normalization", model.norm == Norm::kRmsNorm ? "RMSNorm" : "LayerNorm"});
  if (!model.tied_embeddings) model_args.push_back({"--untie-embeddings-and-output-weights", ""});
  if (!model.linear_bias) model_args.push_back({"--disable-bias-linear", ""});
  if (!model.linear_bias && model.qkv_bias) model_args.push_back({"--add-qkv-bias", ""});
  if (model.moe) {
    model_args.push_back({"--num-experts", std::to_string(model.moe->num_experts)});
    model_args.push_back({"--moe-router-topk", std::to_string(model.moe->top_k)});
    model_args.push_back(
        {"--moe-ffn-hidden-size", std::to_string(model.moe->expert_ffn_hidden_size)});
    // A hybrid model's MoE layers are its pattern's 'E's.
    const std::string layer_freq = model.is_hybrid() ? "" : megatron_moe_layer_freq(model);
    if (!layer_freq.empty()) model_args.push_back({"--moe-layer-freq", layer_freq});
    if (model.moe->num_shared_experts > 0) {
      // The total width of all shared experts (TransformerConfig docstring).
      model_args.push_back(
          {"--moe-shared-expert-intermediate-size", std::to_string(model.moe->shared_width())});
    }
    if (model.moe->latent_size > 0) {
      model_args.push_back({"--moe-latent-size", std::to_string(model.moe->latent_size)});
    }
    if (model.moe->num_groups > 0) {
      model_args.push_back({"--moe-router-num-groups", std::to_string(model.moe->num_groups)});
      model_args.push_back({"--moe-router-group-topk", std::to_string(model.moe->group_topk)});
    }
    model_args.push_back({"--moe-grouped-gemm", ""});
    model_args.push_back({"--moe-router-load-balancing-type", "aux_loss"});
    model_args.push_back({"--moe-aux-loss-coeff", "1e-2"});
    if (!model.moe->dropless()) {
      model_args.push_back(
          {"--moe-expert-capacity-factor", fmt::format("{}", model.moe->capacity_factor)});
      model_args.push_back({"--moe-pad-expert-input-to-capacity", ""});
    }
  }
  if (model.mtp_layers > 0) {
    model_args.push_back({"--mtp-num-layers", std::to_string(model.mtp_layers)});
  }

  std::vector<Arg> parallel_args = {
      {"--tensor-model-parallel-size", std::to_string(plan.tp)},
      {"--pipeline-model-parallel-size", std::to_string(plan.pp)},
      {"--context-parallel-size", std::to_string(plan.cp)},
  };
  if (model.moe) {
    parallel_args.push_back({"--expert-model-parallel-size", std::to_string(plan.ep)});
    // Megatron's default expert tp is tp; an explicit etp is written even when equal.
    if (plan.etp > 0) {
      parallel_args.push_back({"--expert-tensor-parallel-size", std::to_string(plan.etp)});
    }
    if (plan.moe_dispatcher == MoeDispatcher::kAllToAll) {
      parallel_args.push_back({"--moe-token-dispatcher-type", "alltoall"});
    } else {
      parallel_args.push_back({"--moe-token-dispatcher-type", "flex"});
      parallel_args.push_back(
          {"--moe-flex-dispatcher-backend", moe_dispatcher_name(plan.moe_dispatcher)});
    }
  }
  if (plan.sequence_parallel) parallel_args.push_back({"--sequence-parallel", ""});
  // Transformer Engine's userbuffers overlap (the plan's tp_comm_overlap; on by default under
  // megatron-core with sequence parallelism, plan.h).
  if (tp_comm_overlap_in_force(plan)) parallel_args.push_back({"--tp-comm-overlap", ""});
  megatron_pipeline_args(model, plan, parallel_args);
  // Runnable here (runtime_plan_problem checks TransformerConfig's asserts).
  if (plan.moe_a2a_overlap) parallel_args.push_back({"--overlap-moe-expert-parallel-comm", ""});
  // CUDA graphs (plan.h CudaGraphs; the preprocess where moe_preprocess_graphed says).
  switch (plan.cuda_graphs) {
    case CudaGraphs::kNone:
      break;
    case CudaGraphs::kMoeRouter:
      parallel_args.push_back({"--cuda-graph-impl", "transformer_engine"});
      parallel_args.push_back(
          {"--cuda-graph-modules",
           moe_preprocess_graphed(plan, model) ? "moe_router moe_preprocess" : "moe_router"});
      break;
    case CudaGraphs::kLayers:
      parallel_args.push_back({"--cuda-graph-impl", "local"});
      break;
    case CudaGraphs::kFullIteration:
      parallel_args.push_back({"--cuda-graph-impl", "full_iteration"});
      // arguments.py asserts the loss/grad NaN check off under the full-iteration graph.
      parallel_args.push_back({"--no-check-for-nan-in-loss-and-grad", ""});
      break;
  }

  std::vector<Arg> training_args = {
      {"--micro-batch-size", std::to_string(plan.micro_batch_size)},
      {"--global-batch-size", std::to_string(plan.global_batch_size)},
  };
  if (plan.recompute == Recompute::kSelective) {
    training_args.push_back({"--recompute-granularity", "selective"});
    // Megatron's default module list is core_attn; others are spelled out.
    if (plan.recompute_modules != 0) {
      training_args.push_back(
          {"--recompute-modules", recompute_modules_text(plan.recompute_modules, " ")});
    }
  } else if (plan.recompute == Recompute::kFull && plan.recompute_num_layers > 0) {
    // The first N layers of each pipeline chunk, one checkpoint each (transformer_block.py).
    training_args.push_back({"--recompute-granularity", "full"});
    training_args.push_back({"--recompute-method", "block"});
    training_args.push_back({"--recompute-num-layers", std::to_string(plan.recompute_num_layers)});
  } else if (plan.recompute == Recompute::kFull) {
    training_args.push_back({"--recompute-granularity", "full"});
    training_args.push_back({"--recompute-method", "uniform"});
    training_args.push_back({"--recompute-num-layers", "1"});
  }
  // Activation offloading (arguments.py turns cpu_offloading on with a positive count;
  // activations only, cpu_offloading_weights stays off).
  if (plan.activation_offload_layers > 0) {
    training_args.push_back(
        {"--cpu-offloading-num-layers", std::to_string(plan.activation_offload_layers)});
  }
  // The gradients' dtype (grad_reduce_in_fp32_in_force, plan.h): arguments.py reduces bf16
  // training's in fp32 unless --grad-reduce-in-bf16, fp16's in fp16 unless
  // --accumulate-allreduce-grads-in-fp32.
  const bool fp32_gradients = grad_reduce_in_fp32_in_force(plan);
  if (plan.precision == Precision::kFp16) {
    training_args.push_back({"--fp16", ""});
    if (fp32_gradients) training_args.push_back({"--accumulate-allreduce-grads-in-fp32", ""});
  } else {
    training_args.push_back({"--bf16", ""});
    if (!fp32_gradients) training_args.push_back({"--grad-reduce-in-bf16", ""});
    if (plan.precision == Precision::kFp8) {
      // The recipe ppsim priced (fp8_recipe_in_force, plan.h), without --fp8-param-gather
      // (ppsim keeps bf16 weights, memory_model.h).
      const Fp8Recipe recipe = fp8_recipe_in_force(plan);
      training_args.push_back({"--fp8-format", recipe == Fp8Recipe::kMxfp8 ? "e4m3" : "hybrid"});
      training_args.push_back({"--fp8-recipe", fp8_recipe_name(recipe)});
      if (recipe == Fp8Recipe::kDelayed) {
        // As examples/llama/train_llama3_8b_h100_fp8.sh: Transformer Engine's delayed scaling.
        training_args.push_back({"--fp8-amax-history-len", "1024"});
        training_args.push_back({"--fp8-amax-compute-algo", "max"});
      }
    } else if (plan.precision == Precision::kNvfp4) {
      // Transformer Engine's NVFP4BlockScaling (megatron/core/fp4_utils.py get_fp4_recipe),
      // without --fp4-param-gather (ppsim keeps bf16 weights, memory_model.h).
      training_args.push_back({"--fp4-format", "e2m1"});
      training_args.push_back({"--fp4-recipe", "nvfp4"});
    }
  }
  const bool megatron_fsdp = plan.zero_stage >= 2;
  if (plan.zero_stage >= 1) training_args.push_back({"--use-distributed-optimizer", ""});
  if (megatron_fsdp) {
    training_args.push_back({"--use-megatron-fsdp", ""});
    training_args.push_back({"--data-parallel-sharding-strategy",
                             plan.zero_stage == 2 ? "optim_grads" : "optim_grads_params"});
    training_args.push_back({"--ckpt-format", "fsdp_dtensor"});
  }
  if (plan.offload_optimizer) {
    training_args.push_back({"--optimizer-cpu-offload", ""});
    // Always written: OptimizerConfig.optimizer_offload_fraction defaults to 0.0, which offloads
    // nothing (megatron/core/optimizer/optimizer_config.py).
    training_args.push_back(
        {"--optimizer-offload-fraction", fmt::format("{}", plan.offload_fraction)});
    training_args.push_back({"--use-precision-aware-optimizer", ""});
    // The simulated update overlaps the host copies with the CPU Adam (optimizer_offload.h), as
    // this flag does (megatron/core/optimizer/cpu_offloading/README.md).
    training_args.push_back({"--overlap-cpu-optimizer-d2h-h2d", ""});
  }
  if (plan.dp * plan.cp > 1) {
    training_args.push_back({"--overlap-grad-reduce", ""});
    if (plan.zero_stage >= 1) training_args.push_back({"--overlap-param-gather", ""});
  }

  std::vector<Arg> run_args = {
      {"--mock-data", ""},
      {"--tokenizer-type", "NullTokenizer"},
      {"--vocab-size", std::to_string(model.vocab_size)},
      {"--train-iters", "\"${TRAIN_ITERS:-100}\""},
      {"--lr", "1.0e-4"},
      {"--log-throughput", ""},
  };

  std::string& text = out.text;
  text += "#!/bin/bash\n";
  text += "# Megatron-LM launch script written by `ppsim export --format megatron`.\n";
  text += fmt::format("#   model:   {} ({})\n", model.name, model_summary(model));
  text += fmt::format("#   cluster: {} ({})\n", cluster.name, cluster_summary(cluster));
  text += fmt::format("#   plan:    {}\n", plan_to_inline(plan));
  text += fmt::format("#   step:    {} microbatches of {} x {} tokens per replica, {} GPUs\n",
                      microbatches, plan.micro_batch_size, seq, launch.world);
  text += wrap_comment(
      (launch.nodes == 1
           ? std::string("Run it from the root of a Megatron-LM checkout.")
           : fmt::format("Run it from the root of a Megatron-LM checkout on each of the {} nodes, "
                         "with NODE_RANK set to the node's index (0..{}) and MASTER_ADDR to node "
                         "0's address.",
                         launch.nodes, launch.nodes - 1)) +
          " Flags as megatron/training/arguments.py (NVIDIA/Megatron-LM) defines them.",
      "# ", "# ");
  for (const std::string& warning : warnings) {
    text += wrap_comment(warning, "# WARNING: ", "#   ");
  }
  text += "\nset -euo pipefail\n\n";
  if (megatron_fsdp) {
    text += "# Megatron-FSDP (ZeRO-2/3) asserts CUDA_DEVICE_MAX_CONNECTIONS != 1 (arguments.py).\n";
    text += "unset CUDA_DEVICE_MAX_CONNECTIONS\n\n";
  } else {
    text += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n\n";
  }
  text += fmt::format("GPUS_PER_NODE={}\n", launch.gpus_per_node);
  text += fmt::format("NUM_NODES={}\n", launch.nodes);
  if (launch.nodes == 1) {
    text += "NODE_RANK=${NODE_RANK:-0}\n";
    text += "MASTER_ADDR=${MASTER_ADDR:-localhost}\n";
  } else {
    // No apostrophes: inside ${VAR:?word} bash would read one as an opening quote.
    text +=
        fmt::format("NODE_RANK=${{NODE_RANK:?set NODE_RANK to the index of this node, 0..{}}}\n",
                    launch.nodes - 1);
    text += "MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}\n";
  }
  text += "MASTER_PORT=${MASTER_PORT:-29500}\n\n";
  text += bash_array("DISTRIBUTED_ARGS", {{"--nproc_per_node", "\"$GPUS_PER_NODE\""},
                                          {"--nnodes", "\"$NUM_NODES\""},
                                          {"--node_rank", "\"$NODE_RANK\""},
                                          {"--master_addr", "\"$MASTER_ADDR\""},
                                          {"--master_port", "\"$MASTER_PORT\""}});
  text += fmt::format("\n# Model shape ({}).\n", model.name);
  text += bash_array("MODEL_ARGS", model_args);
  text += fmt::format(
      "\n# Parallelism: tp {} x pp {} x cp {} x dp {} = {} GPUs; Megatron derives dp from the "
      "world size.\n",
      plan.tp, plan.pp, plan.cp, plan.dp, launch.world);
  text += bash_array("PARALLEL_ARGS", parallel_args);
  text += "\n# Batch, recompute, precision, optimizer sharding and overlap.\n";
  text += bash_array("TRAINING_ARGS", training_args);
  text += "\n# Not part of the plan: mock data and a short run; replace for real training.\n";
  text += bash_array("RUN_ARGS", run_args);
  text += fmt::format("\ntorchrun \"${{DISTRIBUTED_ARGS[@]}}\" {} \\\n",
                      model.is_hybrid() ? "pretrain_hybrid.py" : "pretrain_gpt.py");
  text +=
      "  \"${MODEL_ARGS[@]}\" \"${PARALLEL_ARGS[@]}\" \"${TRAINING_ARGS[@]}\" "
      "\"${RUN_ARGS[@]}\"\n";
  return out;
}

}  // namespace ppsim
