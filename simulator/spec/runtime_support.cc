#include "simulator/spec/runtime_support.h"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

constexpr uint32_t bit(ScheduleKind kind) { return 1u << static_cast<unsigned>(kind); }
constexpr uint32_t bit(Precision precision) { return 1u << static_cast<unsigned>(precision); }

std::string feature_refusal(Runtime runtime, const std::string& feature) {
  return fmt::format("runtime {} cannot run {} (its capabilities: docs/export.md \"What each "
                     "runtime runs\"); choose a plan it runs, or another runtime",
                     runtime_name(runtime), feature);
}

// Why the runtime cannot overlap the MoE all-to-alls (Plan::moe_a2a_overlap) the way this plan
// asks, or "". With `knobs`, only what the per-shape knobs decide (recompute); without, what
// the shape and the model decide (schedule, virtual stages, MTP layers).
// Runtimes that overlap MoE all-to-alls in some plan: Megatron-Core
// (--overlap-moe-expert-parallel-comm) and torchtitan (inside DualPipeV).
bool overlaps_moe_a2a(Runtime runtime) {
  return runtime == Runtime::kMegatronCore || runtime == Runtime::kTorchtitan;
}

std::string moe_overlap_refusal(const Plan& plan, int64_t mtp_layers, bool knobs) {
  if (!plan.moe_a2a_overlap) return "";
  const int64_t chunks = chunks_per_rank(plan.schedule, plan.vpp);
  switch (plan.runtime) {
    case Runtime::kMegatronCore:
      // TransformerConfig.__post_init__ asserts (transformer_config.py).
      if (knobs) return plan.recompute == Recompute::kFull ? "with full recompute" : "";
      if (plan.pp > 1 && chunks == 1) return "with pp > 1 without virtual pipeline stages";
      if (mtp_layers > 1) return "with more than one MTP layer";
      return "";
    case Runtime::kTorchtitan: {
      // Only inside DualPipeV (pipeline_parallel_expert_parallel_overlap), without AC.
      const bool ok = knobs ? plan.recompute == Recompute::kNone
                            : plan.pp > 1 && plan.ep > 1 &&
                                  plan.schedule == ScheduleKind::kDualPipeV;
      return ok ? "" : "outside a DualPipeV schedule with ep > 1 and no recompute";
    }
    default:
      PPSIM_CHECK(!overlaps_moe_a2a(plan.runtime));
      return knobs ? "" : "at all";
  }
}

}  // namespace

std::optional<std::string> runtime_shape_problem(const Plan& plan, const ModelSpec& model) {
  const RuntimeSupport& support = runtime_support(plan.runtime);
  auto refuse = [&plan](const std::string& feature) {
    return std::optional<std::string>(feature_refusal(plan.runtime, feature));
  };
  if (model.mamba && !support.mamba_layers) {
    return refuse(fmt::format("{}'s Mamba-2 layers (a hybrid model)", model.name));
  }
  if (plan.tp > 1 && !support.tensor_parallel) {
    return refuse(fmt::format("tensor parallelism (tp={})", plan.tp));
  }
  if (plan.pp > 1) {
    if (!support.pipeline) return refuse(fmt::format("pipeline parallelism (pp={})", plan.pp));
    if ((support.schedules & bit(plan.schedule)) == 0) {
      std::string runs;
      for (ScheduleKind kind : all_schedule_kinds()) {
        if (support.schedules & bit(kind)) runs += (runs.empty() ? "" : ", ") + schedule_name(kind);
      }
      return refuse(fmt::format("pipeline schedule {} (it runs {})", schedule_name(plan.schedule),
                                runs));
    }
    if (microbatch_group_in_force(plan) != plan.pp && !support.microbatch_groups) {
      return refuse(fmt::format(
          "interleaved microbatch groups of {} rather than pp={} "
          "(microbatch_group_size_per_vp_stage)",
          plan.microbatch_group_size, plan.pp));
    }
    if (!support.uneven_layers) {
      std::vector<int64_t> layers = stage_layer_counts(plan, model);
      if (!std::all_of(layers.begin(), layers.end(),
                       [&](int64_t n) { return n == layers.front(); })) {
        std::string split;
        for (size_t i = 0; i < layers.size(); ++i)
          split += (i ? ":" : "") + std::to_string(layers[i]);
        return refuse(fmt::format("uneven pipeline stages (layers per stage {})", split));
      }
    }
  }
  if (plan.cp > 1 && !support.context_parallel) {
    return refuse(fmt::format("ring context parallelism (cp={})", plan.cp));
  }
  if (plan.ep > 1 && !support.expert_parallel) {
    return refuse(fmt::format("expert parallelism (ep={})", plan.ep));
  }
  if (model.is_moe() && !support.expert_tp_any && plan.expert_tp() != 1 &&
      plan.expert_tp() != plan.tp) {
    return refuse(fmt::format("expert tensor parallelism etp={} (only 1 or tp={})",
                              plan.expert_tp(), plan.tp));
  }
  if (model.is_moe()) {
    const std::string why = moe_overlap_refusal(plan, model.mtp_layers, /*knobs=*/false);
    if (!why.empty()) return refuse("MoE all-to-all overlap (moe_a2a_overlap) " + why);
  }
  if (plan.recompute_num_layers > 0) {
    const std::string partial =
        fmt::format("full recompute of {} layers per pipeline chunk (recompute_num_layers)",
                    plan.recompute_num_layers);
    if (plan.runtime == Runtime::kTorchtitan && !torchtitan_ac_frequency(plan, model)) {
      return refuse(partial + ", which is not every k-th layer of equal chunks (torchtitan's "
                              "selective_ac_option = k)");
    }
    if (plan.runtime == Runtime::kDeepSpeed && plan.pp > 1) {
      return refuse(partial + " under pipeline parallelism (its PipelineModule checkpoints "
                              "every layer, activation_checkpoint_interval)");
    }
  }
  return std::nullopt;
}

