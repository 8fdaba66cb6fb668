#include "simulator/planner/plan_screen.h"

#include <algorithm>
#include <limits>

#include "simulator/cost/collective_cost.h"
#include "simulator/cost/collective_timing.h"
#include "simulator/cost/optimizer_step_cost.h"
#include "simulator/model/activation_memory.h"
#include "simulator/model/activation_offload.h"
#include "simulator/model/chunk_layout.h"
#include "simulator/model/layer_ops.h"
#include "simulator/model/memory_model.h"
#include "simulator/model/model_stats.h"
#include "simulator/schedule/pipeline_schedule.h"
#include "simulator/spec/error.h"

namespace ppsim {

// One compute action of a rank's order, compactly.
struct CompactAction {
  ActionKind kind;
  int32_t chunk;
  int32_t microbatch;
};

// A transfer between ranks as schedule_lowering.cc builds it: on the sender's send stream to
// that peer for its direction (FIFO in the sender's order), after the producer, after the
// receiver's compute task just before the matching RECV (the rendezvous), before the consumer.
struct CompactSend {
  int32_t from_slot;  // chunk * m + microbatch of the producer.
  int32_t to_slot;    // Of the consumer.
};

// One send stream: (sender, receiver, direction) and its sends in order.
struct SendQueue {
  int32_t from = 0, to = 0;
  int direction = 0;  // 0 forward (activations), 1 backward (gradients).
  std::vector<CompactSend> sends;
};

// A schedule's compute orders and transfers and, per rank, the Pareto-maximal activation
// occupancies seen right after each F: vectors of 2v counts, full chunk-microbatches per local
// chunk, then stashed (I done, W pending) ones.
struct ScheduleProfile {
  int32_t ranks = 1, microbatches = 1, chunks_per_rank = 1;
  std::vector<int32_t> chunk_rank;
  std::vector<std::vector<CompactAction>> order;  // Per rank: its compute actions.
  std::vector<SendQueue> queues;                  // Every send stream, by (sender, first use).
  // Per direction and consumer slot: (rank, index into order[rank] of the compute action just
  // before the RECV, -1 for none); rank -1 when the producer sits on the same rank (no RECV).
  std::vector<std::pair<int32_t, int32_t>> recv_point[2];
  std::vector<std::vector<int32_t>> local_chunks;            // Per rank: its chunks, increasing.
  std::vector<std::vector<std::vector<int32_t>>> occupancy;  // Per rank: Pareto vectors.
  bool deadlocks = false;  // The lowered graph cannot run (a cycle through send streams).
};

namespace {

// What a plan recomputes, as one cache key: the setting and the modules it re-runs (two
// selective plans with different modules save and cost differently).
int recompute_key(const Plan& plan) {
  return static_cast<int>(recomputed_modules(plan)) * 4 + static_cast<int>(plan.recompute);
}

// What a plan's costs depend on beyond its shape: its runtime, attention kernel, fp8 recipe
// (the GEMMs' casts), MoE dispatcher (its token passes), all-to-all overlap (what of them
// shows), CUDA graphs (the MoE host wait the bound keeps) and TP communication overlap (what
// of the TP collectives shows), as one key.
int runtime_key(const Plan& plan) {
  int key = tp_comm_overlap_in_force(plan) ? 1 : 0;
  key = key * 8 + static_cast<int>(plan.runtime);
  key = key * 4 + static_cast<int>(attention_kernel(plan));
  key = key * 4 + static_cast<int>(fp8_recipe_in_force(plan));
  key = key * 4 + static_cast<int>(plan.moe_dispatcher);
  key = key * 4 + static_cast<int>(plan.cuda_graphs);
  return key * 2 + (plan.moe_a2a_overlap ? 1 : 0);
}

void add_pareto(std::vector<std::vector<int32_t>>& set, const std::vector<int32_t>& x) {
  auto dominates = [](const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] < b[i]) return false;
    }
    return true;
  };
  for (const auto& y : set) {
    if (dominates(y, x)) return;
  }
  set.erase(std::remove_if(set.begin(), set.end(),
                           [&](const std::vector<int32_t>& y) { return dominates(x, y); }),
            set.end());
  set.push_back(x);
}

