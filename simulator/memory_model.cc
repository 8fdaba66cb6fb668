#include "simulator/memory_model.h"

#include <algorithm>
#include <limits>

#include "simulator/activation_memory.h"
#include "simulator/error.h"
#include "simulator/inflight_microbatches.h"
#include "simulator/model_stats.h"
#include "simulator/worker_layout.h"

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

bool is_v_shaped(ScheduleKind kind) {
  return kind == ScheduleKind::kZbv || kind == ScheduleKind::kDualPipeV;
}

// Model chunks per rank as the schedule runs them (interleaved with vpp == 1 is plain 1F1B).
int64_t chunks_per_rank(const Plan& plan) {
  if (is_v_shaped(plan.schedule)) return 2;
  if (plan.schedule == ScheduleKind::kInterleaved1F1B) return plan.vpp;
  return 1;
}

struct ChunkPlace {
  int64_t rank = 0;
  int64_t chunk = 0;
};

// Where virtual stage `index` of pp * chunks runs: loop placement (interleaved) or V placement.
ChunkPlace place_of_virtual_stage(const Plan& plan, int64_t index) {
  if (is_v_shaped(plan.schedule)) {
    return index < plan.pp ? ChunkPlace{index, 0} : ChunkPlace{2 * plan.pp - 1 - index, 1};
  }
  return ChunkPlace{index % plan.pp, index / plan.pp};
}

// The rank and local chunk holding the last virtual stage (output layer and loss).
ChunkPlace loss_place(const Plan& plan, int64_t chunks) {
  return place_of_virtual_stage(plan, plan.pp * chunks - 1);
}

// Global layer indices [first, first + count) of each local chunk of `rank`.
struct LayerRange {
  int64_t first = 0;
  int64_t count = 0;
};
std::vector<LayerRange> chunk_layer_ranges(const ModelSpec& model, const Plan& plan, int64_t rank) {
  std::vector<int64_t> layers = stage_layer_counts(plan, model);
  PPSIM_CHECK(static_cast<int64_t>(layers.size()) == plan.pp, "one layer count per stage");
  const int64_t chunks = chunks_per_rank(plan);
  std::vector<LayerRange> ranges(chunks);
  int64_t next = 0;
  for (int64_t index = 0; index < plan.pp * chunks; ++index) {
    ChunkPlace place = place_of_virtual_stage(plan, index);
    PPSIM_CHECK(layers[place.rank] % chunks == 0, "chunks divide the stage's layers");
    int64_t count = layers[place.rank] / chunks;
    if (place.rank == rank) ranges[place.chunk] = LayerRange{next, count};
    next += count;
  }
  PPSIM_CHECK(next == model.num_layers, "stage layers add up to the model's");
  return ranges;
}

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
  // Row-parallel GEMMs (attention output, fc2) keep their bias h whole on every tp rank.
  double replicated_bias = model.linear_bias ? (moe ? h : 2 * h) : 0.0;
  double split = layer.attention + (moe ? 0.0 : layer.mlp) - replicated_bias;
  // K and V projections (with biases): tp > g replicates kv heads, t/g copies of each.
  const double kv = model.kv_width();
  const double kv_weights = 2 * h * kv + (model.linear_bias ? 2 * kv : 0.0);
  const double kv_copies = std::max(1.0, t / model.num_kv_heads);
  LayerShare share;
  share.dense =
      (split + (kv_copies - 1) * kv_weights) / t + replicated_bias + layer.norms + layer.router;
  if (moe) share.expert = layer.mlp / static_cast<double>(plan.ep * plan.tp);
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
int64_t communicators(const ModelSpec& model, const Plan& plan, int64_t stage,
                      const ChunkPlace& loss) {
  int64_t count = 0;
  if (plan.tp > 1) ++count;
  if (plan.cp > 1) ++count;
  if (plan.dp * plan.cp > 1) ++count;  // Gradient reduction / ZeRO collectives.
  if (plan.pp > 1) ++count;            // Pipeline send/recv.
  if (plan.ep > 1) ++count;            // Expert all-to-all.
  // Tied embeddings across ranks: the embedding group (first and loss rank) all-reduces grads.
  if (model.tied_embeddings && loss.rank != 0 && (stage == 0 || stage == loss.rank)) ++count;
  return count;
}

}  // namespace

StageParameters stage_parameters(const ModelSpec& model, const Plan& plan, int64_t stage) {
  PPSIM_CHECK(stage >= 0 && stage < plan.pp);
  const int64_t chunks = chunks_per_rank(plan);
  StageParameters params;
  for (const LayerRange& range : chunk_layer_ranges(model, plan, stage)) {
    for (int64_t index = range.first; index < range.first + range.count; ++index) {
      LayerShare share = layer_share(model, plan, index);
      params.dense += share.dense;
      params.expert += share.expert;
      params.largest_layer = std::max(params.largest_layer, share.dense + share.expert);
    }
  }
  const double h = model.hidden_size;
  const double embedding =
      static_cast<double>(padded_vocab_size(model.vocab_size, plan.tp)) * h / plan.tp;
  const ChunkPlace loss = loss_place(plan, chunks);
  if (stage == 0) {
    params.dense += embedding;
    if (model.position_embedding == PositionEmbedding::kLearned) {
      params.dense += static_cast<double>(model.max_position_embeddings) * h;
    }
  }
  if (stage == loss.rank) {
    params.dense += count_parameters(model).final_norm;
    // Untied: the output layer. Tied: the shared weight, which rank 0 already holds if it is
    // also the loss rank, and which Megatron duplicates on a separate loss rank.
    if (!model.tied_embeddings || stage != 0) params.dense += embedding;
  }
  return params;
}

