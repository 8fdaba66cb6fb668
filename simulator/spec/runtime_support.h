// Runtime support checks: whether a plan's runtime (plan.runtime, spec/runtime.h) can run it,
// against the one capability table, runtime_support(). The planner searches only plans that pass
// (planner/plan_candidates.h, unless `plan --runtime any`) and `ppsim export` refuses the others
// (export/launcher_config.h), so a launcher file never runs a step other than the simulated one.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/spec/runtime.h"

namespace ppsim {

// Why `plan` cannot run on its runtime (plan.runtime), naming the feature and the runtime, or
// nullopt. runtime_shape_problem checks what decides a plan's shape (tp, pp, schedule, vpp, cp,
// ep, etp, layer split, moe_a2a_overlap's schedule, virtual-stage and MTP conditions, and
// partial full recompute against the layer split);
// runtime_knob_problem the knobs the planner varies per shape (ZeRO, offload, sequence
// parallelism, precision, tp_comm_overlap, cuda_graphs, moe_a2a_overlap beside recompute);
// runtime_plan_problem both and the MoE dispatcher.
// Messages read "runtime R cannot run FEATURE (...)". REQUIRES: plan_problem(plan, model, ...)
// is nullopt.
std::optional<std::string> runtime_shape_problem(const Plan& plan, const ModelSpec& model);
std::optional<std::string> runtime_knob_problem(const Plan& plan);
std::optional<std::string> runtime_plan_problem(const Plan& plan, const ModelSpec& model);
// torchtitan's layer-level selective checkpointing (selective_ac_option = k) checkpoints every
// k-th transformer block of a rank: the k that re-runs recompute_num_layers of each pipeline
// chunk, when every chunk has the same layer count and N divides it (1 when N covers the
// chunk); else nullopt.
std::optional<int64_t> torchtitan_ac_frequency(const Plan& plan, const ModelSpec& model);
// Why `runtime` cannot overlap MoE all-to-alls with compute in any plan (Megatron-Core's
// --overlap-moe-expert-parallel-comm; torchtitan's inside DualPipeV), in the same words, or
// nullopt. `plan --moe-a2a-overlap on` asks it before searching; which plans of a runtime that
// can overlap allow it is runtime_shape_problem's and runtime_knob_problem's.
std::optional<std::string> runtime_moe_overlap_problem(Runtime runtime);
// Why `runtime` cannot run the MoE token dispatcher `dispatcher` (DeepEP and HybridEP are
// Megatron-Core's flex dispatcher), in the same words, or nullopt. Part of
// runtime_plan_problem; `plan --moe-dispatcher` asks it before searching.
std::optional<std::string> runtime_dispatcher_problem(Runtime runtime, MoeDispatcher dispatcher);
// Why `runtime` cannot capture the training step with `graphs` (only Megatron-Core does), in
// the same words, or nullopt. Part of runtime_knob_problem; `plan --cuda-graphs` asks it before
// searching.
std::optional<std::string> runtime_cuda_graphs_problem(Runtime runtime, CudaGraphs graphs);
// Why `runtime` cannot run GEMMs at `precision` (nvfp4 is Megatron-Core's alone), in the same
// words, or nullopt. Part of runtime_knob_problem; `plan --precision` asks it before searching.
std::optional<std::string> runtime_precision_problem(Runtime runtime, Precision precision);
// Why `runtime` cannot re-run `modules` under selective recompute (any module but core_attn is
// Megatron-Core's alone), in the same words, or nullopt. Part of runtime_knob_problem;
// `plan --recompute-modules` asks it before searching.
std::optional<std::string> runtime_recompute_modules_problem(Runtime runtime,
                                                             RecomputeModules modules);
// Why the plan's runtime cannot keep its gradients as grad_reduce_in_fp32_in_force says (the
// 2021-2022 Megatron-LM reduces bf16 training's in fp32 only), in the same words, or nullopt.
// Part of runtime_knob_problem; `plan --grad-reduce-in-fp32` asks it before searching.
std::optional<std::string> runtime_grad_reduce_problem(const Plan& plan);

// Why the plan's runtime cannot run its fp8 recipe (fp8_recipe_in_force: the runtime's table row,
// and Megatron-Core's refusal of delayed scaling beside moe_act or layernorm recompute), or
// nullopt (also for plans that are not fp8). Part of runtime_knob_problem; `plan --fp8-recipe`
// asks it before searching.
std::optional<std::string> runtime_fp8_recipe_problem(const Plan& plan);

}  // namespace ppsim