// Replays the compute orders with the given per-chunk seconds: each rank runs its next compute
// action once its inputs exist; transfers take no time but keep their stream order (one FIFO
// stream per sender, receiver and direction, as schedule_lowering.cc) and rendezvous. Returns when
// each rank's compute stream ends, or nullopt on a deadlock.
std::optional<std::vector<double>> replay_compute(const ScheduleProfile& profile,
                                                  const std::vector<PassSeconds>& chunk) {
  const int32_t p = profile.ranks, m = profile.microbatches;
  const int32_t chunks = static_cast<int32_t>(profile.chunk_rank.size());
  const size_t slots = static_cast<size_t>(chunks) * m;
  std::vector<double> forward_end(slots, -1.0), backward_end(slots, -1.0);
  std::vector<double> arrival[2] = {std::vector<double>(slots, -1.0),
                                    std::vector<double>(slots, -1.0)};
  std::vector<std::vector<double>> compute_end(p);
  for (int32_t r = 0; r < p; ++r) compute_end[r].assign(profile.order[r].size(), -1.0);
  std::vector<size_t> next(p, 0);
  std::vector<size_t> next_send(profile.queues.size(), 0);
  std::vector<double> stream_clock(profile.queues.size(), 0.0);
  std::vector<double> clock(p, 0.0);
  size_t remaining = 0;
  for (const auto& order : profile.order) remaining += order.size();
  // The end of the receiver's rendezvous task for a transfer into `slot`, or -1 if not yet run.
  auto rendezvous_end = [&](int direction, int32_t slot) {
    auto [rank, index] = profile.recv_point[direction][slot];
    if (rank < 0 || index < 0) return 0.0;
    return compute_end[rank][index];
  };
  while (remaining > 0) {
    bool progressed = false;
    // Transfers: each stream in its order, once producer and rendezvous are done.
    for (size_t q = 0; q < profile.queues.size(); ++q) {
      const SendQueue& queue = profile.queues[q];
      size_t& k = next_send[q];
      while (k < queue.sends.size()) {
        const CompactSend& send = queue.sends[k];
        double produced =
            queue.direction == 0 ? forward_end[send.from_slot] : backward_end[send.from_slot];
        double meet = rendezvous_end(queue.direction, send.to_slot);
        if (produced < 0 || meet < 0) break;
        stream_clock[q] = std::max({stream_clock[q], produced, meet});
        arrival[queue.direction][send.to_slot] = stream_clock[q];
        ++k;
        progressed = true;
      }
    }
    for (int32_t r = 0; r < p; ++r) {
      const std::vector<CompactAction>& order = profile.order[r];
      while (next[r] < order.size()) {
        const CompactAction& action = order[next[r]];
        size_t slot = static_cast<size_t>(action.chunk) * m + action.microbatch;
        double ready = clock[r];
        double duration = 0;
        if (action.kind == ActionKind::kForward) {
          if (action.chunk > 0) {
            bool local = profile.chunk_rank[action.chunk - 1] == r;
            double input = local ? forward_end[slot - m] : arrival[0][slot];
            if (input < 0) break;
            ready = std::max(ready, input);
          }
          duration = chunk[action.chunk].forward;
          forward_end[slot] = ready + duration;
        } else if (action.kind == ActionKind::kBackward ||
                   action.kind == ActionKind::kBackwardInput) {
          if (forward_end[slot] < 0) break;
          ready = std::max(ready, forward_end[slot]);
          if (action.chunk + 1 < chunks) {
            bool local = profile.chunk_rank[action.chunk + 1] == r;
            double gradient = local ? backward_end[slot + m] : arrival[1][slot];
            if (gradient < 0) break;
            ready = std::max(ready, gradient);
          }
          duration = chunk[action.chunk].backward_input;
          if (action.kind == ActionKind::kBackward) duration += chunk[action.chunk].backward_weight;
          backward_end[slot] = ready + duration;
        } else {
          if (backward_end[slot] < 0) break;
          ready = std::max(ready, backward_end[slot]);
          duration = chunk[action.chunk].backward_weight;
        }
        clock[r] = ready + duration;
        compute_end[r][next[r]] = clock[r];
        ++next[r];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) return std::nullopt;
  }
  return clock;
}

std::shared_ptr<ScheduleProfile> make_profile(ScheduleKind kind, int32_t p, int32_t m, int32_t v,
                                              int32_t group) {
  PipelineSchedule schedule = build_pipeline_schedule(kind, p, m, v, group);
  auto profile = std::make_shared<ScheduleProfile>();
  profile->ranks = p;
  profile->microbatches = m;
  profile->chunks_per_rank = schedule.chunks_per_rank;
  profile->chunk_rank = schedule.chunk_rank;
  profile->order.resize(p);
  profile->local_chunks.resize(p);
  profile->occupancy.resize(p);
  for (int32_t c = 0; c < schedule.num_chunks(); ++c) {
    profile->local_chunks[schedule.chunk_rank[c]].push_back(c);
  }
  for (int direction = 0; direction < 2; ++direction) {
    profile->recv_point[direction].assign(static_cast<size_t>(schedule.num_chunks()) * m, {-1, -1});
  }
  auto enqueue = [&](int32_t from, int direction, CompactSend send) {
    int32_t to = schedule.chunk_rank[send.to_slot / m];
    for (SendQueue& queue : profile->queues) {
      if (queue.from == from && queue.to == to && queue.direction == direction) {
        queue.sends.push_back(send);
        return;
      }
    }
    profile->queues.push_back(SendQueue{from, to, direction, {send}});
  };
  for (int32_t r = 0; r < p; ++r) {
    const std::vector<int32_t>& locals = profile->local_chunks[r];
    int32_t local_count = static_cast<int32_t>(locals.size());
    auto local_of = [&](int32_t chunk) {
      return static_cast<int32_t>(std::find(locals.begin(), locals.end(), chunk) - locals.begin());
    };
    std::vector<int32_t> counts(2 * local_count, 0);
    for (const Action& action : schedule.rank_actions[r]) {
      int32_t slot = action.chunk * m + action.microbatch;
      int32_t before = static_cast<int32_t>(profile->order[r].size()) - 1;
      switch (action.kind) {
        case ActionKind::kRecvForward:
          profile->recv_point[0][slot] = {r, before};
          break;
        case ActionKind::kRecvBackward:
          profile->recv_point[1][slot] = {r, before};
          break;
        case ActionKind::kSendForward:
          enqueue(r, 0, {slot, slot + m});
          break;
        case ActionKind::kSendBackward:
          enqueue(r, 1, {slot, slot - m});
          break;
        default:
          break;
      }
      if (!is_compute(action.kind)) continue;
      profile->order[r].push_back({action.kind, action.chunk, action.microbatch});
      int32_t local = local_of(action.chunk);
      switch (action.kind) {
        case ActionKind::kForward:
          ++counts[local];
          add_pareto(profile->occupancy[r], counts);
          break;
        case ActionKind::kBackward:
          --counts[local];
          break;
        case ActionKind::kBackwardInput:
          --counts[local];
          ++counts[local_count + local];
          break;
        case ActionKind::kBackwardWeight:
          --counts[local_count + local];
          break;
        default:
          break;
      }
    }
  }
  std::vector<PassSeconds> unit(schedule.num_chunks(), PassSeconds{1, 1, 1});
  profile->deadlocks = !replay_compute(*profile, unit).has_value();
  return profile;
}

// The node group holding global GPU `gpu` (GPUs are numbered group by group).
int64_t group_of_gpu(const ClusterSpec& cluster, int64_t gpu) {
  int64_t first = 0;
  for (size_t g = 0; g < cluster.nodes.size(); ++g) {
    first += cluster.nodes[g].num_gpus();
    if (gpu < first) return static_cast<int64_t>(g);
  }
  PPSIM_CHECK(false, "GPU index beyond the cluster");
}

}  // namespace

