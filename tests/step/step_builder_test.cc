#include "simulator/step/step_builder.h"

#include <catch2/catch.hpp>

#include "simulator/cost/optimizer_step_cost.h"
#include "simulator/cost/profile_table.h"
#include "simulator/engine/engine.h"
#include "simulator/model/layer_ops.h"
#include "simulator/model/memory_model.h"
#include "simulator/step/step_metrics.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::uniform_model;

struct Simulated {
  Step step;
  Timeline timeline;
  StepMetrics metrics;
};

Simulated run(const ModelSpec& model, const ClusterSpec& cluster, const std::string& plan_text,
              StepOptions options = {}) {
  Plan plan = parse_plan(plan_text, "test");
  REQUIRE_FALSE(plan_problem(plan, model, cluster));
  Simulated result{build_step(model, cluster, plan, options), {}, {}};
  result.timeline = simulate_graph(result.step.lowered.graph);
  result.metrics = compute_metrics(model, cluster, plan, result.step, result.timeline);
  return result;
}

// Mean duration of the compute tasks of one kind on one worker.
double mean_duration(const Simulated& s, int32_t worker, ActionKind kind) {
  double total = 0;
  int count = 0;
  for (TaskId id = 0; id < s.step.lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = s.step.lowered.info[id];
    if (info.worker == worker && info.kind == kind && info.role == TaskInfo::Role::kAction) {
      total += s.timeline.end[id] - s.timeline.start[id];
      ++count;
    }
  }
  REQUIRE(count > 0);
  return total / count;
}

// The exact (m+p-1)(tF+tB) oracle with uniform abstract costs is held by schedule_study_test on
// the same lowering and engine; here the stages carry a real model, and the first and last also
// the embedding and the head, which cost a little more than a middle stage (within 1%).
TEST_CASE("Step: with ideal links, 1F1B and GPipe take (m+p-1)(tF+tB) plus the optimizer") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  StepOptions ideal;
  ideal.ideal_links = true;
  for (const char* schedule : {"1f1b", "gpipe"}) {
    INFO(schedule);
    Simulated s = run(uniform_model(32), cluster,
                      std::string("tp=8,pp=4,dp=1,mbs=1,gbs=8,schedule=") + schedule, ideal);
    double tf = mean_duration(s, 1, ActionKind::kForward);
    double tb = mean_duration(s, 1, ActionKind::kBackward);
    double formula = (8 + 4 - 1) * (tf + tb);
    double optimizer = s.metrics.breakdown_s.optimizer;
    CHECK(s.metrics.iteration_time_s - optimizer == Approx(formula).epsilon(0.01));
    CHECK(s.metrics.iteration_time_s - optimizer >= formula);
  }
}

TEST_CASE("Step: identical replicas simulated once give what simulating them all gives") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  ModelSpec model = uniform_model(16);
  for (const char* plan : {"tp=4,pp=2,dp=4,mbs=1,gbs=16,schedule=1f1b",
                           "tp=2,pp=2,dp=8,mbs=1,gbs=32,schedule=1f1b,zero_stage=1",
                           "tp=8,pp=2,dp=2,mbs=1,gbs=8,schedule=zb-h1"}) {
    INFO(plan);
    StepOptions all;
    all.deduplicate_replicas = false;
    Simulated once = run(model, cluster, plan);
    Simulated every = run(model, cluster, plan, all);
    REQUIRE(once.step.classes.count() == 1);
    REQUIRE(every.step.classes.count() > 1);
    CHECK(once.metrics.iteration_time_s == Approx(every.metrics.iteration_time_s).epsilon(1e-9));
    for (size_t i = 0; i < once.metrics.stages.size(); ++i) {
      CHECK(once.metrics.stages[i].busy_s == Approx(every.metrics.stages[i].busy_s).epsilon(1e-9));
      CHECK(once.metrics.stages[i].peak_memory_bytes == every.metrics.stages[i].peak_memory_bytes);
    }
  }
}