MemoryReport estimate_memory(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan) {
  return estimate_memory(model, cluster, plan, MemoryOptions{});
}

MemoryReport estimate_memory(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                             const MemoryOptions& options) {
  PPSIM_CHECK(plan.pp >= 1 && plan.tp >= 1 && plan.dp >= 1 && plan.cp >= 1 && plan.ep >= 1);
  PPSIM_CHECK((plan.dp * plan.cp) % plan.ep == 0, "ep divides dp*cp");
  const ActivationConfig config = activation_config(plan, model, options.flash_attention);
  const int64_t chunks = chunks_per_rank(plan);
  const int64_t microbatches = num_microbatches(plan);
  const ChunkPlace loss = loss_place(plan, chunks);
  const double dense_group = static_cast<double>(plan.dp * plan.cp);
  const double expert_group = dense_group / static_cast<double>(plan.ep);
  const int zero = plan.zero_stage;
  std::vector<int64_t> layers = stage_layer_counts(plan, model);

  MemoryReport report;
  double least_headroom = std::numeric_limits<double>::infinity();
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    StageMemory memory;
    memory.stage = stage;
    memory.layers = layers[stage];
    memory.node_group = node_group_of_stage(cluster, plan, stage);
    const GpuSpec& gpu = cluster.nodes[memory.node_group].gpu;
    memory.gpu = gpu.name;
    memory.capacity_bytes = gpu.memory_bytes;

    // Weights, gradients, optimizer states.
    StageParameters params = stage_parameters(model, plan, stage);
    auto sharded = [&](double bytes_per_param, bool shard) {
      return bytes_per_param *
             (shard ? params.dense / dense_group + params.expert / expert_group : params.total());
    };
    memory.weights_bytes = sharded(kWeightBytesPerParam, zero >= 3);
    memory.gradients_bytes = sharded(gradient_bytes_per_param(plan.precision), zero >= 2);
    const double offloaded = offloaded_fraction(plan);
    memory.host_optimizer_bytes = offloaded * sharded(kHostOptimizerBytesPerParam, zero >= 1);
    memory.host_gradient_bytes = offloaded * sharded(gradient_bytes_per_param(plan.precision), zero >= 1);
    memory.optimizer_bytes = (1 - offloaded) * sharded(kOptimizerBytesPerParam, zero >= 1);
    if (zero >= 3) memory.transient_bytes += kWeightBytesPerParam * params.largest_layer;
    if (zero >= 2) {
      memory.transient_bytes += gradient_bytes_per_param(plan.precision) * params.largest_layer;
    }

    // Activations: per chunk, per microbatch, times the chunk's in-flight count.
    InflightMicrobatches inflight =
        microbatches_in_flight(plan.schedule, plan.pp, chunks, microbatches, stage);
    memory.microbatches_in_flight = inflight.stage_equivalent();
    memory.chunk_microbatches_in_flight = inflight.per_chunk;
    std::vector<LayerRange> ranges = chunk_layer_ranges(model, plan, stage);
    double recompute_working = 0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      double bytes = 0;
      for (int64_t index = ranges[chunk].first; index < ranges[chunk].first + ranges[chunk].count;
           ++index) {
        bytes += layer_activation_bytes(model, config, index).total();
        recompute_working =
            std::max(recompute_working, recompute_working_bytes(model, config, index));
      }
      if (stage == 0 && chunk == 0) bytes += embedding_activation_bytes(model, config);
      memory.chunk_activations_per_microbatch_bytes.push_back(bytes);
      memory.activations_per_microbatch_bytes += bytes;
      memory.activations_bytes += bytes * static_cast<double>(inflight.per_chunk[chunk]);
    }
    memory.transient_bytes += recompute_working;
    if (stage == loss.rank) {
      memory.logits_per_microbatch_bytes = loss_activation_bytes(model, config);
      memory.logits_bytes =
          memory.logits_per_microbatch_bytes * static_cast<double>(inflight.per_chunk[loss.chunk]);
      memory.transient_bytes += loss_working_bytes(model, config);
    }

    memory.workspace_bytes =
        kCudaContextBytes + kCublasWorkspaceBytes +
        kNcclBytesPerCommunicator * static_cast<double>(communicators(model, plan, stage, loss));
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
  std::vector<double> host_bytes_per_gpu;
  for (const StageMemory& stage : report.stages) {
    host_bytes_per_gpu.push_back(stage.host_optimizer_bytes + stage.host_gradient_bytes);
  }
  report.host =
      host_memory_per_node(cluster, build_worker_layout(plan, cluster), host_bytes_per_gpu);
  if (!report.host.fits) report.fits = false;
  return report;
}

}  // namespace ppsim
