// Plan screening: what the simulator will say about a plan's memory, and a lower bound on its
// step time, computed without building or simulating the step. The planner screens hundreds of
// thousands of plans this way and simulates only the few that can still win.
//
// Memory (exact, not an estimate). The simulated timeline's peak per stage is
//   static   = weights + gradients + optimizer states + transients + workspace   (memory_model.h)
//   + max over the rank's compute order of the activations alive right after each F,
// because every F allocates its chunk's bytes when it starts and its B (or I and W) frees them
// when it ends, on the rank's one compute stream (step_builder.h, task_graph.h). The per-chunk
// bytes are those of step_builder.h: the chunk's layer_activation_bytes (under partial full
// recompute, Plan::recompute_num_layers, its first N layers' as recomputed and the rest's as
// without recompute; less what its activation-offloaded layers send to the host,
// activation_offload.h), plus the embedding's
// on chunk 0 and the loss's on the last chunk; a split backward keeps each layer's
// norm_and_gemm_inputs from I to W. The walk over the order is done once per (schedule, p, m, v)
// and kept as each rank's Pareto-maximal occupancy vectors (full and stashed chunk-microbatches
// per local chunk), so a plan's peak is a max of a few dot products.
// The static part is memory_model.h's own: parameter_bytes() over stage_parameters() (ZeRO
// sharding, offload to the host, ZeRO transients), the largest recompute working set of the
// stage and the loss rank's bf16 logits, and the workspace from
// estimate_memory() of the plan. tests/planner/planner_test.cc checks screen == simulated peak.
//
// Time (a lower bound). The step cannot end before every rank's compute stream has run its
// F, B, I, W in order, each waiting for the data it consumes: F(c, mb) for F(c-1, mb),
// B/I(c, mb) for B/I(c+1, mb), W for I; between ranks the data travels as a transfer on the
// sender's send stream to that peer for its direction (FIFO), which also waits for the receiver
// to reach its RECV (schedule_lowering.h). (A lowering that shares one stream between peers only
// adds constraints, so the bound holds for it too.) The bound replays that order, transfers taking
// no time, with each compute task's duration as the simulator sets it, minus what the bound leaves
// out:
//   counted       ChunkPrice::bound (chunk_price.h), derived from the very price the step
//                 builder sets its tasks from: layer compute (fwd, recompute + b, w), embedding
//                 and head, the tensor-parallel collectives inside each layer and ZeRO-3's
//                 exposed gather and reduce-scatter excess; and each rank's optimizer step
//                 after its last compute task;
//   left out (>= 0 in the simulator, so the bound stays a bound)
//                 pipeline send/recv time, context-parallel ring excess, expert all-to-alls,
//                 data-parallel gradient reduction and the parameter all-gather (flows on
//                 shared links, which only the simulation times).
// The simulated makespan is a longest path through a graph that contains these constraints with
// durations at least as long, so bound <= simulated iteration time (checked by the tests on
// every plan of the brute-force cases). Replica 0's GPUs are used when a stage spans groups.
// busy_bound() is a cheaper and weaker bound from the same task durations (no replay).
// Plans with replica_microbatches are not screened: the bound replays one replica (replica 0's
// GPUs) at one microbatch count, which does not bound a plan whose replicas differ in both; the
// planner simulates those (replica_shares.h).
// Costs: ChunkPricer (chunk_price.h) with the step options, profile included, the pricer the
// step builder uses, so a profile keeps the bound a bound.
//
// Thread-safety: PlanScreen's methods are const and may be called from several threads; its
// caches are guarded by a mutex. A ShapeScreen belongs to one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "simulator/cost/chunk_price.h"
#include "simulator/cost/cost_model.h"
#include "simulator/model/optimizer_offload.h"
#include "simulator/model/worker_layout.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

// A plan's memory as the simulated timeline will find it. Bytes.
struct MemoryScreen {
  std::vector<double> stage_peak_bytes;  // Per pipeline rank: static + activation peak.
  // Per pipeline rank: the GPU's memory less the screen's margin, (1 - memory_margin) x it.
  std::vector<double> capacity_bytes;
  double peak_bytes = 0;                 // Largest stage peak.
  bool fits = true;                      // Every stage's peak <= its capacity.
  int64_t worst_stage = 0;               // Least headroom (first on ties).
  double over_bytes = 0;                 // max(0, peak - capacity) of worst_stage.
  // With optimizer or activation offload: host memory's verdict (optimizer_offload.h
  // host_memory_fit, activation_offload.h; no per-node list); `fits` also needs host.fits.
  // Empty without offload.
  HostMemoryReport host;
};

