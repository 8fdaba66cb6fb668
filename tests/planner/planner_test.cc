#include "simulator/planner/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <map>
#include <set>

#include "simulator/engine/engine.h"
#include "simulator/model/memory_model.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/runtime_support.h"
#include "simulator/spec/units.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

StepMetrics simulate(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan) {
  Step step = build_step(model, cluster, plan, StepOptions{});
  Timeline timeline = simulate_graph(step.lowered.graph);
  return compute_metrics(model, cluster, plan, step, timeline);
}

struct Simulated {
  Plan plan;
  double time = 0;
};

// Every plan of `space`, simulated. Along the way it checks what the planner relies on: the
// memory screen agrees with the simulator on every stage's peak (so pruning by memory drops
// exactly the plans that do not fit), both bounds stay below the simulated step, and every
// dominance rule keeps a twin at least as fast. Returns the fitting plans, best first (ties by
// canonical order), and the same list without dominated plans.
struct BruteForce {
  std::vector<Simulated> fitting;
  std::vector<Simulated> undominated;
  int64_t plans = 0;
};

BruteForce brute_force(const ModelSpec& model, const ClusterSpec& cluster,
                       const SearchSpace& space) {
  PlanScreen screen(model, cluster, StepOptions{});
  BruteForce result;
  int64_t memory_mismatches = 0, bound_violations = 0, rule_violations = 0;
  std::string first_problem;
  for (const Plan& shape : enumerate_shapes(model, cluster, space, screen)) {
    ShapeScreen shape_screen(screen, shape);
    if (shape_screen.deadlocks()) continue;
    std::vector<Plan> variants = knob_variants(shape, space, shape_screen);
    std::vector<StepMetrics> metrics;
    std::vector<bool> fits;
    for (const Plan& plan : variants) {
      ++result.plans;
      metrics.push_back(simulate(model, cluster, plan));
      const StepMetrics& simulated = metrics.back();
      MemoryScreen memory = shape_screen.memory(plan);
      fits.push_back(memory.fits);
      bool same = memory.fits == simulated.fits;
      for (size_t s = 0; s < simulated.stages.size(); ++s) {
        same =
            same && std::abs(memory.stage_peak_bytes[s] - simulated.stages[s].peak_memory_bytes) <=
                        1e-9 * simulated.stages[s].peak_memory_bytes;
      }
      if (!same && memory_mismatches++ == 0) {
        first_problem = "memory screen differs from the simulator: " + plan_to_inline(plan);
      }
      double busy = shape_screen.busy_bound(plan);
      double replayed = shape_screen.step_time_bound(plan);
      if ((busy > replayed * (1 + 1e-12) || replayed > simulated.iteration_time_s) &&
          bound_violations++ == 0) {
        first_problem = fmt::format("bound {} / {} above the simulated {} s: {}", busy, replayed,
                                    simulated.iteration_time_s, plan_to_inline(plan));
      }
    }
    for (size_t i = 0; i < variants.size(); ++i) {
      if (!metrics[i].fits) continue;
      Simulated entry{variants[i], metrics[i].iteration_time_s};
      result.fitting.push_back(entry);
      std::optional<Dominance> dominance = find_dominating_twin(variants[i], variants, fits);
      if (!dominance) {
        result.undominated.push_back(entry);
      } else if (metrics[dominance->twin].iteration_time_s > metrics[i].iteration_time_s &&
                 rule_violations++ == 0) {
        first_problem = fmt::format(
            "rule '{}' dropped {} ({} s) for the slower {} ({} s)", dominance->rule,
            plan_to_inline(variants[i]), metrics[i].iteration_time_s,
            plan_to_inline(variants[dominance->twin]), metrics[dominance->twin].iteration_time_s);
      }
    }
  }
  INFO(first_problem);
  CHECK(memory_mismatches == 0);
  CHECK(bound_violations == 0);
  CHECK(rule_violations == 0);
  auto order = [](const Simulated& a, const Simulated& b) {
    if (a.time != b.time) return a.time < b.time;
    return canonical_before(a.plan, b.plan);
  };
  std::sort(result.fitting.begin(), result.fitting.end(), order);
  std::sort(result.undominated.begin(), result.undominated.end(), order);
  return result;
}

// The planner's top plans equal the brute force's (dominated plans aside: they tie or lose).
void check_planner_matches(const ModelSpec& model, const ClusterSpec& cluster,
                           const SearchSpace& given, int64_t top) {
  // The brute force ranks by step time alone against the whole GPU: no margin, no min gain.
  SearchSpace space = given;
  space.memory_margin = 0;
  BruteForce brute = brute_force(model, cluster, space);
  REQUIRE(!brute.fitting.empty());
  PlannerOptions options;
  options.min_gain = 0;
  options.space = space;
  options.top = top;
  options.threads = 2;
  PlanSearchResult result = search_plans(model, cluster, options);
  INFO(model.name << " on " << cluster.name << ": " << brute.plans << " plans, "
                  << result.stats.simulated << " simulated by the planner");
  CHECK(result.stats.considered == brute.plans + result.stats.unsimulable);
  CHECK(result.stats.simulated < brute.plans);
  REQUIRE(!result.plans.empty());
  CHECK(plan_to_inline(result.plans[0].plan) == plan_to_inline(brute.fitting[0].plan));
  CHECK(result.plans[0].metrics.iteration_time_s == brute.fitting[0].time);
  size_t shown = std::min<size_t>(result.plans.size(), brute.undominated.size());
  CHECK(shown == std::min<size_t>(top, brute.undominated.size()));
  for (size_t i = 0; i < shown; ++i) {
    INFO("rank " << i + 1);
    CHECK(plan_to_inline(result.plans[i].plan) == plan_to_inline(brute.undominated[i].plan));
    CHECK(result.plans[i].objective == brute.undominated[i].time);
  }
}