LayerSettings layer_settings(const Plan& plan) {
  LayerSettings settings;
  settings.partial = plan.recompute == Recompute::kFull && plan.recompute_num_layers > 0;
  settings.recomputed = plan;
  settings.recomputed.recompute_num_layers = 0;
  settings.plain = settings.partial ? without_recompute(plan) : settings.recomputed;
  settings.layers = plan.recompute_num_layers;
  return settings;
}

PlanScreen::PlanScreen(const ModelSpec& model, const ClusterSpec& cluster,
                       const StepOptions& options, double memory_margin)
    : model_(model), cluster_(cluster), options_(options), memory_margin_(memory_margin) {
  PPSIM_CHECK(memory_margin >= 0 && memory_margin < 1);
}

PlanScreen::~PlanScreen() = default;

const CostModel& PlanScreen::group_cost_model(int64_t group, const Plan& plan) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cost_model(group, plan);  // Immutable once made; the map never drops entries.
}

ChunkPricer PlanScreen::chunk_pricer(const Plan& plan) const {
  return ChunkPricer(model_, plan, options_.efficiency, options_.collective, options_.profile,
                     options_.ideal_links);
}

const CostModel& PlanScreen::cost_model(int64_t group, const Plan& plan) const {
  auto key = std::make_pair(group, runtime_key(plan));
  auto it = cost_models_.find(key);
  if (it == cost_models_.end()) {
    it = cost_models_
             .emplace(key, std::make_unique<CostModel>(
                               cluster_.nodes[group].gpu, options_.efficiency,
                               profile_for_gpu(options_.profile, cluster_.nodes[group].gpu),
                               plan.runtime, plan.attention))
             .first;
  }
  return *it->second;
}