TEST_CASE("Step: a GPU at half speed doubles its compute; one slow stage slows the pipeline") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  ModelSpec model = uniform_model(8);
  StepOptions ideal;
  ideal.ideal_links = true;
  // One stage, one GPU: the whole step is that GPU's compute, so it takes exactly twice as long.
  Simulated nominal = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=4", ideal);
  StepOptions slow = ideal;
  slow.gpu_speed.assign(8, 1.0);
  slow.gpu_speed[0] = 0.5;
  Simulated halved = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=4", slow);
  // ... except the framework's per-step host overhead (the runtime's step_overhead_s), which a
  // slow GPU does not stretch.
  double host = ideal.efficiency.overheads(kDefaultRuntime).step_overhead_s;
  CHECK(halved.metrics.iteration_time_s == Approx(2 * nominal.metrics.iteration_time_s - host));
  // Two stages, the second at half speed: 1F1B is bound by the slow stage, which never idles
  // once its first forward arrives: tF0 + m(tF1 + tB1) + tB0, by hand from the dependencies.
  Simulated even = run(model, cluster, "tp=1,pp=2,dp=1,mbs=1,gbs=4", ideal);
  StepOptions second_slow = ideal;
  second_slow.gpu_speed.assign(8, 1.0);
  second_slow.gpu_speed[1] = 0.5;
  Simulated bound = run(model, cluster, "tp=1,pp=2,dp=1,mbs=1,gbs=4", second_slow);
  CHECK(mean_duration(bound, 1, ActionKind::kForward) ==
        Approx(2 * mean_duration(even, 1, ActionKind::kForward)));
  double tf0 = mean_duration(bound, 0, ActionKind::kForward);
  double tb0 = mean_duration(bound, 0, ActionKind::kBackward);
  double tf1 = mean_duration(bound, 1, ActionKind::kForward);
  double tb1 = mean_duration(bound, 1, ActionKind::kBackward);
  double optimizer = bound.metrics.breakdown_s.optimizer;
  CHECK(bound.metrics.iteration_time_s - optimizer ==
        Approx(tf0 + 4 * (tf1 + tb1) + tb0).epsilon(1e-9));
}

TEST_CASE("Step: a slower NIC lengthens cross-node pipeline sends in proportion") {
  ModelSpec model = uniform_model(16);
  ClusterSpec fast = load_cluster_spec("dgx-h100-4");
  ClusterSpec slow = fast;
  slow.nodes[0].nic.link.bandwidth /= 2;
  const char* plan = "tp=8,pp=4,dp=1,mbs=1,gbs=4,schedule=gpipe";
  Simulated a = run(model, fast, plan);
  Simulated b = run(model, slow, plan);
  auto first_send = [](const Simulated& s) {
    for (TaskId id = 0; id < s.step.lowered.graph.num_tasks(); ++id) {
      if (s.step.lowered.info[id].kind == ActionKind::kSendForward) {
        const Task& task = s.step.lowered.graph.task(id);
        return s.timeline.end[id] - s.timeline.start[id] - task.latency;
      }
    }
    FAIL("no send");
    return 0.0;
  };
  // Every node's links are capped by the per-GPU rails: half the NIC, twice the time.
  CHECK(first_send(b) == Approx(2 * first_send(a)).epsilon(1e-6));
  CHECK(b.metrics.iteration_time_s > a.metrics.iteration_time_s);
}

