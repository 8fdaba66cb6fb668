// The planner's search space: every plan for a model on a cluster that plan_problem() accepts,
// enumerated in a fixed order.
//
// A plan is a *shape* -- everything that decides the task graph's structure -- times *knobs*
// that trade memory for time on that structure. Shapes:
//   tp        divisors of the (smallest) GPUs per node (tensor parallelism stays in a node);
//   cp        divisors of the GPUs left, with the sequence divisible by 2*cp, at least
//             SearchSpace::min_tokens_per_cp_rank tokens per context-parallel rank, and (unless
//             SearchSpace::cross_node_workers) tp*cp within one node: a pipeline worker's GPUs
//             share a node, which keeps the KV ring on NVLink and lets the simulator run
//             identical data-parallel replicas once (a worker spanning nodes makes it simulate
//             every replica: seconds per plan at thousands of GPUs);
//   pp        divisors of the GPUs left, at most the layer count; dp the rest (tp*cp*pp*dp = GPUs);
//   ep        MoE only: divisors of the expert count that divide dp*cp (1 for dense models);
//   dispatcher  MoE with ep > 1: each of SearchSpace::moe_dispatchers (alltoall otherwise);
//   mbs       divisors of gbs/dp up to SearchSpace::max_micro_batch_size;
//   schedule  each of SearchSpace::schedules when pp > 1 (only 1f1b when pp == 1: one stage has no
//             pipeline, every schedule does the same work, and 1F1B holds the fewest activations);
//   vpp       interleaved-1f1b: 2 <= v <= max_vpp, divisors v of the layer count with each stage
//             holding at least v layers, and the others where the middle stages can hold v
//             layers each and the ends a layer (uneven ends, chunked_split in
//             layer_balance.h; 126 layers on pp 16 at v = 8: 7, 8 x 14, 7); zbv and dualpipev: 2;
//             otherwise 1;
//   placement one node group per stage on clusters with several groups (contiguous blocks of
//             stages per group, every order of groups; SearchSpace::heterogeneous), or the
//             cluster's order (empty);
//   layers    balanced (layer_balance.h) in units of the chunks per rank, or with uneven ends
//             where the layers do not come in whole units (then that split alone); when
//             uneven_layers or the stages are placed, also time-balanced (each stage's GPU
//             type's per-layer seconds, the embedding on the first chunk's stage and the head
//             on the last's),
//             and when that split overflows a stage's GPU memory even with the space's
//             lightest-memory knobs, the time-balanced split within each stage's memory
//             (memory_capped_split in plan_candidates.cc; layer_balance.h's max_layers);
//             when uneven_layers, also the ends trimmed by 1 .. max_edge_trim units each;
//             duplicates dropped. A split equal to the default
//             (stage_layer_counts) is written as an empty stage_layers.
// With SearchSpace::runtime_limits, shapes and knobs the runtime cannot run are left out
// (runtime_shape_problem, runtime_knob_problem).
// Knobs, per shape: recompute, sequence_parallel (tp > 1 only), zero_stage, optimizer offload
// fraction (0 = none), each over the values SearchSpace lists (a ZeRO stage that runs as an
// earlier one, plan.h zero_stage_in_force, left out); on pp = 1 shapes that do not fit,
// also the fewest activation-offloaded layers that fit (SearchSpace
// ::smallest_fitting_activation_offload).
// Order: shapes by (tp, cp, pp, ep, dispatcher, mbs, schedule, vpp, placement, split) as listed
// above, then knobs by (recompute, sequence_parallel, zero_stage, offload) in SearchSpace order.
// The planner breaks exact ties in its objective by canonical_before(), which does not depend on
// this order.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

class PlanScreen;
class ShapeScreen;

// Default SearchSpace::memory_margin: 5% of each GPU's memory (4 GiB of an 80 GiB H100) left
// free beyond the memory model's peak, for what the model does not hold:
// - NCCL buffers past the 16 channels per communicator the model counts (memory_model.h): NCCL
//   opens up to MAXCHANNELS = 32 (src/include/device.h), another 9.19 MiB per channel, about
//   147 MiB per communicator and 0.6 GiB for a plan's four (tp, cp, pp, dp);
// - the PyTorch caching allocator's slack at the peak: requests over 1 MiB are rounded up to
//   2 MiB and blocks in different segments never merge (c10/cuda/CUDACachingAllocator.cpp; the
//   PyTorch dev note "When does fragmentation occur in the CUDA caching allocator?"), so
//   memory_reserved exceeds memory_allocated by a few percent of HBM in a steady training loop;
//   3.4 GiB (about 4%) is allowed for it.
// An allowance, not a measurement: set it from torch.cuda.max_memory_reserved() minus ppsim's
// peak on the real run (`ppsim memory`), or 0 to screen against the whole GPU.
inline constexpr double kDefaultMemoryMargin = 0.05;

