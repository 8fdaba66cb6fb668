// Lowering with blocking sends (LoweringCosts::blocking_sends): Megatron's non-interleaved
// pipelines wait for each send before their next compute action.
#include "simulator/schedule/schedule_lowering.h"

#include <catch2/catch.hpp>

#include "simulator/engine/engine.h"
#include "simulator/schedule/schedule_study.h"

namespace ppsim {
namespace {

class BlockingCosts : public AbstractCosts {
 public:
  using AbstractCosts::AbstractCosts;
  bool blocking_sends() const override { return true; }
};

ScheduleStudyInput input_of(int32_t p, int32_t m, double comm) {
  ScheduleStudyInput input;
  input.schedule = ScheduleKind::kOneFOneB;
  input.stages = p;
  input.microbatches = m;
  input.costs.assign(p, StageCosts{1, 2, 0});
  input.comm = comm;
  return input;
}

struct Lowerings {
  Lowered free, blocking;
};

Lowerings lower_both(const ScheduleStudyInput& input) {
  PipelineSchedule schedule =
      fuse_backward(build_pipeline_schedule(input.schedule, input.stages, input.microbatches, 1));
  AbstractCosts free_costs(input);
  BlockingCosts blocking_costs(input);
  std::vector<double> speed(input.stages, 1.0);
  return {lower_schedule(schedule, 1, speed, free_costs),
          lower_schedule(schedule, 1, speed, blocking_costs)};
}

TEST_CASE("Lowering: a blocking send holds the sender's next compute until it is delivered") {
  Lowerings lowered = lower_both(input_of(3, 3, 1.0));
  const Lowered& g = lowered.blocking;
  // Rank 0 runs F0, F1 (warm-up) before its first backward: with blocking sends F1 waits for
  // the transfer of F0's output.
  TaskId f0 = -1, f1 = -1, send_f0 = -1;
  for (TaskId id = 0; id < g.graph.num_tasks(); ++id) {
    const TaskInfo& info = g.info[id];
    if (info.worker != 0) continue;
    if (info.kind == ActionKind::kForward && info.microbatch == 0) f0 = id;
    if (info.kind == ActionKind::kForward && info.microbatch == 1) f1 = id;
    if (info.kind == ActionKind::kSendForward && info.microbatch == 0) send_f0 = id;
  }
  REQUIRE(f0 >= 0);
  REQUIRE(f1 >= 0);
  REQUIRE(send_f0 >= 0);
  auto has_edge = [](const Lowered& lowered, TaskId before, TaskId after) {
    for (const auto& [b, a] : lowered.graph.dependencies()) {
      if (b == before && a == after) return true;
    }
    return false;
  };
  CHECK(has_edge(lowered.blocking, send_f0, f1));
  CHECK_FALSE(has_edge(lowered.free, send_f0, f1));
  CHECK_FALSE(g.graph.find_cycle([](TaskId id) { return std::to_string(id); }).has_value());
  // Timing: F1 on rank 0 starts after F0 (1) and its transfer (1): at 2, not 1.
  Timeline blocking = simulate_graph(lowered.blocking.graph);
  Timeline free = simulate_graph(lowered.free.graph);
  CHECK(blocking.start[f1] == Approx(2.0));
  CHECK(free.start[f1] == Approx(1.0));
  CHECK(blocking.makespan >= free.makespan);
}

TEST_CASE("Lowering: with free transfers blocking sends change nothing") {
  for (int32_t m : {1, 2, 4, 8}) {
    INFO("m=" << m);
    Lowerings lowered = lower_both(input_of(4, m, 0.0));
    CHECK(simulate_graph(lowered.blocking.graph).makespan ==
          Approx(simulate_graph(lowered.free.graph).makespan));
    // (m + p - 1)(tf + tb), the 1F1B makespan.
    CHECK(simulate_graph(lowered.blocking.graph).makespan == Approx((m + 3) * 3.0));
  }
}

}  // namespace
}  // namespace ppsim
