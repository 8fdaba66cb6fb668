// Builds the TaskGraph of one training step of a plan on a cluster: the schedule's action lists
// with costs from the cost model, the network's links, and the step's collectives.
//
// Replicas: each data-parallel replica runs the plan's schedule with its own microbatch count
// (Plan::replica_microbatches, else gbs / (mbs * dp) each). Identical replicas (same GPUs'
// speeds, symmetric on the network, same count) are simulated once per class
// (replica_classes.h: one slow GPU leaves its replica and the rest), the gradient reduction
// waiting for all of them.
//
// Where costs come from: CostModel per GPU type (cost_model.h), with StepOptions::profile's
// measured passes for the GPU types the profile applies to (profile_for_gpu), the roofline for
// the others; collectives and transfers through collective_timing.h (measured group shapes,
// else alpha-beta). Step::provenance counts which source priced what.
//
// Who does what: StepPrices (step_prices.h) prices each chunk through ChunkPricer
// (cost/chunk_price.h, the price the planner's bounds also derive from), the step's
// LoweringCosts sets compute tasks and pipeline sends from it, and UpdateTasks (update_tasks.h)
// adds the gradient reduction, offload and optimizer tasks.
//
// What each task costs (per worker = one pipeline rank of one replica, tp x cp GPUs):
// - F, B, I, W (ChunkPrice): the chunk's layers from CostModel (per GPU type), plus the embedding on the
//   first chunk and the output layer and loss on the last; recompute runs inside B (or I).
//   Attention is the plan's kernel (plan.h attention_kernel(): the runtime's, or the plan's
//   "attention"); Megatron's unfused core attention costs more GEMMs and softmax and saves its
//   s x s scores, so the activation sizes follow the same kernel.
//   Tensor-parallel collectives (chunk_price.h TensorParallelPrice: two all-reduces, or with
//   sequence parallelism 2 all-gathers + 2 reduce-scatters, per layer forward, and the
//   backward's mirror, overlapped under its GEMMs where the runtime does so), expert-parallel
//   all-to-alls and the context-parallel KV ring (overlapped with attention; only the excess
//   shows) are inside the task, as exposed communication.
//   ZeRO-3 parameter gathers (and gradient reduce-scatters) are prefetched one layer ahead;
//   per layer what shows inside the task is max(0, comm - compute) + overlap_slowdown x
//   min(comm, compute) (collective_cost.h: NCCL's kernels slow the compute they overlap), with
//   the gather against each forward and gather + reduce-scatter against the backward (B + W).
//   Framework dispatch: the runtime's microbatch_overhead_s (EfficiencyTable::overheads) once on
//   every F and every B (or I).
// - Sends: activations (b * s/cp * h * 2 bytes, split over the tp ranks with sequence
//   parallelism, whole on each rank without) as flows over the network model's routes.
// - Gradient sync: per chunk, Megatron's buckets (max(40M, 1M x dp) parameters, fp32 gradients
//   as Megatron accumulates bf16 training's gradients in fp32, fp16 ones for fp16 plans:
//   gradient_bytes_per_param in parameter_bytes.h): all-reduce, or reduce-scatter
//   with the distributed optimizer (ZeRO 1-2); hierarchical when the group spans nodes; bucket
//   k of K is ready (k+1)/K of the way through the chunk's last weight-gradient task, so the
//   reduction overlaps the backward as Megatron's overlap_grad_reduce does. Routed experts'
//   gradients are bucketed apart and reduced over the expert data-parallel group
//   (Plan::expert_dp, ep*etp ranks apart), dense ones over dp*cp.
// - Optimizer: Adam over the GPU's (sharded: dense over dp*cp, experts over expert dp)
//   parameters, 34 bytes per parameter at HBM speed
//   (fp32 master, grad, m, v read; master, m, v and bf16 copy written; grad-norm read), after
//   every bucket; then the distributed optimizer's parameter all-gather. With offload
//   (optimizer_offload.h), the GPU updates (1 - f) of its parameters; the gradients of the
//   other f go to the host over PCIe bucket by bucket as they are ready (after their
//   reduction), the host runs Adam on them once all are there and the last compute task has
//   ended, and the updated parameters come back over PCIe; the all-gather waits for both.
//   Plus the runtime's step_overhead_s, host time a slow GPU's speed factor does not stretch.
// Memory: each F allocates the chunk's activations for one microbatch (the last chunk also its
// logits), freed by B; a split backward frees all but the GEMM inputs at I and those at W;
// static memory (weights, gradients, optimizer, workspace) comes from the memory model and is
// added to the timeline's peak.
#pragma once

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/step/step.h"

namespace ppsim {

// REQUIRES: plan_problem(plan, model, cluster) is nullopt; schedule_problem(...) is nullopt.
Step build_step(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                const StepOptions& options = {});

}  // namespace ppsim
