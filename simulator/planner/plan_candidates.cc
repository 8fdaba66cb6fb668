#include "simulator/planner/plan_candidates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "simulator/model/layer_balance.h"
#include "simulator/model/memory_model.h"
#include "simulator/planner/plan_screen.h"
#include "simulator/spec/runtime_support.h"
#include "simulator/spec/error.h"
#include "simulator/step/straggler_effects.h"
#include "simulator/step/work_estimate.h"

namespace ppsim {
namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    result.push_back(d);
    if (d != n / d) result.push_back(n / d);
  }
  std::sort(result.begin(), result.end());
  return result;
}

// (schedule, vpp) pairs for pp stages.
std::vector<std::pair<ScheduleKind, int64_t>> schedule_options(const ModelSpec& model,
                                                               const SearchSpace& space,
                                                               int64_t pp) {
  if (pp == 1) return {{kDefaultSchedule, 1}};
  std::vector<std::pair<ScheduleKind, int64_t>> options;
  for (ScheduleKind kind : space.schedules) {
    for (int64_t v : chunk_count_options(kind, model.num_layers, pp, space.max_vpp)) {
      options.emplace_back(kind, v);
    }
  }
  return options;
}

// Contiguous placements: an order of distinct node groups, each with >= 1 stages, that hold
// per_stage GPUs per stage within gpus_per_group[g].
void placements_from(const std::vector<int64_t>& capacity, int64_t stages_left,
                     std::vector<bool>& used, std::vector<int64_t>& current,
                     std::vector<std::vector<int64_t>>& out) {
  if (stages_left == 0) {
    out.push_back(current);
    return;
  }
  for (size_t g = 0; g < capacity.size(); ++g) {
    if (used[g]) continue;
    used[g] = true;
    for (int64_t n = 1; n <= std::min(capacity[g], stages_left); ++n) {
      current.insert(current.end(), n, static_cast<int64_t>(g));
      placements_from(capacity, stages_left - n, used, current, out);
      current.resize(current.size() - n);
    }
    used[g] = false;
  }
}

std::vector<std::vector<int64_t>> placement_options(const ClusterSpec& cluster,
                                                    const SearchSpace& space, int64_t pp,
                                                    int64_t per_stage) {
  if (cluster.nodes.size() == 1 || !space.heterogeneous) return {{}};
  std::vector<int64_t> capacity;
  for (const NodeGroup& group : cluster.nodes) capacity.push_back(group.num_gpus() / per_stage);
  std::vector<std::vector<int64_t>> out;
  std::vector<bool> used(cluster.nodes.size(), false);
  std::vector<int64_t> current;
  placements_from(capacity, pp, used, current, out);
  // Cluster order too, where a stage's GPUs span node groups (so its replicas may sit on
  // different GPU types and take unequal batch shares); where every stage sits in one group it
  // is one of the placements above already.
  auto group_of = [&cluster](int64_t gpu) {
    for (size_t g = 0; g < cluster.nodes.size(); ++g) {
      if (gpu < cluster.nodes[g].num_gpus()) return g;
      gpu -= cluster.nodes[g].num_gpus();
    }
    return cluster.nodes.size();
  };
  for (int64_t stage = 0; stage < pp; ++stage) {
    if (group_of(stage * per_stage) != group_of((stage + 1) * per_stage - 1)) {
      out.push_back({});
      break;
    }
  }
  return out;
}

// The shape with the knobs of the space that need the least GPU memory: the heaviest recompute,
// sequence parallelism, the highest ZeRO stage and the largest offload fraction it lists.
Plan lightest_memory_knobs(const Plan& shape, const SearchSpace& space) {
  Plan plan = shape;
  for (Recompute recompute : space.recompute) plan.recompute = std::max(plan.recompute, recompute);
  plan.sequence_parallel =
      shape.tp > 1 && std::find(space.sequence_parallel.begin(), space.sequence_parallel.end(),
                                true) != space.sequence_parallel.end();
  for (int zero : space.zero_stages) plan.zero_stage = std::max(plan.zero_stage, zero);
  double offload = 0;
  for (double fraction : space.offload_fractions) offload = std::max(offload, fraction);
  plan.offload_optimizer = offload > 0;
  plan.offload_fraction = offload > 0 ? offload : 1.0;
  return plan;
}