// Llama-3-8B on four 40 GB A100s: memory is tight, so recompute, ZeRO and offload all matter.
TEST_CASE("Planner: best plan equals an exhaustive simulation (memory-tight, homogeneous)") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = testing::uniform_cluster("A100-SXM-40GB", 1, 4);
  SearchSpace space;
  space.global_batch_size = 8;
  space.seq_length = 4096;
  space.max_micro_batch_size = 2;
  space.max_vpp = 2;
  space.max_edge_trim = 1;
  space.schedules = {ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved1F1B, ScheduleKind::kZbH1,
                     ScheduleKind::kZbv};
  check_planner_matches(model, cluster, space, 5);
}

// An interleaved-only search at micro-batch 1: `gbs` sequences of `seq` tokens, up to
// `max_vpp` chunks per rank.
SearchSpace interleaved_space(int64_t gbs, int64_t seq, int64_t max_vpp) {
  SearchSpace space;
  space.global_batch_size = gbs;
  space.seq_length = seq;
  space.max_micro_batch_size = 1;
  space.max_vpp = max_vpp;
  space.schedules = {ScheduleKind::kInterleaved1F1B};
  return space;
}

// Interleaving whose chunks do not divide the layers: a 30-layer Llama on 4 stages at 4 chunks
// per rank runs uneven ends (7, 8, 8, 7; layer_balance.h chunked_split), which the
// search holds beside the whole-unit splits of 2 and 3 chunks, and its best plans are still
// the exhaustive simulation's (the screen's memory and bounds checked on every plan).
TEST_CASE("Planner: best plan equals an exhaustive simulation (interleaving with uneven ends)") {
  ModelSpec model = load_model_spec("llama3-8b");
  model.num_layers = 30;
  ClusterSpec cluster = testing::uniform_cluster("A100-SXM-40GB", 1, 4);
  SearchSpace space = interleaved_space(8, 4096, 4);
  PlanScreen screen(model, cluster, StepOptions{});
  std::set<int64_t> chunk_counts;
  for (const Plan& shape : enumerate_shapes(model, cluster, space, screen)) {
    if (shape.pp != 4) continue;
    chunk_counts.insert(shape.vpp);
    if (shape.vpp == 4) {
      CHECK(stage_layer_counts(shape, model) == std::vector<int64_t>{7, 8, 8, 7});
    }
  }
  CHECK(chunk_counts == std::set<int64_t>{2, 3, 4});
  check_planner_matches(model, cluster, space, 3);
  // Whole units, but fewer than the stages: 6 layers on 4 stages at 2 chunks run 1, 2, 2, 1
  // and are not handed to the time-balanced split, which needs a unit per stage.
  ModelSpec shallow = model;
  shallow.num_layers = 6;
  space.uneven_layers = true;
  PlanScreen shallow_screen(shallow, cluster, StepOptions{});
  bool deep = false;
  for (const Plan& shape : enumerate_shapes(shallow, cluster, space, shallow_screen)) {
    if (shape.pp != 4 || shape.vpp != 2) continue;
    deep = true;
    CHECK(stage_layer_counts(shape, shallow) == std::vector<int64_t>{1, 2, 2, 1});
  }
  CHECK(deep);
}

// Interleaving over a microbatch count pp does not divide: ten microbatches on pp 4 run in
// Megatron-Core's groups of 5 (schedule_kind.h smallest_microbatch_group), so the search holds
// them where groups of pp are refused; the screen's memory and bounds hold for them, and the
// planner's best plans are still the exhaustive simulation's.
TEST_CASE("Planner: interleaved plans over a microbatch count pp does not divide run in groups") {
  ModelSpec model = load_model_spec("llama3-8b");
  model.num_layers = 16;
  ClusterSpec cluster = testing::uniform_cluster("A100-SXM-80GB", 1, 4);
  SearchSpace space = interleaved_space(10, 2048, 2);
  space.tp = {1};
  space.min_tokens_per_cp_rank = 2048;  // cp 1.
  PlanScreen screen(model, cluster, StepOptions{});
  // pp 4 x dp 1: 10 microbatches in groups of 5; pp 2 x dp 2: 5 in groups of 3 (5 % 2 = 1).
  std::set<std::pair<int64_t, int64_t>> groups;
  for (const Plan& shape : enumerate_shapes(model, cluster, space, screen)) {
    INFO(plan_to_inline(shape));
    groups.emplace(shape.pp, shape.microbatch_group_size);
  }
  CHECK(groups == std::set<std::pair<int64_t, int64_t>>{{2, 3}, {4, 5}});
  check_planner_matches(model, cluster, space, 3);
  // A runtime without microbatch groups runs none of these counts interleaved.
  space.runtime = Runtime::kTorchtitan;
  CHECK(enumerate_shapes(model, cluster, space, screen).empty());
}

// The tiny MoE model's search on four H100s: gbs 8, micro-batches up to 2, 1F1B only.
SearchSpace tiny_moe_space() {
  SearchSpace space;
  space.global_batch_size = 8;
  space.max_micro_batch_size = 2;
  space.max_vpp = 1;
  space.schedules = {ScheduleKind::kOneFOneB};
  return space;
}

// An MoE model with two selective-recompute module sets: each set is a candidate of its own,
// and the screen keeps their memory and seconds apart (the exhaustive check compares every
// plan's screened peak with the simulator's).
TEST_CASE("Planner: best plan equals an exhaustive simulation (selective recompute module sets)") {
  ModelSpec model = testing::tiny_moe_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1, 4);
  SearchSpace space = tiny_moe_space();
  space.selective_module_sets = {0, recompute_module_bit(RecomputeModule::kMoeAct) |
                                        recompute_module_bit(RecomputeModule::kLayernorm)};
  // Each recompute setting once, selective once per module set.
  const auto settings = recompute_settings(space);
  REQUIRE(settings.size() == 4);
  CHECK(settings[1] == std::make_pair(Recompute::kSelective, RecomputeModules{0}));
  CHECK(settings[2].second == space.selective_module_sets[1]);
  check_planner_matches(model, cluster, space, 5);
}