std::optional<int64_t> torchtitan_ac_frequency(const Plan& plan, const ModelSpec& model) {
  if (plan.recompute_num_layers <= 0) return std::nullopt;
  const std::vector<int64_t> stages = stage_layer_counts(plan, model);
  const int64_t chunks = chunks_per_rank(plan.schedule, plan.vpp);
  const int64_t stage = stages.front();
  const bool equal = std::all_of(stages.begin(), stages.end(),
                                 [stage](int64_t layers) { return layers == stage; });
  if (!equal || stage % chunks != 0) return std::nullopt;
  const int64_t chunk = stage / chunks;
  if (chunk <= plan.recompute_num_layers) return 1;  // Every block: full recompute.
  if (chunk % plan.recompute_num_layers != 0) return std::nullopt;
  return chunk / plan.recompute_num_layers;
}

std::optional<std::string> runtime_knob_problem(const Plan& plan) {
  const RuntimeSupport& support = runtime_support(plan.runtime);
  auto refuse = [&plan](const std::string& feature) {
    return std::optional<std::string>(feature_refusal(plan.runtime, feature));
  };
  const bool sharded = plan.dp * plan.cp > 1;
  const uint32_t stages = plan.pp > 1 ? support.zero_stages_pipelined : support.zero_stages;
  if (sharded && (stages & (1u << plan.zero_stage)) == 0) {
    return refuse(fmt::format("ZeRO stage {}{}", plan.zero_stage,
                              plan.pp > 1 ? " with pipeline parallelism" : ""));
  }
  if (sharded && plan.zero_stage == 0 && support.replicated_only_pure_dp &&
      plan.tp * plan.pp * plan.cp * plan.ep > 1) {
    return refuse(
        "ZeRO stage 0 (replicated DDP) beside tensor, pipeline, context or expert parallelism");
  }
  const double fraction = offloaded_fraction(plan);
  if (fraction > 0) {
    switch (support.offload) {
      case OffloadForm::kNone:
        return refuse("optimizer CPU offload");
      case OffloadForm::kAnyFraction:
        if (plan.zero_stage == 0) {
          return refuse("optimizer CPU offload without the distributed optimizer (ZeRO stage 0)");
        }
        break;
      case OffloadForm::kWholeOrPartialAtZero3:
        if (plan.zero_stage == 0) return refuse("optimizer CPU offload without ZeRO (stage 0)");
        if (fraction < 1 && plan.zero_stage != 3) {
          return refuse(fmt::format("a partial optimizer offload (fraction {:g}) with ZeRO stage "
                                    "{} (partial offload needs ZeRO-3)",
                                    fraction, plan.zero_stage));
        }
        break;
      case OffloadForm::kWholeWithFsdp:
        if (fraction < 1) {
          return refuse(fmt::format("a partial optimizer offload (fraction {:g}; FSDP offloads "
                                    "all or nothing)",
                                    fraction));
        }
        if (!sharded || plan.zero_stage < 2) {
          return refuse(fmt::format(
              "optimizer CPU offload without FSDP sharding (dp*cp = {}, ZeRO stage {}; the "
              "offload policy is applied only by fully_shard over dp*cp > 1 ranks)",
              plan.dp * plan.cp, plan.zero_stage));
        }
        break;
    }
  }
  if (plan.tp > 1 && !plan.sequence_parallel && !support.sequence_parallel_optional) {
    return refuse("tensor parallelism without sequence parallelism");
  }
  if (plan.tp > 1 && plan.ep > 1 && !plan.sequence_parallel &&
      support.expert_tp_needs_sequence_parallel) {
    return refuse("expert and tensor parallelism without sequence parallelism");
  }
  if (std::optional<std::string> problem = runtime_precision_problem(plan.runtime, plan.precision)) {
    return problem;
  }
  if (plan.recompute == Recompute::kSelective) {
    if (std::optional<std::string> problem =
            runtime_recompute_modules_problem(plan.runtime, plan.recompute_modules)) {
      return problem;
    }
  }
  if (plan.tp_comm_overlap.value_or(false) && support.tp_comm_overlap == TpCommOverlap::kNone) {
    return refuse("tensor-parallel communication overlap (tp_comm_overlap=true; "
                  "Megatron-Core's --tp-comm-overlap, torchtitan's async TP)");
  }
  if (std::optional<std::string> problem =
          runtime_cuda_graphs_problem(plan.runtime, plan.cuda_graphs)) {
    return problem;
  }
  if (std::optional<std::string> problem = runtime_grad_reduce_problem(plan)) return problem;
  if (std::optional<std::string> problem = runtime_fp8_recipe_problem(plan)) return problem;
  if (plan.activation_offload_layers > 0) {
    if (!support.activation_offload) {
      return refuse(fmt::format("activation offloading (activation_offload_layers={}; "
                                "Megatron-Core's --cpu-offloading-num-layers)",
                                plan.activation_offload_layers));
    }
    // TransformerConfig.__post_init__: "CPU offloading does not work when activation
    // recomputation is enabled"; "CUDA graphs not supported with CPU offloading" (but
    // full_iteration).
    if (plan.recompute != Recompute::kNone) {
      return refuse(fmt::format("activation offloading with recompute={} (Megatron-Core refuses "
                                "CPU offloading beside activation recomputation)",
                                recompute_name(plan.recompute)));
    }
    if (plan.cuda_graphs != CudaGraphs::kNone && plan.cuda_graphs != CudaGraphs::kFullIteration) {
      return refuse(fmt::format("activation offloading inside per-layer CUDA graphs "
                                "(cuda_graphs={}; only full-iteration allows it)",
                                cuda_graphs_name(plan.cuda_graphs)));
    }
  }
  // TransformerConfig.__post_init__: "full recompute is only supported with full iteration
  // CUDA graph".
  if (plan.recompute == Recompute::kFull && (plan.cuda_graphs == CudaGraphs::kLayers ||
                                             plan.cuda_graphs == CudaGraphs::kMoeRouter)) {
    return refuse(fmt::format("full recompute inside per-layer CUDA graphs (cuda_graphs={}, "
                              "recompute=full; only cuda_graphs=full-iteration allows it)",
                              cuda_graphs_name(plan.cuda_graphs)));
  }
  // plan_problem allows moe_a2a_overlap only on an MoE model with ep > 1.
  const std::string why = moe_overlap_refusal(plan, 0, /*knobs=*/true);
  if (!why.empty()) return refuse("MoE all-to-all overlap (moe_a2a_overlap) " + why);
  return std::nullopt;
}

