// StepProgram: the executor's instructions are the schedule builder's action lists, tied to the
// lowered tasks; compute passes in the documented order; replay_with_measured.
#include <catch2/catch.hpp>

#include "simulator/engine/engine.h"
#include "simulator/engine/measured_step.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_program.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

Step tiny_step(const std::string& schedule, int64_t pp, int64_t dp, int64_t gbs) {
  ModelSpec model = testing::tiny_dense_model();
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1);
  Plan plan = load_plan("pp=" + std::to_string(pp) + ",dp=" + std::to_string(dp) +
                        ",mbs=1,gbs=" + std::to_string(gbs) + ",schedule=" + schedule);
  StepOptions options;
  options.deduplicate_replicas = false;
  return build_step(model, cluster, plan, options);
}

TEST_CASE("StepProgram: every worker runs its rank's action list, in the schedule's order") {
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
    Step step = tiny_step(schedule, 2, 2, 8);
    StepProgram program = build_step_program(step, testing::tiny_dense_model());
    REQUIRE(program.workers == 4);
    for (int32_t w = 0; w < program.workers; ++w) {
      const std::vector<Action>& actions = step.schedule.rank_actions[w % 2];
      REQUIRE(program.instructions[w].size() == actions.size());
      for (size_t i = 0; i < actions.size(); ++i) {
        INFO(schedule << " worker " << w << " instruction " << i);
        CHECK(program.instructions[w][i].label == action_label(actions[i]));
      }
    }
  }
}

TEST_CASE("StepProgram: instructions carry their tasks, peers and bytes") {
  Step step = tiny_step("1f1b", 2, 2, 8);
  StepProgram program = build_step_program(step, testing::tiny_dense_model());
  const Lowered& lowered = step.lowered;
  int sends = 0, receives = 0, syncs = 0;
  for (int32_t w = 0; w < program.workers; ++w) {
    for (const Instruction& in : program.instructions[w]) {
      switch (in.action.kind) {
        case ActionKind::kForward:
        case ActionKind::kBackward: {
          REQUIRE(in.tasks.size() == 1);
          const TaskInfo& info = lowered.info[in.tasks[0]];
          CHECK(info.worker == w);
          CHECK(info.kind == in.action.kind);
          CHECK(info.microbatch == in.action.microbatch);
          if (in.action.kind == ActionKind::kForward) CHECK(in.alloc_bytes > 0);
          if (in.action.kind == ActionKind::kBackward) {
            CHECK(in.alloc_bytes == 0);
            CHECK(in.free_bytes > 0);  // A fused backward frees what its forward saved.
          }
          break;
        }
        case ActionKind::kSendForward:
          ++sends;
          CHECK(in.peer == w + 1);  // Same replica, next stage.
          CHECK(in.transfer == in.tasks.at(0));
          CHECK(in.bytes == 1 * 32 * 64 * 2);  // b * s * h * 2 bytes (tiny model: s 32, h 64).
          break;
        case ActionKind::kRecvForward:
          ++receives;
          CHECK(in.tasks.empty());
          CHECK(in.peer == w - 1);
          CHECK(lowered.info[in.transfer].worker == w - 1);
          CHECK(lowered.info[in.transfer].kind == ActionKind::kSendForward);
          break;
        case ActionKind::kGradientSync:
          ++syncs;
          REQUIRE_FALSE(in.tasks.empty());  // dp 2: at least one bucket.
          for (int32_t group : in.groups) {
            REQUIRE(group >= 0);
            const CollectiveCall& call = program.collectives[group];
            CHECK(call.kind == Collective::kAllReduce);
            CHECK(call.workers.size() == 2);  // The two replicas of the stage.
            CHECK(call.bytes > 0);
          }
          break;
        case ActionKind::kOptimizerStep:
          CHECK(in.bytes > 0);  // Adam bytes.
          break;
        default: break;
      }
    }
  }
  CHECK(sends == 2 * 4);  // 2 replicas x 4 microbatches.
  CHECK(receives == sends);
  CHECK(syncs == 4);
}

TEST_CASE("compute_passes: forward in order; backward recomputes, then B and W in reverse") {
  Op a, b;
  a.name = "first";
  a.kernels_fwd = a.kernels_b = a.kernels_w = 1;
  b.name = "second";
  b.kernels_fwd = b.kernels_b = 1;  // No weights: no W pass.
  b.recomputed = true;
  std::vector<Op> ops{a, b};
  auto names = [&](ActionKind kind) {
    std::string out;
    for (const OpPass& pass : compute_passes(ops, kind)) {
      out += std::string(pass.op->name) + "." + "FBW"[int(pass.pass)] + " ";
    }
    return out;
  };
  CHECK(names(ActionKind::kForward) == "first.F second.F ");
  CHECK(names(ActionKind::kBackward) == "second.F second.B first.B first.W ");
  CHECK(names(ActionKind::kBackwardInput) == "second.F second.B first.B ");
  CHECK(names(ActionKind::kBackwardWeight) == "first.W ");
}

TEST_CASE("replay_with_measured: predicted durations give the prediction back; slower compute "
          "stretches the step") {
  Step step = tiny_step("1f1b", 2, 1, 4);
  const TaskGraph& graph = step.lowered.graph;
  Timeline predicted = simulate_graph(graph);
  std::vector<double> durations(graph.num_tasks());
  std::vector<bool> measured(graph.num_tasks(), false);
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    durations[id] = predicted.end[id] - predicted.start[id];
    measured[id] = graph.task(id).kind == TaskKind::kCompute;
  }
  CHECK(replay_with_measured(graph, durations, measured).makespan ==
        Approx(predicted.makespan).epsilon(1e-9));
  for (double& d : durations) d *= 2;
  CHECK(replay_with_measured(graph, durations, measured).makespan > 1.5 * predicted.makespan);
}

}  // namespace
}  // namespace ppsim