std::shared_ptr<const ScheduleProfile> PlanScreen::schedule_profile(ScheduleKind kind,
                                                                    int32_t ranks,
                                                                    int32_t microbatches,
                                                                    int32_t chunks,
                                                                    int32_t group) const {
  auto key = std::make_tuple(static_cast<int>(kind), ranks, microbatches, chunks, group);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = profiles_.find(key);
    if (it != profiles_.end()) return it->second;
  }
  // Built outside the lock (it can take milliseconds); a racing thread builds the same value.
  std::shared_ptr<const ScheduleProfile> profile =
      make_profile(kind, ranks, microbatches, chunks, group);
  std::lock_guard<std::mutex> lock(mutex_);
  return profiles_.emplace(key, profile).first->second;
}

std::shared_ptr<const PlanScreen::LayerBytes> PlanScreen::layer_bytes(const Plan& plan) const {
  // Every layer alike: a partial plan is read from its recomputed and plain layers' (ShapeScreen).
  PPSIM_CHECK(plan.recompute_num_layers == 0, "layer bytes of a whole-layer recompute setting");
  auto key = std::make_tuple(
      plan.tp, plan.cp, plan.micro_batch_size, effective_seq_length(plan, model_), plan.ep,
      plan.sequence_parallel && plan.tp > 1, recompute_key(plan), runtime_key(plan));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = bytes_.find(key);
    if (it != bytes_.end()) return it->second;
  }
  auto bytes = std::make_shared<LayerBytes>();
  ActivationConfig config = activation_config(plan, model_);
  bytes->saved_prefix.assign(model_.num_layers + 1, 0.0);
  bytes->stash_prefix.assign(model_.num_layers + 1, 0.0);
  for (int64_t layer = 0; layer < model_.num_layers; ++layer) {
    LayerActivationBytes saved = layer_activation_bytes(model_, config, layer);
    bytes->saved_prefix[layer + 1] = bytes->saved_prefix[layer] + saved.total();
    bytes->stash_prefix[layer + 1] = bytes->stash_prefix[layer] + saved.norm_and_gemm_inputs;
    bytes->recompute_working.push_back(recompute_working_bytes(model_, config, layer));
  }
  bytes->embedding = embedding_activation_bytes(model_, config);
  bytes->loss = loss_activation_bytes(model_, config);
  bytes->loss_working = loss_working_bytes(model_, config);
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_.emplace(key, bytes).first->second;
}

std::shared_ptr<const PlanScreen::Placement> PlanScreen::placement(const Plan& plan) const {
  auto key = std::make_tuple(plan.tp, plan.cp, plan.dp, plan.pp, plan.placement);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = placements_.find(key);
    if (it != placements_.end()) return it->second;
  }
  auto result = std::make_shared<Placement>();
  const WorkerLayout layout = build_worker_layout(plan, cluster_);
  result->node_stages = node_stages(layout);
  const std::vector<int64_t> gpus_per_node = plan_gpus_per_node(layout);
  result->host_sharing_gpus.assign(plan.pp, std::numeric_limits<int64_t>::max());
  for (const WorkerSlot& slot : layout.workers) {
    result->host_sharing_gpus[slot.stage] =
        std::min(result->host_sharing_gpus[slot.stage], gpus_per_node[slot.node]);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return placements_.emplace(key, result).first->second;
}