// Three MoE dispatchers searched at once: each expert-parallel shape once per dispatcher (ep 1
// shapes once, with alltoall), and the exhaustive check holds across them.
TEST_CASE("Planner: best plan equals an exhaustive simulation (MoE dispatchers)") {
  ModelSpec model = testing::tiny_moe_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1, 4);
  SearchSpace space = tiny_moe_space();
  space.moe_dispatchers = {MoeDispatcher::kAllToAll, MoeDispatcher::kDeepEp,
                           MoeDispatcher::kHybridEp};
  SearchSpace alltoall_only = space;
  alltoall_only.moe_dispatchers = {MoeDispatcher::kAllToAll};
  PlanScreen screen(model, cluster, StepOptions{});
  const std::vector<Plan> shapes = enumerate_shapes(model, cluster, space, screen);
  const std::vector<Plan> alltoall_shapes = enumerate_shapes(model, cluster, alltoall_only, screen);
  int64_t expert_parallel = 0;
  std::map<MoeDispatcher, int64_t> per_dispatcher;
  for (const Plan& shape : alltoall_shapes) expert_parallel += shape.ep > 1;
  for (const Plan& shape : shapes) {
    if (shape.ep == 1) CHECK(shape.moe_dispatcher == MoeDispatcher::kAllToAll);
    if (shape.ep > 1) ++per_dispatcher[shape.moe_dispatcher];
  }
  REQUIRE(expert_parallel > 0);
  CHECK(shapes.size() == alltoall_shapes.size() + 2 * static_cast<size_t>(expert_parallel));
  for (MoeDispatcher dispatcher : space.moe_dispatchers) {
    CHECK(per_dispatcher[dispatcher] == expert_parallel);
  }
  check_planner_matches(model, cluster, space, 5);
}

// The MoE all-to-all overlap searched off and on: each expert-parallel shape Megatron-Core can
// overlap (pp 1, or virtual stages) once more with it on, never with full recompute, and the
// exhaustive check holds across them.
TEST_CASE("Planner: best plan equals an exhaustive simulation (MoE all-to-all overlap)") {
  ModelSpec model = testing::tiny_moe_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1, 4);
  SearchSpace space = tiny_moe_space();
  space.max_vpp = 2;
  space.schedules = {ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved1F1B};
  space.moe_a2a_overlaps = {false, true};
  SearchSpace off_only = space;
  off_only.moe_a2a_overlaps = {false};
  PlanScreen screen(model, cluster, StepOptions{});
  const std::vector<Plan> shapes = enumerate_shapes(model, cluster, space, screen);
  const std::vector<Plan> off_shapes = enumerate_shapes(model, cluster, off_only, screen);
  int64_t overlappable = 0, pipelined_without_chunks = 0;
  for (const Plan& shape : off_shapes) {
    if (shape.ep == 1) continue;
    if (shape.pp > 1 && shape.vpp == 1) {
      ++pipelined_without_chunks;
    } else {
      ++overlappable;
    }
  }
  REQUIRE(overlappable > 0);
  REQUIRE(pipelined_without_chunks > 0);  // Megatron asserts: no overlap without vpp.
  CHECK(shapes.size() == off_shapes.size() + static_cast<size_t>(overlappable));
  for (const Plan& shape : shapes) {
    if (!shape.moe_a2a_overlap) continue;
    CHECK(shape.ep > 1);
    CHECK((shape.pp == 1 || shape.vpp > 1));
  }
  for (const Plan& plan : enumerate_plans(model, cluster, space, screen)) {
    if (plan.moe_a2a_overlap) CHECK(plan.recompute != Recompute::kFull);
  }
  check_planner_matches(model, cluster, space, 5);
}

// The screen caches layer prices across shapes by what a layer's price reads of the plan; a key
// that missed one (etp, CUDA graphs, a split backward) would hand one plan another's prices.
// Qwen3-30B-A3B on 16 H100s, where the all-to-alls and the host wait are a large share of the
// bound: each plan's bounds from the search's shared screen equal those of a fresh screen, and
// stay below the simulated step.
TEST_CASE("Planner: a plan's bounds do not depend on what the screen priced before") {
  ModelSpec model = load_model_spec("qwen3-30b-a3b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:2");
  SearchSpace space;
  space.global_batch_size = 32;
  space.seq_length = 2048;
  space.max_micro_batch_size = 2;
  space.max_vpp = 2;
  space.schedules = {ScheduleKind::kOneFOneB, ScheduleKind::kZbH1};
  space.moe_dispatchers = {MoeDispatcher::kAllToAll, MoeDispatcher::kHybridEp};
  space.moe_a2a_overlaps = {false, true};
  space.offload_fractions = {0};
  space.smallest_fitting_offload = false;
  space.smallest_fitting_activation_offload = false;
  PlanScreen shared(model, cluster, StepOptions{});
  std::set<int64_t> etps;
  int64_t checked = 0, simulated = 0;
  for (CudaGraphs graphs : {CudaGraphs::kNone, CudaGraphs::kMoeRouter}) {
    space.cuda_graphs = graphs;
    const std::vector<Plan> plans = enumerate_plans(model, cluster, space, shared);
    for (size_t i = 0; i < plans.size(); i += 7) {
      const Plan& plan = plans[i];
      if (ShapeScreen(shared, plan).deadlocks()) continue;
      INFO(plan_to_inline(plan));
      PlanScreen fresh(model, cluster, StepOptions{});
      const double bound = shared.step_time_bound(plan);
      CHECK(bound == fresh.step_time_bound(plan));
      CHECK(shared.busy_bound(plan) == fresh.busy_bound(plan));
      etps.insert(plan.expert_tp());
      ++checked;
      if (i % 49 == 0) {
        CHECK(bound <= simulate(model, cluster, plan).iteration_time_s);
        ++simulated;
      }
    }
  }
  CHECK(checked > 100);
  CHECK(simulated > 10);
  CHECK(etps.size() >= 2);  // etp 1 beside tp-wide expert tensor parallelism.
}