// The time-balanced split within each stage's GPU memory, when `split` (time-balanced without
// caps) overflows a stage even with the lightest knobs: such a stage's cap drops to one unit
// below its layers and the split is balanced again, until every stage fits (the memory model
// decides, with the lightest knobs, so no split a knob could make fit is lost) or no split is
// left. nullopt when `split` already fits or nothing fits.
std::optional<std::vector<int64_t>> memory_capped_split(
    const ModelSpec& model, const SearchSpace& space, const ClusterSpec& cluster, const Plan& shape,
    std::vector<StageTimeModel> stages, std::vector<int64_t> split, int64_t granularity) {
  Plan plan = lightest_memory_knobs(shape, space);
  bool capped = false;
  while (true) {
    plan.stage_layers = split;
    if (plan_problem(plan, model, cluster)) return std::nullopt;
    MemoryReport memory = estimate_gpu_memory(model, cluster, plan);
    bool over = false;
    for (const StageMemory& stage : memory.stages) {
      if (stage.peak_bytes <= stage.capacity_bytes * (1 - space.memory_margin)) continue;
      over = true;
      stages[stage.stage].max_layers = split[stage.stage] - granularity;
    }
    if (!over) return capped ? std::optional<std::vector<int64_t>>(split) : std::nullopt;
    std::optional<std::vector<int64_t>> next =
        time_balanced_split(stages, model.num_layers, granularity);
    if (!next) return std::nullopt;
    split = *next;
    capped = true;
  }
}

// The layer splits of a shape (stage_layers values; empty = the default split).
std::vector<std::vector<int64_t>> split_options(const ModelSpec& model, const SearchSpace& space,
                                                const PlanScreen& screen, const Plan& shape) {
  if (shape.pp == 1) return {{}};
  int64_t granularity = chunks_per_rank(shape.schedule, shape.vpp);
  std::optional<std::vector<int64_t>> base =
      chunked_split(model.num_layers, shape.pp, granularity);
  if (!base) return {};
  // The time-balanced and trimmed splits move whole chunks-per-rank units, at least one per
  // stage; a shape whose layers do not give every stage one keeps its uneven-ends split alone.
  const bool whole_units = balanced_split(model.num_layers, shape.pp, granularity).has_value();
  Plan default_plan = shape;
  default_plan.stage_layers.clear();
  std::vector<int64_t> default_split = stage_layer_counts(default_plan, model);
  std::vector<std::vector<int64_t>> splits;
  auto add = [&](std::vector<int64_t> split) {
    if (split == default_split) split.clear();
    if (std::find(splits.begin(), splits.end(), split) == splits.end()) splits.push_back(split);
  };
  add(*base);
  bool placed = !shape.placement.empty();
  if ((space.uneven_layers || placed) && whole_units) {
    // Time-balanced: per stage, its GPU type's seconds per layer; the pipeline ends' extras on
    // the stages that hold the first and the last chunk.
    int64_t per_stage = shape.tp * shape.cp * shape.dp;
    std::vector<StageTimeModel> stages(shape.pp);
    for (int64_t s = 0; s < shape.pp; ++s) {
      int64_t group = 0;
      if (!space.heterogeneous) {
        group = 0;
      } else if (placed) {
        group = shape.placement[s];
      } else {
        int64_t first_gpu = s * per_stage, end = 0;
        for (size_t g = 0; g < screen.cluster().nodes.size(); ++g) {
          end += screen.cluster().nodes[g].num_gpus();
          if (first_gpu < end) {
            group = static_cast<int64_t>(g);
            break;
          }
        }
      }
      std::shared_ptr<const LayerSeconds> seconds = screen.layer_seconds(shape, group);
      stages[s].layer_prefix.assign(1, 0.0);
      for (const PassSeconds& layer : seconds->layers) {
        stages[s].layer_prefix.push_back(stages[s].layer_prefix.back() + layer.total());
      }
      if (s == 0) stages[s].extra_seconds += seconds->embedding.total();
      if (s == loss_rank(shape.schedule, shape.pp))
        stages[s].extra_seconds += seconds->head.total();
    }
    if (auto split = time_balanced_split(stages, model.num_layers, granularity)) {
      add(*split);
      if (auto capped = memory_capped_split(model, space, screen.cluster(), shape, stages, *split,
                                            granularity)) {
        add(*capped);
      }
    }
    // Slow GPUs of the cluster's straggler model count as a slower GPU type would: the
    // stage's seconds per layer over its slowest GPU's speed (straggler_effects.h).
    if (screen.cluster().stragglers.has_slow_gpus()) {
      Plan probe = shape;
      probe.stage_layers = *base;
      std::vector<double> speed = stage_straggler_speed(screen.cluster(), probe);
      for (int64_t s = 0; s < shape.pp; ++s) {
        for (double& seconds : stages[s].layer_prefix) seconds /= speed[s];
        stages[s].extra_seconds /= speed[s];
      }
      if (auto split = time_balanced_split(stages, model.num_layers, granularity)) add(*split);
    }
  }
  if (space.uneven_layers && whole_units) {
    for (int64_t first = 0; first <= space.max_edge_trim; ++first) {
      for (int64_t last = 0; last <= space.max_edge_trim; ++last) {
        if (first == 0 && last == 0) continue;
        if (auto split = trimmed_split(*base, first, last, granularity)) add(*split);
      }
    }
  }
  return splits;
}

