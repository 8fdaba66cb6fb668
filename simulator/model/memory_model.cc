#include "simulator/model/memory_model.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "simulator/model/activation_memory.h"
#include "simulator/model/activation_offload.h"
#include "simulator/model/chunk_layout.h"
#include "simulator/model/inflight_microbatches.h"
#include "simulator/model/layer_ops.h"
#include "simulator/model/model_stats.h"
#include "simulator/model/worker_layout.h"
#include "simulator/spec/error.h"

// Sources of the workspace constants in memory_model.h:
// - CUDA context: the first CUDA call of a PyTorch process takes ~723 MiB on the device
//   (discuss.pytorch.org "What is the reason for pytorch's GPU memory floor?"); lazy module
//   loading lowers it and NCCL/TE kernels raise it: 0.75 GiB.
// - cuBLAS: the cuBLAS guide recommends a 32 MiB workspace on Hopper (4 MiB before); PyTorch
//   allocates it per handle and stream (pytorch/pytorch#120925) and Transformer Engine keeps its
//   own: 2 x 32 MiB.
// - NCCL: each channel's connection holds a Simple buffer (DEFAULT_BUFFSIZE = 4 MiB, init.cc),
//   an LL buffer (8 lines x 512 threads x 8 steps x 16 B = 512 KiB) and an LL128 buffer
//   (120 elems x 640 threads x 8 steps x 8 B = 4,915,200 B): 9,633,792 B; with 16 channels per
//   communicator (typical on NVLink/InfiniBand H100 nodes) about 147 MiB per communicator.