TEST_CASE("Step: data-parallel traffic sharing a NIC slows pipeline sends") {
  // Stage 0 spans nodes 0-1 (replicas 0, 1), stage 1 nodes 2-3: the DP ring of stage 0 and
  // its pipeline sends both leave node 0 through its NICs.
  ModelSpec model = uniform_model(16);
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  Simulated s = run(model, cluster, "tp=8,pp=2,dp=2,mbs=1,gbs=16,schedule=1f1b");
  const TaskGraph& graph = s.step.lowered.graph;
  double alone_rate = 0, shared_rate = 1e300;
  int shared = 0;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskInfo& info = s.step.lowered.info[id];
    if (info.kind != ActionKind::kSendBackward || info.role != TaskInfo::Role::kAction) continue;
    double start = s.timeline.start[id] + graph.task(id).latency;
    double rate = graph.task(id).work / (s.timeline.end[id] - start);
    bool overlaps_reduce = false;
    for (TaskId other = 0; other < graph.num_tasks(); ++other) {
      if (s.step.lowered.info[other].role != TaskInfo::Role::kGradientReduce) continue;
      if (s.timeline.start[other] < s.timeline.end[id] && s.timeline.end[other] > start &&
          s.step.lowered.info[other].worker == 1) {
        overlaps_reduce = true;
      }
    }
    if (overlaps_reduce) {
      shared_rate = std::min(shared_rate, rate);
      ++shared;
    } else {
      alone_rate = std::max(alone_rate, rate);
    }
  }
  REQUIRE(shared > 0);
  CHECK(shared_rate < 0.99 * alone_rate);
}

// A worker whose cp ranks spread over several nodes sends from all of them: each node carries
// its own GPUs' share. The distributed optimizer's all-gather over the same 4 ranks on the same
// 4 nodes, with the same bytes per GPU (tp 8, the whole model), takes as long whether the 4
// ranks are data-parallel replicas (cp 1) or one replica's context-parallel ranks (cp 4); a
// model that routed the cp worker's 32 GPUs through its first node took 4x as long.
TEST_CASE("Step: a context-parallel worker over several nodes sends on every node's NICs") {
  ModelSpec model = uniform_model(16);
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  auto gather_seconds = [](const Simulated& s) {
    for (TaskId id = 0; id < s.step.lowered.graph.num_tasks(); ++id) {
      if (s.step.lowered.info[id].role == TaskInfo::Role::kParamGather) {
        return s.timeline.end[id] - s.timeline.start[id];
      }
    }
    FAIL("no parameter all-gather");
    return 0.0;
  };
  Simulated replicas = run(model, cluster, "tp=8,pp=1,dp=4,cp=1,mbs=1,gbs=4,zero_stage=1");
  Simulated ring = run(model, cluster, "tp=8,pp=1,dp=1,cp=4,mbs=1,gbs=1,zero_stage=1");
  REQUIRE(ring.step.layout.workers[0].nodes == 4);
  CHECK(gather_seconds(ring) == Approx(gather_seconds(replicas)).epsilon(1e-9));
}