// A shape's parallel degrees, tp x cp x pp x dp = one of the GPU counts searched.
struct Degrees {
  int64_t tp = 1, cp = 1, pp = 1, dp = 1;
};

// The degrees the plan rules allow on each of `gpu_counts` GPUs, in enumeration order (count,
// tp, cp, pp): tp from space.tp or the divisors of the smallest node, dividing the heads; cp
// with whole zig-zag chunks of at least min_tokens_per_cp_rank tokens, inside a node unless
// cross_node_workers; pp at most the layers; dp dividing the global batch.
std::vector<Degrees> degree_options(const ModelSpec& model, const SearchSpace& space,
                                    const std::vector<int64_t>& gpu_counts, int64_t seq,
                                    int64_t gpus_per_node) {
  const std::vector<int64_t> tps = space.tp.empty() ? divisors(gpus_per_node) : space.tp;
  std::vector<Degrees> options;
  for (int64_t gpus : gpu_counts) {
    for (int64_t tp : tps) {
      if (gpus % tp != 0 || model.num_attention_heads % tp != 0) continue;
      for (int64_t cp : divisors(gpus / tp)) {
        if (cp > 1 && (seq % (2 * cp) != 0 || seq / cp < space.min_tokens_per_cp_rank)) continue;
        if (!space.cross_node_workers && tp * cp > gpus_per_node) continue;
        for (int64_t pp : divisors(gpus / (tp * cp))) {
          if (pp > model.num_layers) continue;
          int64_t dp = gpus / (tp * cp * pp);
          if (space.global_batch_size % dp != 0) continue;
          options.push_back({tp, cp, pp, dp});
        }
      }
    }
  }
  return options;
}

// Expert layouts (ep, etp; etp 0 = tp) of a shape: ep over the experts, and with tp > 1 also
// whole experts per GPU (etp 1, MoE parallel folding) beside Megatron's default etp = tp;
// etp*ep tiles the stage's tp*dp*cp GPUs. A dense model has the one layout (1, 0).
std::vector<std::pair<int64_t, int64_t>> expert_layouts(const ModelSpec& model, const Degrees& d) {
  if (!model.is_moe()) return {{1, 0}};
  std::vector<std::pair<int64_t, int64_t>> layouts;
  for (int64_t etp : d.tp > 1 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0}) {
    const int64_t split = etp > 0 ? etp : d.tp;
    if (model.moe->expert_ffn_hidden_size % split != 0) continue;
    for (int64_t ep : divisors(model.moe->num_experts)) {
      if ((d.tp * d.dp * d.cp) % (ep * split) == 0) layouts.push_back({ep, etp});
    }
  }
  return layouts;
}

// One expert layout with the dispatcher its all-to-alls run and whether they overlap compute:
// every dispatcher and overlap setting searched where ep > 1, alltoall without overlap
// (nothing to dispatch) where ep = 1.
struct ExpertOption {
  int64_t ep = 1;
  int64_t etp = 0;
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  bool a2a_overlap = false;
};

std::vector<ExpertOption> expert_options(const ModelSpec& model, const Degrees& d,
                                         const SearchSpace& space) {
  PPSIM_CHECK(!space.moe_dispatchers.empty() && !space.moe_a2a_overlaps.empty());
  std::vector<ExpertOption> options;
  for (auto [ep, etp] : expert_layouts(model, d)) {
    if (ep == 1) {
      options.push_back({ep, etp, MoeDispatcher::kAllToAll, false});
      continue;
    }
    for (MoeDispatcher dispatcher : space.moe_dispatchers) {
      for (bool overlap : space.moe_a2a_overlaps) options.push_back({ep, etp, dispatcher, overlap});
    }
  }
  return options;
}