// Two node groups of different GPUs: placements and time-balanced splits are in the space.
ClusterSpec small_mixed_cluster() {
  ClusterSpec a100 = testing::uniform_cluster("A100-SXM-40GB", 1, 2);
  ClusterSpec h100 = testing::uniform_cluster("H100-SXM-80GB", 1, 2);
  ClusterSpec cluster = a100;
  cluster.name = "mixed-2xA100-2xH100";
  cluster.nodes.push_back(h100.nodes.front());
  return cluster;
}

TEST_CASE("Planner: best plan equals an exhaustive simulation (heterogeneous placements)") {
  ModelSpec model = load_model_spec("llama3.2-1b");
  ClusterSpec cluster = small_mixed_cluster();
  SearchSpace space;
  space.global_batch_size = 8;
  space.seq_length = 2048;
  space.max_micro_batch_size = 2;
  space.max_vpp = 2;
  space.max_edge_trim = 1;
  space.schedules = {ScheduleKind::kOneFOneB, ScheduleKind::kZbH1};
  space.zero_stages = {0, 1, 3};
  check_planner_matches(model, cluster, space, 3);
}

TEST_CASE("Planner: the same plans for 1 and 2 threads") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:2");
  PlannerOptions options;
  options.space.global_batch_size = 32;
  options.top = 8;
  options.threads = 1;
  PlanSearchResult one = search_plans(model, cluster, options);
  options.threads = 2;
  PlanSearchResult two = search_plans(model, cluster, options);
  REQUIRE(one.plans.size() == two.plans.size());
  REQUIRE(!one.plans.empty());
  for (size_t i = 0; i < one.plans.size(); ++i) {
    CHECK(plan_to_inline(one.plans[i].plan) == plan_to_inline(two.plans[i].plan));
    CHECK(one.plans[i].objective == two.plans[i].objective);
    CHECK(one.plans[i].why == two.plans[i].why);
  }
  CHECK(one.stats.considered == two.stats.considered);
  CHECK(one.stats.simulated == two.stats.simulated);
  CHECK(one.stats.bounded_out == two.stats.bounded_out);
}

TEST_CASE("Planner: llama3-70b on 64 H100s beats the naive tp 8, pp 8 plan") {
  ModelSpec model = load_model_spec("llama3-70b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:8");
  PlannerOptions options;
  options.space.global_batch_size = 256;
  options.top = 3;
  options.threads = 2;
  PlanSearchResult result = search_plans(model, cluster, options);
  REQUIRE(!result.plans.empty());
  const RankedPlan& best = result.plans.front();
  CHECK(best.metrics.fits);
  CHECK(best.metrics.peak_memory_bytes <= 80 * kGiB);
  // The planner's numbers are the simulator's: simulating the plan again gives the same step.
  StepMetrics again = simulate(model, cluster, best.plan);
  CHECK(again.iteration_time_s == best.metrics.iteration_time_s);
  CHECK(again.fits);
  // Naive: tp 8 within a node, pp 8 across them, 1F1B, and recompute left at a blanket
  // setting rather than tuned (full, the usual safe choice; or none).
  for (const char* recompute : {"full", "none"}) {
    Plan naive = parse_plan(fmt::format("tp=8,pp=8,dp=1,mbs=1,gbs=256,schedule=1f1b,"
                                        "sequence_parallel=true,recompute={}",
                                        recompute),
                            "naive");
    REQUIRE_FALSE(plan_problem(naive, model, cluster));
    StepMetrics naive_metrics = simulate(model, cluster, naive);
    double margin = naive_metrics.iteration_time_s / best.metrics.iteration_time_s - 1;
    INFO("naive recompute=" << recompute << ": " << naive_metrics.iteration_time_s << " s, best "
                            << plan_to_inline(best.plan) << ": " << best.metrics.iteration_time_s
                            << " s, margin " << 100 * margin << "%");
    CHECK(margin > 0);
    if (naive_metrics.fits) {
      CHECK(best.metrics.iteration_time_s <= naive_metrics.iteration_time_s);
    }
  }
}

TEST_CASE(
    "Planner: on the mixed A100/H100 cluster, placement and balance beat a homogeneous plan") {
  ModelSpec model = load_model_spec("llama3-70b");
  ClusterSpec cluster = load_cluster_spec("mixed-a100-h100");
  PlannerOptions options;
  options.space.global_batch_size = 256;
  options.top = 1;
  options.threads = 2;
  PlanSearchResult aware = search_plans(model, cluster, options);
  options.space.heterogeneous = false;
  PlanSearchResult homogeneous = search_plans(model, cluster, options);
  REQUIRE(!aware.plans.empty());
  REQUIRE(!homogeneous.plans.empty());
  const RankedPlan& best = aware.plans.front();
  INFO("heterogeneity-aware " << plan_to_inline(best.plan) << ": " << best.metrics.iteration_time_s
                              << " s; homogeneous-only "
                              << plan_to_inline(homogeneous.plans.front().plan) << ": "
                              << homogeneous.plans.front().metrics.iteration_time_s << " s");
  CHECK(best.metrics.iteration_time_s < homogeneous.plans.front().metrics.iteration_time_s);
  CHECK(homogeneous.plans.front().plan.placement.empty());
  // The aware plan uses what only it may: a placement, and more layers on the faster GPUs.
  REQUIRE(!best.plan.placement.empty());
  std::vector<int64_t> layers = stage_layer_counts(best.plan, model);
  std::map<int64_t, std::pair<int64_t, int64_t>> per_group;  // Group -> (layers, stages).
  for (int64_t s = 0; s < best.plan.pp; ++s) {
    per_group[best.plan.placement[s]].first += layers[s];
    per_group[best.plan.placement[s]].second += 1;
  }
  if (per_group.size() == 2) {
    double a100 = static_cast<double>(per_group[0].first) / per_group[0].second;
    double h100 = static_cast<double>(per_group[1].first) / per_group[1].second;
    CHECK(h100 > a100);
  }
}

