#include "simulator/spec/model_file.h"
#include "simulator/step/gpu_utilisation.h"

#include <catch2/catch.hpp>

#include "simulator/engine/engine.h"
#include "simulator/model/memory_model.h"
#include "simulator/planner/plan_candidates.h"
#include "simulator/planner/plan_screen.h"
#include "simulator/step/step_metrics.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::uniform_cluster;

// One A100 (40 GB) node and one H100 (80 GB) node, one GPU each: a two-type pipeline.
ClusterSpec two_type_cluster() {
  ClusterSpec cluster = uniform_cluster("A100-SXM-40GB", 1, 1);
  cluster.name = "a100-h100-pipeline";
  cluster.nodes.push_back(uniform_cluster("H100-SXM-80GB", 1, 1).nodes.front());
  return cluster;
}

SearchSpace pipeline_space() {
  SearchSpace space;
  space.global_batch_size = 8;
  space.seq_length = 2048;
  space.max_micro_batch_size = 1;
  space.schedules = {ScheduleKind::kOneFOneB};
  space.recompute = {Recompute::kNone};
  space.zero_stages = {0};
  space.offload_fractions = {0};
  space.uneven_layers = false;  // Placed stages: balanced, time-balanced (and memory-capped).
  return space;
}

// The pipeline shapes that put stage 0 on the A100 group and stage 1 on the H100 group.
std::vector<Plan> a100_then_h100(const ModelSpec& model, const ClusterSpec& cluster,
                                 const SearchSpace& space) {
  PlanScreen screen(model, cluster, StepOptions{});
  std::vector<Plan> shapes;
  for (const Plan& shape : enumerate_shapes(model, cluster, space, screen)) {
    if (shape.pp == 2 && shape.placement == std::vector<int64_t>{0, 1}) shapes.push_back(shape);
  }
  return shapes;
}

TEST_CASE("GpuUtilisation: the faster type gets more layers, both fit, busy matches a hand sum") {
  ModelSpec model = load_model_spec("llama3.2-1b");
  ClusterSpec cluster = two_type_cluster();
  std::vector<Plan> shapes = a100_then_h100(model, cluster, pipeline_space());
  const Plan* balanced = nullptr;
  for (const Plan& shape : shapes) {
    if (!shape.stage_layers.empty()) balanced = &shape;
  }
  REQUIRE(balanced != nullptr);
  INFO(plan_to_inline(*balanced));
  CHECK(balanced->stage_layers[1] > balanced->stage_layers[0]);  // The H100 stage.

  Step step = build_step(model, cluster, *balanced);
  Timeline timeline = simulate_graph(step.lowered.graph);
  StepMetrics metrics = compute_metrics(model, cluster, *balanced, step, timeline);
  CHECK(metrics.fits);
  REQUIRE(metrics.gpu_types.size() == 2);
  const GpuTypeUse& a100 = metrics.gpu_types[0];
  const GpuTypeUse& h100 = metrics.gpu_types[1];
  CHECK(a100.gpu == "A100-SXM-40GB");
  CHECK(h100.gpu == "H100-SXM-80GB");
  CHECK(a100.count == 1);
  CHECK(h100.count == 1);
  // By hand: each type's compute is its one worker's F and B task time; idle is the rest.
  std::vector<double> compute(2, 0.0);
  for (TaskId id = 0; id < step.lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = step.lowered.info[id];
    if (info.role == TaskInfo::Role::kAction &&
        (info.kind == ActionKind::kForward || info.kind == ActionKind::kBackward)) {
      compute[info.worker] += timeline.end[id] - timeline.start[id];
    }
  }
  CHECK(a100.compute_s == Approx(compute[0]).epsilon(1e-12));
  CHECK(h100.compute_s == Approx(compute[1]).epsilon(1e-12));
  CHECK(a100.compute_s == Approx(metrics.stages[0].busy_s).epsilon(1e-12));
  CHECK(a100.idle_s == Approx(timeline.makespan - compute[0]).epsilon(1e-12));
  CHECK(h100.busy_fraction == Approx(compute[1] / timeline.makespan).epsilon(1e-12));
  CHECK(a100.peak_memory_bytes == metrics.stages[0].peak_memory_bytes);
  CHECK(h100.peak_memory_bytes == metrics.stages[1].peak_memory_bytes);
  CHECK(a100.capacity_bytes == cluster.nodes[0].gpu.memory_bytes);
  CHECK(h100.capacity_bytes == cluster.nodes[1].gpu.memory_bytes);
  // Balanced by time, both types are busy most of the step and within a few percent of each other.
  CHECK(std::abs(a100.busy_fraction - h100.busy_fraction) < 0.1);
}

TEST_CASE("GpuUtilisation: a homogeneous plan reports one type") {
  ModelSpec model = load_model_spec("llama3.2-1b");
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 1, 2);
  Plan plan = parse_plan("tp=1,pp=2,dp=1,mbs=1,gbs=4,seq=2048", "test");
  Step step = build_step(model, cluster, plan);
  Timeline timeline = simulate_graph(step.lowered.graph);
  StepMetrics metrics = compute_metrics(model, cluster, plan, step, timeline);
  REQUIRE(metrics.gpu_types.size() == 1);
  CHECK(metrics.gpu_types[0].count == 2);
  CHECK(metrics.gpu_types[0].compute_s ==
        Approx((metrics.stages[0].busy_s + metrics.stages[1].busy_s) / 2).epsilon(1e-12));
}

TEST_CASE("GpuUtilisation: stages are sized to each type's memory, not only its speed") {
  ModelSpec model = load_model_spec("llama3.2-1b");
  ClusterSpec cluster = two_type_cluster();
  // The fast H100 with little memory: the time-balanced split overflows it.
  cluster.nodes[1].gpu.memory_bytes = 12.0 * 1024 * 1024 * 1024;
  cluster.nodes[0].gpu = uniform_cluster("A100-SXM-80GB", 1, 1).nodes[0].gpu;
  std::vector<Plan> shapes = a100_then_h100(model, cluster, pipeline_space());
  REQUIRE(!shapes.empty());
  const Plan* most_on_h100 = nullptr;
  const Plan* fitting = nullptr;
  for (const Plan& shape : shapes) {
    std::vector<int64_t> layers = stage_layer_counts(shape, model);
    if (!most_on_h100 || layers[1] > stage_layer_counts(*most_on_h100, model)[1]) {
      most_on_h100 = &shape;
    }
    if (estimate_memory(model, cluster, shape).fits) fitting = &shape;
  }
  REQUIRE(most_on_h100 != nullptr);
  INFO(plan_to_inline(*most_on_h100));
  CHECK_FALSE(estimate_memory(model, cluster, *most_on_h100).fits);
  REQUIRE(fitting != nullptr);
  INFO(plan_to_inline(*fitting));
  std::vector<int64_t> layers = stage_layer_counts(*fitting, model);
  CHECK(layers[1] < stage_layer_counts(*most_on_h100, model)[1]);
}

}  // namespace
}  // namespace ppsim