template <typename T>
int compare_lists(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.empty() != b.empty()) return a.empty() ? -1 : 1;
  if (a == b) return 0;
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end()) ? -1 : 1;
}

}  // namespace

std::vector<Plan> enumerate_shapes(const ModelSpec& model, const ClusterSpec& cluster,
                                   const SearchSpace& space, const PlanScreen& screen) {
  PPSIM_CHECK(space.global_batch_size > 0);
  int64_t seq = space.seq_length.value_or(model.seq_length);
  int64_t gpus_per_node = cluster.nodes.front().gpus_per_node;
  for (const NodeGroup& group : cluster.nodes)
    gpus_per_node = std::min(gpus_per_node, group.gpus_per_node);
  std::vector<Plan> shapes;
  std::vector<Plan> within_budget;  // Shapes to split, in enumeration order.
  std::optional<std::pair<Plan, WorkEstimate>> over_budget;  // The cheapest shape left out.
  // Each GPU count searched (SearchSpace::gpu_counts); every shape uses exactly one.
  const std::vector<int64_t> gpu_counts =
      space.gpu_counts.empty() ? std::vector<int64_t>{cluster.num_gpus()} : space.gpu_counts;
  for (const Degrees& d : degree_options(model, space, gpu_counts, seq, gpus_per_node)) {
    for (const ExpertOption& expert : expert_options(model, d, space)) {
      for (int64_t mbs : divisors(space.global_batch_size / d.dp)) {
        if (mbs > space.max_micro_batch_size) continue;
        for (auto [schedule, vpp] : schedule_options(model, space, d.pp)) {
          for (const std::vector<int64_t>& placement :
               placement_options(cluster, space, d.pp, d.tp * d.cp * d.dp)) {
            Plan shape;
            shape.tp = d.tp;
            shape.pp = d.pp;
            shape.dp = d.dp;
            shape.cp = d.cp;
            shape.ep = expert.ep;
            shape.etp = expert.etp;
            shape.vpp = vpp;
            shape.micro_batch_size = mbs;
            shape.global_batch_size = space.global_batch_size;
            shape.seq_length = space.seq_length;
            shape.schedule = schedule;
            shape.sequence_parallel = d.tp > 1;
            shape.precision = space.precision;
            shape.runtime = space.runtime;
            shape.attention = space.attention;
            shape.moe_dispatcher = expert.dispatcher;
            shape.moe_a2a_overlap = expert.a2a_overlap;
            shape.cuda_graphs = space.cuda_graphs;
            shape.grad_reduce_in_fp32 = space.grad_reduce_in_fp32;
            if (space.precision == Precision::kFp8) shape.fp8_recipe = space.fp8_recipe;
            shape.placement = placement;
            // Interleaving over a microbatch count pp does not divide runs in larger groups
            // where the runtime groups them (Megatron-Core); elsewhere plan_problem refuses it.
            const int64_t microbatches = num_microbatches(shape);
            if (is_interleaved(schedule) && vpp > 1 && microbatches % d.pp != 0 &&
                (!space.runtime_limits || runtime_support(space.runtime).microbatch_groups)) {
              shape.microbatch_group_size =
                  smallest_microbatch_group(static_cast<int32_t>(d.pp),
                                            static_cast<int32_t>(microbatches))
                      .value_or(0);
            }
            // Validity of everything but the split, with the balanced split spelled out
            // (the default split need not divide into vpp chunks where an explicit one does).
            std::optional<std::vector<int64_t>> base =
                chunked_split(model.num_layers, d.pp, chunks_per_rank(schedule, vpp));
            if (!base) continue;
            Plan probe = shape;
            probe.stage_layers = *base;
            if (plan_problem(probe, model, cluster)) continue;
            if (space.runtime_limits && runtime_shape_problem(probe, model)) continue;
            // The memory screen below walks the schedule's microbatches: a shape over the
            // work budget is left out here (the search refuses when none is left).
            const WorkEstimate work = estimate_step_work(probe, 1);
            if (!within_work_budget(work, screen.step_options().budget)) {
              if (!over_budget || work.work < over_budget->second.work)
                over_budget = std::make_pair(probe, work);
              continue;
            }
            within_budget.push_back(std::move(shape));
          }
        }
      }
    }
  }
  // Every shape over the budget: refuse with the cheapest one, naming the flag that raises it.
  const WorkBudget& budget = screen.step_options().budget;
  if (within_budget.empty() && over_budget)
    check_work_budget(over_budget->first, over_budget->second, budget);
  // Each shape's memory screen walks every GPU of the layout: refuse up front a search whose
  // shapes x GPUs exceed kSearchGpuVisitsPerTask x the budget (a million GPUs), rather than
  // run for minutes.
  double visits = 0;
  for (const Plan& shape : within_budget) visits += static_cast<double>(shape.num_gpus());
  const int64_t most_gpus = *std::max_element(gpu_counts.begin(), gpu_counts.end());
  if (visits > kSearchGpuVisitsPerTask * static_cast<double>(budget.max_tasks)) {
    throw InputError(
        "--max-tasks", "",
        fmt::format("searching {} plan shapes on up to {} GPUs needs about {:.3g} GPU visits in the "
                    "memory screen, over the budget of {} x {} (--max-tasks); raise it with "
                    "--max-tasks N, or narrow the search (--tp, --pp, --gpus) (docs/limits.md)",
                    within_budget.size(), most_gpus, visits, kSearchGpuVisitsPerTask,
                    budget.max_tasks));
  }
  for (const Plan& shape : within_budget) {
    for (std::vector<int64_t>& split : split_options(model, space, screen, shape)) {
      Plan plan = shape;
      plan.stage_layers = std::move(split);
      if (plan_problem(plan, model, cluster)) continue;
      if (space.runtime_limits && runtime_shape_problem(plan, model)) continue;
      shapes.push_back(std::move(plan));
    }
  }
  return shapes;
}

