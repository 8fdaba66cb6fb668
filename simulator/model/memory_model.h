// Memory model: peak bytes per pipeline stage on one GPU, and whether the plan fits.
//
// A stage's GPU holds, at its peak:
//   weights + gradients + optimizer states          (persistent; from the stage's parameters)
//   + activations of the microbatches in flight     (per-microbatch sizes x in-flight counts)
//   + logits/loss buffers                           (on the rank holding the last virtual stage)
//   + transient buffers                             (one layer or one microbatch at a time)
//   + workspace                                     (CUDA context, cuBLAS workspace, NCCL buffers)
// The in-flight counts are closed forms per schedule (inflight_microbatches.h) until the
// simulated timeline replaces them; the per-microbatch sizes (activation_memory.h) stay. With
// activation_offload_layers, a chunk's offloaded layers keep only the one in flight on the GPU
// and the rest sit in host memory (activation_offload.h), counted per node as optimizer
// offload's host bytes are.
//
// Parameters per stage (Megatron-LM's layout; REFERENCE.md 1.3 and 1.5):
// - Transformer layers as stage_layer_counts() assigns them; with vpp chunks a rank's layers
//   are split evenly over its chunks, and chunk c of rank r is virtual stage c*pp + r
//   (interleaved) or r / 2pp-1-r (zbv, dualpipev), which decides which layers are MoE.
// - Attention and dense-MLP weights are split by tp; norms, the MoE router and the biases of the
//   row-parallel GEMMs (attention output, fc2) are replicated across tp; routed experts are
//   split by ep * etp with etp = tp (Megatron's default expert tensor parallelism). When tp
//   exceeds the kv heads g, each tp rank keeps a whole kv head: the K and V projections count
//   2*h*K/g per GPU instead of 2*h*K/tp.
// - The word embedding (vocabulary padded to a multiple of 128*tp, padded_vocab_size()) sits,
//   split by tp, on the rank holding virtual stage 0, with any learned position table
//   (replicated). The output layer (split by tp) and the final norm sit on the rank holding the
//   last virtual stage. With tied embeddings that rank still holds a full copy of the embedding
//   when it is not rank 0 (Megatron keeps one on the last stage and all-reduces its gradient).
//
// Bytes per parameter (mixed-precision Adam as Megatron runs it; the distributed-optimizer
// docs): 2 (bf16/fp16 weights) + 4 (fp32 main gradients) + 4 (fp32 master weights) + 8 (Adam m
// and v, fp32) = 18. fp16 training keeps 2-byte gradients (16 bytes; gradient_bytes_per_param). ZeRO shards over the data-parallel group, D = dp*cp for dense parameters
// (Megatron's distributed optimizer shards over the data-and-context-parallel group) and
// D_e = dp*cp/ep for expert parameters (world / (etp*ep*pp)):
//   zero 0:  2 + 4 + 12          = 18
//   zero 1:  2 + 4 + 12/D        = 6 + 12/D  (Megatron's distributed optimizer)
//   zero 2:  2 + 4/D + 12/D
//   zero 3:  2/D + 4/D + 12/D    = 18/D      (DeepSpeed ZeRO-3, Megatron), plus the gathered
//            units (below)
//   zero 3 on PyTorch FSDP (runtime torchtitan, pytorch-fsdp): 4/D fp32 shards that are the
//            master weights + 4/D gradients + 8/D Adam = 16/D, plus the same gathered units
// ZeRO-3 gathers a unit at a time in bf16: each transformer layer, the input embedding (with
// any learned position table) and the output layer with the final norm, each a unit of its own
// (torchtitan's apply_fsdp wraps tok_embeddings and [norm, output] apart from the blocks;
// DeepSpeed gathers the embedding's and the output's weight as one tensor each). It holds the
// unit computing and the prefetched next (runtime.h gathered_layers), so the fullest moment is
// the larger of two neighbouring layers, the embedding beside the first layer and the output
// beside the last (its backward prefetches the last layer): bf16 x max(2L, E + L, H + L) on
// the GPU holding them, L its largest layer, E and H the embedding and output units (0 on the
// ranks that hold neither). A tied embedding on a rank that also runs the loss is one unit used
// at both ends; under PyTorch FSDP it stays gathered all step (FSDP1's root unit is not
// resharded after forward; torchtitan shards the tied [tok_embeddings, norm, output] group with
// reshard_after_forward off), so it adds to the two layers: bf16 x (E + 2L).
// DeepSpeed (runtime.h zero3_gathers_modules) gathers module by module instead: the module
// running (a linear's weight and bias, M the stage's largest, an expert's own under MoE) and
// the next one prefetched while fewer than kDeepSpeedMaxLiveParameters (1e9) are live, so
// bf16 x max(U + next(U)) over the units U in {M, E, H}, next(U) = M when U < 1e9, else 0.
// GPT-3 175B: 2 x 4h^2 = 1.2 G parameters where two layers are 3.6 G; a 1T model (h 25,600):
// one 2.6 G linear at a time, where two layers are 15.7 G.
// ZeRO-2 and -3 also hold one unit's unsharded gradients transiently before its reduce-scatter:
// the largest of L (M under DeepSpeed, which produces and buckets them parameter by
// parameter), E and H. fp8 plans keep bf16 weights (Megatron without
// --fp8-param-gather): same bytes.
// offload_optimizer moves the fraction f = offloaded_fraction(plan) of the 12 optimizer bytes
// (master weights and Adam states, sharded as above) to host memory, with a 4-byte fp32 gradient
// buffer per offloaded parameter (optimizer_offload.h); the GPU keeps (1 - f) of the optimizer
// bytes, its weights and gradients. Each node's host memory must hold its GPUs' offloaded bytes.
//
// Workspace (one figure per GPU; estimates, see memory_model.cc for sources):
//   CUDA context and loaded kernels                      0.75 GiB
//   cuBLAS/cuBLASLt workspaces, 2 streams x 32 MiB       64 MiB
//   NCCL buffers, per communicator the plan uses          ~147 MiB (16 channels x 9.19 MiB)
// The caching allocator's fragmentation is not modelled (Megatron's no-SP estimate adds 5%).
//
// Capacity of a stage is the GPU memory of the node group it runs on: plan.placement[stage]
// when given, else GPUs are taken in cluster order, stage s using ranks
// [s*tp*dp*cp, (s+1)*tp*dp*cp) (Megatron's default order puts pp outermost); a stage spanning
// two groups gets the smaller memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "simulator/model/chunk_layout.h"
#include "simulator/model/optimizer_offload.h"
#include "simulator/model/parameter_bytes.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// Workspace constants (sources in memory_model.cc).
inline constexpr double kCudaContextBytes = 0.75 * 1024 * 1024 * 1024;
inline constexpr double kCublasWorkspaceBytes = 2 * 32.0 * 1024 * 1024;
inline constexpr double kNcclBytesPerCommunicator = 16 * 9633792.0;

