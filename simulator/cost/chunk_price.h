// ChunkPrice: what one microbatch costs on one model chunk (a run of layers, chunk_layout.h) on
// one GPU type. The one price of a chunk: the step builder sets its F, B (or I) and W tasks from
// `total`, and the planner's lower bound (plan_screen.h) reads `bound`, which is derived from the
// same terms, never from a second formula.
//
// Per layer (ChunkPricer::layer):
//   compute    the CostModel's forward, input-gradient (with the recompute that runs inside
//              the backward task) and weight-gradient passes;
//   tp         tensor-parallel collectives inside each pass (Megatron: sequence parallelism's
//              all-gather + reduce-scatter, else two all-reduces; full recompute repeats the
//              forward's in the backward, selective recompute of the mlp, moe or
//              shared_experts module (with shared experts) the MLP half's), priced once per
//              chunk (tensor_parallel()) for a transformer layer's two blocks and scaled to
//              the layer's own (ModelSpec::tensor_parallel_blocks: a hybrid layer's attention,
//              Mamba mixer or MLP is one, an MoE block without shared experts none); under
//              tp_comm_overlap only their excess over the layer's tensor-parallel GEMMs shows
//              (plus contention and the reduce-scatters' last steps);
//   ep         MoE layers with ep > 1: the dispatch and combine all-to-alls, forward and backward,
//              over the ep group's placement: its ranks sit etp apart (Megatron's expert rank
//              order), so an NVLink domain of g GPUs holds g/etp of them and the rest is
//              reached over the NICs; sized for the critical rank (layer_ops.h). DeepEP and
//              HybridEP (Plan::moe_dispatcher) send a token once per remote domain and
//              forward it over NVLink there, and over NVLink once per destination GPU, not
//              per expert (model/moe_dispatch.h). With
//              moe_a2a_overlap only their excess over the pass's compute shows (plus the
//              overlap contention share). With etp > 1, the all-gather and reduce-scatter of the
//              expert rows over the etp group (forward AG + RS, backward the mirror). An MoE
//              layer without shared experts has no MLP tensor-parallel collectives: its tokens
//              stay sequence-parallel through the router (half of `tp` is dropped). A
//              recomputed MoE block (full recompute, or the moe module of selective
//              recompute) dispatches and combines again inside the backward;
//   host       an MoE layer whose token counts go to the host each forward keeps the host
//              from running ahead of it. Under a runtime whose MoE layers always read them
//              (RuntimeTraits::moe_host_sync: Megatron-Core's grouped experts) the device
//              drains at every such layer and waits for the host to issue the layer's
//              kernels (a recomputed op's forward kernels again in the backward),
//              so each pass adds its kernels x kHostSecondsPerKernel
//              (spec/runtime.h) to its device time: the published Megatron-Bridge
//              Qwen3-30B-A3B and DeepSeek-V3 runs on GB200, GB300 and B300 show 2-5 ms per
//              MoE layer and microbatch beyond device time at any microbatch size, which the
//              sum gives and a max(host, device) would not. Elsewhere a dropless layer
//              (token counts for the all-to-all splits) takes at least that issue time per
//              pass, its excess over the pass's device time added. CUDA graphs (plan.h
//              CudaGraphs) take kernels off the host: under layers or full-iteration an MoE
//              layer waits for no issue; under moe-router the router (each pass) and the
//              preprocess (kMoePreprocessKernels, layer_ops.h) count one launch each;
//   mtp        on the last chunk, each multi-token-prediction layer: a layer of the last
//              layer's kind, its 2h x h projection and another output layer and loss;
//   cp         context parallelism: the KV ring's excess over the attention it hides under
//              (forward: one ring, backward: two), plus the contention share of what it hides
//              (overlap_slowdown, as for every overlapped collective), in layers with
//              attention; a Mamba mixer's all-to-alls over the cp group (layer_ops.h
//              Op::context_all_to_alls), blocking, the backward's mirror, and the forward's
//              again under full recompute.
// Per chunk (ChunkPricer::chunk): its layers, the embedding on chunk 0, the final norm, output
// layer and loss on the last chunk; ZeRO-3's parameter gather (before each pass) and gradient
// reduce-scatter (after the backward) where they outlast the chunk's compute, FSDP prefetching
// the rest, plus a contention share of what they hide (overlap_slowdown, collective_cost.h);
// with activation_offload_layers, the offloaded layers' saved bytes off the GPU and the copies
// their neighbours do not hide (model/activation_offload.h); and the framework's per-microbatch
// dispatch once per forward and per backward (cost_model.h;
// none under a full-iteration CUDA graph, whose replay issues the whole schedule).
//
// The bound keeps compute + tp per pass (under tp_comm_overlap, tp's excess over the GEMMs),
// a Mamba mixer's context-parallel all-to-alls (blocking), an MoE layer's ep collectives as
// the pass charges them (blocking, or their excess under moe_a2a_overlap) and its host wait,
// and, under ZeRO-3, the gather and scatter excess over that smaller compute; it leaves out
// what the simulation alone times or what only adds time (the cp ring, the tp contention
// share, the dispatch), so for every pass bound <= total: with F the bound's compute,
// max(F, g) <= max(F + extra, g) + slowdown share + overhead. The ep terms and the host wait
// are certain time in every plan that shares the bound's key (plan_screen.h), which is what
// lets an MoE search stop simulating early.
//
// Provenance: each price says where its passes and collectives came from (roofline or profile,
// as CostProvenance counts them), so callers tally without the pricer keeping state.
//
// Thread-safety: ChunkPricer is immutable after construction; its methods may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "simulator/cost/collective_cost.h"
#include "simulator/cost/cost_model.h"
#include "simulator/model/activation_memory.h"
#include "simulator/model/layer_ops.h"
#include "simulator/model/parameter_bytes.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

