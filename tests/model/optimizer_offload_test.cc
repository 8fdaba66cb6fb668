#include "simulator/model/optimizer_offload.h"

#include <catch2/catch.hpp>

#include <limits>

#include "simulator/engine/engine.h"
#include "simulator/model/memory_model.h"
#include "simulator/model/worker_layout.h"
#include "simulator/planner/plan_candidates.h"
#include "simulator/planner/planner.h"
#include "simulator/spec/model_file.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::tiny_dense_model;
using testing::uniform_cluster;

// Parameters per GPU the step updates for tiny_dense_model at tp 1, pp 1 (step_builder.cc
// counts layers, embedding and output layer): per layer attention 64*64 (q) + 2*64*32 (k, v:
// 2 kv heads of 16) + 64*64 (o) = 12,288, SwiGLU 3*64*256 = 49,152, norms 2*64 = 128;
// 2 layers = 123,136; embedding and untied output layer 2 * 256*64 = 32,768; the final norm 64.
constexpr double kTinyStepParameters = 123136 + 32768 + 64;

// One H100 node with round figures for the host side.
ClusterSpec offload_cluster(int64_t gpus_per_node = 8) {
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 1, gpus_per_node);
  cluster.nodes[0].gpu.pcie_bandwidth = 50e9;
  cluster.nodes[0].cpu_adam_parameters_per_s = 1e6;
  return cluster;
}

struct Simulated {
  Step step;
  Timeline timeline;
  StepMetrics metrics;
};

Simulated run(const ModelSpec& model, const ClusterSpec& cluster, const std::string& plan_text) {
  Plan plan = parse_plan(plan_text, "test");
  REQUIRE_FALSE(plan_problem(plan, model, cluster));
  Simulated result{build_step(model, cluster, plan), {}, {}};
  result.timeline = simulate_graph(result.step.lowered.graph);
  result.metrics = compute_metrics(model, cluster, plan, result.step, result.timeline);
  return result;
}

double duration(const Simulated& s, TaskId id) { return s.timeline.end[id] - s.timeline.start[id]; }

TEST_CASE("OptimizerOffload: the split's bytes and seconds by hand") {
  Plan plan = parse_plan("tp=1,pp=1,dp=4,gbs=8,offload=0.25", "test");
  NodeGroup group = offload_cluster().nodes[0];
  OffloadSplit split = offload_split(plan, group, 1e9, 4);
  CHECK(split.fraction == 0.25);
  CHECK(split.host_parameters == 0.25e9);
  CHECK(split.gpu_parameters == 0.75e9);
  CHECK(split.d2h_bytes == 1e9);    // 4 bytes per offloaded parameter down.
  CHECK(split.h2d_bytes == 0.5e9);  // 2 up.
  CHECK(split.host_bytes == 4e9);   // 12 + 4 on the host.
  CHECK(split.d2h_seconds() == Approx(1e9 / 50e9));
  CHECK(split.h2d_seconds() == Approx(0.5e9 / 50e9));
  // Four GPUs share the node's 1e6 parameters/s.
  CHECK(split.cpu_adam_parameters_per_s == 0.25e6);
  CHECK(split.cpu_adam_seconds() == Approx(0.25e9 / 0.25e6));
  // Without offload nothing moves.
  OffloadSplit none = offload_split(parse_plan("gbs=8", "test"), group, 1e9, 4);
  CHECK(none.host_parameters == 0);
  CHECK(none.gpu_parameters == 1e9);
  CHECK(none.d2h_seconds() == 0);
  CHECK(none.cpu_adam_seconds() == 0);
}