TEST_CASE("Planner: nothing fits names the closest plan") {
  ModelSpec model = load_model_spec("llama3.1-405b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  PlannerOptions options;
  options.space.global_batch_size = 16;
  PlanSearchResult result = search_plans(model, cluster, options);
  CHECK(result.plans.empty());
  CHECK(result.stats.fitting == 0);
  REQUIRE(result.closest.has_value());
  CHECK(result.closest->memory.over_bytes > 0);
  CHECK_FALSE(result.closest->memory.fits);
  // It is the least-over plan of the space (over the margin the search keeps free).
  PlanScreen screen(model, cluster, StepOptions{}, options.space.memory_margin);
  double least = std::numeric_limits<double>::infinity();
  for (const Plan& shape : enumerate_shapes(model, cluster, options.space, screen)) {
    ShapeScreen shape_screen(screen, shape);
    for (const Plan& plan : knob_variants(shape, options.space)) {
      least = std::min(least, shape_screen.memory(plan).over_bytes);
    }
  }
  CHECK(result.closest->memory.over_bytes == least);
}

// torchtitan under pipelining runs ZeRO-2 and ZeRO-3 alike (plan.h zero_stage_in_force): the
// search lists one of them, where without pipelining it lists both.
TEST_CASE("Planner: knob variants skip a ZeRO stage that runs as one already listed") {
  SearchSpace space;
  space.zero_stages = {2, 3};
  space.offload_fractions = {0};
  space.recompute = {Recompute::kNone};
  space.sequence_parallel = {false};
  auto zero_stages = [&space](const std::string& text) {
    std::vector<int> stages;
    for (const Plan& plan : knob_variants(parse_plan(text, "shape"), space)) {
      stages.push_back(plan.zero_stage);
    }
    return stages;
  };
  CHECK(zero_stages("tp=1,pp=2,dp=4,mbs=1,gbs=16,runtime=torchtitan") == std::vector<int>{2});
  CHECK(zero_stages("tp=1,pp=1,dp=8,mbs=1,gbs=16,runtime=torchtitan") == std::vector<int>{2, 3});
  space.runtime_limits = false;
  CHECK(zero_stages("tp=1,pp=2,dp=4,mbs=1,gbs=16") == std::vector<int>{2, 3});
}

// Llama-3-8B's activation-offload spaces: 16 sequences of 8K, ZeRO-1 or 3, no optimizer offload.
SearchSpace offload_test_space() {
  SearchSpace space;
  space.global_batch_size = 16;
  space.seq_length = 8192;
  space.zero_stages = {1, 3};
  space.offload_fractions = {0};
  space.smallest_fitting_offload = false;
  return space;
}

// The knob variants of `shape` under `space`, screened by `screen`, for which `keep` holds.
template <typename Keep>
std::vector<Plan> screened_variants(const PlanScreen& screen, const SearchSpace& space,
                                    const Plan& shape, Keep keep) {
  ShapeScreen shape_screen(screen, shape);
  std::vector<Plan> found;
  for (const Plan& plan : knob_variants(shape, space, shape_screen)) {
    if (keep(plan)) found.push_back(plan);
  }
  return found;
}

// Those that offload activations.
std::vector<Plan> activation_offload_variants(const PlanScreen& screen, const SearchSpace& space,
                                              const Plan& shape) {
  return screened_variants(screen, space, shape,
                           [](const Plan& plan) { return plan.activation_offload_layers > 0; });
}

// Llama-3-8B at 8K on eight H100s, ZeRO-3, micro-batch 2: the pp = 1 plan needs 105.2 GiB of
// the 79.65 GiB GPU, each layer saving 2.25 GiB. Its offload variant must hold the fewest
// layers that fit by the memory model (estimate_memory, which the screen does not call):
// peak(N) = peak(0) - (N - 1) x 2.25 GiB (one offloaded layer stays in flight), under 95% of the
// GPU from N = 15 (105.24 - 14 x 2.25 = 73.7 < 75.7 GiB; N = 14 leaves 75.99).
TEST_CASE("Planner: a pp = 1 plan that does not fit tries the fewest activation-offloaded layers") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:1");
  SearchSpace space = offload_test_space();
  space.recompute = {Recompute::kNone, Recompute::kSelective};
  PlanScreen screen(model, cluster, StepOptions{}, space.memory_margin);
  const Plan shape = parse_plan("tp=1,pp=1,dp=8,mbs=2,gbs=16,seq=8192,schedule=1f1b", "shape");
  auto offloaded = [&screen](const SearchSpace& searched, const Plan& of) {
    return activation_offload_variants(screen, searched, of);
  };
  std::vector<Plan> found = offloaded(space, shape);
  // One per variant without recompute that does not fit: ZeRO-1 and ZeRO-3.
  REQUIRE(found.size() == 2);
  for (const Plan& plan : found) {
    INFO(plan_to_inline(plan));
    CHECK(plan.recompute == Recompute::kNone);
    auto model_fits = [&](int64_t layers) {
      Plan probe = plan;
      probe.activation_offload_layers = layers;
      const MemoryReport report = estimate_memory(model, cluster, probe);
      return report.fits && report.peak_bytes <= report.stages[0].capacity_bytes *
                                                     (1 - space.memory_margin);
    };
    int64_t fewest = 1;
    while (!model_fits(fewest)) ++fewest;
    CHECK(plan.activation_offload_layers == fewest);
    CHECK(ShapeScreen(screen, plan).memory(plan).fits);
  }
  CHECK(found[0].zero_stage == 1);
  CHECK(found[1].zero_stage == 3);
  CHECK(found[1].activation_offload_layers == 15);
  CHECK(found[0].activation_offload_layers > found[1].activation_offload_layers);

  SearchSpace off = space;
  off.smallest_fitting_activation_offload = false;
  CHECK(offloaded(off, shape).empty());
  // Only megatron-core offloads activations; --runtime any searches it under any runtime.
  Plan deepspeed = shape;
  deepspeed.runtime = Runtime::kDeepSpeed;
  CHECK(offloaded(space, deepspeed).empty());
  SearchSpace any = space;
  any.runtime_limits = false;
  CHECK(offloaded(any, deepspeed).size() == 2);
  // Megatron-Core offloads only with pp = 1.
  CHECK(offloaded(space, parse_plan("tp=1,pp=2,dp=4,mbs=2,gbs=16,seq=8192,schedule=1f1b",
                                    "pp2"))
            .empty());
  // A host too small for eight GPUs' offloaded layers: the GPU would fit, the node does not.
  ClusterSpec small_host = cluster;
  small_host.nodes[0].host_memory_bytes = 64 * kGiB;
  PlanScreen small_screen(model, small_host, StepOptions{}, space.memory_margin);
  CHECK(activation_offload_variants(small_screen, space, shape).empty());
}