// Megatron-Core reduces routed experts' gradients over the expert data-parallel group. With ep 8
// filling each 8-GPU node of dgx-h100-4, that group is one GPU on each of the 4 nodes: every
// byte of an expert bucket goes through the NIC, (4-1)/4 of it per GPU, while a dense bucket's
// 32-rank group reduces inside the node first and sends (4-1)/4 of an eighth. The optimizer
// updates dense/32 + expert/4 parameters and gathers each part over its own group.
TEST_CASE("Step: routed experts' gradients reduce over the expert data-parallel group") {
  ModelSpec model = testing::tiny_moe_model();
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  const std::string text = "tp=1,pp=1,dp=32,ep=8,mbs=1,gbs=32,zero_stage=1";
  Plan plan = parse_plan(text, "test");
  REQUIRE(plan.expert_dp() == 4);
  Simulated s = run(model, cluster, text);
  const StageParameters params = stage_parameters(model, plan, 0);
  // By hand: per layer q, k, v, o (2 x 64 x 64 + 2 x 64 x 32), two norms (2 x 64), the router
  // (64 x 8); the embedding and output layer (2 x 256 x 64) and the final norm (64). Per layer
  // the experts' 8 x 3 x 64 x 128 over ep 8.
  REQUIRE(params.dense == 2 * (2 * 64 * 64 + 2 * 64 * 32 + 2 * 64 + 64 * 8) + 2 * 256 * 64 + 64);
  REQUIRE(params.expert == 2 * 3 * 64 * 128);
  const double gradient = gradient_bytes_per_param(plan);
  const TaskGraph& graph = s.step.lowered.graph;
  double expert_bytes = 0, dense_bytes = 0;
  int gathers = 0;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskInfo& info = s.step.lowered.info[id];
    if (info.worker != 0) continue;
    const double bytes = s.step.task_bytes[id];
    const double work = graph.task(id).work;
    if (info.role == TaskInfo::Role::kGradientReduce) {
      if (work == Approx(0.75 * bytes).epsilon(1e-12)) {
        expert_bytes += bytes;
      } else {
        CHECK(work == Approx(0.75 * bytes / 8).epsilon(1e-12));
        dense_bytes += bytes;
      }
    } else if (info.role == TaskInfo::Role::kParamGather) {
      ++gathers;
      // (N-1)/N of S/g: the expert gather's g is 1, the dense one's 8.
      const bool expert = bytes == Approx(params.expert * kStepParameterBytes).epsilon(1e-12);
      if (!expert) CHECK(bytes == Approx(params.dense * kStepParameterBytes).epsilon(1e-12));
      CHECK(work == Approx(0.75 * bytes / (expert ? 1 : 8)).epsilon(1e-12));
    } else if (info.role == TaskInfo::Role::kOptimizer) {
      CHECK(bytes == Approx((params.dense / 32 + params.expert / 4) * kStepAdamBytesPerParameter)
                         .epsilon(1e-12));
    }
  }
  CHECK(expert_bytes == Approx(params.expert * gradient).epsilon(1e-12));
  CHECK(dense_bytes == Approx(params.dense * gradient).epsilon(1e-12));
  CHECK(gathers == 2);
  // Reduced in bf16 (grad_reduce_in_fp32=false) the buckets carry 2 bytes per parameter.
  REQUIRE(gradient == 4);
  Simulated half = run(model, cluster, text + ",grad_reduce_in_fp32=false");
  double half_bytes = 0;
  for (TaskId id = 0; id < half.step.lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = half.step.lowered.info[id];
    if (info.worker == 0 && info.role == TaskInfo::Role::kGradientReduce)
      half_bytes += half.step.task_bytes[id];
  }
  CHECK(half_bytes == Approx(2 * params.total()).epsilon(1e-12));
  // The expert collectives ride the same replica classes as the dense ones.
  StepOptions all;
  all.deduplicate_replicas = false;
  Simulated every = run(model, cluster, text, all);
  REQUIRE(every.step.classes.count() > 1);
  CHECK(s.metrics.iteration_time_s == Approx(every.metrics.iteration_time_s).epsilon(1e-9));
}

TEST_CASE("Step: activation memory follows the schedule (1F1B holds p - r microbatches)") {
  ModelSpec model = uniform_model(16);
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  StepOptions ideal;
  ideal.ideal_links = true;
  Simulated s = run(model, cluster, "tp=8,pp=4,dp=1,mbs=1,gbs=16,schedule=1f1b", ideal);
  Simulated g = run(model, cluster, "tp=8,pp=4,dp=1,mbs=1,gbs=16,schedule=gpipe", ideal);
  // Stage 1 holds only layers: per microbatch the same bytes, p - 1 = 3 in flight vs m = 16.
  double per_microbatch = g.metrics.stages[1].activation_peak_bytes / 16;
  CHECK(s.metrics.stages[1].activation_peak_bytes == Approx(3 * per_microbatch));
  CHECK(s.metrics.stages[2].activation_peak_bytes == Approx(2 * per_microbatch));
}