class ProfileTable;

// Seconds of one microbatch through one pass each: forward, input gradient (with recompute),
// weight gradient.
struct PassSeconds {
  double forward = 0;
  double backward_input = 0;  // Including recompute.
  double backward_weight = 0;
  double total() const { return forward + backward_input + backward_weight; }
};

// Where the collectives of a price came from (CostProvenance's comm counts).
struct CommCounts {
  int64_t modelled = 0;      // Alpha-beta.
  int64_t profile = 0;       // Measured or fitted by the profile...
  int64_t extrapolated = 0;  // ...of which outside its measured sizes.
};

// Adds one priced collective or transfer to `comm` by its source (nothing when it took no time).
void count_comm(const PassCost& cost, CommCounts& comm);

// The tensor-parallel collectives inside one layer's passes (the same for every layer), as
// Megatron-LM's tensor-parallel linears run them (Korthikanti et al. 2022, section 4.2.2):
//   forward   without SP: two all-reduces (after attention and after the MLP);
//             with SP: an all-gather before and a reduce-scatter after each of the two
//             blocks (2 AG + 2 RS, the same bytes as two all-reduces);
//   backward  the mirror: without SP the column-parallel layers' input-gradient all-reduces;
//             with SP the row-parallel layers' output-gradient all-gathers (blocking), the
//             column-parallel layers' input-gradient reduce-scatters and, since SP saves only
//             the sharded input, its re-gather for the weight gradient (2 AG + 2 RS + 2 AG).
// Under fp8 or nvfp4 a runtime that quantizes before the gather (RuntimeTraits::
// quantized_gemm_inputs: Transformer Engine's linears gather with their quantizer) moves the
// quantized operand in every all-gather, gemm_operand_bytes per element; the reduce-scatters
// carry the bf16 outputs.
// With tp_comm_overlap (plan.h; Megatron-Core --tp-comm-overlap, Transformer Engine's
// userbuffers) every one of them runs in tp ring steps under the GEMM it feeds (all-gathers,
// one step per chunk of the GEMM's rows) or drains (reduce-scatters): the layer price shows, per
// pass, what outlasts the tensor-parallel GEMMs plus the contention share (overlap_slowdown,
// collective_cost.h), and in the forward the last step of each reduce-scatter.
// Otherwise Megatron issues the input-gradient collectives and the re-gather asynchronously under
// the backward's GEMMs (--async-tensor-model-parallel-allreduce, the SP path of
// LinearWithGradAccumulationAndAsyncCommunication): `backward_overlapped`. Runtimes without
// that overlap (runtime.h overlaps_tp_backward false: DTensor TP in torchtitan, which keeps the
// gathered input instead of re-gathering) run the mirror blocking.
struct TensorParallelPrice {
  double forward = 0;              // Blocking, inside each forward.
  double backward_blocking = 0;    // Blocking, inside each backward.
  double backward_overlapped = 0;  // Issued under the backward's GEMMs; only the excess shows.
  double recompute = 0;  // Added inside each backward under full recompute (the forward's).
  // Under tp_comm_overlap: the last of each forward reduce-scatter's tp steps, which runs
  // after its GEMM (2 x reduce-scatter / tp).
  double overlap_fill = 0;
};