// The planner's best equals simulating every plan when offload variants are in the space: the
// screen's GPU and host memory of each offload plan equal the simulator's (brute_force checks
// them plan by plan) and its bounds stay below the simulated step.
TEST_CASE("Planner: best plan equals an exhaustive simulation (activation offload)") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:1");
  SearchSpace space = offload_test_space();
  space.tp = {1, 2};
  space.max_micro_batch_size = 2;
  space.schedules = {ScheduleKind::kOneFOneB};
  space.recompute = {Recompute::kNone, Recompute::kFull};
  PlanScreen screen(model, cluster, StepOptions{});
  int64_t offload_plans = 0;
  SearchSpace whole = space;
  whole.memory_margin = 0;  // As check_planner_matches searches it.
  for (const Plan& shape : enumerate_shapes(model, cluster, whole, screen)) {
    offload_plans += static_cast<int64_t>(activation_offload_variants(screen, whole, shape).size());
  }
  CHECK(offload_plans >= 2);
  check_planner_matches(model, cluster, space, 5);
}

// The knob variants of `shape` that recompute the first N layers of each chunk only.
std::vector<Plan> partial_recompute_variants(const PlanScreen& screen, const SearchSpace& space,
                                             const Plan& shape) {
  return screened_variants(screen, space, shape,
                           [](const Plan& plan) { return plan.recompute_num_layers > 0; });
}

// Llama-3-8B at 8K on eight H100s, pp 2 x dp 4, micro-batch 2, ZeRO-1: 16 layers per stage, the
// plan needs 106.9 GiB without recompute and 50.9 GiB with full recompute of every layer;
// by the memory model (estimate_memory, which the screen does not call) recomputing the first
// N layers of each stage peaks at 87.8 (N = 5), 83.6 (6), 79.3 (7) and 75.0 GiB (8) of the
// 79.65 GiB GPU. The partial variant must be the fewest layers that fit: 8 under the default
// 5% margin (75.67 GiB), 7 against the whole GPU, and under torchtitan, which recomputes every
// k-th layer (N divides 16), 8 against the whole GPU.
TEST_CASE("Planner: a plan that fits only with full recompute tries the fewest recomputed layers") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:1");
  SearchSpace space = offload_test_space();
  space.zero_stages = {1};
  space.recompute = {Recompute::kNone, Recompute::kFull};
  space.smallest_fitting_activation_offload = false;
  const Plan shape = parse_plan("tp=1,pp=2,dp=4,mbs=2,gbs=16,seq=8192,schedule=1f1b", "shape");
  auto fewest_by_memory_model = [&](const Plan& plan, double margin) {
    for (int64_t layers = 1;; ++layers) {
      Plan probe = plan;
      probe.recompute_num_layers = layers;
      const MemoryReport report = estimate_memory(model, cluster, probe);
      if (report.peak_bytes <= report.stages[0].capacity_bytes * (1 - margin)) return layers;
    }
  };
  for (double margin : {space.memory_margin, 0.0}) {
    SearchSpace searched = space;
    searched.memory_margin = margin;
    PlanScreen screen(model, cluster, StepOptions{}, margin);
    std::vector<Plan> found = partial_recompute_variants(screen, searched, shape);
    REQUIRE(found.size() == 1);
    INFO(plan_to_inline(found[0]));
    CHECK(found[0].recompute == Recompute::kFull);
    CHECK(found[0].recompute_num_layers == fewest_by_memory_model(found[0], margin));
    CHECK(found[0].recompute_num_layers == (margin > 0 ? 8 : 7));
    CHECK(ShapeScreen(screen, found[0]).memory(found[0]).fits);

    // torchtitan shards with FSDP (ZeRO-2 under pipelining runs as ZeRO-1, plan.h).
    Plan torchtitan = shape;
    torchtitan.runtime = Runtime::kTorchtitan;
    searched.zero_stages = {2};
    std::vector<Plan> every_kth = partial_recompute_variants(screen, searched, torchtitan);
    if (margin > 0) {
      // Its fp32 loss (8 bytes a logit) puts stage 1 at 79.63 GiB with N = 8: over the margin,
      // and N = 16 is full recompute, listed already.
      CHECK(every_kth.empty());
      continue;
    }
    REQUIRE(every_kth.size() == 1);
    INFO(plan_to_inline(every_kth[0]));
    CHECK(every_kth[0].recompute_num_layers == 8);
    CHECK(torchtitan_ac_frequency(every_kth[0], model) == 2);
  }
  PlanScreen screen(model, cluster, StepOptions{}, space.memory_margin);
  SearchSpace off = space;
  off.smallest_fitting_partial_recompute = false;
  CHECK(partial_recompute_variants(screen, off, shape).empty());
  // Only where full recompute is searched, and only where the plan without it does not fit.
  SearchSpace no_full = space;
  no_full.recompute = {Recompute::kNone, Recompute::kSelective};
  CHECK(partial_recompute_variants(screen, no_full, shape).empty());
  CHECK(partial_recompute_variants(
            screen, space, parse_plan("tp=1,pp=2,dp=4,mbs=1,gbs=16,seq=2048,schedule=1f1b", "s"))
            .empty());
  // DeepSpeed's PipelineModule checkpoints every layer: none under its limits, one without.
  Plan deepspeed = shape;
  deepspeed.runtime = Runtime::kDeepSpeed;
  CHECK(partial_recompute_variants(screen, space, deepspeed).empty());
  SearchSpace any = space;
  any.runtime_limits = false;
  CHECK(partial_recompute_variants(screen, any, deepspeed).size() == 1);
}