std::shared_ptr<const LayerSeconds> PlanScreen::layer_seconds(const Plan& plan,
                                                              int64_t group) const {
  PPSIM_CHECK(plan.recompute_num_layers == 0, "layer seconds of a whole-layer recompute setting");
  auto key = std::make_tuple(group, plan.tp, plan.cp, plan.micro_batch_size,
                             effective_seq_length(plan, model_), plan.ep, plan.expert_tp(),
                             plan.sequence_parallel && plan.tp > 1, recompute_key(plan),
                             static_cast<int>(plan.precision), runtime_key(plan),
                             schedule_traits(plan.schedule).splits_backward);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = seconds_.find(key);
    if (it != seconds_.end()) return it->second;
  }
  const CostModel* costs = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    costs = &cost_model(group, plan);  // Immutable once made; the map never drops entries.
  }
  const NodeGroup& nodes = cluster_.nodes[group];
  // The step builder's prices (chunk_price.h); the bound keeps compute + TP per pass.
  const ChunkPricer pricer = chunk_pricer(plan);
  auto seconds = std::make_shared<LayerSeconds>();
  CommCounts uncounted;
  const TensorParallelPrice tp = pricer.tensor_parallel(nodes, uncounted);
  LayerPriceMemo memo;
  for (int64_t layer = 0; layer < model_.num_layers; ++layer) {
    seconds->prices.push_back(pricer.layer(*costs, nodes, tp, layer, memo));
    seconds->layers.push_back(seconds->prices.back().bound);
  }
  seconds->embedding = pricer.embedding_passes(*costs);
  seconds->head = pricer.head_passes(*costs);
  std::lock_guard<std::mutex> lock(mutex_);
  return seconds_.emplace(key, seconds).first->second;
}

MemoryScreen PlanScreen::memory(const Plan& plan) const {
  return ShapeScreen(*this, plan).memory(plan);
}

double PlanScreen::step_time_bound(const Plan& plan) const {
  return ShapeScreen(*this, plan).step_time_bound(plan);
}

double PlanScreen::busy_bound(const Plan& plan) const {
  return ShapeScreen(*this, plan).busy_bound(plan);
}

// Per (sequence_parallel, recompute and its layers, activation offload) of a shape.
struct ShapeScreen::Activations {
  std::vector<double> rank_peak;        // Activation peak per rank.
  std::vector<double> stage_transient;  // Recompute working set + loss working bytes.
  std::vector<double> rank_host;        // Offloaded activations in host memory per rank.
};

ShapeScreen::ShapeScreen(const PlanScreen& screen, const Plan& shape)
    : screen_(screen), shape_(shape) {
  const ModelSpec& model = screen.model();
  int32_t p = static_cast<int32_t>(shape.pp);
  // The schedule profile walks every microbatch: refuse a shape over the budget first.
  check_work_budget(shape, estimate_step_work(shape, 1), screen.step_options().budget);
  profile_ =
      screen.schedule_profile(shape.schedule, p, static_cast<int32_t>(num_microbatches(shape)),
                              static_cast<int32_t>(shape.vpp),
                              static_cast<int32_t>(microbatch_group_in_force(shape)));
  const ChunkLayout layout = chunk_layout(shape, model);
  PPSIM_CHECK(layout.num_chunks() == static_cast<int64_t>(profile_->chunk_rank.size()));
  chunk_first_ = layout.chunk_first_layer;
  chunk_layers_ = layout.chunk_layers;
  // Parameters per GPU of each chunk, as the step builder's prices count them.
  const ChunkPricer pricer = screen.chunk_pricer(shape);
  for (size_t c = 0; c < chunk_first_.size(); ++c) {
    chunk_parameters_.push_back(
        pricer.parameters(chunk_first_[c], chunk_layers_[c], c == 0, c + 1 == chunk_first_.size()));
  }
  int64_t per_stage = shape.tp * shape.cp * shape.dp;
  for (int32_t r = 0; r < p; ++r) {
    stage_group_.push_back(shape.placement.empty() ? group_of_gpu(screen.cluster(), r * per_stage)
                                                   : shape.placement[r]);
  }
}

