// Plan: how one training step is parallelised, its parsers and its validation.
//
// JSON (configs/plans/*.json; DESIGN.md "Specs"):
//   {"tp","pp","dp","cp","ep","vpp","microbatch_group_size_per_vp_stage"?,"micro_batch_size",
//    "global_batch_size","seq_length"?,
//    "schedule","recompute":"none|selective|full","recompute_modules":[...]?,
//    "recompute_num_layers"?,
//    "sequence_parallel","zero_stage":0-3,
//    "offload_optimizer","offload_fraction"?,"precision":"bf16|fp16|fp8|nvfp4","stage_layers":[...]?,
//    "placement":[...]?,"replica_microbatches":[...]?,"runtime"?,"attention"?,"etp"?,
//    "first_stage_layers"?,"last_stage_layers"?,"pipeline_layout"?,"moe_a2a_overlap"?,
//    "moe_dispatcher"?,
//    "tp_comm_overlap"?,"cuda_graphs"?,"grad_reduce_in_fp32"?,"activation_offload_layers"?,
//    "fp8_recipe"?,"training"?}
// Every key but global_batch_size is optional, with the defaults below. The same keys as an
// inline string, with "mbs", "gbs", "seq", "offload" (offload_fraction) and "rmb"
// (replica_microbatches, "rmb=10:6") as short forms and lists separated by ':'
// ("stage_layers=9:10:10:3"):
//   tp=8,pp=4,dp=8,mbs=1,gbs=512,schedule=interleaved-1f1b,vpp=2,precision=fp8
// "runtime" (megatron-core, megatron-lm, deepspeed, torchtitan, pytorch-fsdp; runtime.h) names
// the code base that runs the plan; "attention" (unfused, flash2, fused, triton) overrides the
// kernel that runtime runs by default. "training" (JSON only; training_spec.h) is the run the
// plan is asked to finish: tokens, a batch ramp, the checkpoint interval (docs/time-to-train.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/pipeline_layout.h"
#include "simulator/spec/runtime.h"
#include "simulator/spec/schedule_kind.h"
#include "simulator/spec/training_spec.h"