std::optional<std::string> runtime_moe_overlap_problem(Runtime runtime) {
  if (overlaps_moe_a2a(runtime)) return std::nullopt;
  return feature_refusal(runtime, "MoE all-to-all overlap (moe_a2a_overlap) at all");
}

std::optional<std::string> runtime_plan_problem(const Plan& plan, const ModelSpec& model) {
  if (std::optional<std::string> problem = runtime_shape_problem(plan, model)) return problem;
  if (std::optional<std::string> problem = runtime_knob_problem(plan)) return problem;
  return runtime_dispatcher_problem(plan.runtime, plan.moe_dispatcher);
}

std::optional<std::string> runtime_dispatcher_problem(Runtime runtime, MoeDispatcher dispatcher) {
  if (dispatcher == MoeDispatcher::kAllToAll || runtime == Runtime::kMegatronCore) {
    return std::nullopt;
  }
  return feature_refusal(runtime, fmt::format("the {} MoE dispatcher (moe_dispatcher={})",
                                           dispatcher == MoeDispatcher::kDeepEp ? "DeepEP"
                                                                                : "HybridEP",
                                           moe_dispatcher_name(dispatcher)));
}

std::optional<std::string> runtime_cuda_graphs_problem(Runtime runtime, CudaGraphs graphs) {
  if (graphs == CudaGraphs::kNone || runtime_support(runtime).cuda_graphs) return std::nullopt;
  return feature_refusal(runtime, fmt::format("CUDA graph capture of the training step "
                                              "(cuda_graphs={}; Megatron-Core's "
                                              "--cuda-graph-impl)",
                                              cuda_graphs_name(graphs)));
}