// What memory() needs of the shape beside the activations: made on its first call, since the
// time bounds (PlanScreen::step_time_bound builds a screen per candidate) need none of it.
struct ShapeScreen::StageStatic {
  std::vector<StageParameters> parameters;              // Per stage.
  std::vector<double> workspace_bytes, capacity_bytes;  // Per stage.
};

const ShapeScreen::StageStatic& ShapeScreen::stage_static() const {
  if (stage_static_) return *stage_static_;
  const ModelSpec& model = screen_.model();
  auto result = std::make_unique<StageStatic>();
  const ChunkLayout layout = chunk_layout(shape_, model);
  MemoryReport report = estimate_gpu_memory(model, screen_.cluster(), shape_);
  for (int32_t r = 0; r < static_cast<int32_t>(shape_.pp); ++r) {
    result->parameters.push_back(stage_parameters(model, shape_, layout, r));
    result->workspace_bytes.push_back(report.stages[r].workspace_bytes);
    result->capacity_bytes.push_back(report.stages[r].capacity_bytes *
                                     (1 - screen_.memory_margin()));
  }
  stage_static_ = std::move(result);
  return *stage_static_;
}

const PlanScreen::Placement& ShapeScreen::placement() const {
  if (!placement_) placement_ = screen_.placement(shape_);
  return *placement_;
}

ShapeScreen::~ShapeScreen() = default;

bool ShapeScreen::deadlocks() const { return profile_->deadlocks; }

const ShapeScreen::Activations& ShapeScreen::activations(const Plan& plan) const {
  bool sp = plan.sequence_parallel && plan.tp > 1;
  auto key = std::make_tuple(sp, recompute_key(plan), plan.recompute_num_layers,
                             plan.activation_offload_layers);
  auto it = activations_.find(key);
  if (it != activations_.end()) return *it->second;
  const LayerSettings settings = layer_settings(plan);
  std::shared_ptr<const PlanScreen::LayerBytes> bytes = screen_.layer_bytes(settings.recomputed);
  std::shared_ptr<const PlanScreen::LayerBytes> plain_bytes =
      settings.partial ? screen_.layer_bytes(settings.plain) : bytes;
  const ScheduleProfile& profile = *profile_;
  int32_t chunks = static_cast<int32_t>(chunk_first_.size());
  std::vector<double> alloc(chunks), stash(chunks), host(chunks);
  // Per layer: the bytes of the setting it runs under (its place in its chunk).
  std::vector<const PlanScreen::LayerBytes*> layer_source(
      static_cast<size_t>(screen_.model().num_layers), bytes.get());
  for (int32_t c = 0; c < chunks; ++c) {
    int64_t a = chunk_first_[c], b = a + chunk_layers_[c];
    int64_t split = a + settings.recomputed_count(chunk_layers_[c]);
    for (int64_t layer = split; layer < b; ++layer) layer_source[layer] = plain_bytes.get();
    alloc[c] = bytes->saved_prefix[split] - bytes->saved_prefix[a] +
               plain_bytes->saved_prefix[b] - plain_bytes->saved_prefix[split];
    stash[c] = bytes->stash_prefix[split] - bytes->stash_prefix[a] +
               plain_bytes->stash_prefix[b] - plain_bytes->stash_prefix[split];
    if (plan.activation_offload_layers > a) {
      // The memory model's offloaded bytes (memory_model.cc) of the chunk's first layers.
      std::vector<double> layer_saved;
      for (int64_t layer = a; layer < b; ++layer) {
        const PlanScreen::LayerBytes& source = *layer_source[layer];
        layer_saved.push_back(source.saved_prefix[layer + 1] - source.saved_prefix[layer]);
      }
      const ActivationOffload offload = offloaded_activation_bytes(
          layer_saved, std::min(b - a, plan.activation_offload_layers - a));
      alloc[c] -= offload.gpu_saving_bytes;
      host[c] = offload.host_bytes;
    }
    if (c == 0) alloc[c] += bytes->embedding;
    if (c == chunks - 1) alloc[c] += bytes->loss;
  }
  auto result = std::make_unique<Activations>();
  int32_t loss_rank = profile.chunk_rank[chunks - 1];
  for (int32_t r = 0; r < profile.ranks; ++r) {
    const std::vector<int32_t>& locals = profile.local_chunks[r];
    size_t n = locals.size();
    double peak = 0, host_peak = 0;
    for (const std::vector<int32_t>& counts : profile.occupancy[r]) {
      double bytes_alive = 0, host_alive = 0;
      for (size_t i = 0; i < n; ++i) {
        bytes_alive += counts[i] * alloc[locals[i]] + counts[n + i] * stash[locals[i]];
        host_alive += counts[i] * host[locals[i]];
      }
      peak = std::max(peak, bytes_alive);
      host_peak = std::max(host_peak, host_alive);
    }
    result->rank_peak.push_back(peak);
    result->rank_host.push_back(host_peak);
    double working = 0;
    for (int32_t c : locals) {
      for (int64_t layer = chunk_first_[c]; layer < chunk_first_[c] + chunk_layers_[c]; ++layer) {
        working = std::max(working, layer_source[layer]->recompute_working[layer]);
      }
    }
    if (r == loss_rank) working += bytes->loss_working;
    result->stage_transient.push_back(working);
  }
  return *activations_.emplace(key, std::move(result)).first->second;
}