// One layer's passes, the communication inside them, and what it holds.
struct LayerPrice {
  LayerCost compute;              // The CostModel's passes (with their provenance counts).
  double forward_comm = 0;        // TP + EP all-to-all + CP ring excess inside the forward.
  double backward_comm = 0;       // The same inside the input-gradient pass.
  double host_wait_fwd = 0;       // Host issue time the forward waits for (MoE), seconds.
  double host_wait_bwd = 0;       // The same of the backward (input and weight gradients).
  PassSeconds bound;  // Compute + TP (+ Mamba cp, MoE ep and host wait): the planner's bound.
  double activation_bytes = 0;    // Saved per microbatch (activation_memory.h).
  double weight_stash_bytes = 0;  // Of those, kept from I to W.
  CommCounts comm;                // The EP and CP collectives priced.
};

// Layer prices already made, by layer kind (ModelSpec::LayerKind) and whether the layer
// re-runs its forward (a plan's layers past recompute_num_layers do not), for one pricer on one
// GPU group: layers of one kind price alike, so a model's repeated layers are priced once.
struct LayerPriceKey {
  ModelSpec::LayerKind kind;
  bool recomputed = false;
  bool operator==(const LayerPriceKey&) const = default;
};
using LayerPriceMemo = std::vector<std::pair<LayerPriceKey, LayerPrice>>;

struct ChunkPrice {
  int64_t first_layer = 0;
  int64_t layers = 0;
  double forward = 0;         // Including its exposed communication and dispatch.
  double backward_input = 0;  // B without W, including recompute and exposed communication.
  double backward_weight = 0;
  double forward_comm = 0;      // Exposed communication inside `forward`.
  double backward_comm = 0;     // Exposed communication inside backward_input.
  double activation_bytes = 0;  // Saved per microbatch (plus logits on the last chunk).
  // Of those, what a split backward keeps from I to W: each GEMM's input (W = X^T dY needs X;
  // everything else is consumed by I). Zero-bubble schedules free the rest at I.
  double weight_stash_bytes = 0;
  ParameterSplit parameters;  // Per GPU (dense and expert), for gradient sync and optimizer.
  PassSeconds bound;          // The planner's lower bound on forward, backward_input, weight.
  // Op passes by source (counted once per GPU type and chunk by the caller) and collectives.
  int64_t roofline_passes = 0;
  int64_t profile_passes = 0;
  int64_t extrapolated_passes = 0;
  CommCounts comm;
};

// Kernels the host issues for one op of an MoE layer that waits for it (the "host" term above):
// its kernels and its GEMM casts per pass; under a moe-router graph the router is one launch per
// pass, and with a graphed preprocess (plan.h moe_preprocess_graphed) the preprocess is one; a
// recomputed op's forward kernels are issued again in the backward. A grouped GEMM under a
// recipe that quantizes each expert's rows on their own (tensorwise, mxfp8, blockwise:
// quantize_cost's per_expert) casts once per local expert: Transformer Engine's split_quantize
// (GroupedLinear's input X forward and dY backward, v2.9-v2.12) builds a quantized tensor per
// split and quantizes it alone, where delayed scaling casts every split in one
// multi_cast_transpose. One host call per split, whatever kernels it launches inside from C++.
struct HostLaunches {
  int forward = 0;
  int backward = 0;  // Input and weight gradients, and the recompute.
};
HostLaunches host_launches(const Op& op, bool router_graphed, bool preprocess_graphed);

// Prices chunks of one plan. The costs and links of a GPU type come with each call.
class ChunkPricer {
 public:
  // `efficiency` and `collective`: the simulation's (StepOptions); `profile`: its measured
  // profile or null (profile_for_gpu picks what applies per GPU); `ideal_links`: communication
  // is free. REQUIRES: plan_problem(plan, model, ...) is nullopt; the references outlive this.
  ChunkPricer(const ModelSpec& model, const Plan& plan, const EfficiencyTable& efficiency,
              const CollectiveEfficiency& collective, const ProfileTable* profile,
              bool ideal_links);

  // The TP collectives of every layer of `group`'s GPUs (a TP group sits on one node).
  TensorParallelPrice tensor_parallel(const NodeGroup& group, CommCounts& comm) const;