TEST_CASE("Step: the same inputs give the same timeline") {
  ModelSpec model = uniform_model(16);
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  Simulated a = run(model, cluster, "tp=4,pp=2,dp=4,mbs=1,gbs=32,schedule=interleaved-1f1b,vpp=2");
  Simulated b = run(model, cluster, "tp=4,pp=2,dp=4,mbs=1,gbs=32,schedule=interleaved-1f1b,vpp=2");
  CHECK(a.timeline.start == b.timeline.start);
  CHECK(a.timeline.end == b.timeline.end);
  CHECK(a.metrics.events == b.metrics.events);
}

// A profile whose every lookup lands below its one measured point, so each pass takes that
// point's time (the latency floor, profile.h): GEMM 1 ms, attention 2 ms forward and 5 ms
// backward, memory-bound kernels 0.3 ms.
Profile flat_profile() {
  Profile profile;
  profile.backend = "cpu";
  profile.device.name = "synthetic";
  GemmSample gemm;
  gemm.dtype = "bf16";
  gemm.m = gemm.n = gemm.k = 1e6;
  gemm.seconds = 1e-3;
  profile.gemm.push_back(gemm);
  for (bool backward : {false, true}) {
    AttentionSample attention;
    attention.dtype = "bf16";
    attention.backward = backward;
    attention.impl = "eigen";
    attention.batch_heads = 1;
    attention.seq_len = 1e6;
    attention.head_dim = 16;
    attention.flops = 1e18;
    attention.seconds = backward ? 5e-3 : 2e-3;
    profile.attention.push_back(attention);
  }
  profile.memory.push_back(MemorySample{"copy", 1e15, 3e-4});
  return profile;
}

TEST_CASE("Step: with a profile, an F task lasts the sum of its measured passes") {
  ModelSpec model = testing::tiny_dense_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1, 8);
  ProfileTable table(flat_profile());
  StepOptions options;
  options.ideal_links = true;
  options.profile = &table;
  options.profile_path = "synthetic.json";
  // The profile measured unfused attention (eigen), so the plan runs that kernel.
  Simulated s = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=4,attention=unfused", options);
  // The forward of the whole model (one stage): per op with forward kernels, its class's
  // measured time plus one launch gap per kernel (cost_model.h), then the framework's
  // per-microbatch dispatch once (step_builder.h).
  OpShape shape = op_shape(s.step.plan, model);
  int gemms = 0, attentions = 0, memory_ops = 0, kernels = 0;
  auto count = [&](const OpList& ops) {
    for (const Op& op : ops) {
      if (op.kernels_fwd == 0) continue;
      kernels += op.kernels_fwd;
      if (op.op_class == OpClass::kGemm) ++gemms;
      if (op.op_class == OpClass::kAttention) ++attentions;
      if (op.op_class == OpClass::kMemoryBound) ++memory_ops;
    }
  };
  count(embedding_ops(model, shape));
  for (int64_t layer = 0; layer < model.num_layers; ++layer) count(layer_ops(model, shape, layer));
  count(head_ops(model, shape));
  // Two layers of 4 GEMMs (QKV, output projection, gate/up, down) and one attention each, plus
  // the output layer's GEMM.
  CHECK(gemms == 2 * 4 + 1);
  CHECK(attentions == 2);
  const EfficiencyTable& e = options.efficiency;
  double expected = gemms * 1e-3 + attentions * 2e-3 + memory_ops * 3e-4 +
                    kernels * e.overheads(kDefaultRuntime).kernel_gap_s +
                    e.overheads(kDefaultRuntime).microbatch_overhead_s;
  CHECK(mean_duration(s, 0, ActionKind::kForward) == Approx(expected).epsilon(1e-9));
  CHECK(s.step.provenance.source() == CostSource::kProfile);
  CHECK(s.step.provenance.roofline_passes == 0);
  CHECK(s.step.provenance.profile_passes > 0);
  CHECK(s.step.provenance.extrapolated_passes == s.step.provenance.profile_passes);
  CHECK(s.step.provenance.unprofiled_attention.empty());
  // Under the runtime's fused kernel, which the profile did not measure, the two attention
  // ops' forward and input-gradient passes (no weight gradient) keep the roofline and the
  // report names the kernel; validate's stand-in (its executor runs the profiler's kernel)
  // prices them from the profile again.
  Simulated fused = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=4", options);
  CHECK(fused.step.provenance.roofline_passes == 2 * 2);
  CHECK(fused.step.provenance.profile_passes == s.step.provenance.profile_passes - 2 * 2);
  CHECK(fused.step.provenance.unprofiled_attention == "fused");
  CHECK(mean_duration(fused, 0, ActionKind::kForward) < mean_duration(s, 0, ActionKind::kForward));
  options.profile_attention_stand_in = true;
  Simulated stand_in = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=4", options);
  CHECK(stand_in.step.provenance.roofline_passes == 0);
  CHECK(stand_in.step.provenance.unprofiled_attention.empty());
  CHECK(mean_duration(stand_in, 0, ActionKind::kForward) ==
        Approx(mean_duration(s, 0, ActionKind::kForward)).epsilon(1e-9));
  // Without the profile the roofline prices the same task differently.
  Simulated roofline = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=4", StepOptions{});
  CHECK(roofline.step.provenance.source() == CostSource::kRoofline);
  CHECK(mean_duration(roofline, 0, ActionKind::kForward) != Approx(expected).epsilon(1e-3));
}

