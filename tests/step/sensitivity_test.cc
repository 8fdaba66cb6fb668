// What-if sensitivity: which component's 10% slowdown hurts the step most.
#include "simulator/step/sensitivity.h"

#include <catch2/catch.hpp>

namespace ppsim {
namespace {

ModelSpec model_with_vocab(int64_t vocab) {
  ModelSpec model;
  model.name = "sensitive";
  model.num_layers = 8;
  model.hidden_size = 4096;
  model.ffn_hidden_size = 14336;
  model.num_attention_heads = 32;
  model.num_kv_heads = 8;
  model.head_dim = 128;
  model.vocab_size = vocab;
  model.seq_length = 4096;
  model.tied_embeddings = false;
  return model;
}

Sensitivity sensitivity_of(const ModelSpec& model, const ClusterSpec& cluster,
                           const char* plan_text, const StragglerModel& stragglers = {},
                           int threads = 1) {
  Plan plan = parse_plan(plan_text, "test");
  REQUIRE_FALSE(plan_problem(plan, model, cluster));
  return step_sensitivity(model, cluster, plan, {}, stragglers, threads);
}

TEST_CASE("Sensitivity: the same entries on one thread or several") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  StragglerModel slow;
  slow.stragglers.push_back(parse_straggler_flag("gpu=3:0.7"));
  const char* plan = "tp=4,pp=2,dp=4,mbs=1,gbs=16,zero_stage=1";
  Sensitivity one = sensitivity_of(model_with_vocab(128), cluster, plan, slow, 1);
  for (int threads : {2, 5, 0}) {
    INFO(threads);
    Sensitivity many = sensitivity_of(model_with_vocab(128), cluster, plan, slow, threads);
    CHECK(many.base_step_time_s == one.base_step_time_s);
    REQUIRE(many.entries.size() == one.entries.size());
    for (size_t i = 0; i < one.entries.size(); ++i) {
      CHECK(many.entries[i].component == one.entries[i].component);
      CHECK(many.entries[i].step_time_s == one.entries[i].step_time_s);
    }
  }
}

TEST_CASE("Sensitivity: the stage holding the loss ranks first when it is the slowest") {
  // Llama 3's 128k vocabulary: the last stage's output layer and loss outweigh a layer, and
  // the layers are split evenly, so stage 3 is the pipeline's bottleneck.
  ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
  Sensitivity result =
      sensitivity_of(model_with_vocab(128256), cluster, "tp=2,pp=4,dp=1,mbs=1,gbs=16");
  REQUIRE(result.entries.size() >= 4);
  CHECK(result.entries[0].component.find("stage 3 GPUs") == 0);
  // A bottleneck stage 10% slower makes most of the step 10% slower.
  CHECK(result.entries[0].step_time_increase_pct > 5);
  CHECK(result.entries[0].step_time_increase_pct < 11.2);
  // Worst first.
  for (size_t i = 1; i < result.entries.size(); ++i) {
    CHECK(result.entries[i - 1].step_time_increase_pct >= result.entries[i].step_time_increase_pct);
  }
}

TEST_CASE("Sensitivity: a cross-node link ranks first when the plan is communication-bound") {
  // Four nodes with 10 Gb/s NICs, one pipeline stage per node: the activations crossing the
  // nodes take longer than the stages' compute.
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  cluster.nodes[0].nic.link.bandwidth /= 40;
  Sensitivity result =
      sensitivity_of(model_with_vocab(128), cluster, "tp=8,pp=4,dp=1,mbs=1,gbs=16");
  REQUIRE_FALSE(result.entries.empty());
  const std::string& top = result.entries[0].component;
  INFO(top);
  CHECK((top.find("NICs") == 0 || top.find("PP send/recv") == 0 ||
         top.find("cross-node") != std::string::npos));
  CHECK(result.entries[0].step_time_increase_pct > 5);
  bool has_stage_link = false;
  for (const SensitivityEntry& entry : result.entries) {
    has_stage_link = has_stage_link || entry.component == "PP link stage 1-2 (cross-node)";
  }
  CHECK(has_stage_link);
}

TEST_CASE("Sensitivity: data-parallel components appear with dp > 1, and the base is fixed") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  StragglerModel slow;
  slow.stragglers.push_back(parse_straggler_flag("node=0:0.8"));
  slow.jitter = parse_jitter_flag("lognormal:0.2");  // Left out: sensitivity is deterministic.
  Sensitivity a = sensitivity_of(model_with_vocab(128), cluster,
                                 "tp=8,pp=2,dp=2,mbs=1,gbs=16,zero_stage=1", slow);
  Sensitivity b = sensitivity_of(model_with_vocab(128), cluster,
                                 "tp=8,pp=2,dp=2,mbs=1,gbs=16,zero_stage=1", slow);
  CHECK(a.base_step_time_s == b.base_step_time_s);
  bool reduce = false, gather = false, tp = false;
  for (const SensitivityEntry& entry : a.entries) {
    reduce = reduce || entry.component == "DP gradient reduce";
    gather = gather || entry.component == "DP parameter all-gather";
    tp = tp || entry.component == "TP collectives (inside compute)";
    // Slowing one flow can let another on its links finish a hair sooner (max-min sharing),
    // so an entry may dip just below zero; never by much.
    CHECK(entry.step_time_increase_pct >= -0.01);
  }
  CHECK(reduce);
  CHECK(gather);
  CHECK(tp);
  // The slow node (stage 0 of replica 0) makes stage 0 the one to watch.
  CHECK(a.entries[0].component.find("stage 0 GPUs") == 0);
}

}  // namespace
}  // namespace ppsim
