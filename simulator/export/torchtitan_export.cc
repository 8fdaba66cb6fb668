#include "simulator/export/torchtitan_export.h"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/model/chunk_layout.h"
#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"

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

// A torchtitan model and flavor with exactly this shape, from torchtitan/models/*/__init__.py
// at e347b1e5e (llama3 flavors: dim, n_layers, n_heads, n_kv_heads; FFN width from
// ffn_dim_multiplier and multiple_of; the Llama 3 tokenizer's 128256 tokens).
struct Flavor {
  const char* model;
  const char* flavor;
  const char* config_function;  // Its config_registry function after the Python-config move.
  const char* hf_assets_path;   // Tokenizer folder, as torchtitan's own TOMLs give it.
  int64_t layers, hidden, heads, kv_heads, ffn, vocab;
};
constexpr Flavor kFlavors[] = {
    {"llama3", "8B", "llama3_8b", "./assets/hf/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256},
    {"llama3", "70B", "llama3_70b", "./assets/hf/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256},
    {"llama3", "405B", "llama3_405b", "./assets/hf/Llama-3.1-405B", 126, 16384, 128, 8, 53248,
     128256},
};

const Flavor* find_flavor(const ModelSpec& model) {
  if (model.moe || model.activation != Activation::kSwiglu || model.norm != Norm::kRmsNorm ||
      model.tied_embeddings || model.linear_bias ||
      model.position_embedding != PositionEmbedding::kRope) {
    return nullptr;
  }
  for (const Flavor& flavor : kFlavors) {
    if (flavor.layers == model.num_layers && flavor.hidden == model.hidden_size &&
        flavor.heads == model.num_attention_heads && flavor.kv_heads == model.num_kv_heads &&
        flavor.ffn == model.ffn_hidden_size && flavor.vocab == model.vocab_size) {
      return &flavor;
    }
  }
  return nullptr;
}

// Data-parallel degrees: plain DDP only for pure data parallelism (torchtitan raises "DDP has
// not supported > 1D parallelism" otherwise); else FSDP over dp.
struct TitanDataParallel {
  int64_t replicate = 1;
  int64_t shard = 1;
  std::string reshard = "default";  // fsdp_reshard_after_forward.
};

TitanDataParallel titan_data_parallel(const Plan& plan, std::vector<std::string>& warnings) {
  TitanDataParallel dp;
  const bool pure_dp = plan.tp == 1 && plan.pp == 1 && plan.cp == 1 && plan.ep == 1;
  if (plan.dp == 1) return dp;
  if (plan.zero_stage == 0 && !plan.offload_optimizer && pure_dp) {
    dp.replicate = plan.dp;
    return dp;
  }
  dp.shard = plan.dp;
  dp.reshard = plan.zero_stage == 3 ? "always" : "never";
  if (plan.zero_stage == 0) {
    warnings.push_back(fmt::format(
        "torchtitan runs plain DDP only without other parallelism{}; the plan's replicated "
        "optimizer (zero_stage 0) becomes FSDP over dp = {} with fsdp_reshard_after_forward = "
        "\"never\", which also shards optimizer states and gradients",
        plan.offload_optimizer ? " and offloads only through FSDP" : "", plan.dp));
  } else if (plan.zero_stage == 1) {
    warnings.push_back(
        "torchtitan has no optimizer-only sharding (ZeRO-1); FSDP with "
        "fsdp_reshard_after_forward = \"never\" shards gradients as well (ZeRO-2)");
  }
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
  // Without a matching flavor, the closest family: Llama 3 for dense models, Qwen3 (GQA,
  // SwiGLU experts, no shared expert) for MoE.
  const std::string titan_model = flavor ? flavor->model : model.moe ? "qwen3" : "llama3";
  const std::string titan_flavor = flavor ? flavor->flavor : "ppsim-" + model.name;
  if (!flavor) {
    warnings.push_back(fmt::format(
        "torchtitan takes the model shape from a registered flavor, not from the config, and "
        "none matches {} ({}); [model] names the flavor \"{}\", which torchtitan rejects until "
        "one with this shape is registered",
        model.name, model_summary(model), titan_flavor));
  }
  const TitanDataParallel dp = titan_data_parallel(plan, warnings);
  if (plan.cp > 1 && plan.zero_stage < 3) {
    warnings.push_back(fmt::format(
        "torchtitan always applies FSDP over the context-parallel ranks (parallel_dims.py: the "
        "fsdp mesh is dp_shard x cp), so parameters and optimizer states are sharded over cp = {} "
        "as well, unlike the plan's zero_stage {}",
        plan.cp, plan.zero_stage));
  }
  if (plan.tp > 1 && !plan.sequence_parallel) {
    warnings.push_back(
        "torchtitan's TOML-era tensor parallelism always shards norms and activations along the "
        "sequence (sequence parallelism); the plan has sequence_parallel=false");
  }
  if (seq % (plan.tp * 2 * plan.cp) != 0) {
    warnings.push_back(fmt::format(
        "torchtitan needs seq_len divisible by tp x 2cp = {} (parallel_dims.seq_len_divisor); "
        "{} is not",
        plan.tp * 2 * plan.cp, seq));
  }
  if (plan.precision == Precision::kFp16) {
    warnings.push_back(
        "torchtitan's mixed precision takes bfloat16 or float32 parameters only; the config uses "
        "bfloat16 instead of the plan's fp16");
  }
  if (plan.offload_optimizer) {
    warnings.push_back(
        "torchtitan's training.enable_cpu_offload offloads parameters and gradients as well as "
        "optimizer states (FSDP CPUOffloadPolicy), more than the plan's optimizer-only offload");
  }
  if (plan.pp > 1 &&
      (plan.schedule == ScheduleKind::kZbH2 || plan.schedule == ScheduleKind::kZb2p)) {
    warnings.push_back(fmt::format(
        "torch.distributed.pipelining has no {} schedule; the config runs "
        "InterleavedZeroBubble (the paper's ZB1P, ZB-H1's memory) with one stage per rank, whose "
        "bubble is larger",
        plan.schedule == ScheduleKind::kZbH2 ? "ZB-H2" : "searched ZB-2p"));
  } else if (plan.pp > 1 && plan.schedule == ScheduleKind::kZbH1) {
    notes.push_back("zb-h1 runs as InterleavedZeroBubble (torch's ZB1P) with one stage per rank.");
  } else if (plan.pp > 1 && plan.schedule == ScheduleKind::kZb1p) {
    notes.push_back(
        "zb-1p runs as InterleavedZeroBubble (torch's ZB1P, a handcrafted order under "
        "the same p-microbatch memory limit) with one stage per rank.");
  }
  const bool ep_overlap_off = plan.pp > 1 && plan.schedule == ScheduleKind::kDualPipeV &&
                              plan.ep > 1 && plan.recompute != Recompute::kNone;
  if (ep_overlap_off) {
    warnings.push_back(
        "torchtitan's DualPipeV expert-parallel overlap does not support activation "
        "checkpointing; the config turns it off (pipeline_parallel_expert_parallel_overlap = "
        "false)");
  }

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
  const std::string mode = plan.recompute == Recompute::kFull        ? "full"
                           : plan.recompute == Recompute::kSelective ? "selective"
                                                                     : "none";
  const std::string file = launcher_file_name(LauncherFormat::kTorchTitan);

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
  if (plan.precision == Precision::kFp8) in_code += " the float8 converters,";
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
          (flavor ? "\n" : "  # closest torchtitan model family; see the warning above\n");
  text += "flavor = " + toml_string(titan_flavor) + "\n";
  if (flavor) {
    text += "hf_assets_path = " + toml_string(flavor->hf_assets_path) +
            "  # tokenizer; fetch it with scripts/download_hf_assets.py\n";
  }
  if (plan.precision == Precision::kFp8) {
    std::vector<std::string> converters = {"quantize.linear.float8"};
    if (model.moe) converters.push_back("quantize.grouped_mm.float8");
    text += "converters = " + toml_string_array(converters) + "\n";
  }

  text += "\n[training]\n";
  text += fmt::format("local_batch_size = {}  # per data-parallel rank{}\n", local_batch,
                      plan.pp > 1 ? ", split into pipeline microbatches" : "");
  text += fmt::format("global_batch_size = {}  # gradient accumulation = global / (local x dp)\n",
                      plan.global_batch_size);
  text += fmt::format("seq_len = {}\n", seq);
  text += "mixed_precision_param = \"bfloat16\"\n";
  if (plan.offload_optimizer) text += "enable_cpu_offload = true\n";

  text += "\n[parallelism]\n";
  text += fmt::format("data_parallel_replicate_degree = {}\n", dp.replicate);
  text += fmt::format("data_parallel_shard_degree = {}\n", dp.shard);
  text += "fsdp_reshard_after_forward = " + toml_string(dp.reshard) + "\n";
  text += fmt::format("tensor_parallel_degree = {}\n", plan.tp);
  text += "enable_async_tensor_parallel = false\n";
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
  if (plan.ep > 1) text += fmt::format("expert_tensor_parallel_degree = {}\n", plan.tp);

  text += "\n[activation_checkpoint]\n";
  text += "mode = " + toml_string(mode) + "\n";
  if (plan.recompute == Recompute::kSelective) text += "selective_ac_option = \"op\"\n";

  if (plan.precision == Precision::kFp8) {
    text += "\n[quantize.linear.float8]\n";
    text += "filter_fqns = [\"output\"]\n";
    if (model.moe) {
      text += "\n[quantize.grouped_mm.float8]\n";
      text += "fqns = [\"experts\"]\n";
    }
  }
  return out;
}

}  // namespace ppsim