TEST_CASE("OptimizerOffload: the step includes exactly the hand-computed PCIe traffic") {
  ModelSpec model = tiny_dense_model();
  ClusterSpec cluster = offload_cluster();
  Simulated s = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=2,offload=0.5");
  REQUIRE(s.step.offload.size() == 1);
  const WorkerOffload& offload = s.step.offload[0];
  const double host = 0.5 * kTinyStepParameters;
  CHECK(offload.split.host_parameters == host);
  // One gradient bucket (fewer than 40M parameters): one copy down, then Adam, then one copy up.
  REQUIRE(offload.d2h.size() == 1);
  const double d2h = host * 4 / 50e9, h2d = host * 2 / 50e9, adam = host / 1e6;
  CHECK(duration(s, offload.d2h[0]) == Approx(d2h).epsilon(1e-12));
  CHECK(duration(s, offload.cpu_adam) == Approx(adam).epsilon(1e-12));
  CHECK(duration(s, offload.h2d) == Approx(h2d).epsilon(1e-12));
  // The bucket is ready when the last backward ends; the copy down starts then, Adam after it.
  double backward_end = 0;
  for (TaskId id = 0; id < s.step.lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = s.step.lowered.info[id];
    if (info.role == TaskInfo::Role::kAction && info.kind == ActionKind::kBackward) {
      backward_end = std::max(backward_end, s.timeline.end[id]);
    }
  }
  CHECK(s.timeline.start[offload.d2h[0]] == Approx(backward_end).epsilon(1e-12));
  CHECK(s.timeline.start[offload.cpu_adam] == Approx(backward_end + d2h).epsilon(1e-12));
  // The GPU's half of the update runs meanwhile; the step ends with the parameters back.
  double gpu_part = duration(s, offload.gpu_update);
  REQUIRE(gpu_part < d2h + adam + h2d);
  CHECK(s.timeline.makespan == Approx(backward_end + d2h + adam + h2d).epsilon(1e-12));
  // The report's figures are the same numbers.
  REQUIRE(s.metrics.offload.has_value());
  const OffloadTraffic& traffic = *s.metrics.offload;
  CHECK(traffic.d2h_bytes_per_gpu == host * 4);
  CHECK(traffic.h2d_bytes_per_gpu == host * 2);
  CHECK(traffic.d2h_bytes_total == host * 4);
  CHECK(traffic.pcie_d2h_s == Approx(d2h));
  CHECK(traffic.pcie_h2d_s == Approx(h2d));
  CHECK(traffic.cpu_adam_s == Approx(adam));
  CHECK(traffic.exposed_s == Approx(d2h + adam + h2d - gpu_part).epsilon(1e-9));
}

TEST_CASE("OptimizerOffload: the GPUs of a node share its CPU Adam; ZeRO shards what moves") {
  ModelSpec model = tiny_dense_model();
  ClusterSpec cluster = offload_cluster(2);
  // Two replicas on the node, ZeRO-1: each GPU offloads its half of the optimizer states.
  Simulated s = run(model, cluster, "tp=1,pp=1,dp=2,mbs=1,gbs=4,zero_stage=1,offload=1");
  REQUIRE(!s.step.offload.empty());
  const OffloadSplit& split = s.step.offload[0].split;
  CHECK(split.host_parameters == kTinyStepParameters / 2);
  CHECK(split.cpu_adam_parameters_per_s == 0.5e6);
  CHECK(split.gpu_parameters == 0);
  // Both replicas' traffic counts in the totals.
  REQUIRE(s.metrics.offload.has_value());
  CHECK(s.metrics.offload->d2h_bytes_total == 2 * kTinyStepParameters / 2 * 4);
  CHECK(s.metrics.offload->host.nodes.size() == 1);
  CHECK(s.metrics.offload->host.nodes[0].gpus == 2);
}

TEST_CASE("OptimizerOffload: host memory per node is a constraint with a reason") {
  ModelSpec model = tiny_dense_model();
  ClusterSpec cluster = offload_cluster(2);
  Plan plan = parse_plan("tp=1,pp=1,dp=2,mbs=1,gbs=4,offload=0.5", "test");
  // The memory model counts what the step updates, final norm included: 155,968 per GPU; half
  // of them offloaded at 16 bytes, on two GPUs.
  const double per_gpu = 0.5 * kTinyStepParameters * 16;
  MemoryReport fits = estimate_memory(model, cluster, plan);
  REQUIRE(fits.host.nodes.size() == 1);
  CHECK(fits.host.nodes[0].bytes == Approx(2 * per_gpu));
  CHECK(fits.stages[0].host_optimizer_bytes == Approx(0.5 * kTinyStepParameters * 12));
  CHECK(fits.stages[0].host_gradient_bytes == Approx(0.5 * kTinyStepParameters * 4));
  CHECK(fits.host.fits);
  CHECK(fits.fits);
  cluster.nodes[0].host_memory_bytes = 2 * per_gpu - 1000;
  MemoryReport over = estimate_memory(model, cluster, plan);
  CHECK_FALSE(over.host.fits);
  CHECK_FALSE(over.fits);
  CHECK(over.host.worst_node == 0);
  CHECK(over.host.over_bytes == Approx(1000));
  // GPU memory: the GPU keeps half of the optimizer states.
  Plan on_gpu = plan;
  on_gpu.offload_optimizer = false;
  MemoryReport none = estimate_memory(model, cluster, on_gpu);
  CHECK(fits.stages[0].optimizer_bytes == Approx(0.5 * none.stages[0].optimizer_bytes));
  CHECK(none.host.nodes[0].bytes == 0);
}

