#include "simulator/export/torchtitan_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "simulator/model/chunk_layout.h"
#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/runtime_support.h"

namespace ppsim {

namespace {

std::string toml_string(const std::string& value) {
  std::string text = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') text += '\\';
    text += c;
  }
  return text + "\"";
}

// A string array over as many lines as it takes to stay within kCommentWidth columns, the
// first starting with `indent`, the others one space further in.
std::string toml_wrapped_array(const std::vector<std::string>& values, const std::string& indent) {
  std::string text = indent + "[";
  size_t line_start = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string item = toml_string(values[i]) + (i + 1 < values.size() ? "," : "]");
    if (i > 0 && text.size() - line_start + 1 + item.size() > kCommentWidth) {
      text += "\n";
      line_start = text.size();
      text += indent + " " + item;
    } else {
      text += (i > 0 ? " " : "") + item;
    }
  }
  if (values.empty()) text += "]";
  return text;
}

std::string toml_string_array(const std::vector<std::string>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + toml_string(values[i]);
  return text + "]";
}

// A flavor's mixture of experts (all 0 for a dense flavor): routed experts, top-k, expert width,
// shared experts, leading dense layers.
struct FlavorMoe {
  int64_t experts = 0, top_k = 0, expert_ffn = 0, shared = 0, first_k_dense = 0;
};
// A flavor's MLA (all 0 without): q_lora_rank, kv_lora_rank, qk_nope_head_dim,
// qk_rope_head_dim, v_head_dim.
struct FlavorMla {
  int64_t q_lora = 0, kv_lora = 0, nope = 0, rope = 0, v_head = 0;
};
// A torchtitan model and flavor with exactly this shape, from torchtitan/models/*/__init__.py
// at e347b1e5e (llama3 flavors: dim, n_layers, n_heads, n_kv_heads; FFN width from
// ffn_dim_multiplier and multiple_of; the Llama 3 tokenizer's 128256 tokens. qwen3 and
// deepseek_v3 MoE flavors: moe_inter_dim, num_experts, num_shared_experts, top_k,
// n_dense_layers, and the MLA ranks and head widths).
struct Flavor {
  const char* model;
  const char* flavor;
  const char* config_function;  // Its config_registry function after the Python-config move.
  const char* hf_assets_path;   // Tokenizer folder, as torchtitan's own TOMLs give it.
  int64_t layers, hidden, heads, kv_heads, ffn, vocab;
  FlavorMoe moe = {};
  FlavorMla mla = {};
  bool qk_norm = false;
};
constexpr Flavor kFlavors[] = {
    {"llama3", "8B", "llama3_8b", "./assets/hf/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256},
    {"llama3", "70B", "llama3_70b", "./assets/hf/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256},
    {"llama3", "405B", "llama3_405b", "./assets/hf/Llama-3.1-405B", 126, 16384, 128, 8, 53248,
     128256},
    // Qwen3 ships no TOML for this flavor; the folder follows its others ("./assets/hf/<repo>").
    {"qwen3", "30B-A3B", "qwen3_30b_a3b", "./assets/hf/Qwen3-30B-A3B", 48, 2048, 32, 4, 6144,
     151936, FlavorMoe{128, 8, 768, 0, 0}, FlavorMla{}, true},
    {"deepseek_v3", "16B", "deepseek_v3_16b", "./assets/hf/deepseek-moe-16b-base", 27, 2048, 16, 16,
     10944, 102400, FlavorMoe{64, 6, 1408, 2, 1}, FlavorMla{0, 512, 128, 64, 128}},
    {"deepseek_v3", "671B", "deepseek_v3_671b", "./assets/hf/DeepSeek-V3.1-Base", 61, 7168, 128,
     128, 18432, 129280, FlavorMoe{256, 8, 2048, 1, 3}, FlavorMla{1536, 512, 128, 64, 128}},
};

// The torchtitan model family closest to `model` (at e347b1e5e): deepseek_v3 for MLA, qwen3
// for qk-norm, gpt_oss for sliding-window MoE, llama3 for other dense models; "" for an MoE
// model none of them has the shape of (a Mixtral: GQA, no shared experts, no qk-norm).
std::string titan_family(const ModelSpec& model) {
  if (model.mla) return "deepseek_v3";
  if (model.qk_norm) return "qwen3";
  if (model.moe && model.sliding_window > 0) return "gpt_oss";
  if (model.moe) return "";
  return "llama3";
}

const Flavor* find_flavor(const ModelSpec& model) {
  if (model.activation != Activation::kSwiglu || model.norm != Norm::kRmsNorm ||
      model.tied_embeddings || model.linear_bias || model.qkv_bias ||
      model.position_embedding != PositionEmbedding::kRope || model.sliding_window > 0 ||
      model.is_hybrid()) {
    return nullptr;
  }
  for (const Flavor& flavor : kFlavors) {
    const FlavorMoe& fm = flavor.moe;
    const FlavorMla& fa = flavor.mla;
    const bool moe_same =
        model.moe
            ? fm.experts == model.moe->num_experts && fm.top_k == model.moe->top_k &&
                  fm.expert_ffn == model.moe->expert_ffn_hidden_size &&
                  fm.shared == model.moe->num_shared_experts &&
                  (fm.shared == 0 || model.moe->shared_expert_ffn_hidden_size == 0 ||
                   model.moe->shared_expert_ffn_hidden_size == fm.expert_ffn) &&
                  fm.first_k_dense == model.moe->first_k_dense && model.moe->every_n_layers == 1
            : fm.experts == 0;
    const bool mla_same =
        model.mla ? fa.kv_lora == model.mla->kv_lora_rank && fa.q_lora == model.mla->q_lora_rank &&
                        fa.nope == model.mla->qk_nope_head_dim &&
                        fa.rope == model.mla->qk_rope_head_dim && fa.v_head == model.mla->v_head_dim
                  : fa.kv_lora == 0;
    if (moe_same && mla_same && flavor.qk_norm == model.qk_norm &&
        flavor.layers == model.num_layers && flavor.hidden == model.hidden_size &&
        flavor.heads == model.num_attention_heads && flavor.kv_heads == model.num_kv_heads &&
        flavor.ffn == model.ffn_hidden_size && flavor.vocab == model.vocab_size) {
      return &flavor;
    }
  }
  return nullptr;
}

// Data-parallel degrees: plain DDP only for pure data parallelism (torchtitan raises "DDP has
// not supported > 1D parallelism" otherwise); else FSDP over dp_shard x cp (parallel_dims.py
// fsdp_enabled), resharding after forward for ZeRO-3 only. Under pipelining both ZeRO-2 and -3
// write "default", which torchtitan resolves to no resharding with pp (parallelize.py "to avoid
// per-microbatch all-gathers"): what ppsim simulates there (plan.h zero_stage_in_force). Plans
// torchtitan cannot run (ZeRO-0 beside other parallelism, ZeRO-1) are refused before
// (runtime_plan_problem).
struct TitanDataParallel {
  int64_t replicate = 1;
  int64_t shard = 1;
  std::string reshard = "default";  // fsdp_reshard_after_forward.
};

TitanDataParallel titan_data_parallel(const Plan& plan) {
  TitanDataParallel dp;
  if (plan.dp * plan.cp == 1) return dp;  // No FSDP, no DDP: one data-parallel rank.
  if (plan.zero_stage == 0) {
    dp.replicate = plan.dp;
    return dp;
  }
  dp.shard = plan.dp;
  if (plan.pp == 1) dp.reshard = plan.zero_stage == 3 ? "always" : "never";
  return dp;
}

}  // namespace

LauncherOutput export_torchtitan(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan) {
  LauncherOutput out;
  std::vector<std::string>& warnings = out.warnings;
  std::vector<std::string> notes;
  const Launch launch = launch_shape(cluster, plan, "torchtitan", warnings);
  const int64_t seq = effective_seq_length(plan, model);
  const int64_t microbatches = launcher_microbatches(plan);

  const Flavor* flavor = find_flavor(model);
  // Without a matching flavor, the closest family (titan_family), or none.
  const std::string family = titan_family(model);
  const std::string titan_flavor = flavor ? flavor->flavor : "ppsim-" + model.name;
  const std::string titan_model = flavor ? flavor->model : family.empty() ? titan_flavor : family;
  if (!flavor && family.empty()) {
    warnings.push_back(fmt::format(
        "torchtitan has no model of this kind: {} ({}) is a mixture of experts without MLA, "
        "shared experts, qk-norm or sliding windows (like Mixtral), and torchtitan's MoE models "
        "are deepseek_v3, qwen3, llama4 and gpt_oss; [model] names \"{}\", which torchtitan "
        "rejects until a model and flavor with this shape are registered",
        model.name, model_summary(model), titan_model));
  } else if (!flavor) {
    warnings.push_back(fmt::format(
        "torchtitan takes the model shape from a registered flavor, not from the config, and "
        "none matches {} ({}); [model] names the flavor \"{}\", which torchtitan rejects until "
        "one with this shape is registered",
        model.name, model_summary(model), titan_flavor));
  }
  if (model.moe && !model.moe->dropless()) {
    warnings.push_back(fmt::format(
        "torchtitan's MoE is dropless (no capacity factor); the plan's capacity factor {:g} "
        "(tokens over capacity dropped, experts padded to it) cannot be set, so expert loads "
        "follow the router",
        model.moe->capacity_factor));
  }
  if (model.mtp_layers > 0) {
    warnings.push_back(fmt::format(
        "torchtitan (TOML era) has no multi-token prediction; the model's MTP layers ({}) are "
        "not trained",
        model.mtp_layers));
  }
  if (model.sliding_window > 0 && family != "gpt_oss") {
    warnings.push_back(fmt::format(
        "torchtitan's {} model has no sliding-window attention; the model's {}-token window "
        "becomes full causal attention",
        titan_model, model.sliding_window));
  }
  // Runnable expert tp is 1 or tp (runtime_plan_problem refuses others).
  const int64_t expert_tp = plan.expert_tp();
  const TitanDataParallel dp = titan_data_parallel(plan);
  if (seq % (plan.tp * 2 * plan.cp) != 0) {
    warnings.push_back(fmt::format(
        "torchtitan needs seq_len divisible by tp x 2cp = {} (parallel_dims.seq_len_divisor); "
        "{} is not",
        plan.tp * 2 * plan.cp, seq));
  }
  if (plan.offload_optimizer) {
    // Runnable only with FSDP sharding (runtime_plan_problem), where it does more than the plan.
    warnings.push_back(
        "torchtitan's training.enable_cpu_offload is FSDP2's CPUOffloadPolicy: besides the "
        "optimizer states and step (what ppsim simulated), it keeps the sharded parameters and "
        "gradients on the host and copies them in for each forward and backward, so GPU memory "
        "is lower and host-device traffic higher than simulated");
  }
  if (plan.pp > 1 && plan.schedule == ScheduleKind::kZbH1) {
    notes.push_back("zb-h1 runs as InterleavedZeroBubble (torch's ZB1P) with one stage per rank.");
  } else if (plan.pp > 1 && plan.schedule == ScheduleKind::kZb1p) {
    notes.push_back(
        "zb-1p runs as InterleavedZeroBubble (torch's ZB1P, a handcrafted order under "
        "the same p-microbatch memory limit) with one stage per rank.");
  }
  // DualPipeV overlaps the MoE all-to-alls unless told not to; without moe_a2a_overlap in the
  // plan (or with activation checkpointing, which it does not support) the config turns it off.
  const bool ep_overlap_off = plan.pp > 1 && plan.schedule == ScheduleKind::kDualPipeV &&
                              plan.ep > 1 &&
                              (plan.recompute != Recompute::kNone || !plan.moe_a2a_overlap);

  // Pipeline stages: one model part per virtual stage, listed in model order.
  std::vector<std::vector<std::string>> parts;
  if (plan.pp > 1) {
    int64_t next = 0;
    std::vector<int64_t> layers = chunk_layout(plan, model).chunk_layers;
    for (size_t i = 0; i < layers.size(); ++i) {
      std::vector<std::string> part;
      if (i == 0) part.push_back("tok_embeddings");
      for (int64_t j = 0; j < layers[i]; ++j) part.push_back(fmt::format("layers.{}", next++));
      if (i + 1 == layers.size()) {
        part.push_back("norm");
        part.push_back("output");
      }
      parts.push_back(part);
    }
  }
  const int64_t local_batch =
      plan.pp > 1 ? plan.global_batch_size / plan.dp : plan.micro_batch_size;
  // Partial full recompute is torchtitan's layer-level selective checkpointing: every k-th
  // block (runtime_shape_problem has refused the plans it cannot express); every block (k 1,
  // or no partial recompute) is plain full recompute.
  const int64_t ac_every = torchtitan_ac_frequency(plan, model).value_or(1);
  const bool layer_ac = plan.recompute == Recompute::kFull && ac_every > 1;
  const std::string mode = plan.recompute == Recompute::kFull && !layer_ac ? "full"
                           : plan.recompute != Recompute::kNone              ? "selective"
                                                                             : "none";
  const std::string file = launcher_file_name(LauncherFormat::kTorchTitan);
  // Async TP (the plan's tp_comm_overlap): torchtitan runs it only on the compiled model
  // (torchtitan/distributed/tensor_parallel.py maybe_enable_async_tp).
  const bool async_tp = tp_comm_overlap_in_force(plan);
  if (async_tp) {
    notes.push_back(
        "Async TP (tp_comm_overlap) needs torch.compile of the model: [compile] below. Releases "
        "from 2026-02-23 to 2026-08-12 take --parallelism.enable_async_tensor_parallel instead "
        "of --compile.enable_async_tensor_parallel.");
  }

  std::string& text = out.text;
  text += "# torchtitan job config written by `ppsim export --format torchtitan`.\n";
  text += fmt::format("#   model:   {} ({})\n", model.name, model_summary(model));
  text += fmt::format("#   cluster: {} ({})\n", cluster.name, cluster_summary(cluster));
  text += fmt::format("#   plan:    {}\n", plan_to_inline(plan));
  text += wrap_comment(
      "TOML format of torchtitan before its move to Python configs (2026-02-23); keys as "
      "torchtitan/config/job_config.py defines them (torchtitan rejects unknown keys).",
      "# ", "# ");
  text += "# Launch:\n";
  if (launch.nodes == 1) {
    text += fmt::format("#   CONFIG_FILE={} NGPU={} ./run_train.sh\n", file, launch.gpus_per_node);
  } else {
    text += fmt::format(
        "#   torchrun --nproc_per_node={} --nnodes={} --node_rank=$NODE_RANK "
        "--master_addr=$MASTER_ADDR \\\n"
        "#     --master_port=29500 -m torchtitan.train --job.config_file {}\n",
        launch.gpus_per_node, launch.nodes, file);
  }
  for (const std::string& note : notes) text += wrap_comment(note, "# ", "# ");
  for (const std::string& warning : warnings) text += wrap_comment(warning, "# WARNING: ", "#   ");

  // The same settings for the Python-config releases (REFERENCE.md 3.2).
  text += "#\n";
  text += wrap_comment(
      "Newer torchtitan (Python configs, --module/--config): the same settings as command-line "
      "overrides, which those releases still accept:",
      "# ", "# ");
  text += fmt::format("#   torchrun ... -m torchtitan.train --module {} --config {} \\\n",
                      flavor ? flavor->model : "<module>",
                      flavor ? flavor->config_function : "<config>");
  std::vector<std::string> overrides = {
      fmt::format("--parallelism.data_parallel_replicate_degree {}", dp.replicate),
      fmt::format("--parallelism.data_parallel_shard_degree {}", dp.shard),
      fmt::format("--parallelism.fsdp_reshard_after_forward {}", dp.reshard),
      fmt::format("--parallelism.tensor_parallel_degree {}", plan.tp),
      fmt::format("--parallelism.pipeline_parallel_degree {}", plan.pp),
  };
  if (plan.pp > 1) {
    overrides.push_back("--parallelism.pipeline_parallel_schedule " +
                        std::string(schedule_traits(plan.schedule).torch_class));
    overrides.push_back(fmt::format("--parallelism.num_pp_microbatches {}", microbatches));
  }
  overrides.push_back(fmt::format("--parallelism.context_parallel_degree {}", plan.cp));
  overrides.push_back(fmt::format("--parallelism.expert_parallel_degree {}", plan.ep));
  overrides.push_back(fmt::format("--training.num_tokens_per_microbatch_per_dp_rank {}",
                                  plan.micro_batch_size * seq));
  overrides.push_back(
      fmt::format("--training.num_tokens_per_train_step {}", plan.global_batch_size * seq));
  overrides.push_back(fmt::format("--training.max_context_length {}", seq));
  if (plan.offload_optimizer) overrides.push_back("--training.enable_cpu_offload");
  if (async_tp) {
    overrides.push_back("--compile.enable");
    overrides.push_back("--compile.enable_async_tensor_parallel");
  }
  overrides.push_back("activation-checkpoint:" + mode);
  for (size_t i = 0; i < overrides.size(); ++i) {
    text += "#     " + overrides[i] + (i + 1 < overrides.size() ? " \\\n" : "\n");
  }
  std::string in_code;
  if (plan.pp > 1)
    in_code +=
        " the pipeline split (module_fqns_per_model_part, with that release's module names),";
  if (plan.tp > 1 && !plan.sequence_parallel)
    in_code += " parallelism.enable_sequence_parallel = False,";
  // fp8: torchao's tensorwise Float8 converters, or its MXFP8 ones (fp8_recipe_in_force, plan.h;
  // torchtitan/components/quantization/float8.py and mx.py register these names).
  const bool mx =
      plan.precision == Precision::kFp8 && fp8_recipe_in_force(plan) == Fp8Recipe::kMxfp8;
  const std::string quantizer = mx ? "mx" : "float8";
  if (plan.precision == Precision::kFp8) in_code += " the " + quantizer + " converters,";
  if (!in_code.empty()) {
    in_code.pop_back();
    text += wrap_comment("Set in the config function (no command-line option):" + in_code + ".",
                         "# ", "# ");
  }

  text += "\n[job]\n";
  text += "description = " +
          toml_string(fmt::format("ppsim plan {} for {} on {}", plan_to_inline(plan), model.name,
                                  cluster.name)) +
          "\n";

  text += "\n[model]\n";
  text += "name = " + toml_string(titan_model) +
          (flavor           ? "\n"
           : family.empty() ? "  # torchtitan has no such model; see the warning above\n"
                            : "  # closest torchtitan model family; see the warning above\n");
  text += "flavor = " + toml_string(titan_flavor) + "\n";
  if (flavor) {
    text += "hf_assets_path = " + toml_string(flavor->hf_assets_path) +
            "  # tokenizer; fetch it with scripts/download_hf_assets.py\n";
  }
  if (plan.precision == Precision::kFp8) {
    std::vector<std::string> converters = {"quantize.linear." + quantizer};
    if (model.moe) converters.push_back("quantize.grouped_mm." + quantizer);
    text += "converters = " + toml_string_array(converters) + "\n";
  }

  text += "\n[training]\n";
  text += fmt::format("local_batch_size = {}  # per data-parallel rank{}\n", local_batch,
                      plan.pp > 1 ? ", split into pipeline microbatches" : "");
  text += fmt::format("global_batch_size = {}  # gradient accumulation = global / (local x dp)\n",
                      plan.global_batch_size);
  text += fmt::format("seq_len = {}\n", seq);
  text += "mixed_precision_param = \"bfloat16\"\n";
  // FSDP's gradient reduce-scatter dtype (grad_reduce_in_fp32_in_force, plan.h); torchtitan's
  // default is float32.
  if (!grad_reduce_in_fp32_in_force(plan)) text += "mixed_precision_reduce = \"bfloat16\"\n";
  if (plan.offload_optimizer) text += "enable_cpu_offload = true\n";

  text += "\n[parallelism]\n";
  text += fmt::format("data_parallel_replicate_degree = {}\n", dp.replicate);
  text += fmt::format("data_parallel_shard_degree = {}\n", dp.shard);
  text += "fsdp_reshard_after_forward = " + toml_string(dp.reshard) + "\n";
  text += fmt::format("tensor_parallel_degree = {}\n", plan.tp);
  text += fmt::format("enable_async_tensor_parallel = {}\n", async_tp ? "true" : "false");
  text += fmt::format("pipeline_parallel_degree = {}\n", plan.pp);
  if (plan.pp > 1) {
    text += "pipeline_parallel_schedule = " +
            toml_string(std::string(schedule_traits(plan.schedule).torch_class)) + "\n";
    text += fmt::format("pipeline_parallel_microbatch_size = {}  # {} microbatches per step\n",
                        plan.micro_batch_size, microbatches);
    text += fmt::format("# {} stages ({} per rank), in model order:\n", parts.size(),
                        parts.size() / plan.pp);
    text += "module_fqns_per_model_part = [\n";
    for (const std::vector<std::string>& part : parts)
      text += toml_wrapped_array(part, "  ") + ",\n";
    text += "]\n";
    if (ep_overlap_off) text += "pipeline_parallel_expert_parallel_overlap = false\n";
  }
  text += fmt::format("context_parallel_degree = {}\n", plan.cp);
  text += fmt::format("expert_parallel_degree = {}\n", plan.ep);
  if (plan.ep > 1) text += fmt::format("expert_tensor_parallel_degree = {}\n", expert_tp);

  text += "\n[activation_checkpoint]\n";
  text += "mode = " + toml_string(mode) + "\n";
  if (plan.recompute == Recompute::kSelective) text += "selective_ac_option = \"op\"\n";
  if (layer_ac) text += fmt::format("selective_ac_option = \"{}\"\n", ac_every);

  if (async_tp) {
    text += "\n[compile]\n";
    text += "enable = true  # async TP runs on the compiled model\n";
    text += "components = [\"model\", \"loss\"]\n";
  }

  if (plan.precision == Precision::kFp8) {
    text += "\n[quantize.linear." + quantizer + "]\n";
    text += mx ? "recipe_name = \"mxfp8_cublas\"\n" : "recipe_name = \"tensorwise\"\n";
    text += "filter_fqns = [\"output\"]\n";
    if (model.moe) {
      text += "\n[quantize.grouped_mm." + quantizer + "]\n";
      if (mx) text += "recipe_name = \"mxfp8\"\n";
      text += "fqns = [\"experts\"]\n";
    }
  }
  return out;
}

}  // namespace ppsim