// The planner's best equals simulating every plan when partial recompute is in the space: the
// screen's memory of each partial plan equals the simulator's, its bounds stay below the
// simulated step, and "lighter recompute fits" drops no plan for a slower twin (brute_force
// checks all three plan by plan).
TEST_CASE("Planner: best plan equals an exhaustive simulation (partial recompute)") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:1");
  SearchSpace space = offload_test_space();
  space.tp = {1, 2};
  space.max_micro_batch_size = 2;
  space.schedules = {ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved1F1B};
  space.max_vpp = 2;
  space.recompute = {Recompute::kNone, Recompute::kFull};
  space.smallest_fitting_activation_offload = false;
  SearchSpace whole = space;
  whole.memory_margin = 0;  // As check_planner_matches searches it.
  PlanScreen screen(model, cluster, StepOptions{});
  int64_t partial_plans = 0;
  for (const Plan& shape : enumerate_shapes(model, cluster, whole, screen)) {
    partial_plans += static_cast<int64_t>(partial_recompute_variants(screen, whole, shape).size());
  }
  CHECK(partial_plans >= 4);
  check_planner_matches(model, cluster, space, 5);
}

// "Lighter recompute fits" orders partial full recompute between none and full of every layer,
// and by its layer count; selective and partial full recompute do not compare.
TEST_CASE("Planner: dominance orders partial recompute by its recomputed layers") {
  const std::string shape = "tp=1,pp=2,dp=4,mbs=2,gbs=16,schedule=1f1b,zero_stage=1";
  auto dominated_by = [&](const std::string& x, const std::string& y) {
    std::optional<Dominance> found = find_dominating_twin(
        parse_plan(shape + "," + x, "x"), {parse_plan(shape + "," + y, "y")}, {true});
    return found.has_value() && std::string(found->rule) == "lighter recompute fits";
  };
  CHECK(dominated_by("recompute=full", "recompute_num_layers=8"));
  CHECK(dominated_by("recompute_num_layers=8", "recompute_num_layers=4"));
  CHECK(dominated_by("recompute_num_layers=8", "recompute=none"));
  CHECK_FALSE(dominated_by("recompute_num_layers=4", "recompute_num_layers=8"));
  CHECK_FALSE(dominated_by("recompute_num_layers=8", "recompute=full"));
  CHECK_FALSE(dominated_by("recompute_num_layers=8", "recompute_num_layers=8"));
  CHECK_FALSE(dominated_by("recompute_num_layers=8", "recompute=selective"));
  CHECK_FALSE(dominated_by("recompute=selective", "recompute_num_layers=8"));
  CHECK(dominated_by("recompute=full", "recompute=selective"));
  // A dominating twin comes first in canonical order, so ties go to it.
  CHECK(canonical_before(parse_plan(shape + ",recompute_num_layers=8", "a"),
                         parse_plan(shape + ",recompute=full", "b")));
  CHECK(canonical_before(parse_plan(shape + ",recompute_num_layers=4", "a"),
                         parse_plan(shape + ",recompute_num_layers=8", "b")));
}

TEST_CASE("Planner: cost objective ranks by dollars per step") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  PlannerOptions options;
  options.space.global_batch_size = 16;
  options.objective = Objective::kCost;
  options.top = 3;
  PlanSearchResult result = search_plans(model, cluster, options);
  REQUIRE(!result.plans.empty());
  double per_second = 8 * 2.9 / 3600;  // Eight H100s at $2.9 per GPU-hour.
  for (const RankedPlan& plan : result.plans) {
    CHECK(plan.objective == Approx(plan.metrics.iteration_time_s * per_second).epsilon(1e-12));
    CHECK(plan.dollars_per_step == Approx(plan.objective).epsilon(1e-12));
  }
  options.objective = Objective::kP90;
  PlanSearchResult p90 = search_plans(model, cluster, options);
  REQUIRE(!p90.plans.empty());
  // No straggler model: p90 is the deterministic step time, and the note says so.
  CHECK(p90.plans[0].objective == p90.plans[0].metrics.iteration_time_s);
  CHECK(p90.objective_note.find("deterministic") != std::string::npos);
}

TEST_CASE("Planner: canonical order puts lighter knobs first") {
  Plan a = parse_plan("tp=2,pp=2,dp=2,gbs=8", "a");
  Plan b = a;
  b.recompute = Recompute::kSelective;
  CHECK(canonical_before(a, b));
  CHECK_FALSE(canonical_before(b, a));
  b = a;
  b.zero_stage = 1;
  CHECK(canonical_before(a, b));
  b = a;
  b.stage_layers = {1, 1};
  CHECK(canonical_before(a, b));  // The default split first.
  CHECK_FALSE(canonical_before(a, a));
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("Planner: the memory margin is what the screen keeps free, to the byte") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  Plan plan = parse_plan("tp=2,pp=2,dp=2,mbs=1,gbs=16,seq=4096,schedule=1f1b,zero_stage=1", "t");
  PlanScreen whole(model, cluster, StepOptions{});
  MemoryScreen full = ShapeScreen(whole, plan).memory(plan);
  REQUIRE(full.fits);
  const double gpu = full.capacity_bytes[0];
  // The margin at which the worst stage just fits: 1 - peak / capacity.
  const double exact = 1 - full.peak_bytes / gpu;
  PlanScreen below(model, cluster, StepOptions{}, exact * 0.999);
  MemoryScreen fits = ShapeScreen(below, plan).memory(plan);
  CHECK(fits.fits);
  CHECK(fits.capacity_bytes[0] == Approx(gpu * (1 - exact * 0.999)));
  PlanScreen above(model, cluster, StepOptions{}, exact * 1.001 + 1e-9);
  CHECK_FALSE(ShapeScreen(above, plan).memory(plan).fits);
}