namespace ppsim {
namespace {

// Parameters one GPU holds of layer `index`: tp-split, replicated and expert parts.
struct LayerShare {
  double dense = 0;
  double expert = 0;
};
LayerShare layer_share(const ModelSpec& model, const Plan& plan, int64_t index) {
  LayerParameters layer = layer_parameters(model, index);
  const double h = model.hidden_size;
  const double t = plan.tp;
  const bool moe = model.is_moe_layer(index);
  // Row-parallel GEMMs (attention output, Mamba out_proj, fc2) keep their bias h whole on
  // every tp rank.
  const int row_parallel = (model.has_attention(index) ? 1 : 0) +
                           (model.is_mamba_layer(index) ? 1 : 0) +
                           (model.has_feed_forward(index) && !moe ? 1 : 0);
  double replicated_bias = model.linear_bias ? row_parallel * h : 0.0;
  double split = layer.attention + layer.mamba + (moe ? 0.0 : layer.mlp) - replicated_bias;
  // K and V projections (with biases): tp > g replicates kv heads, t/g copies of each.
  const double kv = model.has_attention(index) ? model.kv_width() : 0.0;
  const double kv_weights = 2 * h * kv + (model.linear_bias || model.qkv_bias ? 2 * kv : 0.0);
  const double kv_copies = std::max(1.0, t / model.num_kv_heads);
  LayerShare share;
  share.dense = (split + (kv_copies - 1) * kv_weights) / t + replicated_bias + layer.norms +
                layer.router + layer.latent_projections;
  if (moe) {
    // Routed experts split over ep x etp; shared experts over tp like a dense MLP.
    share.dense += layer.shared_experts / t;
    share.expert =
        (layer.mlp - layer.shared_experts) / static_cast<double>(plan.ep * plan.expert_tp());
  }
  return share;
}

// Node group of each GPU rank range; the stage's group is the one with the least memory.
int64_t node_group_of_stage(const ClusterSpec& cluster, const Plan& plan, int64_t stage) {
  PPSIM_CHECK(!cluster.nodes.empty());
  if (!plan.placement.empty()) {
    int64_t group = plan.placement[stage];
    PPSIM_CHECK(group >= 0 && group < static_cast<int64_t>(cluster.nodes.size()));
    return group;
  }
  const int64_t per_stage = plan.tp * plan.dp * plan.cp;
  const int64_t first = stage * per_stage;
  const int64_t last = first + per_stage - 1;
  int64_t chosen = -1;
  int64_t group_first = 0;
  for (int64_t group = 0; group < static_cast<int64_t>(cluster.nodes.size()); ++group) {
    int64_t group_last = group_first + cluster.nodes[group].num_gpus() - 1;
    bool overlaps = first <= group_last && last >= group_first;
    if (overlaps && (chosen < 0 || cluster.nodes[group].gpu.memory_bytes <
                                       cluster.nodes[chosen].gpu.memory_bytes)) {
      chosen = group;
    }
    group_first = group_last + 1;
  }
  PPSIM_CHECK(chosen >= 0, "the cluster has enough GPUs for the plan");
  return chosen;
}

// NCCL communicators a GPU of `stage` belongs to (groups of more than one rank).
int64_t communicators(const ModelSpec& model, const Plan& plan, int64_t stage, int64_t loss_rank) {
  int64_t count = 0;
  if (plan.tp > 1) ++count;
  if (plan.cp > 1) ++count;
  if (plan.dp * plan.cp > 1) ++count;  // Gradient reduction / ZeRO collectives.
  if (plan.pp > 1) ++count;            // Pipeline send/recv.
  if (plan.ep > 1) ++count;            // Expert all-to-all.
  // Routed experts' gradient reduction, over a group of its own (Plan::expert_dp).
  if (model.is_moe() && plan.expert_dp() > 1 && plan.expert_dp() != plan.dp * plan.cp) ++count;
  // Tied embeddings across ranks: the embedding group (first and loss rank) all-reduces grads.
  if (model.tied_embeddings && loss_rank != 0 && (stage == 0 || stage == loss_rank)) ++count;
  return count;
}

}  // namespace

StageParameters stage_parameters(const ModelSpec& model, const Plan& plan,
                                 const ChunkLayout& layout, int64_t stage) {
  PPSIM_CHECK(stage >= 0 && stage < plan.pp);
  StageParameters params;
  // A runtime that gathers module by module needs the largest module (header); the others never
  // build the op lists.
  const bool modules = zero_stage_in_force(plan) >= 2 &&
                       runtime_traits(plan.runtime).zero3_gathers_modules;
  const OpShape shape = modules ? op_shape(plan, model) : OpShape{};
  // Layers of one kind hold the same modules (ModelSpec::layer_kind), so each kind's op list is
  // built once: the planner's screen calls this for every stage of every plan.
  std::vector<ModelSpec::LayerKind> kinds_seen;
  for (int64_t chunk : layout.rank_chunks(stage)) {
    const int64_t first = layout.chunk_first_layer[chunk];
    for (int64_t index = first; index < first + layout.chunk_layers[chunk]; ++index) {
      LayerShare share = layer_share(model, plan, index);
      params.dense += share.dense;
      params.expert += share.expert;
      params.largest_layer = std::max(params.largest_layer, share.dense + share.expert);
      if (!modules) continue;
      const ModelSpec::LayerKind kind = model.layer_kind(index);
      if (std::find(kinds_seen.begin(), kinds_seen.end(), kind) != kinds_seen.end()) continue;
      kinds_seen.push_back(kind);
      for (const Op& op : layer_ops(model, shape, index)) {
        // A grouped GEMM's parameters are its local experts', each expert a module of its own.
        const double batch = op.op_class == OpClass::kGemm ? op.gemm.batch : 1;
        params.largest_module = std::max(params.largest_module, op.parameters / batch);
      }
    }
  }
  const double h = model.hidden_size;
  const double embedding =
      static_cast<double>(padded_vocab_size(model.vocab_size, plan.tp)) * h / plan.tp;
  if (stage == 0) {
    params.embedding_unit = embedding;
    if (model.position_embedding == PositionEmbedding::kLearned) {
      params.embedding_unit += static_cast<double>(model.max_position_embeddings) * h;
    }
    params.dense += params.embedding_unit;
  }
  if (stage == layout.loss_rank()) {
    const double final_norm = count_parameters(model).final_norm;
    params.dense += final_norm;
    // Untied: the output layer. Tied: the shared weight, which rank 0 already holds if it is
    // also the loss rank, and which Megatron duplicates on a separate loss rank.
    if (!model.tied_embeddings || stage != 0) {
      params.dense += embedding;
      params.head_unit = embedding + final_norm;
    } else {
      params.tied_unit = true;
    }
  }
  return params;
}

StageParameters stage_parameters(const ModelSpec& model, const Plan& plan, int64_t stage) {
  return stage_parameters(model, plan, chunk_layout(plan, model), stage);
}

MemoryReport estimate_gpu_memory(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan) {
  PPSIM_CHECK(plan.pp >= 1 && plan.tp >= 1 && plan.dp >= 1 && plan.cp >= 1 && plan.ep >= 1);
  PPSIM_CHECK((plan.tp * plan.dp * plan.cp) % (plan.ep * plan.expert_tp()) == 0,
              "etp*ep divides tp*dp*cp");
  const ActivationConfig config = activation_config(plan, model);
  // Past recompute_num_layers in a chunk, layers keep their activations (plan.h).
  const ActivationConfig plain_config = activation_config(without_recompute(plan), model);
  const ChunkLayout layout = chunk_layout(plan, model);
  const int64_t chunks = layout.chunks_per_rank;
  const int64_t microbatches = num_microbatches(plan);
  const int64_t loss_rank = layout.loss_rank();
  const std::vector<InflightMicrobatches>& inflight_per_rank =
      microbatches_in_flight_per_rank(plan.schedule, plan.pp, chunks, microbatches,
                                      microbatch_group_in_force(plan));

  MemoryReport report;
  double least_headroom = std::numeric_limits<double>::infinity();
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    StageMemory memory;
    memory.stage = stage;
    memory.layers = layout.stage_layers[stage];
    memory.node_group = node_group_of_stage(cluster, plan, stage);
    const GpuSpec& gpu = cluster.nodes[memory.node_group].gpu;
    memory.gpu = gpu.name;
    memory.capacity_bytes = gpu.memory_bytes;

    // Weights, gradients, optimizer states.
    StageParameters params = stage_parameters(model, plan, layout, stage);
    const ParameterBytes bytes = parameter_bytes(params, plan);
    memory.weights_bytes = bytes.weights;
    memory.gradients_bytes = bytes.gradients;
    memory.host_optimizer_bytes = bytes.host_optimizer;
    memory.host_gradient_bytes = bytes.host_gradients;
    memory.optimizer_bytes = bytes.optimizer;
    memory.transient_bytes += bytes.zero_transient;

    // Activations: per chunk, per microbatch, times the chunk's in-flight count.
    const InflightMicrobatches& inflight = inflight_per_rank[stage];
    memory.microbatches_in_flight = inflight.stage_equivalent();
    memory.chunk_microbatches_in_flight = inflight.per_chunk;
    const std::vector<int64_t> rank_chunks = layout.rank_chunks(stage);
    double recompute_working = 0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t first = layout.chunk_first_layer[rank_chunks[chunk]];
      double bytes = 0;
      std::vector<double> layer_bytes;
      for (int64_t index = first; index < first + layout.chunk_layers[rank_chunks[chunk]];
           ++index) {
        const ActivationConfig& layer_config =
            layer_recomputed(plan, index - first) ? config : plain_config;
        layer_bytes.push_back(layer_activation_bytes(model, layer_config, index).total());
        bytes += layer_bytes.back();
        recompute_working =
            std::max(recompute_working, recompute_working_bytes(model, layer_config, index));
      }
      if (plan.activation_offload_layers > first) {
        // Bytes only: the copies' times are the chunk pricer's (model/activation_offload.h).
        const ActivationOffload offload = offloaded_activation_bytes(
            layer_bytes, std::min<int64_t>(static_cast<int64_t>(layer_bytes.size()),
                                           plan.activation_offload_layers - first));
        bytes -= offload.gpu_saving_bytes;
        memory.host_activation_bytes +=
            offload.host_bytes * static_cast<double>(inflight.per_chunk[chunk]);
      }
      if (stage == 0 && chunk == 0) bytes += embedding_activation_bytes(model, config);
      memory.chunk_activations_per_microbatch_bytes.push_back(bytes);
      memory.activations_per_microbatch_bytes += bytes;
      memory.activations_bytes += bytes * static_cast<double>(inflight.per_chunk[chunk]);
    }
    memory.transient_bytes += recompute_working;
    if (stage == loss_rank) {
      memory.logits_per_microbatch_bytes = loss_activation_bytes(model, config);
      memory.logits_bytes =
          memory.logits_per_microbatch_bytes *
          static_cast<double>(inflight.per_chunk[layout.chunk_local_index[layout.loss_chunk()]]);
      memory.transient_bytes += loss_working_bytes(model, config);
    }

