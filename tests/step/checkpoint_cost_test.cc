// Checkpoint cost: bytes per rank are the memory model's weights + optimizer states, the
// checkpoint's size counts each byte once, and the save shares the storage among all writers.
#include "simulator/step/checkpoint_cost.h"

#include <catch2/catch.hpp>

#include "simulator/model/memory_model.h"
#include "simulator/model/model_stats.h"
#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

CheckpointCost cost_of(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan) {
  return checkpoint_cost(model, cluster, plan, plan_footprint(cluster, plan));
}

TEST_CASE("Checkpoint bytes of a ZeRO-1 plan are the memory model's weights + optimizer per rank") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  Plan plan = parse_plan("tp=2,pp=2,dp=4,mbs=1,gbs=64,zero_stage=1", "test");
  MemoryReport memory = estimate_memory(model, cluster, plan);
  double largest = 0;
  for (const StageMemory& stage : memory.stages) {
    largest = std::max(largest, stage.weights_bytes + stage.optimizer_bytes);
  }
  CheckpointCost cost = cost_of(model, cluster, plan);
  CHECK(cost.bytes_per_rank == largest);
  CHECK(cost.bytes_per_rank > 0);
}

TEST_CASE("Checkpoint cost of llama3-8b, ZeRO-1 over 8 GPUs of one node (hand oracle)") {
  // P parameters on every GPU (tp = pp = 1; the vocabulary 128,256 is already a multiple of
  // 128). Per rank: 2P bf16 weights + 12P/8 fp32 master and Adam states = 3.5P bytes. On
  // storage: 14P, written by one node at 25 GB/s (the default per node; the aggregate 2 TB/s is
  // not the limit) and read back at 25 GB/s.
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  Plan plan = parse_plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=1", "test");
  const double p = count_parameters(model).total;
  CheckpointCost cost = cost_of(model, cluster, plan);
  CHECK(cost.bytes_per_rank == Approx(3.5 * p).epsilon(1e-12));
  CHECK(cost.bytes_total == Approx(14 * p).epsilon(1e-12));
  CHECK(cost.write_bandwidth == 25e9);
  CHECK(cost.save_s == Approx(14 * p / 25e9).epsilon(1e-12));
  CHECK(cost.load_s == Approx(14 * p / 25e9).epsilon(1e-12));
  CHECK(cost.blocking_s == cost.save_s);  // Synchronous by default.
  CHECK_FALSE(cost.async);
  // ZeRO-0 holds 14P per rank, but the checkpoint is the same 14P: copies are written once.
  Plan zero0 = parse_plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=0", "test");
  CheckpointCost replicated = cost_of(model, cluster, zero0);
  CHECK(replicated.bytes_per_rank == Approx(14 * p).epsilon(1e-12));
  CHECK(replicated.bytes_total == Approx(cost.bytes_total).epsilon(1e-12));
}

// FSDP saves its fp32 shards and Adam's moments, 4 + 8 = 12 bytes per parameter, under ZeRO-2
// as under ZeRO-3 and under pipelining (where torchtitan holds gathered bf16 copies and
// unsharded gradients, plan.h zero_stage_in_force): the bf16 copies are not saved. Per rank
// over 8 data-parallel GPUs, 12P / 8 = 1.5P; Megatron's ZeRO-1 saves 14P (above).
TEST_CASE("Checkpoint cost of FSDP runtimes: fp32 shards and Adam moments, 12 bytes a parameter") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  const double p = count_parameters(model).total;
  for (const char* runtime : {"torchtitan", "pytorch-fsdp"}) {
    for (const char* zero : {"2", "3"}) {
      INFO(runtime << " zero_stage " << zero);
      Plan plan = parse_plan(std::string("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=") + zero +
                                 ",runtime=" + runtime,
                             "test");
      CheckpointCost cost = cost_of(model, cluster, plan);
      CHECK(cost.bytes_total == Approx(12 * p).epsilon(1e-12));
      CHECK(cost.bytes_per_rank == Approx(1.5 * p).epsilon(1e-12));
    }
  }
  // Pipelined torchtitan (ZeRO-1 in force): the two stages' shards add up to the same 12P.
  Plan pipelined = parse_plan("tp=1,pp=2,dp=4,mbs=1,gbs=64,zero_stage=3,runtime=torchtitan",
                              "test");
  CheckpointCost cost = cost_of(model, cluster, pipelined);
  CHECK(cost.bytes_total == Approx(12 * p).epsilon(1e-12));
  MemoryReport memory = estimate_memory(model, cluster, pipelined);
  double largest = 0;
  for (const StageMemory& stage : memory.stages) largest = std::max(largest, stage.optimizer_bytes);
  CHECK(cost.bytes_per_rank == largest);
}

TEST_CASE("Checkpoint cost: the aggregate bandwidth caps many writers; async blocks for the copy") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:200");  // 200 x 25 GB/s = 5 TB/s > 2 TB/s.
  Plan plan = parse_plan("tp=1,pp=1,dp=1600,mbs=1,gbs=1600,zero_stage=1", "test");
  CheckpointCost cost = cost_of(model, cluster, plan);
  CHECK(cost.write_bandwidth == 2000e9);
  CHECK(cost.read_bandwidth == 2000e9);
  CHECK(cost.save_s == Approx(cost.bytes_total / 2000e9).epsilon(1e-12));
  cluster.reliability.write_bandwidth_aggregate = 1e15;  // Now the nodes are the limit.
  CHECK(cost_of(model, cluster, plan).write_bandwidth == 200 * 25e9);
  cluster.reliability.async_checkpoint = true;
  CheckpointCost async = cost_of(model, cluster, plan);
  CHECK(async.async);
  CHECK(async.save_s == Approx(cost.bytes_total / 5000e9).epsilon(1e-12));
  // The step waits for each GPU's copy of the share it writes: 14P / 1600 over PCIe.
  const double pcie = cluster.nodes[0].gpu.pcie_bandwidth;
  CHECK(async.blocking_s == Approx(async.bytes_total / 1600 / pcie).epsilon(1e-12));
  CHECK(async.blocking_s < async.save_s);
}

}  // namespace
}  // namespace ppsim