MemoryScreen ShapeScreen::memory(const Plan& plan) const {
  const Activations& acts = activations(plan);
  const StageStatic& stages = stage_static();
  MemoryScreen screen;
  double least_headroom = 0;
  const size_t ranks = stages.parameters.size();
  std::vector<double> host_bytes_per_gpu;
  host_bytes_per_gpu.reserve(ranks);
  screen.stage_peak_bytes.reserve(ranks);
  screen.capacity_bytes.reserve(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    // The memory model's formula for the parameters' bytes (memory_model.h).
    const ParameterBytes bytes = parameter_bytes(stages.parameters[r], plan);
    double static_bytes = bytes.weights + bytes.gradients + bytes.optimizer;
    host_bytes_per_gpu.push_back(bytes.host_optimizer + bytes.host_gradients + acts.rank_host[r]);
    double transient = acts.stage_transient[r] + bytes.zero_transient;
    double peak = static_bytes + transient + stages.workspace_bytes[r] + acts.rank_peak[r];
    screen.stage_peak_bytes.push_back(peak);
    screen.capacity_bytes.push_back(stages.capacity_bytes[r]);
    screen.peak_bytes = std::max(screen.peak_bytes, peak);
    double headroom = stages.capacity_bytes[r] - peak;
    if (peak > stages.capacity_bytes[r]) screen.fits = false;
    if (r == 0 || headroom < least_headroom) {
      least_headroom = headroom;
      screen.worst_stage = static_cast<int64_t>(r);
      screen.over_bytes = std::max(0.0, -headroom);
    }
  }
  if (offloaded_fraction(plan) > 0 || plan.activation_offload_layers > 0) {
    screen.host = host_memory_fit(screen_.cluster(), placement().node_stages, host_bytes_per_gpu);
    if (!screen.host.fits) screen.fits = false;
  }
  return screen;
}

std::vector<PassSeconds> ShapeScreen::chunk_seconds(const Plan& plan) const {
  const ScheduleProfile& profile = *profile_;
  const ChunkPricer pricer = screen_.chunk_pricer(plan);
  int32_t chunks = static_cast<int32_t>(chunk_first_.size());
  std::vector<PassSeconds> chunk(chunks);
  const LayerSettings settings = layer_settings(plan);
  // Per group: the layers' seconds recomputed and plain (the same under whole-layer settings).
  std::map<int64_t, std::pair<std::shared_ptr<const LayerSeconds>,
                              std::shared_ptr<const LayerSeconds>>>
      by_group;
  std::vector<LayerPrice> mixed;  // A partial chunk's layer prices, in order.
  for (int32_t c = 0; c < chunks; ++c) {
    int64_t group = stage_group_[profile.chunk_rank[c]];
    auto it = by_group.find(group);
    if (it == by_group.end()) {
      auto recomputed = screen_.layer_seconds(settings.recomputed, group);
      auto plain = settings.partial ? screen_.layer_seconds(settings.plain, group) : recomputed;
      it = by_group.emplace(group, std::make_pair(recomputed, plain)).first;
    }
    // The chunk's price from its layers' (priced once per shape and group); its bound.
    const int64_t first = chunk_first_[c], layers = chunk_layers_[c];
    const LayerPrice* prices = &it->second.first->prices[first];
    if (settings.partial) {
      const int64_t recomputed = settings.recomputed_count(layers);
      mixed.assign(prices, prices + recomputed);
      mixed.insert(mixed.end(), &it->second.second->prices[first + recomputed],
                   &it->second.second->prices[first + layers]);
      prices = mixed.data();
    }
    chunk[c] = pricer
                   .chunk_from_layers(screen_.group_cost_model(group, plan),
                                      screen_.cluster().nodes[group], prices, first, layers,
                                      c == 0, c == chunks - 1)
                   .bound;
  }
  return chunk;
}