struct SearchSpace {
  // GPU counts to search, each plan using one of them (`plan --gpus 8192,16384`): plans on
  // different counts are ranked together, so a larger job can lose to a smaller one under
  // the time-to-train or cost objective. Empty: all of the cluster. REQUIRES: each in
  // [1, cluster GPUs].
  std::vector<int64_t> gpu_counts;
  int64_t global_batch_size = 0;      // Sequences per step. REQUIRES: > 0.
  std::optional<int64_t> seq_length;  // Overrides the model's when set.
  Precision precision = Precision::kBf16;  // Every candidate's (`plan --precision`).
  Runtime runtime = kDefaultRuntime;             // Every candidate's runtime (spec/runtime.h).
  // Only plans `runtime` can run (runtime_support, spec/runtime.h: schedules, ZeRO and offload
  // forms, cp, ep/etp, layer splits, sequence parallelism); false searches every plan the
  // simulator runs, with `runtime`'s costs (`plan --runtime any`). Default true.
  bool runtime_limits = true;
  // Fraction of each GPU's memory the memory screen keeps free: a plan fits only when every
  // stage's modelled peak is at most (1 - memory_margin) x the GPU's memory. Default
  // kDefaultMemoryMargin (its derivation above); 0 screens against the whole GPU.
  double memory_margin = kDefaultMemoryMargin;
  std::optional<AttentionKernel> attention;      // Every candidate's attention kernel, if named.
  // The MoE token dispatchers tried for every candidate with ep > 1, one candidate each
  // (`plan --moe-dispatcher`, several to search them); ep 1 candidates dispatch nothing and
  // keep alltoall. REQUIRES: not empty, no repeats.
  std::vector<MoeDispatcher> moe_dispatchers = {MoeDispatcher::kAllToAll};
  // The MoE all-to-all overlap settings tried for every candidate with ep > 1, one candidate
  // each (`plan --moe-a2a-overlap off,on`; Plan::moe_a2a_overlap); a candidate whose runtime
  // cannot overlap it (Megatron-Core: pp > 1 without virtual stages, full recompute, several
  // MTP layers) is left out with overlap on. REQUIRES: not empty, no repeats.
  std::vector<bool> moe_a2a_overlaps = {false};
  // The CUDA graph capture of every candidate (`plan --cuda-graphs`; plan.h CudaGraphs).
  CudaGraphs cuda_graphs = CudaGraphs::kNone;
  // Every sequence-parallel candidate's tp_comm_overlap (`plan --tp-comm-overlap on|off`;
  // plan.h: Megatron-Core's --tp-comm-overlap, torchtitan's async TP); absent, the runtime's
  // default (on under megatron-core, off elsewhere). Candidates without sequence parallelism
  // never overlap (Megatron asserts it).
  std::optional<bool> tp_comm_overlap;
  // Every candidate's grad_reduce_in_fp32 (`plan --grad-reduce-in-fp32`; plan.h); absent, the
  // default of its precision.
  std::optional<bool> grad_reduce_in_fp32;
  // Every fp8 candidate's fp8_recipe (`plan --fp8-recipe`; gpu_catalog.h Fp8Recipe); absent,
  // the runtime's (fp8_recipe_in_force).
  std::optional<Fp8Recipe> fp8_recipe;
  // Pipeline schedules tried when pp > 1. Default: all the simulator has.
  std::vector<ScheduleKind> schedules = default_search_schedules();
  int64_t max_micro_batch_size = 16;      // Largest micro-batch size tried.
  int64_t max_vpp = 8;                    // Largest interleaved chunk count tried.
  int64_t min_tokens_per_cp_rank = 1024;  // cp is at most seq / this (and 1 is always tried).
  bool cross_node_workers = false;        // Allow tp*cp above the GPUs per node (cp across nodes).
  std::vector<int64_t> tp;                // Tensor-parallel degrees to try; empty = every divisor.
  std::vector<Recompute> recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  // The module sets selective candidates re-run, one candidate each (plan.h RecomputeModule
  // bits; 0 = Megatron's default, core_attn). `plan` adds moe_act + layernorm for MoE models
  // under megatron-core; `plan --recompute-modules` gives one set.
  std::vector<RecomputeModules> selective_module_sets = {0};
  std::vector<bool> sequence_parallel = {true, false};  // Tried when tp > 1.
  std::vector<int> zero_stages = {0, 1, 2, 3};
  // Optimizer offload fractions tried (0 = no offload; optimizer_offload.h): the quarters
  // Deep Optimizer States sweeps. The planner keeps offload only where it is fastest.
  std::vector<double> offload_fractions = {0, 0.25, 0.5, 0.75, 1};
  // Also try, per (recompute, sequence_parallel, zero_stage) that does not fit without offload,
  // the smallest fraction (a multiple of 1 / kOffloadFractionSteps) that fits: what Deep Optimizer
  // States argues for, since the GPU's share of the update is the fast one.
  bool smallest_fitting_offload = true;
  // Also try, per (sequence_parallel, zero_stage, listed optimizer offload) of a pp = 1 shape
  // whose plan without recompute does not fit: the fewest layers whose saved activations go to
  // host memory (Plan::activation_offload_layers, model/activation_offload.h) for which it fits.
  // Only where the runtime offloads activations (megatron-core) unless runtime_limits is off
  // (`plan --activation-offload off` turns it off).
  bool smallest_fitting_activation_offload = true;
  // Also try, per listed variant with full recompute (every layer) that fits while the same
  // plan without recompute does not: the fewest layers per pipeline chunk to recompute
  // (Plan::recompute_num_layers, Megatron-Core's block method) for which it fits, which is the
  // fastest such plan (each layer recomputed costs its forward again). Only where the runtime
  // runs that N unless runtime_limits is off (torchtitan: every k-th layer of equal chunks;
  // DeepSpeed: no pipeline). `plan --partial-recompute off` turns it off.
  bool smallest_fitting_partial_recompute = true;
  bool uneven_layers = true;  // Time-balanced and end-trimmed layer splits besides balanced.
  int64_t max_edge_trim = 2;  // Units moved off the first / last stage, at most.
  // Clusters of several node groups: choose a group per stage and balance layers by each stage's
  // GPU type, and also try the GPUs in cluster order, where data-parallel replicas may land on
  // different GPU types and take proportional batch shares (planner.h) (true); or plan as if the
  // cluster were homogeneous (false): GPUs in cluster order only, layers balanced with the first
  // group's costs for every stage, equal shares.
  bool heterogeneous = true;
};

