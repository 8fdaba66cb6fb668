#include "simulator/export/deepspeed_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"

namespace ppsim {

LauncherOutput export_deepspeed(const ModelSpec& model, const ClusterSpec& cluster,
                                const Plan& plan) {
  LauncherOutput out;
  std::vector<std::string>& warnings = out.warnings;
  const Launch launch = launch_shape(cluster, plan, "DeepSpeed", warnings);
  const int64_t microbatches = launcher_microbatches(plan);
  std::vector<std::string> notes;  // What the training script sets, in DeepSpeed's own API.

  // ZeRO stage: DeepSpeed's pipeline engine asserts stage < 2 (runtime/pipe/engine.py), and
  // optimizer offload needs ZeRO.
  int zero_stage = plan.zero_stage;
  if (plan.pp > 1 && zero_stage >= 2) {
    warnings.push_back(fmt::format(
        "DeepSpeed's pipeline engine rejects ZeRO-2 and ZeRO-3 (runtime/pipe/engine.py asserts "
        "stage < 2); the config uses stage 1 instead of the plan's {}, so gradients{} stay "
        "replicated",
        zero_stage, zero_stage == 3 ? " and parameters" : ""));
    zero_stage = 1;
  }
  if (plan.offload_optimizer && zero_stage == 0) {
    warnings.push_back(
        "DeepSpeed offloads the optimizer only under ZeRO (offload_optimizer is a "
        "zero_optimization key); the config uses stage 1 instead of the plan's 0, which also "
        "shards optimizer states over dp");
    zero_stage = 1;
  }
  if (plan.pp > 1) {
    const int64_t chunks = chunks_per_rank(plan.schedule, plan.vpp);
    if (!schedule_traits(plan.schedule).deepspeed_native) {
      warnings.push_back(fmt::format(
          "DeepSpeed's pipeline engine has one schedule, its 1F1B TrainSchedule with one stage "
          "per rank; the plan's {}{} cannot be selected",
          schedule_name(plan.schedule),
          chunks > 1 ? fmt::format(" ({} chunks per rank)", chunks) : ""));
    }
    std::vector<int64_t> layers = stage_layer_counts(plan, model);
    if (!all_equal(layers)) {
      warnings.push_back(fmt::format(
          "PipelineModule cannot take per-stage layer counts (partition_method is 'parameters', "
          "'uniform' or 'type:REGEX'); the plan's split {} must come from a custom partition in "
          "the model code",
          join_ints(layers, ":")));
    }
    notes.push_back(
        fmt::format("pipeline parallel {}: deepspeed.pipe.PipelineModule(layers, "
                    "topology=PipeModelDataParallelTopology(num_pp={}, num_mp={}, num_dp={}), "
                    "partition_method='type:<transformer layer class>'); engine.train_batch() runs "
                    "gradient_accumulation_steps = {} microbatches through the pipeline",
                    plan.pp, plan.pp, plan.tp, plan.dp, microbatches));
  } else if (plan.tp > 1) {
    notes.push_back(
        fmt::format("tensor parallel {}: from the model code (a Megatron-style mpu passed to "
                    "deepspeed.initialize) or, for Hugging Face models, DeepSpeed AutoTP "
                    "(\"tensor_parallel\": {{\"autotp_size\": {}}})",
                    plan.tp, plan.tp));
  }
  if (plan.sequence_parallel) {
    notes.push_back(
        "sequence parallelism (Megatron-style, inside the tp group): in the model code "
        "(Megatron-DeepSpeed --sequence-parallel); DeepSpeed's config has no key for it");
  }
  if (model.moe) {
    // deepspeed/moe/layer.py MoE: drop_tokens=False is dropless; with drop_tokens=True every
    // expert's input is padded to the capacity. enable_expert_tensor_parallelism splits the
    // experts over the tp group, so DeepSpeed's expert tp is tp or 1.
    const int64_t etp = plan.expert_tp();
    std::string args =
        fmt::format("hidden_size={}, expert=..., num_experts={}, ep_size={}, k={}",
                    model.hidden_size, model.moe->num_experts, plan.ep, model.moe->top_k);
    if (model.moe->dropless()) {
      args += ", drop_tokens=False";
    } else {
      args += fmt::format(", capacity_factor={:g}, drop_tokens=True", model.moe->capacity_factor);
    }
    if (plan.tp > 1 && etp == plan.tp) args += ", enable_expert_tensor_parallelism=True";
    if (etp != 1 && etp != plan.tp) {
      warnings.push_back(fmt::format(
          "DeepSpeed's MoE splits experts over the whole tensor-parallel group or not at all "
          "(enable_expert_tensor_parallelism); the plan's expert tensor parallel degree {} "
          "(tp {}) cannot be set, and the note keeps experts unsplit",
          etp, plan.tp));
    }
    notes.push_back(
        fmt::format("expert parallel {}: deepspeed.moe.layer.MoE({}){}", plan.ep, args,
                    model.moe->num_shared_experts > 0
                        ? fmt::format(", plus a dense MLP of width {} beside it for "
                                      "the {} shared expert{}",
                                      model.moe->shared_width(), model.moe->num_shared_experts,
                                      model.moe->num_shared_experts == 1 ? "" : "s")
                        : ""));
    if (plan.moe_a2a_overlap) {
      warnings.push_back(
          "DeepSpeed's MoE has no setting that overlaps its all-to-alls with compute; the plan's "
          "moe_a2a_overlap cannot be set, so the all-to-alls are exposed");
    }
  }
  if (plan.cp > 1) {
    warnings.push_back(fmt::format(
        "DeepSpeed has no ring context parallelism; cp={} must come from the model code, or use "
        "DeepSpeed-Ulysses (all-to-all over attention heads, set up through the mpu), which "
        "communicates differently from what ppsim simulated",
        plan.cp));
  }
  if (plan.recompute == Recompute::kSelective) {
    warnings.push_back(
        "DeepSpeed has no selective (attention-only) recompute setting; it must come from the "
        "model code (Megatron-DeepSpeed --recompute-granularity selective)");
  } else if (plan.recompute == Recompute::kFull && plan.pp == 1) {
    // With a PipelineModule, "pipeline": {"activation_checkpoint_interval": 1} below does it.
    notes.push_back(
        "full recompute: wrap each transformer layer in deepspeed.checkpointing.checkpoint (the "
        "config has no switch for it without a PipelineModule)");
  }
  if (plan.precision == Precision::kFp8) {
    warnings.push_back(
        "DeepSpeed's config has no FP8 training setting; the config enables bf16, and FP8 GEMMs "
        "must come from Transformer Engine layers in the model code");
  }

  nlohmann::ordered_json comment = nlohmann::ordered_json::array();
  comment.push_back(
      "DeepSpeed config written by `ppsim export --format deepspeed`; DeepSpeed "
      "ignores this key.");
  comment.push_back(fmt::format("model: {} ({})", model.name, model_summary(model)));
  comment.push_back(fmt::format("cluster: {} ({})", cluster.name, cluster_summary(cluster)));
  comment.push_back("plan: " + plan_to_inline(plan));
  comment.push_back(
      launch.nodes == 1
          ? fmt::format("launch: deepspeed --num_gpus {} train.py --deepspeed --deepspeed_config "
                        "{}",
                        launch.gpus_per_node, launcher_file_name(LauncherFormat::kDeepSpeed))
          : fmt::format("launch: deepspeed --hostfile=hostfile --num_nodes {} --num_gpus {} "
                        "train.py --deepspeed --deepspeed_config {} (hostfile lines: "
                        "'<host> slots={}')",
                        launch.nodes, launch.gpus_per_node,
                        launcher_file_name(LauncherFormat::kDeepSpeed), launch.gpus_per_node));
  comment.push_back(fmt::format(
      "train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
      "data-parallel size = {} x {} x {}",
      plan.micro_batch_size, microbatches, plan.dp));
  for (const std::string& note : notes) comment.push_back("set in the training script: " + note);
  for (const std::string& warning : warnings) comment.push_back("WARNING: " + warning);

  nlohmann::ordered_json json;
  json["_ppsim_comment"] = comment;
  json["train_batch_size"] = plan.global_batch_size;
  json["train_micro_batch_size_per_gpu"] = plan.micro_batch_size;
  json["gradient_accumulation_steps"] = microbatches;
  if (plan.precision == Precision::kFp16) {
    json["fp16"] = {{"enabled", true}, {"loss_scale", 0}};
  } else {
    json["bf16"] = {{"enabled", true}};
  }
  nlohmann::ordered_json zero;
  zero["stage"] = zero_stage;
  if (zero_stage >= 1 && plan.dp > 1) zero["overlap_comm"] = true;
  if (plan.offload_optimizer) {
    zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
    // REFERENCE.md 2: "ratio", the share of the optimizer step run on the CPU.
    if (plan.offload_fraction < 1.0) zero["offload_optimizer"]["ratio"] = plan.offload_fraction;
  }
  json["zero_optimization"] = zero;
  if (plan.pp > 1 && plan.recompute == Recompute::kFull) {
    json["pipeline"] = {{"activation_checkpoint_interval", 1}};
  }
  out.text = json.dump(2) + "\n";
  return out;
}

}  // namespace ppsim