double ShapeScreen::optimizer_seconds(const Plan& plan, int32_t rank) const {
  const GpuSpec& gpu = screen_.cluster().nodes[stage_group_[rank]].gpu;
  ParameterSplit parameters;
  for (size_t c = 0; c < chunk_parameters_.size(); ++c) {
    if (profile_->chunk_rank[c] == rank) parameters += chunk_parameters_[c];
  }
  const double shard = updated_parameters(parameters, plan);
  double gpu_seconds = adam_step_seconds(shard, gpu, screen_.step_options().efficiency.memory,
                                         profile_for_gpu(screen_.step_options().profile, gpu));
  if (offloaded_fraction(plan) <= 0) return gpu_seconds;
  // Offload (step_builder.cc): the GPU's part and the host's Adam + copy back both start after
  // the last compute task; the bound takes the fewest GPUs sharing a node's CPU Adam.
  OffloadSplit split = offload_split(plan, screen_.cluster().nodes[stage_group_[rank]], shard,
                                     placement().host_sharing_gpus[rank]);
  return std::max(gpu_seconds * (1 - split.fraction),
                  split.cpu_adam_seconds() + split.h2d_seconds());
}

const ShapeScreen::Clocks& ShapeScreen::clocks(const Plan& plan, bool replay) const {
  auto key = std::make_tuple(plan.sequence_parallel && plan.tp > 1, recompute_key(plan),
                             plan.recompute_num_layers, zero_stage_in_force(plan) == 3,
                             plan.activation_offload_layers);
  std::unique_ptr<Clocks>& entry = clocks_[key];
  if (!entry) entry = std::make_unique<Clocks>();
  Clocks& clocks = *entry;
  if (clocks.busy.empty()) {
    const ScheduleProfile& profile = *profile_;
    clocks.chunk = chunk_seconds(plan);
    // One microbatch's forward through every chunk and its backward back.
    clocks.chain = 0;
    for (const PassSeconds& c : clocks.chunk) clocks.chain += c.forward + c.backward_input;
    // Rank r starts no earlier than the forwards of the chunks before its first one, and then
    // runs all of its own work.
    for (int32_t r = 0; r < profile.ranks; ++r) {
      const std::vector<int32_t>& locals = profile.local_chunks[r];
      double head = 0;
      for (int32_t c = 0; c < locals.front(); ++c) head += clocks.chunk[c].forward;
      double busy = 0;
      for (int32_t c : locals) busy += clocks.chunk[c].total();
      clocks.busy.push_back(head + busy * profile.microbatches);
    }
  }
  if (replay && clocks.replay.empty()) {
    std::optional<std::vector<double>> ends = replay_compute(*profile_, clocks.chunk);
    PPSIM_CHECK(ends.has_value(), "step_time_bound of a schedule that deadlocks");
    clocks.replay = *ends;
  }
  return clocks;
}

double ShapeScreen::busy_bound(const Plan& plan) const {
  const Clocks& c = clocks(plan, false);
  double bound = c.chain;
  for (int32_t r = 0; r < profile_->ranks; ++r) {
    bound = std::max(bound, c.busy[r] + optimizer_seconds(plan, r));
  }
  // Guard against summation-order rounding: the simulator adds the same terms differently.
  return bound * (1 - 1e-9);
}

double ShapeScreen::step_time_bound(const Plan& plan) const {
  const Clocks& c = clocks(plan, true);
  double bound = 0;
  for (int32_t r = 0; r < profile_->ranks; ++r) {
    bound = std::max(bound, c.replay[r] + optimizer_seconds(plan, r));
  }
  return bound * (1 - 1e-9);
}

}  // namespace ppsim