  // Layer `layer` on `group`'s GPUs, priced by `costs` (that GPU type's CostModel).
  LayerPrice layer(const CostModel& costs, const NodeGroup& group, const TensorParallelPrice& tp,
                   int64_t layer) const;
  // The same, taken from `memo` when a layer of its kind is there, else priced and kept there.
  // REQUIRES: `memo` holds only this pricer's prices with these `costs`, `group` and `tp`.
  LayerPrice layer(const CostModel& costs, const NodeGroup& group, const TensorParallelPrice& tp,
                   int64_t layer, LayerPriceMemo& memo) const;

  // Layers [first_layer, first_layer + layers), with the embedding when `first_chunk` and the
  // head when `last_chunk`, on `group`'s GPUs; under partial full recompute
  // (plan.recompute_num_layers) the chunk's layers past the first N as without recompute.
  // `memo`: the group's layer prices across calls (null: this call's own).
  ChunkPrice chunk(const CostModel& costs, const NodeGroup& group, int64_t first_layer,
                   int64_t layers, bool first_chunk, bool last_chunk,
                   LayerPriceMemo* memo = nullptr) const;

  // The same from layer prices already made (layer_prices[i] is layer first_layer + i), for
  // callers that price each layer once and sum many chunks (the planner's screen, whose plans
  // recompute every layer or none).
  ChunkPrice chunk_from_layers(const CostModel& costs, const NodeGroup& group,
                               const LayerPrice* layer_prices, int64_t first_layer, int64_t layers,
                               bool first_chunk, bool last_chunk) const;

  // The embedding's passes (forward, input gradient, weight gradient) and the head's (final
  // norm, output layer and loss; its recompute inside the input gradient), as chunks add them.
  // ZeRO-3's per-unit gathers and reduce-scatters, what of them shows, added to `price`.
  void zero3_exposure(const NodeGroup& group, const LayerPrice* layer_prices, int64_t first_layer,
                      int64_t layers, bool first_chunk, bool last_chunk, const PassSeconds& ends,
                      ChunkPrice& price) const;
  PassSeconds embedding_passes(const CostModel& costs) const;
  // The last chunk's multi-token-prediction layers (header), added to `price`.
  void add_mtp_layers(const CostModel& costs, const NodeGroup& group, const LayerCost& head,
                      ChunkPrice& price) const;
  PassSeconds head_passes(const CostModel& costs) const;

  // Parameters per GPU of those layers (tp-split, experts ep-split), the embedding's on the
  // first chunk and the final norm's and output layer's (or the tied embedding's) on the last.
  ParameterSplit parameters(int64_t first_layer, int64_t layers, bool first_chunk,
                            bool last_chunk) const;

  // Data-parallel ranks of one GPU's gradient group on one node of `group`.
  int64_t dp_ranks_per_node(const NodeGroup& group) const;
  // The same for its routed experts' group (Plan::expert_dp): Megatron-Core orders expert
  // ranks etp, then ep, then expert dp, so a node of g GPUs holds g / (ep*etp) of them.
  int64_t expert_dp_ranks_per_node(const NodeGroup& group) const;

  // Seconds of one collective on `size` ranks, `per_node` of them per node of `group`, counted
  // into `comm`: measured when the profile applies and has it, else alpha-beta.
  // `cross_node_share`, `intra_node_share`: CollectiveGroup's (a deduplicating MoE
  // dispatcher's all-to-all).
  double collective_seconds(Collective kind, double bytes, int64_t size, int64_t per_node,
                            const NodeGroup& group, CommCounts& comm, double cross_node_share = 1,
                            double intra_node_share = 1) const;

 private:
  const ModelSpec& model_;
  const Plan& plan_;
  const EfficiencyTable& efficiency_;
  const CollectiveEfficiency& collective_;
  const ProfileTable* profile_;
  bool ideal_links_;
  bool tp_comm_overlap_;  // tp_comm_overlap_in_force(plan_).
  OpShape shape_;
  ActivationConfig activations_;
  int32_t microbatches_;
  // Under partial full recompute, the plan without recompute and its pricer, for the layers
  // past recompute_num_layers in each chunk; null otherwise. Shared so the pricer copies.
  std::shared_ptr<const Plan> plain_plan_;
  std::shared_ptr<const ChunkPricer> plain_;
  double tokens_;                 // Per microbatch per context-parallel rank.
  double embedding_parameters_;   // Token (and learned position) embedding, whole.
  double head_parameters_;        // Output layer, or the tied embedding on the last chunk.
  double final_norm_parameters_;  // The final norm, whole on every tp rank, on the last chunk.
  double mtp_parameters_;         // All multi-token-prediction layers (model_stats), whole.
};

}  // namespace ppsim