// The shapes of the space (knobs at recompute none, sequence_parallel = tp > 1, zero 0, no
// offload), each valid for plan_problem(). `screen` supplies per-layer seconds for the
// time-balanced splits (its StepOptions are those the plans will be simulated with).
std::vector<Plan> enumerate_shapes(const ModelSpec& model, const ClusterSpec& cluster,
                                   const SearchSpace& space, const PlanScreen& screen);

// The recompute settings of the space, in its order: each of `recompute`, selective once per
// module set of `selective_module_sets`.
std::vector<std::pair<Recompute, RecomputeModules>> recompute_settings(const SearchSpace& space);

// The knob variants of a shape, in the order above.
std::vector<Plan> knob_variants(const Plan& shape, const SearchSpace& space);

// The smallest fitting offload fraction is a multiple of 1 / kOffloadFractionSteps (0.05): fine
// enough that the GPU keeps nearly all it can, coarse enough to read as a flag value.
inline constexpr int64_t kOffloadFractionSteps = 20;

// The knob variants, then (when space.smallest_fitting_offload) for each (recompute,
// sequence_parallel, zero_stage) in order whose plan without offload does not fit: the smallest
// multiple of 1 / kOffloadFractionSteps whose plan fits (GPU memory is linear in the fraction; the
// host's too), when no listed fraction equals it; then (when
// space.smallest_fitting_activation_offload and pp = 1) for each listed variant without
// recompute that does not fit, in order: the smallest activation_offload_layers N in
// [1, layers) whose plan fits, found by bisection (GPU memory falls as N grows; host memory,
// which grows, is checked on the N found); then (when space.smallest_fitting_partial_recompute)
// for each variant so far with full recompute of every layer that fits and whose plan without
// recompute does not, in order: the smallest recompute_num_layers N below the largest chunk's
// layer count whose plan fits, found by bisection over the N the runtime runs (saved bytes fall
// as N grows; the recompute working set is one layer's from N = 1 on). REQUIRES: `screen` is
// the shape's screen.
std::vector<Plan> knob_variants(const Plan& shape, const SearchSpace& space,
                                const ShapeScreen& screen);

// Every plan of the space: each shape's knob variants. For brute-force checks; the planner
// walks shapes instead.
std::vector<Plan> enumerate_plans(const ModelSpec& model, const ClusterSpec& cluster,
                                  const SearchSpace& space, const PlanScreen& screen);

// A total order on plans used to break exact ties: by tp, pp, dp, cp, ep, etp, MoE dispatcher
// (alltoall, deepep, hybridep), MoE all-to-all overlap (off first), mbs, schedule, vpp,
// stage_layers (empty first, then lexicographic), placement (likewise), recompute (none first),
// recompute modules, recompute_num_layers (fewest first, every layer last), sequence_parallel
// (false first), zero_stage, offload fraction (0 first), activation-offloaded layers (0 first),
// precision.
bool canonical_before(const Plan& a, const Plan& b);

}  // namespace ppsim