std::vector<std::pair<Recompute, RecomputeModules>> recompute_settings(const SearchSpace& space) {
  std::vector<std::pair<Recompute, RecomputeModules>> settings;
  for (Recompute recompute : space.recompute) {
    if (recompute != Recompute::kSelective) {
      settings.emplace_back(recompute, 0);
      continue;
    }
    for (RecomputeModules modules : space.selective_module_sets) {
      settings.emplace_back(recompute, modules);
    }
  }
  return settings;
}

std::vector<Plan> knob_variants(const Plan& shape, const SearchSpace& space) {
  std::vector<Plan> variants;
  std::vector<bool> sp_values = shape.tp > 1 ? space.sequence_parallel : std::vector<bool>{false};
  for (const auto& [recompute, modules] : recompute_settings(space)) {
    for (bool sp : sp_values) {
      // (ZeRO stage as it runs, offload) already listed: torchtitan under pipelining runs
      // ZeRO-2 and -3 alike (plan.h zero_stage_in_force), so the second is not simulated again.
      std::set<std::pair<int, double>> listed;
      for (int zero : space.zero_stages) {
        for (double offload : space.offload_fractions) {
          Plan plan = shape;
          plan.recompute = recompute;
          plan.recompute_modules = modules;
          plan.sequence_parallel = sp;
          if (sp) plan.tp_comm_overlap = space.tp_comm_overlap;
          plan.zero_stage = zero;
          plan.offload_optimizer = offload > 0;
          plan.offload_fraction = offload > 0 ? offload : 1.0;
          if (space.runtime_limits && runtime_knob_problem(plan)) continue;
          if (!listed.emplace(zero_stage_in_force(plan), offload).second) continue;
          variants.push_back(std::move(plan));
        }
      }
    }
  }
  return variants;
}