// Per layer on one node group, and the ends; what layer balancing needs.
struct LayerSeconds {
  std::vector<LayerPrice> prices;   // Indexed by layer: the step builder's price of each.
  std::vector<PassSeconds> layers;  // Indexed by layer: its bound (prices[i].bound).
  PassSeconds embedding;            // On the first chunk.
  PassSeconds head;                 // Final norm, output layer, loss on the last chunk.
};

struct ScheduleProfile;

// Under partial full recompute (Plan::recompute_num_layers) a chunk's first N layers run as
// under full recompute and the rest as without: the two whole-layer settings the screen prices
// per layer, read per chunk. `recomputed` is the plan with every layer recomputed, `plain` the
// plan without recompute (both the plan itself, less recompute_num_layers, when it is not
// partial).
struct LayerSettings {
  Plan recomputed, plain;
  bool partial = false;
  int64_t layers = 0;  // N.
  // Of a chunk's `count` layers, how many (from its first) recompute.
  int64_t recomputed_count(int64_t count) const {
    return partial ? std::min(count, layers) : count;
  }
};
LayerSettings layer_settings(const Plan& plan);

class PlanScreen {
 public:
  // `options` are the StepOptions the plans will be simulated with (efficiencies, ideal links).
  // `memory_margin`: the fraction of each GPU's memory a fitting plan leaves free
  // (SearchSpace::memory_margin); 0 (the default) screens against the whole GPU, as the
  // simulator's own "fits" does. REQUIRES: 0 <= memory_margin < 1.
  PlanScreen(const ModelSpec& model, const ClusterSpec& cluster, const StepOptions& options,
             double memory_margin = 0);
  ~PlanScreen();

  const ModelSpec& model() const { return model_; }
  const ClusterSpec& cluster() const { return cluster_; }
  const StepOptions& step_options() const { return options_; }
  double memory_margin() const { return memory_margin_; }

  // REQUIRES (both): plan_problem(plan, model, cluster) is nullopt.
  MemoryScreen memory(const Plan& plan) const;
  double step_time_bound(const Plan& plan) const;
  double busy_bound(const Plan& plan) const;  // ShapeScreen::busy_bound.

  // The chunk pricer of `plan` with the step options (chunk_price.h); what the step builder
  // prices the same plan with.
  ChunkPricer chunk_pricer(const Plan& plan) const;
  // The cost model of node group `group`'s GPUs under `plan`'s runtime and attention kernel
  // (made once per such triple, kept for the screen's life).
  const CostModel& group_cost_model(int64_t group, const Plan& plan) const;

  // Per-layer seconds of `plan`'s shape on node group `group` (for layer balancing).
  // REQUIRES: plan.recompute_num_layers == 0 (every layer alike; ShapeScreen reads a partial
  // plan's chunks from the recomputed and the plain setting's layers).
  std::shared_ptr<const LayerSeconds> layer_seconds(const Plan& plan, int64_t group) const;

  // The cached walk of a schedule (internal to plan_screen.cc and ShapeScreen); `group` the
  // interleaved microbatch group (plan.h microbatch_group_in_force).
  std::shared_ptr<const ScheduleProfile> schedule_profile(ScheduleKind kind, int32_t ranks,
                                                          int32_t microbatches, int32_t chunks,
                                                          int32_t group) const;

  // Per-layer activation bytes for a plan's activation settings (internal).
  struct LayerBytes {
    std::vector<double> saved_prefix;       // Prefix sums of layer_activation_bytes().total().
    std::vector<double> stash_prefix;       // Prefix sums of norm_and_gemm_inputs.
    std::vector<double> recompute_working;  // Per layer.
    double embedding = 0;                   // embedding_activation_bytes.
    double loss = 0;                        // loss_activation_bytes.
    double loss_working = 0;                // loss_working_bytes.
  };
  std::shared_ptr<const LayerBytes> layer_bytes(const Plan& plan) const;

  // Where a plan's GPUs sit, as optimizer and activation offload read it (internal): its nodes'
  // stage sequences (host memory per node) and, per stage, the fewest of the plan's GPUs on one
  // of its nodes (the GPUs sharing a node's CPU Adam). Made once per layout.
  struct Placement {
    NodeStages node_stages;
    std::vector<int64_t> host_sharing_gpus;
  };
  std::shared_ptr<const Placement> placement(const Plan& plan) const;

 private:
  // REQUIRES: mutex_ held.
  const CostModel& cost_model(int64_t group, const Plan& plan) const;