// Four 8-GPU nodes in two node groups of two, with host memories `first` and `second` bytes.
ClusterSpec two_group_cluster(double first, double second) {
  ClusterSpec cluster = uniform_cluster("H100-SXM-80GB", 2, 8);
  cluster.nodes[0].host_memory_bytes = first;
  cluster.nodes.push_back(cluster.nodes[0]);
  cluster.nodes[1].host_memory_bytes = second;
  return cluster;
}

// node_stages as its header defines it, GPU by GPU: each node's stages in the layout's order.
std::vector<std::vector<int32_t>> stages_by_node(const WorkerLayout& layout) {
  std::vector<std::vector<int32_t>> per_node(layout.node_group_of_node.size());
  for (const WorkerSlot& slot : layout.workers) {
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
      per_node[layout.node_of_gpu[g]].push_back(slot.stage);
    }
  }
  return per_node;
}

TEST_CASE("OptimizerOffload: host memory by hand, node by node and class by class") {
  // tp 4, pp 2, dp 4: stage 0 on nodes 0-1 (group 0), stage 1 on nodes 2-3 (group 1), two
  // workers of 4 GPUs per node. 10 bytes per stage-0 GPU and 5 per stage-1 GPU: 80, 80, 40, 40.
  const Plan plan = parse_plan("tp=4,pp=2,dp=4,mbs=1,gbs=8", "test");
  const std::vector<double> bytes = {10, 5};
  ClusterSpec cluster = two_group_cluster(100, 50);
  const WorkerLayout layout = build_worker_layout(plan, cluster);
  const NodeStages stages = node_stages(layout);
  CHECK(stages.nodes == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(stages.sequences == std::vector<std::vector<int32_t>>{std::vector<int32_t>(8, 0),
                                                              std::vector<int32_t>(8, 1)});
  CHECK(stages.sequence == std::vector<int32_t>{0, 0, 1, 1});
  REQUIRE(stages.classes.size() == 2);
  CHECK(stages.classes[1].first_node == 2);
  CHECK(stages.classes[1].node_group == 1);
  // Headroom 20, 20, 10, 10: the first node of the least is node 2.
  HostMemoryReport all = host_memory_per_node(cluster, layout, stages, bytes);
  REQUIRE(all.nodes.size() == 4);
  CHECK(all.nodes[1].bytes == 80);
  CHECK(all.nodes[3].bytes == 40);
  CHECK(all.nodes[3].capacity_bytes == 50);
  CHECK(all.peak_bytes == 80);
  CHECK(all.fits);
  CHECK(all.worst_node == 2);
  CHECK(all.over_bytes == 0);
  // Over by 10 on both group-1 nodes: the first of them is the worst, in either function.
  cluster = two_group_cluster(100, 30);
  for (const HostMemoryReport& report : {host_memory_per_node(cluster, layout, stages, bytes),
                                         host_memory_fit(cluster, stages, bytes)}) {
    CHECK_FALSE(report.fits);
    CHECK(report.worst_node == 2);
    CHECK(report.over_bytes == 10);
    CHECK(report.peak_bytes == 80);
  }
  CHECK(host_memory_fit(cluster, stages, bytes).nodes.empty());
}

TEST_CASE("OptimizerOffload: node stages and the host verdict match a node-by-node walk") {
  // Workers across nodes (cp 4 x tp 4 = 16 GPUs), placements that put stages out of order, and
  // two workers of different stages on one node (tp 4, pp 4, dp 1 on two groups of two nodes).
  const std::vector<std::string> plans = {
      "tp=4,pp=2,dp=1,cp=4,mbs=1,gbs=8", "tp=4,pp=4,dp=1,mbs=1,gbs=8",
      "tp=2,pp=2,dp=8,mbs=1,gbs=8",      "tp=1,pp=4,dp=8,mbs=1,gbs=8"};
  for (const std::string& text : plans) {
    for (bool placed : {false, true}) {
      Plan plan = parse_plan(text, "test");
      if (placed) {
        plan.placement.clear();
        for (int64_t r = 0; r < plan.pp; ++r) plan.placement.push_back(r < plan.pp / 2 ? 1 : 0);
      }
      CAPTURE(text, placed);
      // Capacities that leave some nodes over and others not, with ties between groups.
      const ClusterSpec cluster = two_group_cluster(20, 12);
      const WorkerLayout layout = build_worker_layout(plan, cluster);
      const NodeStages stages = node_stages(layout);
      const std::vector<std::vector<int32_t>> expected = stages_by_node(layout);
      std::vector<double> bytes;
      for (int64_t r = 0; r < plan.pp; ++r) bytes.push_back(1.0 + static_cast<double>(r % 2));
      // The reference verdict, node by node.
      double peak = 0, least = std::numeric_limits<double>::infinity();
      int32_t worst = -1;
      bool fits = true;
      size_t listed = 0;
      for (size_t n = 0; n < expected.size(); ++n) {
        if (expected[n].empty()) continue;
        REQUIRE(listed < stages.nodes.size());
        CHECK(stages.nodes[listed] == static_cast<int32_t>(n));
        CHECK(stages.sequences[stages.sequence[listed]] == expected[n]);
        ++listed;
        double sum = 0;
        for (int32_t stage : expected[n]) sum += bytes[stage];
        const double capacity = cluster.nodes[layout.node_group_of_node[n]].host_memory_bytes;
        peak = std::max(peak, sum);
        fits = fits && sum <= capacity;
        if (capacity - sum < least) {
          least = capacity - sum;
          worst = static_cast<int32_t>(n);
        }
      }
      CHECK(listed == stages.nodes.size());
      const HostMemoryReport fit = host_memory_fit(cluster, stages, bytes);
      CHECK(fit.peak_bytes == peak);
      CHECK(fit.fits == fits);
      CHECK(fit.worst_node == worst);
      CHECK(fit.over_bytes == std::max(0.0, -least));
      const HostMemoryReport all = host_memory_per_node(cluster, layout, bytes);
      CHECK(all.worst_node == worst);
      CHECK(all.nodes.size() == listed);
    }
  }
}

// The planner: offload where memory rules out faster plans, at the smallest fraction that fits.
PlannerOptions single_gpu_search() {
  PlannerOptions options;
  options.space.global_batch_size = 8;
  options.space.seq_length = 4096;
  options.space.max_micro_batch_size = 1;
  options.space.memory_margin = 0;  // "Fits" as the memory model says, to the byte.
  options.top = 3;
  options.threads = 2;
  return options;
}

TEST_CASE("OptimizerOffload: the planner offloads a model that does not fit without it") {
  // Llama-2-7B on one 80 GB A100: 18 bytes per parameter is 113 GiB, so every plan without
  // offload is out. The planner offloads, at the smallest fraction (in steps of 1/20) that fits
  // the plan's other knobs (Deep Optimizer States' argument: the GPU's share of the update is
  // the fast one); full offload of the same plan is slower.
  ModelSpec model = load_model_spec("llama2-7b");
  ClusterSpec cluster = uniform_cluster("A100-SXM-80GB", 1, 1);
  PlannerOptions options = single_gpu_search();
  PlanSearchResult result = search_plans(model, cluster, options);
  REQUIRE(!result.plans.empty());
  const Plan& best = result.plans[0].plan;
  INFO(plan_to_inline(best));
  CHECK(best.offload_optimizer);
  CHECK(best.offload_fraction < 1.0);
  CHECK(result.plans[0].metrics.fits);
  Plan less = best;
  less.offload_fraction = best.offload_fraction - 1.0 / kOffloadFractionSteps;
  less.offload_optimizer = less.offload_fraction > 0;
  CHECK_FALSE(estimate_memory(model, cluster, less).fits);
  // Without the smallest-fitting fraction, the best of the quarters offloads more and is slower.
  options.space.smallest_fitting_offload = false;
  PlanSearchResult quarters = search_plans(model, cluster, options);
  REQUIRE(!quarters.plans.empty());
  CHECK(quarters.plans[0].plan.offload_fraction > best.offload_fraction);
  CHECK(quarters.plans[0].metrics.iteration_time_s > result.plans[0].metrics.iteration_time_s);
  Plan full = best;
  full.offload_fraction = 1.0;
  Simulated all = run(model, cluster, plan_to_inline(full));
  CHECK(all.metrics.fits);
  CHECK(all.metrics.iteration_time_s > result.plans[0].metrics.iteration_time_s);
}

TEST_CASE("OptimizerOffload: where a plan fits without offload, the best does not offload") {
  ModelSpec model = load_model_spec("llama3.2-1b");
  ClusterSpec cluster = uniform_cluster("A100-SXM-80GB", 1, 1);
  PlanSearchResult result = search_plans(model, cluster, single_gpu_search());
  REQUIRE(!result.plans.empty());
  CHECK_FALSE(result.plans[0].plan.offload_optimizer);
}

TEST_CASE("OptimizerOffload: too little host memory leaves no plan, and says why") {
  ModelSpec model = load_model_spec("llama2-7b");
  ClusterSpec cluster = uniform_cluster("A100-SXM-80GB", 1, 1);
  // Half of 6.7B parameters at 16 bytes is 50 GiB of host memory; give the node 32 GiB.
  cluster.nodes[0].host_memory_bytes = 32.0 * 1024 * 1024 * 1024;
  PlanSearchResult result = search_plans(model, cluster, single_gpu_search());
  CHECK(result.plans.empty());
  REQUIRE(result.closest.has_value());
}

}  // namespace
}  // namespace ppsim