namespace ppsim {

// Parse-time bounds (docs/limits.md), so that every count and product downstream fits the
// integer types used (32-bit schedule indices, 64-bit GPU and token counts):
//   each degree (tp, pp, dp, cp, ep, etp, vpp), stage layer count and placement index <= 2^24;
//   tp*pp*dp*cp <= 2^24 GPUs (the largest cluster, cluster_spec.h kMaxClusterGpus);
//   micro_batch_size, global_batch_size and each replica_microbatches entry <= 2^31 - 1;
//   seq_length <= 2^24 (model_spec.cc's bound).
inline constexpr int64_t kMaxPlanDegree = int64_t{1} << 24;
inline constexpr int64_t kMaxPlanGpus = int64_t{1} << 24;
inline constexpr int64_t kMaxBatch = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxPlanSequence = int64_t{1} << 24;

enum class Recompute { kNone, kSelective, kFull };

// The parts of a layer that selective recompute re-runs (Megatron-Core --recompute-modules,
// transformer_config.py recompute_modules; default core_attn):
//   kCoreAttn       the attention core (normal checkpoint: its input kept);
//   kMoeAct         the routed experts' activation function (output discarded: the expert
//                   down projection's input);
//   kLayernorm      input_layernorm and pre_mlp_layernorm (outputs discarded: the QKV and
//                   MLP/router inputs);
//   kMlaUpProj      MLA's up projections and rope (outputs discarded: Q, K, V; MLA models
//                   only, Megatron's assert);
//   kMlp            the dense MLP of dense layers (normal checkpoint);
//   kMoe            the whole MoE block: router, dispatch and combine all-to-alls, experts,
//                   shared experts (normal checkpoint);
//   kSharedExperts  the shared experts of MoE layers (normal checkpoint).
// What each saves and re-runs: model/activation_memory.h, model/layer_ops.h.
enum class RecomputeModule { kCoreAttn, kMoeAct, kLayernorm, kMlaUpProj, kMlp, kMoe, kSharedExperts };
inline constexpr int kRecomputeModuleCount = 7;
// A set of RecomputeModule, one bit each.
using RecomputeModules = uint32_t;
constexpr RecomputeModules recompute_module_bit(RecomputeModule module) {
  return RecomputeModules{1} << static_cast<unsigned>(module);
}
inline constexpr RecomputeModules kAllRecomputeModules =
    (RecomputeModules{1} << kRecomputeModuleCount) - 1;

// How an MoE layer's tokens reach their experts' ranks (Megatron --moe-token-dispatcher-type).
//   kAllToAll  NCCL all-to-all of every (token, expert) copy: a token routed to experts on two
//              ranks of one remote node crosses the network twice (Megatron "alltoall").
//   kDeepEp    DeepEP's fused dispatch and combine (Megatron "flex" with
//              --moe-flex-dispatcher-backend deepep): a token crosses the network once per
//              destination NVLink domain and is forwarded over NVLink inside it.
//   kHybridEp  NVIDIA's HybridEP ("flex", backend hybridep), the same per-domain scheme.
enum class MoeDispatcher { kAllToAll, kDeepEp, kHybridEp };

// What the step captures in CUDA graphs, so the host replays a graph instead of launching each
// kernel (Megatron-Core --cuda-graph-impl / --cuda-graph-modules). It matters where the host
// cannot run ahead of the device: an MoE layer that reads its token counts on the host
// (cost/chunk_price.h "host"), and the per-microbatch dispatch.
//   kNone           eager launches (Megatron's default).
//   kMoeRouter      each MoE layer's router and dispatcher preprocess (the token counts) are a
//                   graph: --cuda-graph-impl transformer_engine --cuda-graph-modules moe_router
//                   moe_preprocess (moe_router alone under token drop, which Megatron requires);
//                   the Megatron-Bridge MoE recipes of 2025-11 to 2026-04.
//   kLayers         every transformer layer's forward and backward whole (--cuda-graph-impl
//                   local, no modules: Megatron's per-layer graphs); an MoE layer is graphable
//                   only with drop-and-pad (moe.capacity_factor), whose shapes are static.
//   kFullIteration  the whole forward-backward of the step, optimizer excluded
//                   (--cuda-graph-impl full_iteration): no host issue time inside it at all,
//                   dropless MoE included (Megatron sizes its dispatch buffers for the graph).
enum class CudaGraphs { kNone, kMoeRouter, kLayers, kFullIteration };

struct Plan {
  int64_t tp = 1;   // Tensor-parallel degree. Default 1.
  int64_t pp = 1;   // Pipeline stages (ranks). Default 1.
  int64_t dp = 1;   // Data-parallel replicas. Default 1.
  int64_t cp = 1;   // Context-parallel degree (splits the sequence). Default 1.
  int64_t ep = 1;   // Expert-parallel degree. Default 1.
  // Expert tensor-parallel degree: how many GPUs split one expert's MLP (Megatron
  // --expert-tensor-parallel-size). 0 means "as tp" (Megatron's default). The expert groups fold
  // over the same GPUs as attention (MoE parallel folding, Liu et al. 2025): etp*ep must divide
  // tp*dp*cp; ep GPUs of an expert group hold different experts, etp split each one.
  int64_t etp = 0;
  // MoE dispatch/combine all-to-alls overlapped with compute (Megatron
  // --overlap-moe-expert-parallel-comm, DeepEP-style): only their excess over the overlapped
  // work shows. Default false (blocking, Megatron's default).
  bool moe_a2a_overlap = false;
  // MoE token dispatcher (above); JSON "moe_dispatcher": "alltoall" | "deepep" | "hybridep".
  // Default alltoall (Megatron-Bridge's recipes' base setting).
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  int64_t vpp = 1;  // Model chunks per pipeline rank (interleaved 1F1B; 2 for zbv/dualpipev).
  // Under interleaved-1f1b with vpp > 1, the microbatches that run through one virtual stage
  // before the next (Megatron-Core's --microbatch-group-size-per-virtual-pipeline-stage,
  // Megatron-Bridge's microbatch_group_size_per_vp_stage): between pp and the microbatches per
  // step, and a short last group must hold 0 or at least pp. A larger group adds warm-up
  // forwards, so more activations in flight. 0 = not given: pp, Megatron's default
  // (microbatch_group_in_force).
  int64_t microbatch_group_size = 0;
  int64_t micro_batch_size = 1;   // Sequences per microbatch; JSON "micro_batch_size"/"mbs".
  int64_t global_batch_size = 0;  // Sequences per optimizer step; JSON "global_batch_size"/"gbs". Required.
  std::optional<int64_t> seq_length;  // Overrides the model's sequence length; JSON "seq_length"/"seq".
  ScheduleKind schedule = kDefaultSchedule;  // Default "1f1b".
  Recompute recompute = Recompute::kNone;           // Default "none".
  // Under selective recompute, the modules re-run (RecomputeModule bits); 0 = Megatron's
  // default, core_attn. JSON "recompute_modules": ["moe_act", "layernorm"], inline
  // recompute_modules=moe_act:layernorm; giving it alone means recompute=selective.
  // recomputed_modules() gives the set in force under every recompute setting.
  RecomputeModules recompute_modules = 0;
  // Under full recompute, the layers re-run in each pipeline chunk (virtual stage): its first N
  // (Megatron-Core --recompute-method block --recompute-num-layers N); the others keep their
  // activations as without recompute. 0 = every layer (Megatron's uniform method, one layer
  // per checkpoint), the default; giving it alone means recompute=full. layer_recomputed() says
  // which layers re-run.
  int64_t recompute_num_layers = 0;
  bool sequence_parallel = false;  // Megatron sequence parallelism (needs tp > 1). Default false.
  int zero_stage = 0;      // 0 none, 1 optimizer states (Megatron distributed optimizer),
                           // 2 + gradients, 3 + parameters (FSDP). Default 0.
  bool offload_optimizer = false;  // Optimizer states and update on the CPU. Default false.
  // Of the optimizer states (and of the update), the fraction kept on the host when
  // offload_optimizer is set, in (0, 1]; the GPU keeps and updates the rest (Deep Optimizer
  // States, Maurya et al. 2024; docs/offload.md). JSON "offload_fraction" or inline "offload";
  // giving it alone turns offload on (0 turns it off). Default 1 (everything on the host).
  double offload_fraction = 1.0;
  // GEMM precision: "bf16" (default), "fp16", "fp8" or "nvfp4" (gpu_catalog.h Precision).
  Precision precision = Precision::kBf16;
  // The fp8 scaling recipe (gpu_catalog.h Fp8Recipe), when the plan names one; JSON "fp8_recipe": "delayed" |
  // "tensorwise" | "mxfp8" | "blockwise", only with precision fp8. Else the runtime's
  // (fp8_recipe_in_force below).
  std::optional<Fp8Recipe> fp8_recipe;
  std::vector<int64_t> stage_layers;  // Layers per pipeline stage (pp entries); empty = balanced.
  // Layers of the first and last pipeline stage (Megatron --decoder-first/last-pipeline-num-
  // layers); the middle stages split the rest evenly. 0 = not given. Not with stage_layers.
  int64_t first_stage_layers = 0;
  int64_t last_stage_layers = 0;
  // Megatron-Core's pipeline layout (pipeline_layout.h): the layers of every virtual stage, as
  // Megatron's --pipeline-model-parallel-layout gives them ("Et|(tt|)*30mL"), kept as given.
  // Without vpp it sets vpp to its stages / pp, and with more than one per rank and no
  // schedule, schedule interleaved-1f1b (as Megatron derives both). Inline, its cosmetic
  // commas may stay: a piece without '=' right after it continues the layout. "" = not given.
  // Not with stage_layers or first/last_stage_layers.
  std::string pipeline_layout;
  std::vector<int64_t> placement;     // Cluster node group per pipeline stage; empty = in order.
  // Microbatches per data-parallel replica (dp entries, each >= 1, summing to gbs / mbs), so
  // replicas of different speed take different shares of the global batch (heterogeneous
  // clusters); empty = gbs / (mbs * dp) each. JSON "replica_microbatches", inline "rmb=10:6".
  std::vector<int64_t> replica_microbatches;
  Runtime runtime = kDefaultRuntime;  // The code base that runs it (runtime.h). Default megatron-core.
  // The attention kernel, when the plan names one; else the runtime's (attention_kernel()).
  std::optional<AttentionKernel> attention;
  // Tensor-parallel collectives overlapped with the GEMMs beside them (Megatron-Core
  // --tp-comm-overlap: Transformer Engine's userbuffers split each sequence-parallel all-gather
  // and reduce-scatter into tp steps run under the GEMM's chunks), when the plan says; else the
  // runtime's default (tp_comm_overlap_in_force()).
  std::optional<bool> tp_comm_overlap;
  // CUDA graph capture (above); JSON "cuda_graphs": "none" | "moe-router" | "layers" |
  // "full-iteration". Default none.
  CudaGraphs cuda_graphs = CudaGraphs::kNone;
  // Gradients accumulated and data-parallel reduced in fp32 (true) or in the training dtype
  // (false: bf16, fp16 for fp16 plans), when the plan says; else fp32 for every precision but
  // fp16 (Megatron-LM forces fp32 for bf16; grad_reduce_in_fp32_in_force below).
  // Megatron-Core's DistributedDataParallelConfig.grad_reduce_in_fp32 (--grad-reduce-in-bf16),
  // which NeMo and Megatron-Bridge performance recipes turn off.
  std::optional<bool> grad_reduce_in_fp32;
  // Transformer layers whose saved activations go to host memory after their forward and come
  // back before their backward (Megatron-Core --cpu-offloading-num-layers: Transformer Engine's
  // CPU offload context over the first N layers; model/activation_offload.h). 0 = none, the
  // default; at most the model's layers - 1, with pp = 1 (the one form Megatron-Core runs).
  int64_t activation_offload_layers = 0;
  // The training run (tokens, batch ramp, checkpoint interval); JSON "training", default none.
  std::optional<TrainingSpec> training;