TEST_CASE("Planner: every plan it returns leaves the memory margin free") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  for (double margin : {0.0, 0.05, 0.2}) {
    PlannerOptions options;
    options.space.global_batch_size = 32;
    options.space.seq_length = 8192;
    options.space.memory_margin = margin;
    options.top = 5;
    options.threads = 2;
    PlanSearchResult result = search_plans(model, cluster, options);
    REQUIRE(!result.plans.empty());
    for (const RankedPlan& ranked : result.plans) {
      INFO(margin << " " << plan_to_inline(ranked.plan));
      for (const StageResult& stage : ranked.metrics.stages) {
        CHECK(stage.peak_memory_bytes <= (1 - margin) * stage.capacity_bytes * (1 + 1e-12));
      }
    }
  }
}

TEST_CASE("Planner: plan_complexity orders offload, recompute and schedules") {
  auto complexity = [](const std::string& text) {
    return plan_complexity(parse_plan(text, "t"));
  };
  const std::string base = "tp=1,pp=4,dp=2,mbs=1,gbs=64";
  CHECK(complexity(base + ",schedule=1f1b") ==
        std::make_tuple(0.0, int64_t{0}, 0, 0, int64_t{1}));
  CHECK(complexity(base + ",schedule=interleaved-1f1b,vpp=2") ==
        std::make_tuple(0.0, int64_t{0}, 0, 1, int64_t{2}));
  CHECK(complexity(base + ",schedule=zb-h1") ==
        std::make_tuple(0.0, int64_t{0}, 0, 2, int64_t{1}));
  CHECK(complexity(base + ",schedule=zbv") ==
        std::make_tuple(0.0, int64_t{0}, 0, 3, int64_t{2}));
  CHECK(complexity(base + ",recompute=selective") ==
        std::make_tuple(0.0, int64_t{0}, 1, 0, int64_t{1}));
  CHECK(complexity(base + ",zero_stage=1,offload=0.25") ==
        std::make_tuple(0.25, int64_t{0}, 0, 0, int64_t{1}));
  CHECK(complexity(base + ",schedule=zbv") < complexity(base + ",recompute=selective"));
  // Activation-offloaded layers weigh less than optimizer offload, more than recompute.
  const std::string one = "tp=1,pp=1,dp=8,mbs=1,gbs=64";
  CHECK(complexity(one + ",activation_offload_layers=3") ==
        std::make_tuple(0.0, int64_t{3}, 0, 0, int64_t{1}));
  CHECK(complexity(one + ",recompute=full") < complexity(one + ",activation_offload_layers=1"));
  CHECK(complexity(one + ",activation_offload_layers=1") <
        complexity(one + ",zero_stage=1,offload=0.25"));
}

TEST_CASE("Planner: within --min-gain the simpler plan ranks first; ties go to it") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  PlannerOptions options;
  options.space.global_batch_size = 64;
  options.space.seq_length = 8192;
  options.space.runtime_limits = false;  // Every schedule, so complex ones compete.
  options.top = 60;
  options.threads = 2;
  options.min_gain = 0;
  PlanSearchResult raw = search_plans(model, cluster, options);
  options.top = 5;
  REQUIRE(raw.plans.size() >= 2);
  for (size_t i = 1; i < raw.plans.size(); ++i) {
    CHECK(raw.plans[i - 1].objective <= raw.plans[i].objective);
  }
  for (double gain : {0.002, 0.01}) {
    options.min_gain = gain;
    PlanSearchResult ranked = search_plans(model, cluster, options);
    REQUIRE(!ranked.plans.empty());
    // The first is the simplest of every plan within (1 + gain) of the fastest (raw ranking,
    // whose top 60 covers that window here).
    const double fastest = raw.plans[0].objective;
    REQUIRE(raw.plans.back().objective > fastest * (1 + gain));
    auto simplest = plan_complexity(raw.plans[0].plan);
    for (const RankedPlan& plan : raw.plans) {
      if (plan.objective <= fastest * (1 + gain)) {
        simplest = std::min(simplest, plan_complexity(plan.plan));
      }
    }
    INFO(gain << ": " << plan_to_inline(ranked.plans[0].plan));
    CHECK(plan_complexity(ranked.plans[0].plan) == simplest);
    CHECK(ranked.plans[0].objective <= fastest * (1 + gain));
  }
}

TEST_CASE("Planner: a runtime's search holds only plans it runs; any holds more") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  for (Runtime runtime : {Runtime::kMegatronCore, Runtime::kDeepSpeed, Runtime::kTorchtitan}) {
    INFO(runtime_name(runtime));
    PlannerOptions options;
    options.space.global_batch_size = 32;
    options.space.seq_length = 4096;
    options.space.runtime = runtime;
    options.top = 20;
    options.threads = 2;
    PlanSearchResult limited = search_plans(model, cluster, options);
    REQUIRE(!limited.plans.empty());
    for (const RankedPlan& plan : limited.plans) {
      INFO(plan_to_inline(plan.plan));
      CHECK_FALSE(runtime_plan_problem(plan.plan, model));
    }
    options.space.runtime_limits = false;
    PlanSearchResult any = search_plans(model, cluster, options);
    CHECK(any.stats.considered > limited.stats.considered);
  }
}

}  // namespace
}  // namespace ppsim