// Parameters one GPU of a pipeline stage holds, split by how ZeRO shards them (dense over
// dp*cp, routed experts over the expert data-parallel group).
struct StageParameters : ParameterSplit {
  // The ZeRO-2/3 units on this GPU (header), parameters each:
  double largest_layer = 0;   // The stage's largest transformer layer.
  double largest_module = 0;  // Its largest module (one linear's weight and bias, one expert's),
                              // set where the runtime gathers modules (zero3_gathers_modules).
  double embedding_unit = 0;  // The input embedding and learned positions (stage 0 only).
  double head_unit = 0;       // The output layer and final norm where this rank holds its own
                              // (the loss rank; a tied one only off rank 0).
  bool tied_unit = false;     // Rank 0 runs the loss too, and its embedding is the output's.
};

// What one GPU of a stage keeps for its parameters (the Adam bytes above, sharded by ZeRO over
// dp*cp, dp*cp/ep for experts; the offloaded fraction on the host). Bytes.
struct ParameterBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;             // On the GPU: (1 - f) of the optimizer states.
  double host_optimizer = 0;        // On the host: f of them.
  double host_gradients = 0;        // The host's fp32 gradient buffer for its part.
  double zero_transient = 0;        // ZeRO-3's gathered layer and ZeRO-2/3's layer gradients.
};

// Parameters held by one GPU of pipeline rank `stage`. REQUIRES: a valid plan for the model.
StageParameters stage_parameters(const ModelSpec& model, const Plan& plan, int64_t stage);
// The same over the plan's chunk layout (chunk_layout(plan, model)) already made.
StageParameters stage_parameters(const ModelSpec& model, const Plan& plan,
                                 const ChunkLayout& layout, int64_t stage);