std::optional<std::string> runtime_precision_problem(Runtime runtime, Precision precision) {
  if ((runtime_support(runtime).precisions & bit(precision)) != 0) return std::nullopt;
  return feature_refusal(runtime, fmt::format("precision {}", precision_name(precision)));
}

std::optional<std::string> runtime_recompute_modules_problem(Runtime runtime,
                                                             RecomputeModules modules) {
  if (modules != 0 &&
      runtime_traits(runtime).selective_recompute == SelectiveRecompute::kOpPolicy) {
    return feature_refusal(
        runtime, fmt::format("selective recompute of {} (recompute_modules; its selective "
                             "recompute is its op policy, selective_ac_option = \"op\": give "
                             "recompute=selective without recompute_modules)",
                             recompute_modules_text(modules, ", ")));
  }
  if (runtime_support(runtime).recompute_modules ||
      (modules & ~recompute_module_bit(RecomputeModule::kCoreAttn)) == 0) {
    return std::nullopt;
  }
  return feature_refusal(runtime,
                         fmt::format("selective recompute of {} (recompute_modules, Megatron-Core's "
                                     "--recompute-modules; it re-runs the attention core only)",
                                     recompute_modules_text(modules, ", ")));
}

std::optional<std::string> runtime_fp8_recipe_problem(const Plan& plan) {
  if (plan.precision != Precision::kFp8) return std::nullopt;
  const Fp8Recipe recipe = fp8_recipe_in_force(plan);
  if ((runtime_support(plan.runtime).fp8_recipes & (1u << static_cast<unsigned>(recipe))) == 0) {
    return feature_refusal(plan.runtime, fmt::format("the {} fp8 recipe (fp8_recipe={})",
                                                     fp8_recipe_name(recipe),
                                                     fp8_recipe_name(recipe)));
  }
  // TransformerConfig.__post_init__: "Delayed scaling does not support moe_act and layernorm
  // recompute for fp8."
  if (recipe == Fp8Recipe::kDelayed && plan.runtime == Runtime::kMegatronCore &&
      recomputes_moe_act_or_layernorm(plan)) {
    return feature_refusal(plan.runtime,
                           "delayed fp8 scaling beside moe_act or layernorm recompute "
                           "(Megatron-Core's assert; use fp8_recipe=tensorwise)");
  }
  return std::nullopt;
}

std::optional<std::string> runtime_grad_reduce_problem(const Plan& plan) {
  if (grad_reduce_in_fp32_in_force(plan) || plan.precision == Precision::kFp16 ||
      runtime_support(plan.runtime).half_gradient_reduce) {
    return std::nullopt;
  }
  return feature_refusal(plan.runtime, "bf16 gradient reduction (grad_reduce_in_fp32=false; "
                                       "Megatron-Core's --grad-reduce-in-bf16)");
}

}  // namespace ppsim