namespace {

// Every stage's peak within its capacity: the GPU side of MemoryScreen::fits, without the host.
bool gpus_fit(const MemoryScreen& screen) {
  for (size_t r = 0; r < screen.stage_peak_bytes.size(); ++r) {
    if (screen.stage_peak_bytes[r] > screen.capacity_bytes[r]) return false;
  }
  return true;
}

// SearchSpace::smallest_fitting_offload (header).
void add_smallest_fitting_offloads(const Plan& shape, const SearchSpace& space,
                                   const ShapeScreen& screen, std::vector<Plan>& variants) {
  std::vector<bool> sp_values = shape.tp > 1 ? space.sequence_parallel : std::vector<bool>{false};
  auto with_fraction = [](Plan plan, double fraction) {
    plan.offload_optimizer = fraction > 0;
    plan.offload_fraction = fraction > 0 ? fraction : 1.0;
    return plan;
  };
  for (const auto& [recompute, modules] : recompute_settings(space)) {
    for (bool sp : sp_values) {
      for (int zero : space.zero_stages) {
        Plan base = shape;
        base.recompute = recompute;
        base.recompute_modules = modules;
        base.sequence_parallel = sp;
        if (sp) base.tp_comm_overlap = space.tp_comm_overlap;
        base.zero_stage = zero;
        MemoryScreen none = screen.memory(with_fraction(base, 0));
        if (none.fits) continue;
        MemoryScreen full = screen.memory(with_fraction(base, 1));
        // Per stage, peak(f) = peak(0) - f * (peak(0) - peak(1)): the smallest f under capacity.
        double needed = 0;
        for (size_t r = 0; r < none.stage_peak_bytes.size(); ++r) {
          double over = none.stage_peak_bytes[r] - none.capacity_bytes[r];
          if (over <= 0) continue;
          double saved = none.stage_peak_bytes[r] - full.stage_peak_bytes[r];
          needed = saved > 0 ? std::max(needed, over / saved) : 2.0;
        }
        if (needed > 1) continue;
        auto listed = [&space](double fraction) {
          return std::find(space.offload_fractions.begin(), space.offload_fractions.end(),
                           fraction) != space.offload_fractions.end();
        };
        // Rounding can leave a stage a few bytes over; the next step up then fits.
        int64_t steps = std::max<int64_t>(
            1, static_cast<int64_t>(std::ceil(needed * kOffloadFractionSteps - 1e-9)));
        Plan plan = with_fraction(base, static_cast<double>(steps) / kOffloadFractionSteps);
        if (!screen.memory(plan).fits && steps < kOffloadFractionSteps) {
          plan = with_fraction(base, static_cast<double>(steps + 1) / kOffloadFractionSteps);
        }
        if (space.runtime_limits && runtime_knob_problem(plan)) continue;
        if (!listed(plan.offload_fraction) && screen.memory(plan).fits) {
          variants.push_back(std::move(plan));
        }
      }
    }
  }
}

// The smallest x in (over, fits] at which `fits_at` holds, given that it holds at `fits` and,
// once it holds, at every larger x (GPU memory falls as x grows): bisection.
template <typename FitsAt>
int64_t fewest_fitting(int64_t over, int64_t fits, FitsAt fits_at) {
  while (fits - over > 1) {
    const int64_t mid = over + (fits - over) / 2;
    (fits_at(mid) ? fits : over) = mid;
  }
  return fits;
}

// SearchSpace::smallest_fitting_activation_offload (header): per variant that could offload and
// does not fit, the fewest offloaded layers that fit.
void add_smallest_fitting_activation_offloads(const Plan& shape, const ModelSpec& model,
                                              const SearchSpace& space, const ShapeScreen& screen,
                                              std::vector<Plan>& variants) {
  if (shape.pp != 1 || model.num_layers < 2) return;
  const size_t listed = variants.size();
  for (size_t i = 0; i < listed; ++i) {
    const Plan base = variants[i];  // A copy: variants grows below.
    if (base.recompute != Recompute::kNone || base.activation_offload_layers > 0) continue;
    if (screen.memory(base).fits) continue;
    auto with_layers = [&base](int64_t layers) {
      Plan plan = base;
      plan.activation_offload_layers = layers;
      return plan;
    };
    // Megatron-Core keeps the last layer on the GPU (plan.cc), so at most layers - 1.
    int64_t fits = model.num_layers - 1;
    Plan most = with_layers(fits);
    if (space.runtime_limits && runtime_knob_problem(most)) continue;  // The runtime cannot.
    if (!gpus_fit(screen.memory(most))) continue;
    // The base (no offloaded layer) does not fit.
    fits = fewest_fitting(0, fits, [&](int64_t layers) {
      return gpus_fit(screen.memory(with_layers(layers)));
    });
    Plan plan = with_layers(fits);
    if (screen.memory(plan).fits) variants.push_back(std::move(plan));
  }
}

// SearchSpace::smallest_fitting_partial_recompute (header): per fitting variant that recomputes
// every layer and would not fit without recompute, the fewest layers per chunk that fit.
void add_smallest_fitting_partial_recomputes(const ModelSpec& model, const SearchSpace& space,
                                             const ShapeScreen& screen,
                                             std::vector<Plan>& variants) {
  const std::vector<int64_t>& chunk_layers = screen.chunk_layers();
  const int64_t largest = *std::max_element(chunk_layers.begin(), chunk_layers.end());
  if (largest < 2) return;  // One layer per chunk: partial is full.
  // The N the runtime runs on this shape, increasing (which N it runs depends on the layer
  // split alone: runtime_support.h), found once, when a variant first needs them.
  std::optional<std::vector<int64_t>> runnable_layers;
  const size_t listed = variants.size();
  for (size_t i = 0; i < listed; ++i) {
    const Plan base = variants[i];  // A copy: variants grows below.
    if (base.recompute != Recompute::kFull || base.recompute_num_layers > 0) continue;
    if (!screen.memory(base).fits || screen.memory(without_recompute(base)).fits) continue;
    if (!runnable_layers) {
      runnable_layers.emplace();
      for (int64_t layers = 1; layers < largest; ++layers) {
        Plan plan = base;
        plan.recompute_num_layers = layers;
        if (space.runtime_limits && runtime_shape_problem(plan, model)) continue;
        runnable_layers->push_back(layers);
      }
    }
    const std::vector<int64_t>& runnable = *runnable_layers;
    auto with_layers = [&base, &runnable](int64_t index) {
      Plan plan = base;
      plan.recompute_num_layers = runnable[static_cast<size_t>(index)];
      return plan;
    };
    if (runnable.empty() || (space.runtime_limits && runtime_knob_problem(with_layers(0)))) {
      continue;
    }
    const int64_t most = static_cast<int64_t>(runnable.size()) - 1;
    if (!screen.memory(with_layers(most)).fits) continue;
    variants.push_back(with_layers(fewest_fitting(-1, most, [&](int64_t index) {
      return screen.memory(with_layers(index)).fits;
    })));
  }
}

}  // namespace