  ModelSpec model_;
  ClusterSpec cluster_;
  StepOptions options_;
  double memory_margin_ = 0;
  mutable std::mutex mutex_;
  // Keyed by (group, runtime_key(plan)).
  mutable std::map<std::pair<int64_t, int>, std::unique_ptr<CostModel>> cost_models_;
  mutable std::map<std::tuple<int, int32_t, int32_t, int32_t, int32_t>,
                   std::shared_ptr<const ScheduleProfile>>
      profiles_;
  // Keyed by (tp, cp, mbs, seq, ep, sequence parallel, recompute and its modules, runtime_key).
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool, int, int>,
                   std::shared_ptr<const LayerBytes>>
      bytes_;
  // Keyed by (group, tp, cp, mbs, seq, ep, etp, sequence parallel, recompute, precision,
  // runtime_key, split backward): everything a layer's price reads of the plan
  // (ChunkPricer::layer; a split backward leaves W out of what hides a backward collective).
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool,
                              int, int, int, bool>,
                   std::shared_ptr<const LayerSeconds>>
      seconds_;
  // Keyed by (tp, cp, dp, pp, placement): what build_worker_layout reads of a plan.
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, std::vector<int64_t>>,
                   std::shared_ptr<const Placement>>
      placements_;
};

// The screen of one shape (a plan's structure: degrees, micro-batch size, schedule, vpp, layer
// split, placement) for all its knob variants (recompute, sequence parallelism, ZeRO stage,
// optimizer offload): shape-level work (stage parameters, workspace, the schedule walk) is done
// once. Not thread-safe; one per thread.
class ShapeScreen {
 public:
  // REQUIRES: plan_problem(shape, ...) is nullopt; `screen` outlives this object.
  ShapeScreen(const PlanScreen& screen, const Plan& shape);
  ~ShapeScreen();

  // True when the simulator's lowering of this schedule cannot run: transfers on a send stream
  // (FIFO per peer and direction, schedule_lowering.h) wait on each other in a cycle. The
  // replay detects it with the same stream and rendezvous rules; such plans cannot be simulated.
  bool deadlocks() const;

  const ModelSpec& model() const { return screen_.model(); }
  // Layers of each pipeline chunk (forward order).
  const std::vector<int64_t>& chunk_layers() const { return chunk_layers_; }

  // REQUIRES (both): `plan` equals the shape but for the knobs, and is valid;
  // step_time_bound also REQUIRES !deadlocks().
  MemoryScreen memory(const Plan& plan) const;
  double step_time_bound(const Plan& plan) const;
  // A cheaper, weaker bound (<= step_time_bound): the largest of one microbatch's forward and
  // backward through every chunk, and per rank the forwards before its first chunk plus m times
  // its own F + B + W. Microseconds instead of a replay of the whole schedule.
  double busy_bound(const Plan& plan) const;

 private:
  struct Activations;  // Per (sequence_parallel, recompute and its layers, activation offload).
  const Activations& activations(const Plan& plan) const;
  // Per chunk seconds of F, B-input, W on its rank's GPU type, with ZeRO-3's exposed excess.
  std::vector<PassSeconds> chunk_seconds(const Plan& plan) const;
  // The optimizer step of `rank` (after its last compute task), as update_tasks.cc sets it.
  double optimizer_seconds(const Plan& plan, int32_t rank) const;
  // Per (sequence_parallel, recompute and its layers, ZeRO-3, activation offload): chunk
  // seconds and the ranks' compute ends.
  struct Clocks {
    std::vector<PassSeconds> chunk;
    double chain = 0;            // One microbatch forward and back through every chunk.
    std::vector<double> busy;    // Per rank: head + m x its work (busy_bound).
    std::vector<double> replay;  // Per rank: its compute stream's end in the replay, once run.
  };
  const Clocks& clocks(const Plan& plan, bool replay) const;

  const PlanScreen& screen_;
  Plan shape_;
  std::shared_ptr<const ScheduleProfile> profile_;
  std::vector<int64_t> chunk_first_, chunk_layers_;  // Per chunk (forward order).
  std::vector<ParameterSplit> chunk_parameters_;  // Per chunk: parameters per GPU (ChunkPricer).
  std::vector<int64_t> stage_group_;  // Node group of each stage's replica-0 worker.
  // Made on first use (plan_screen.cc says by whom).
  struct StageStatic;
  const StageStatic& stage_static() const;
  mutable std::unique_ptr<StageStatic> stage_static_;
  // The shape's placement (PlanScreen::placement), fetched on first use.
  const PlanScreen::Placement& placement() const;
  mutable std::shared_ptr<const PlanScreen::Placement> placement_;
  // Keyed by (sequence parallel, recompute, recompute_num_layers, activation_offload_layers).
  mutable std::map<std::tuple<bool, int, int64_t, int64_t>, std::unique_ptr<Activations>>
      activations_;
  // Keyed by (sequence parallel, recompute, recompute_num_layers, ZeRO-3,
  // activation_offload_layers).
  mutable std::map<std::tuple<bool, int, int64_t, bool, int64_t>, std::unique_ptr<Clocks>>
      clocks_;
};

}  // namespace ppsim