  int64_t num_gpus() const { return tp * pp * dp * cp; }
  // The expert tensor-parallel degree in force: etp, or tp when not given.
  int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  // The expert data-parallel degree: a stage's tp*dp*cp GPUs over the etp*ep of one expert
  // group (Megatron-Core's world / (pp*ep*etp)). Routed-expert gradients are reduced, and their
  // optimizer states sharded, over this group rather than dp*cp. REQUIRES: a valid plan.
  int64_t expert_dp() const { return tp * dp * cp / (ep * expert_tp()); }
};

// Parses a plan from JSON text ("{...}") or the inline form ("tp=8,pp=4,..."). Pure.
Plan parse_plan(const std::string& text, const std::string& source);

// Resolves a plan argument: an existing file, a name under configs/plans/, or inline text.
Plan load_plan(const std::string& path_or_inline);

// Canonical names used in JSON, flags and reports (schedule names: schedule_kind.h).
std::string recompute_name(Recompute recompute);

// "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts" (Megatron's
// spelling, RecomputeModule order).
const std::vector<std::string>& recompute_module_names();
std::optional<RecomputeModule> find_recompute_module(const std::string& name);
// The modules re-run in each backward: none without recompute, every one under full, and
// under selective `modules` (a plan's recompute_modules; core_attn when 0).
RecomputeModules recomputed_modules(Recompute recompute, RecomputeModules modules);
RecomputeModules recomputed_modules(const Plan& plan);
// Why `model` cannot re-run `modules` (Megatron-Core's assert: mla_up_proj needs MLA), or
// nullopt. Part of plan_problem; `plan --recompute-modules` asks it before searching.
std::optional<std::string> recompute_modules_problem(RecomputeModules modules,
                                                     const ModelSpec& model);
// The names of a module set in RecomputeModule order, as a list and joined by `separator`.
std::vector<std::string> recompute_module_list(RecomputeModules modules);
std::string recompute_modules_text(RecomputeModules modules, std::string_view separator);

// "alltoall", "deepep", "hybridep".
std::string moe_dispatcher_name(MoeDispatcher dispatcher);
const std::vector<std::string>& moe_dispatcher_names();
std::optional<MoeDispatcher> find_moe_dispatcher(const std::string& name);

// "delayed", "tensorwise", "mxfp8", "blockwise".
std::string fp8_recipe_name(Fp8Recipe recipe);
const std::vector<std::string>& fp8_recipe_names();
std::optional<Fp8Recipe> find_fp8_recipe(const std::string& name);
// Whether the layer at `position` (0-based) in its pipeline chunk re-runs its forward in the
// backward: under full recompute every layer, or the first recompute_num_layers of each chunk;
// under selective every layer (its modules); never without recompute.
bool layer_recomputed(const Plan& plan, int64_t position);
// The plan without recompute: how the layers past recompute_num_layers in a chunk run.
Plan without_recompute(const Plan& plan);

// Whether selective recompute re-runs moe_act or layernorm (whose outputs the forward then
// discards), which Megatron-Core refuses under delayed fp8 scaling (transformer_config.py).
bool recomputes_moe_act_or_layernorm(const Plan& plan);
// The fp8 recipe a plan runs: plan.fp8_recipe, else its runtime's: tensorwise under torchtitan
// (torchao's Float8 default), and under megatron-core when selective recompute re-runs moe_act
// or layernorm (delayed scaling is refused there, transformer_config.py); else delayed
// (Megatron's --fp8-recipe default, Transformer Engine's DelayedScaling). Meaningful only for
// fp8 plans.
Fp8Recipe fp8_recipe_in_force(const Plan& plan);
// Why `gpu` cannot run `recipe` (MXFP8 needs Blackwell's block-scaled tensor cores; blockwise
// needs Hopper or later: Transformer Engine's check_mxfp8_support /
// check_fp8_block_scaling_support), or nullopt. Part of plan_problem.
std::optional<std::string> gpu_fp8_recipe_problem(Fp8Recipe recipe, const GpuSpec& gpu);

// "none", "moe-router", "layers", "full-iteration".
std::string cuda_graphs_name(CudaGraphs graphs);
const std::vector<std::string>& cuda_graphs_names();
std::optional<CudaGraphs> find_cuda_graphs(const std::string& name);
// Why `model` cannot be captured with `graphs` (Megatron-Core's asserts: a whole-layer MoE
// graph needs drop-and-pad's static shapes; a router scope needs routers), or nullopt. Part of
// plan_problem; `plan --cuda-graphs` asks it before searching.
std::optional<std::string> cuda_graphs_problem(CudaGraphs graphs, const ModelSpec& model);
// Whether the plan's moe-router graphs also capture each MoE layer's dispatcher preprocess
// (the token counts): yes, except under alltoall token drop, whose preprocess copies the counts
// to the host and which Megatron refuses to graph (transformer_config.py). The price
// (chunk_price.cc) and the Megatron export read it alike.
bool moe_preprocess_graphed(const Plan& plan, const ModelSpec& model);

// The plan as JSON in the format parse_plan accepts (every key spelled out).
std::string plan_to_json(const Plan& plan);
// The plan in the inline form, for tables ("tp=8,pp=4,dp=8,mbs=1,gbs=512,schedule=1f1b").
std::string plan_to_inline(const Plan& plan);

// The attention kernel the plan runs: plan.attention, else its runtime's default.
AttentionKernel attention_kernel(const Plan& plan);

// Whether a plan keeps and data-parallel reduces its gradients in fp32: its grad_reduce_in_fp32,
// else true for every precision but fp16. Megatron-LM forces fp32 accumulation and all-reduce
// for bf16 (arguments.py: "bfloat16 requires gradient accumulation and all-reduce to be done in
// fp32") unless --grad-reduce-in-bf16, while fp16 keeps main_grad in the parameters' dtype
// unless --accumulate-allreduce-grads-in-fp32 (DistributedDataParallel's grad_dtype). fp8 and
// nvfp4 plans keep bf16 parameters, so fp32 gradients by default.
bool grad_reduce_in_fp32_in_force(const Plan& plan);

// The ZeRO stage the step runs as: zero_stage, except that FSDP (2 or 3) under pipeline
// parallelism on a runtime that keeps each stage's parameters gathered and its gradients
// unsharded until the last microbatch (RuntimeTraits::fsdp_unsharded_under_pp: torchtitan, whose
// exporter then writes fsdp_reshard_after_forward = "default") runs as Megatron's
// distributed optimizer (1): bf16 parameters and fp32 gradients whole on every GPU, fp32 master
// weights and Adam states sharded, one gradient reduce-scatter and one parameter all-gather
// per step instead of per microbatch. Memory, prices and the step's collectives read this; the
// plan, its checks and its exports keep zero_stage.
int zero_stage_in_force(const Plan& plan);

// Whether the plan's tensor-parallel collectives run under its GEMMs: plan.tp_comm_overlap, else
// on exactly where the runtime does by default (RuntimeSupport::tp_comm_overlap kDefault:
// megatron-core), tp > 1 and sequence parallelism is on. Megatron-Core's default is on because the recipes its published runs
// come from set it whenever tp > 1 (Megatron-Bridge recipes' CommOverlapConfig(
// tp_comm_overlap=True), NeMo 2's performance recipes' MegatronCommOverlapCallback); give
// tp_comm_overlap=false for a Megatron-LM launch without --tp-comm-overlap.
bool tp_comm_overlap_in_force(const Plan& plan);

// Fraction of the optimizer states and update on the host: offload_fraction when
// offload_optimizer is set, else 0.
double offloaded_fraction(const Plan& plan);

// Sequence length the plan trains at: plan.seq_length or the model's.
int64_t effective_seq_length(const Plan& plan, const ModelSpec& model);
// Microbatches per step per replica: gbs / (mbs * dp), or with replica_microbatches the largest
// share (the replica that runs longest and holds the most activations). REQUIRES: a valid plan.
int64_t num_microbatches(const Plan& plan);

// The interleaved schedule's microbatch group (Plan::microbatch_group_size, else pp).
int64_t microbatch_group_in_force(const Plan& plan);
// Microbatches of each replica (dp entries): replica_microbatches, or the equal share each.
std::vector<int64_t> replica_microbatch_counts(const Plan& plan);
// True when the replicas' microbatch counts differ.
bool has_unequal_shares(const Plan& plan);
// Layers per pipeline stage: stage_layers when given; the sum of each rank's virtual stages
// under pipeline_layout; else first_stage_layers and
// last_stage_layers (when given) with the middle stages splitting the rest evenly (the
// remainder to the earliest middle stages); else an even split of layer slots where the
// remainder goes to the middle stages (the first and last carry embedding and loss), the last
// stage's MTP layers taking slots and, when the layers do not divide the stages, each output
// head one more (docs/moe.md "MTP, the heads and the default split"). A stage's layers are
// divided over its vpp chunks as evenly as possible (chunk_layout.h).
std::vector<int64_t> stage_layer_counts(const Plan& plan, const ModelSpec& model);
// The virtual stages of plan.pipeline_layout (pipeline_layout.h). REQUIRES: a layout is given.
std::vector<LayoutStage> pipeline_layout_stages(const Plan& plan);

// Why the plan cannot run this model on this cluster, or nullopt when it can. Checks:
// tp*pp*dp*cp == GPUs used (<= cluster GPUs), tp <= GPUs per NVLink domain, heads and kv heads divisible by tp, gbs divisible by dp*mbs,
// stages <= layers, every stage with at least vpp layers except the first and last, ep
// divides the experts and etp*ep divides tp*dp*cp, sequence divisible by 2*cp, schedule rules;
// replica_microbatches: dp entries, each >= 1 and allowed by the schedule, summing to gbs/mbs
// (then gbs need only be divisible by mbs).
std::optional<std::string> plan_problem(const Plan& plan, const ModelSpec& model,
                                        const ClusterSpec& cluster);
// Why `gpu` cannot run GEMMs at `precision` (no FP8 or FP4 tensor cores, no bf16), naming the
// GPU and what to use instead, or nullopt. Part of plan_problem; `plan --precision` asks it
// before searching.
std::optional<std::string> gpu_precision_problem(Precision precision, const GpuSpec& gpu);
// The part of plan_problem that the model's op shapes (layer_ops.h) need: tp against the heads
// and kv heads, ep against the experts, the sequence against 2*cp.
std::optional<std::string> op_shape_problem(const Plan& plan, const ModelSpec& model);

// Throws InputError (source, message from plan_problem) when the plan is impossible.
void validate_plan(const Plan& plan, const ModelSpec& model, const ClusterSpec& cluster,
                   const std::string& source);

}  // namespace ppsim