std::vector<Plan> knob_variants(const Plan& shape, const SearchSpace& space,
                                const ShapeScreen& screen) {
  std::vector<Plan> variants = knob_variants(shape, space);
  if (space.smallest_fitting_offload) add_smallest_fitting_offloads(shape, space, screen, variants);
  if (space.smallest_fitting_activation_offload) {
    add_smallest_fitting_activation_offloads(shape, screen.model(), space, screen, variants);
  }
  if (space.smallest_fitting_partial_recompute) {
    add_smallest_fitting_partial_recomputes(screen.model(), space, screen, variants);
  }
  return variants;
}

std::vector<Plan> enumerate_plans(const ModelSpec& model, const ClusterSpec& cluster,
                                  const SearchSpace& space, const PlanScreen& screen) {
  std::vector<Plan> plans;
  for (const Plan& shape : enumerate_shapes(model, cluster, space, screen)) {
    ShapeScreen shape_screen(screen, shape);
    std::vector<Plan> variants = shape_screen.deadlocks()
                                     ? knob_variants(shape, space)
                                     : knob_variants(shape, space, shape_screen);
    for (Plan& plan : variants) plans.push_back(std::move(plan));
  }
  return plans;
}

bool canonical_before(const Plan& a, const Plan& b) {
  auto key = [](const Plan& p) {
    return std::make_tuple(p.tp, p.pp, p.dp, p.cp, p.ep, p.etp, static_cast<int>(p.moe_dispatcher),
                           p.moe_a2a_overlap, p.micro_batch_size, static_cast<int>(p.schedule),
                           p.vpp);
  };
  if (key(a) != key(b)) return key(a) < key(b);
  if (int c = compare_lists(a.stage_layers, b.stage_layers)) return c < 0;
  if (int c = compare_lists(a.placement, b.placement)) return c < 0;
  auto knobs = [](const Plan& p) {
    // Fewer recomputed layers first, full of every layer last: a dominating twin (planner.h)
    // comes first on a tie.
    const int64_t recomputed_layers =
        p.recompute_num_layers > 0 ? p.recompute_num_layers : std::numeric_limits<int64_t>::max();
    return std::make_tuple(static_cast<int>(p.recompute), p.recompute_modules, recomputed_layers,
                           p.sequence_parallel, p.zero_stage, offloaded_fraction(p),
                           p.activation_offload_layers, static_cast<int>(p.precision));
  };
  return knobs(a) < knobs(b);
}

}  // namespace ppsim