// The bytes of `params` on one GPU under the plan's ZeRO stage, precision and offload; the one
// formula the memory model and the planner's screen (plan_screen.h) share. Inline: the screen
// calls it for every stage of every plan it screens.
inline ParameterBytes parameter_bytes(const StageParameters& params, const Plan& plan) {
  const int zero = zero_stage_in_force(plan);
  auto sharded = [&](double bytes_per_param, bool shard) {
    return bytes_per_param * (shard ? sharded_parameters(params, plan) : params.total());
  };
  const double gradient = gradient_bytes_per_param(plan);
  ParameterBytes bytes;
  const RuntimeTraits& runtime = runtime_traits(plan.runtime);
  // FSDP's fp32 shards are the master weights (runtime.h); Megatron/DeepSpeed keep bf16
  // weights beside an fp32 master copy in the optimizer.
  const bool fp32_shards = zero >= 3 && runtime.fsdp_fp32_shards;
  bytes.weights = sharded(fp32_shards ? kFsdpShardBytesPerParam : kWeightBytesPerParam, zero >= 3);
  bytes.gradients = sharded(gradient, zero >= 2);
  const double offloaded = offloaded_fraction(plan);
  if (offloaded > 0) {
    bytes.host_optimizer = offloaded * sharded(kHostOptimizerBytesPerParam, zero >= 1);
    bytes.host_gradients = offloaded * sharded(gradient, zero >= 1);
  }
  bytes.optimizer =
      (1 - offloaded) *
      sharded(fp32_shards ? kAdamMomentsBytesPerParam : kOptimizerBytesPerParam, zero >= 1);
  // ZeRO-3 holds the unit computing and the prefetched next one unsharded (bf16; header).
  const double layer = params.largest_layer;
  if (zero >= 3 && runtime.zero3_gathers_modules) {
    const double module = params.largest_module;
    auto with_next = [&](double unit) {
      return unit + (unit < kDeepSpeedMaxLiveParameters ? module : 0);
    };
    const double gathered = std::max(
        {with_next(module), with_next(params.embedding_unit), with_next(params.head_unit)});
    bytes.zero_transient += kWeightBytesPerParam * gathered;
  } else if (zero >= 3) {
    const double layers = runtime.gathered_layers * layer;
    const double gathered =
        params.tied_unit && runtime.fsdp_fp32_shards
            ? params.embedding_unit + layers
            : std::max({layers, params.embedding_unit + layer, params.head_unit + layer});
    bytes.zero_transient += kWeightBytesPerParam * gathered;
  }
  if (zero >= 2) {
    const double unit = runtime.zero3_gathers_modules ? params.largest_module : layer;
    bytes.zero_transient +=
        gradient * std::max({unit, params.embedding_unit, params.head_unit});
  }
  return bytes;
}

// One pipeline rank's memory on one of its GPUs (all GPUs of a stage are alike). Bytes.
struct StageMemory {
  int64_t stage = 0;       // Pipeline rank, 0-based.
  int64_t layers = 0;      // Transformer layers on this rank (all chunks).
  std::string gpu;         // GPU model it runs on (node group's GPU name).
  int64_t node_group = 0;  // Index into cluster.nodes.

  double weights_bytes = 0;    // Model weights, 2 bytes/param (sharded under ZeRO-3).
  double gradients_bytes = 0;  // fp32 main gradients (sharded under ZeRO-2/3).
  double optimizer_bytes = 0;  // fp32 master weights + Adam states on the GPU (0 when offloaded).
  double host_optimizer_bytes = 0;  // The offloaded fraction of them, on the host.
  double host_gradient_bytes = 0;   // fp32 gradient buffer on the host for the offloaded part.
  // Saved activations of the offloaded layers (activation_offload_layers), on the host: per
  // microbatch x in flight (model/activation_offload.h).
  double host_activation_bytes = 0;

  // Activations at the peak: sum over chunks of per-microbatch bytes x microbatches in flight.
  double activations_bytes = 0;
  // One microbatch through all of this rank's chunks: layers plus embedding extras (no logits).
  double activations_per_microbatch_bytes = 0;
  // The same per local chunk (chunk order as in InflightMicrobatches); the timeline allocates
  // these at each forward and frees them at the backward.
  std::vector<double> chunk_activations_per_microbatch_bytes;
  // Whole-rank microbatches in flight at the peak (InflightMicrobatches::stage_equivalent()).
  double microbatches_in_flight = 0;
  std::vector<int64_t> chunk_microbatches_in_flight;  // Per local chunk.

  double logits_per_microbatch_bytes = 0;  // Loss-rank only: loss_activation_bytes().
  double logits_bytes = 0;  // Loss-rank only: per-microbatch x loss-chunk in-flight count.
  // One-at-a-time buffers, summed (an upper bound): ZeRO-3 gathered layer (2 bytes/param),
  // ZeRO-2/3 unsharded layer gradients (4 bytes/param), the recompute working set of one layer,
  // and the bf16 logits beside the fp32 softmax on the loss rank.
  double transient_bytes = 0;
  double workspace_bytes = 0;  // CUDA context + cuBLAS workspace + NCCL buffers.

  double peak_bytes = 0;      // Sum of all the GPU terms above.
  double capacity_bytes = 0;  // The GPU's memory.

  double headroom_bytes() const { return capacity_bytes - peak_bytes; }
};

// Memory of every stage of a plan.
struct MemoryReport {
  std::vector<StageMemory> stages;  // One per pipeline rank, in order.
  double peak_bytes = 0;            // Largest stage peak.
  bool fits = true;                 // Every stage's peak <= its capacity.
  int64_t worst_stage = 0;  // Stage with the least headroom (capacity - peak); first on ties.
  double over_bytes = 0;    // max(0, peak - capacity) of worst_stage.
  // Host memory per node of the offloaded optimizer states (every node's bytes 0 without
  // offload). `fits` above also requires host.fits.
  HostMemoryReport host;
};

// Per-stage memory of running `plan` for `model` on `cluster`.
// REQUIRES: plan_problem(plan, model, cluster) is nullopt (a valid plan).
MemoryReport estimate_memory(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan);
// The same without host memory (`host` empty; `fits` the GPUs' alone): for callers that read only
// the stages, since on thousands of nodes the per-node host side costs more than the stages.
MemoryReport estimate_gpu_memory(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan);

}  // namespace ppsim