    memory.workspace_bytes = kCudaContextBytes + kCublasWorkspaceBytes +
                             kNcclBytesPerCommunicator *
                                 static_cast<double>(communicators(model, plan, stage, loss_rank));
    memory.peak_bytes = memory.weights_bytes + memory.gradients_bytes + memory.optimizer_bytes +
                        memory.activations_bytes + memory.logits_bytes + memory.transient_bytes +
                        memory.workspace_bytes;

    report.peak_bytes = std::max(report.peak_bytes, memory.peak_bytes);
    if (memory.peak_bytes > memory.capacity_bytes) report.fits = false;
    if (memory.headroom_bytes() < least_headroom) {
      least_headroom = memory.headroom_bytes();
      report.worst_stage = stage;
      report.over_bytes = std::max(0.0, -memory.headroom_bytes());
    }
    report.stages.push_back(std::move(memory));
  }
  return report;
}

MemoryReport estimate_memory(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan) {
  MemoryReport report = estimate_gpu_memory(model, cluster, plan);
  std::vector<double> host_bytes_per_gpu;
  for (const StageMemory& stage : report.stages) {
    host_bytes_per_gpu.push_back(stage.host_optimizer_bytes + stage.host_gradient_bytes +
                                 stage.host_activation_bytes);
  }
  report.host =
      host_memory_per_node(cluster, build_worker_layout(plan, cluster), host_bytes_per_gpu);
  if (!report.host.fits) report.fits = false;
  return report;
}

}  // namespace ppsim