TEST_CASE("Step: a profile of another GPU type leaves those GPUs on the roofline") {
  ModelSpec model = testing::tiny_dense_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1, 8);
  Profile profile = flat_profile();
  profile.device.catalog_gpu = "A100-SXM-80GB";
  ProfileTable table(profile);
  StepOptions options;
  options.ideal_links = true;
  options.profile = &table;
  options.profile_path = "a100.json";
  Simulated with = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=4", options);
  Simulated without = run(model, cluster, "tp=1,pp=1,dp=1,mbs=1,gbs=4", StepOptions{});
  CHECK(with.metrics.iteration_time_s == without.metrics.iteration_time_s);
  CHECK(with.step.provenance.source() == CostSource::kRoofline);
  CHECK(with.step.provenance.unprofiled_gpus == std::vector<std::string>{"H100-SXM-80GB"});
  CHECK_THAT(unprofiled_gpus_warning(with.step.provenance),
             Catch::Contains("measured on A100-SXM-80GB; H100-SXM-80GB GPUs keep the roofline"));
}

TEST_CASE("Step: a measured collective sets the tensor-parallel time inside the task") {
  ModelSpec model = testing::tiny_dense_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1, 8);
  Profile profile;
  profile.backend = "cpu";
  profile.device.name = "synthetic";
  // All-reduce on 2 ranks of one node: 50 us at every size up to 1 MB (the tiny model's
  // activations are 32 x 64 x 2 = 4 KiB).
  for (double bytes : {1.0, 1e6}) {
    profile.collectives.push_back(
        CollectiveSample{Collective::kAllReduce, 2, 2, "intra_node", bytes, 50e-6});
  }
  ProfileTable table(profile);
  StepOptions options;
  options.profile = &table;
  Simulated measured = run(model, cluster, "tp=2,pp=1,dp=1,mbs=1,gbs=4", options);
  Simulated modelled = run(model, cluster, "tp=2,pp=1,dp=1,mbs=1,gbs=4", StepOptions{});
  // Per layer 2 all-reduces forward (Megatron), 2 layers: the forward's exposed communication.
  double forward_comm = 0;
  for (TaskId id = 0; id < measured.step.lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = measured.step.lowered.info[id];
    if (info.kind == ActionKind::kForward && info.role == TaskInfo::Role::kAction) {
      forward_comm = measured.step.embedded_comm_seconds[id];
      break;
    }
  }
  CHECK(forward_comm == Approx(2 * 2 * 50e-6));
  CHECK(measured.step.provenance.profile_comm > 0);
  CHECK(measured.step.provenance.extrapolated_comm == 0);
  CHECK(measured.metrics.iteration_time_s != modelled.metrics.iteration_time_s);
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("Step: a pipeline layout splits the layers as it says") {
  // 32 equal layers on pp 4 x vpp 2 against the even split (4 per virtual stage).
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  ModelSpec model = testing::uniform_model(32);
  const std::string base = "tp=8,pp=4,dp=1,mbs=1,gbs=16,";
  Simulated even = run(model, cluster, base + "schedule=interleaved-1f1b,vpp=2");
  const std::vector<StageResult>& even_stages = even.metrics.stages;
  REQUIRE(even_stages.size() == 4);
  SECTION("the even split written as a layout: the same step, bit for bit") {
    Simulated layout = run(model, cluster, base + "pipeline_layout=Et*4|(t*4|)*6,t*4L");
    CHECK(layout.metrics.iteration_time_s == even.metrics.iteration_time_s);
    for (size_t s = 0; s < 4; ++s) CHECK(layout.metrics.stages[s].busy_s == even_stages[s].busy_s);
  }
  // Layers moved by `layout` from rank `from` to rank `to`: their busy time moves with them,
  // exactly, and the other ranks keep theirs. Returns the busy time moved.
  auto moved_busy = [&](const std::string& layout, size_t from, size_t to) {
    Simulated moved = run(model, cluster, base + "pipeline_layout=" + layout);
    const std::vector<StageResult>& stages = moved.metrics.stages;
    const double busy = even_stages[from].busy_s - stages[from].busy_s;
    CHECK(stages[to].busy_s - even_stages[to].busy_s == Approx(busy).epsilon(1e-9));
    for (size_t s = 0; s < 4; ++s) {
      if (s != from && s != to)
        CHECK(stages[s].busy_s == Approx(even_stages[s].busy_s).epsilon(1e-12));
    }
    return busy;
  };
  SECTION("one layer moved from rank 3 to rank 1: one layer's busy time moves with it") {
    // Rank 1's second virtual stage takes a layer from rank 3's first: ranks hold 8, 9, 8, 7.
    const double busy = moved_busy("Et*4|t*4|t*4|t*3|t*4|t*5|t*4|t*4L", 3, 1);
    // One layer of 16 microbatches: under an eighth of rank 1's even busy time (which also
    // holds its chunks' per-microbatch dispatch) and over a ninth of it.
    CHECK(busy < even_stages[1].busy_s / 8);
    CHECK(busy > even_stages[1].busy_s / 9);
  }
  SECTION("a middle rank's empty virtual stage: its four layers move whole to rank 3") {
    // Rank 1's second virtual stage is empty, rank 3's second holds 8: ranks hold 8, 4, 8, 12.
    const double busy = moved_busy("Et*4|t*4|t*4|t*4|t*4||t*4|t*8L", 1, 3);
    // Half of rank 1's layers, less than half its busy time (its per-microbatch dispatch stays).
    CHECK(busy < even_stages[1].busy_s / 2);
    CHECK(busy > even_stages[1].busy_s / 3);
  }
  SECTION("a middle rank with no layers at all only relays") {
    // Rank 2's two virtual stages are empty; ranks hold 8, 8, 0, 16.
    Simulated relay = run(model, cluster, base + "pipeline_layout=Et*4|t*4||t*4|t*4|t*4||t*12L");
    const std::vector<StageResult>& stages = relay.metrics.stages;
    CHECK(stages[1].busy_s == Approx(even_stages[1].busy_s).epsilon(1e-12));
    CHECK(stages[2].busy_s < even_stages[2].busy_s / 20);
    CHECK(relay.metrics.iteration_time_s > even.metrics.iteration_time_s);
  }
}

}  // namespace
}  // namespace ppsim
