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

  // Plans DeepSpeed cannot run are refused before (runtime_plan_problem: ZeRO-2/3 with a
  // pipeline, offload without ZeRO or partial below ZeRO-3, cp > 1, other schedules, uneven
  // stages, etp other than 1 or tp, moe_a2a_overlap), so what is written here is the plan.
  const int zero_stage = plan.zero_stage;
  if (plan.pp > 1) {
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
    notes.push_back(
        fmt::format("expert parallel {}: deepspeed.moe.layer.MoE({}){}", plan.ep, args,
                    model.moe->num_shared_experts > 0
                        ? fmt::format(", plus a dense MLP of width {} beside it for "
                                      "the {} shared expert{}",
                                      model.moe->shared_width(), model.moe->num_shared_experts,
                                      model.moe->num_shared_experts == 1 ? "" : "s")
                        : ""));
  }
  if (plan.recompute == Recompute::kSelective) {
    warnings.push_back(
        "DeepSpeed has no selective (attention-only) recompute setting; it must come from the "
        "model code (Megatron-DeepSpeed --recompute-granularity selective)");
  } else if (plan.recompute == Recompute::kFull && plan.pp == 1) {
    // With a PipelineModule, "pipeline": {"activation_checkpoint_interval": 1} below does it
    // (partial recompute under pipelining is refused: runtime_shape_problem).
    notes.push_back(
        plan.recompute_num_layers > 0
            ? fmt::format("full recompute of the first {} transformer layers: wrap each of them "
                          "in deepspeed.checkpointing.checkpoint (the config has no switch for "
                          "it without a PipelineModule)",
                          plan.recompute_num_layers)
            : "full recompute: wrap each transformer layer in deepspeed.checkpointing.checkpoint "
              "(the config has no switch for it without a PipelineModule)");
  }
  if (plan.precision == Precision::kFp8) {
    warnings.push_back(
        "DeepSpeed's config has no FP8 training setting; the config enables bf16, and FP8 GEMMs "
        "must come from Transformer Engine layers in the model code");
  }

  // DeepSpeed reads only its own keys, so the file holds nothing else; what the training
  // script sets and how to launch it go to `notes` (printed on stderr by `ppsim export`).
  std::vector<std::string>& out_notes = out.notes;
  out_notes.push_back(fmt::format("model {} ({}); cluster {} ({}); plan {}", model.name,
                                  model_summary(model), cluster.name, cluster_summary(cluster),
                                  plan_to_inline(plan)));
  out_notes.push_back(
      launch.nodes == 1
          ? fmt::format("launch: deepspeed --num_gpus {} train.py --deepspeed --deepspeed_config "
                        "{}",
                        launch.gpus_per_node, launcher_file_name(LauncherFormat::kDeepSpeed))
          : fmt::format("launch: deepspeed --hostfile=hostfile --num_nodes {} --num_gpus {} "
                        "train.py --deepspeed --deepspeed_config {} (hostfile lines: "
                        "'<host> slots={}')",
                        launch.nodes, launch.gpus_per_node,
                        launcher_file_name(LauncherFormat::kDeepSpeed), launch.gpus_per_node));
  out_notes.push_back(fmt::format(
      "train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
      "data-parallel size = {} x {} x {} (DeepSpeed's data-parallel size = {} processes / "
      "(pp {} x tp {}))",
      plan.micro_batch_size, microbatches, plan.dp, launch.world, plan.pp, plan.tp));
  for (const std::string& note : notes) out_notes.push_back("set in the training script: " + note);

  nlohmann::ordered_json json;
  json["train_batch_size"] = plan.global_batch_size;
  json["train_micro_batch_size_per_gpu"] = plan.micro_batch_size;
  json["gradient_accumulation_steps"] = microbatches;
  if (plan.precision == Precision::kFp16) {
    json["fp16"] = {{"enabled", true}, {"loss_scale", 0}};
  } else {
    json["bf16"] = {{"enabled", true}};
  }
  // The gradient reduction's dtype, spelled out (DeepSpeed's default follows the regime):
  // grad_reduce_in_fp32_in_force (plan.h).
  json["communication_data_type"] = grad_reduce_in_fp32_in_force(plan)          ? "fp32"
                                    : plan.precision == Precision::kFp16 ? "fp16"
                                                                         : "bf16";
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
