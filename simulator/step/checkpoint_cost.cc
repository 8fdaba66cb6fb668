#include "simulator/step/checkpoint_cost.h"

#include <algorithm>

#include "simulator/model/chunk_layout.h"
#include "simulator/model/memory_model.h"
#include "simulator/model/parameter_bytes.h"

namespace ppsim {

CheckpointCost checkpoint_cost(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                               const PlanFootprint& footprint) {
  CheckpointCost cost;
  cost.async = cluster.reliability.async_checkpoint;
  MemoryReport memory = estimate_gpu_memory(model, cluster, plan);
  // PyTorch FSDP keeps its parameters as fp32 shards under ZeRO-2 and -3 alike (FSDP1's
  // SHARD_GRAD_OP and FULL_SHARD, FSDP2 under either reshard policy), and those shards with
  // Adam's moments are the state it saves; Megatron and DeepSpeed save bf16 weights beside the
  // optimizer's fp32 master copy.
  const bool fp32_shards = plan.zero_stage >= 2 && runtime_traits(plan.runtime).fsdp_fp32_shards;
  const double per_param = fp32_shards ? kFsdpShardBytesPerParam + kAdamMomentsBytesPerParam
                                       : kWeightBytesPerParam + kOptimizerBytesPerParam;
  ChunkLayout layout = chunk_layout(plan, model);
  double copy_s = 0;
  for (const StageMemory& stage : memory.stages) {
    // Below ZeRO-3 in force (ZeRO-2, or under pipelining: zero_stage_in_force, plan.h) FSDP's
    // weights are gathered bf16 copies; the memory model counts its fp32 shards with the
    // optimizer bytes (2 + 12/D is 2 + 4/D + 8/D), so the optimizer bytes are what it saves.
    const double saved_weights =
        fp32_shards && zero_stage_in_force(plan) < 3 ? 0.0 : stage.weights_bytes;
    double rank_bytes = saved_weights + stage.optimizer_bytes + stage.host_optimizer_bytes;
    cost.bytes_per_rank = std::max(cost.bytes_per_rank, rank_bytes);
    StageParameters params = stage_parameters(model, plan, layout, stage.stage);
    const double stage_bytes =
        per_param * (static_cast<double>(plan.tp) * params.dense +
                     static_cast<double>(plan.ep * plan.expert_tp()) * params.expert);
    cost.bytes_total += stage_bytes;
    // Each of the stage's GPUs copies the share it writes.
    const double pcie = cluster.nodes[stage.node_group].gpu.pcie_bandwidth;
    const double writers = static_cast<double>(plan.tp * plan.dp * plan.cp);
    if (pcie > 0) copy_s = std::max(copy_s, stage_bytes / writers / pcie);
  }
  double write_nodes = 0;
  double read_nodes = 0;
  for (size_t g = 0; g < cluster.nodes.size(); ++g) {
    const double hosts = static_cast<double>(footprint.groups[g].hosts);
    write_nodes += hosts * cluster.nodes[g].reliability.write_bandwidth;
    read_nodes += hosts * cluster.nodes[g].reliability.read_bandwidth;
  }
  cost.write_bandwidth = std::min(write_nodes, cluster.reliability.write_bandwidth_aggregate);
  cost.read_bandwidth = std::min(read_nodes, cluster.reliability.read_bandwidth_aggregate);
  cost.save_s = cost.bytes_total / cost.write_bandwidth;
  cost.load_s = cost.bytes_total / cost.read_bandwidth;
  cost.blocking_s = cost.async ? std::min(copy_s, cost.save_s) : cost.save_s;
  return cost;
}

}  // namespace ppsim
