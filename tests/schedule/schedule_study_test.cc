// Schedule studies in abstract costs (issue 9): the bubble formulas of the papers, hand-computed
// cases with non-uniform stages and communication, activation peaks, and the action orders of
// REFERENCE.md section 4 for p = 4, m = 8.
#include "simulator/schedule/schedule_study.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

ScheduleStudyInput uniform(ScheduleKind kind, int32_t p, int32_t m, double tf, double tb, double tw,
                           int32_t v = 0) {
  ScheduleStudyInput input;
  input.schedule = kind;
  input.stages = p;
  input.microbatches = m;
  input.chunks_per_rank =
      v > 0 ? v : (kind == ScheduleKind::kZbv || kind == ScheduleKind::kDualPipeV ? 2 : 1);
  input.costs.assign(p, StageCosts{tf, tb, tw});
  return input;
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

// The orders a study reports (compute_order with zero-bubble letters), p = 4, m = 8.
std::vector<std::string> orders(ScheduleKind kind) {
  ScheduleStudyInput input = uniform(kind, 4, 8, 1, 1, 1);
  PipelineSchedule schedule = build_pipeline_schedule(kind, 4, 8, input.chunks_per_rank);
  std::vector<std::string> result;
  for (int32_t r = 0; r < 4; ++r) result.push_back(compute_order(schedule, r));
  return result;
}

using Orders = std::vector<std::string>;

TEST_CASE("ScheduleStudy: GPipe and 1F1B take (m+p-1)(tf+tb+tw) with free communication") {
  struct Costs {
    double tf, tb, tw;
  };
  for (Costs c : {Costs{1, 1, 1}, Costs{1, 2, 0}, Costs{1.5, 2, 0.75}, Costs{0.3, 0.7, 0.1}}) {
    for (int32_t p : {1, 2, 4, 5}) {
      for (int32_t m : {p, 2 * p, 3 * p + 1}) {
        for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB}) {
          INFO(schedule_name(kind)
               << " p=" << p << " m=" << m << " tf=" << c.tf << " tb=" << c.tb << " tw=" << c.tw);
          ScheduleStudy study = run_schedule_study(uniform(kind, p, m, c.tf, c.tb, c.tw));
          const double expected = (m + p - 1) * (c.tf + c.tb + c.tw);
          CHECK(near(study.makespan, expected));
          for (const StageStudy& stage : study.stages) {
            CHECK(near(stage.busy, m * (c.tf + c.tb + c.tw)));
            CHECK(near(stage.bubble, (p - 1) * (c.tf + c.tb + c.tw)));
          }
          CHECK(near(study.bubble_ratio, (p - 1.0) / (m + p - 1.0)));
        }
      }
    }
  }
  // The issue's case, exactly: p = 4, m = 8, tf = tb = tw = 1 gives 11 * 3 = 33.
  CHECK(run_schedule_study(uniform(ScheduleKind::kGpipe, 4, 8, 1, 1, 1)).makespan == 33);
  CHECK(run_schedule_study(uniform(ScheduleKind::kOneFOneB, 4, 8, 1, 1, 1)).makespan == 33);
}

TEST_CASE("ScheduleStudy: ZB-H1 leaves (p-1)(tf+tb-tw) of bubble on every stage") {
  for (int32_t p : {2, 3, 4, 6}) {
    for (int32_t m : {p, 2 * p, 3 * p}) {
      INFO("p=" << p << " m=" << m);
      ScheduleStudy study = run_schedule_study(uniform(ScheduleKind::kZbH1, p, m, 1, 1, 1));
      CHECK(study.makespan == 3 * m + (p - 1));
      for (const StageStudy& stage : study.stages) {
        CHECK(stage.busy == 3 * m);
        CHECK(stage.bubble == p - 1);  // (p-1)(1 + 1 - 1): a third of 1F1B's 3(p-1).
      }
    }
  }
  // Unequal costs: 3 * (1 + 1.5 - 1) = 4.5 and 3 * (1 + 1 - 0.5) = 4.5.
  for (StageCosts c : {StageCosts{1, 1.5, 1}, StageCosts{1, 1, 0.5}, StageCosts{1, 2, 1}}) {
    ScheduleStudy study = run_schedule_study(uniform(ScheduleKind::kZbH1, 4, 8, c.tf, c.tb, c.tw));
    for (const StageStudy& stage : study.stages)
      CHECK(near(stage.bubble, 3 * (c.tf + c.tb - c.tw)));
  }
}

TEST_CASE("ScheduleStudy: ZB-H2 has zero bubble when m >= 2p and tf = tb = tw") {
  for (int32_t p : {2, 3, 4, 5}) {
    for (int32_t m : {2 * p, 2 * p + 3, 4 * p}) {
      INFO("p=" << p << " m=" << m);
      ScheduleStudy study = run_schedule_study(uniform(ScheduleKind::kZbH2, p, m, 1, 1, 1));
      for (int32_t r = 0; r < p; ++r) {
        const StageStudy& stage = study.stages[r];
        // The parallelogram: each stage runs from its first action to its last without a gap.
        CHECK(stage.span_bubble == 0);
        CHECK(stage.first_start == r);
        CHECK(stage.last_end == r + 3 * m);
        // Only the ramp remains against the whole step: the last stage cannot start before
        // (p-1) tf, so makespan - busy is (p-1) tf on every stage.
        CHECK(stage.bubble == p - 1);
        CHECK(stage.peak_microbatches == 2 * p - 1);
      }
    }
  }
  // With tw < tf = tb, stage 0's idle is the paper's (p-1)(tf + tb - 2 tw) = 3 * 1 = 3.
  ScheduleStudy study = run_schedule_study(uniform(ScheduleKind::kZbH2, 4, 8, 1, 1, 0.5));
  CHECK(study.stages[0].span_bubble == 3);
}

TEST_CASE("ScheduleStudy: interleaved 1F1B's bubble shrinks by v") {
  // Per stage per microbatch tf = 1, tb = 2 (fused), so each chunk costs 1/v of them.
  ScheduleStudy v1 = run_schedule_study(uniform(ScheduleKind::kInterleaved1F1B, 4, 8, 1, 2, 0, 1));
  ScheduleStudy v2 = run_schedule_study(uniform(ScheduleKind::kInterleaved1F1B, 4, 8, 1, 2, 0, 2));
  ScheduleStudy v4 = run_schedule_study(uniform(ScheduleKind::kInterleaved1F1B, 4, 8, 1, 2, 0, 4));
  CHECK(v1.makespan == 33);     // (8 + 3) * 3, as 1F1B.
  CHECK(v2.makespan == 28.5);   // 8 * 3 + 3 * 3 / 2.
  CHECK(v4.makespan == 26.25);  // 8 * 3 + 3 * 3 / 4.
  for (int32_t r = 0; r < 4; ++r) {
    CHECK(v1.stages[r].bubble == 9);
    CHECK(v2.stages[r].bubble == v1.stages[r].bubble / 2);
    CHECK(v4.stages[r].bubble == v1.stages[r].bubble / 4);
    CHECK(v2.stages[r].busy == v1.stages[r].busy);
  }
  // Same with a split W priced into the fused B: tw > 0 is (tb + tw) per B.
  ScheduleStudy w1 = run_schedule_study(uniform(ScheduleKind::kInterleaved1F1B, 4, 8, 1, 1, 1, 1));
  ScheduleStudy w2 = run_schedule_study(uniform(ScheduleKind::kInterleaved1F1B, 4, 8, 1, 1, 1, 2));
  CHECK(w2.stages[0].bubble * 2 == w1.stages[0].bubble);
}

TEST_CASE("ScheduleStudy: a slow last stage bounds the makespan") {
  // p = 3, m = 4, 1F1B. Stages 0 and 1: tf 1, tb 2; stage 2: tf 3, tb 6 (tw 0 everywhere).
  // The last stage is the bottleneck: its first F can start at 1 + 1 = 2 (mb 0 through stages 0
  // and 1), it then runs its 4 * (3 + 6) = 36 without waiting (stages 0 and 1 always deliver
  // the next F in time), and the last B still has to pass stages 1 and 0: 2 + 2.
  // Makespan = 2 + 36 + 4 = 42.
  ScheduleStudyInput input = uniform(ScheduleKind::kOneFOneB, 3, 4, 1, 2, 0);
  input.costs[2] = StageCosts{3, 6, 0};
  ScheduleStudy study = run_schedule_study(input);
  CHECK(study.makespan == 42);
  CHECK(study.stages[2].first_start == 2);
  CHECK(study.stages[2].last_end == 38);
  CHECK(study.stages[2].span_bubble == 0);
  CHECK(study.stages[2].busy == 36);
  CHECK(study.stages[2].bubble == 6);
  CHECK(study.stages[0].busy == 12);
  CHECK(study.stages[0].bubble == 30);
  // GPipe: the same bound, 2 + 36 + 4.
  input.schedule = ScheduleKind::kGpipe;
  CHECK(run_schedule_study(input).makespan == 42);
}

TEST_CASE("ScheduleStudy: communication on 1F1B, p = 2, m = 2, by hand") {
  // tf = 1, tb = 2 (fused, tw = 0), c = 0.5 per transfer. Orders: rank 0 F0 F1 B0 B1, rank 1
  // F0 B0 F1 B1. A transfer starts when its producer has ended and the receiver has reached
  // the receive (the rendezvous of NCCL send/recv; rank 1 posts RECV_F1 after B0).
  //   r0 F0 [0, 1]; SEND_F0 [1, 1.5]; r1 F0 [1.5, 2.5]; r1 B0 [2.5, 4.5]
  //   r0 F1 [1, 2]; SEND_F1 waits for r1's B0: [4.5, 5]; r1 F1 [5, 6]; r1 B1 [6, 8]
  //   SEND_B0 [4.5, 5]; r0 B0 [5, 7]; SEND_B1 [8, 8.5]; r0 B1 [8.5, 10.5]
  // Makespan 10.5 = 3 (tf + tb) + 3c: the critical path crosses three transfers.
  ScheduleStudyInput input = uniform(ScheduleKind::kOneFOneB, 2, 2, 1, 2, 0);
  input.comm = 0.5;
  ScheduleStudy study = run_schedule_study(input);
  CHECK(study.makespan == 10.5);
  CHECK(study.stages[0].busy == 6);
  CHECK(study.stages[0].bubble == 4.5);
  CHECK(study.stages[1].first_start == 1.5);
  CHECK(study.stages[1].last_end == 8);
  // Without communication: (m + p - 1)(tf + tb) = 9.
  input.comm = 0;
  CHECK(run_schedule_study(input).makespan == 9);
}

TEST_CASE("ScheduleStudy: action orders for p = 4, m = 8 match REFERENCE.md 4") {
  // Letters as the zero-bubble paper writes them: I (input gradient) is printed B.
  CHECK(orders(ScheduleKind::kGpipe) == Orders(4, "FFFFFFFFBBBBBBBB"));
  // 1F1B: p - r warm-up F (torch counts the first steady F in it), then B F pairs, cool-down B.
  CHECK(orders(ScheduleKind::kOneFOneB) ==
        Orders{"FFFFBFBFBFBFBBBB", "FFFBFBFBFBFBFBBB", "FFBFBFBFBFBFBFBB", "FBFBFBFBFBFBFBFB"});
  // The study reports the same strings.
  ScheduleStudy zb = run_schedule_study(uniform(ScheduleKind::kZbH1, 4, 8, 1, 1, 1));
  for (int32_t r = 0; r < 4; ++r) CHECK(zb.stages[r].order == orders(ScheduleKind::kZbH1)[r]);
  // ZB-H1 (torch's InterleavedZeroBubble with v = 1): p-1-r warm-up F, then F I pairs where
  // each I after the first r is followed by the oldest W, leftover W at the end.
  CHECK(orders(ScheduleKind::kZbH1) ==
        Orders{"FFFFBWFBWFBWFBWFBWBWBWBW", "FFFBFBWFBWFBWFBWFBWBWBWW", "FFBFBFBWFBWFBWFBWFBWBWWW",
               "FBFBFBFBWFBWFBWFBWFBWWWW"});
  // ZB-H2: 2(p-1-r)+1 warm-up F, so rank 0 holds 2p-1 microbatches.
  CHECK(orders(ScheduleKind::kZbH2) ==
        Orders{"FFFFFFFBWFBWBWBWBWBWBWBW", "FFFFFBFBFBWFBWBWBWBWBWWW", "FFFBFBFBFBFBWFBWBWBWWWWW",
               "FBFBFBFBFBFBFBWFBWWWWWWW"});
  // ZBV: 2(p-r)-1 F(c0); r x [F(c1) F(c0)]; (p-r) x [F(c1) I W]; steady [F(c0) I W F(c1) I W];
  // cool-down r x [I(c0) I(c1)], (p-r) x [I(c0) W(c0)], pending W(c1) then W(c0).
  Orders zbv = orders(ScheduleKind::kZbv);
  CHECK(zbv[0] ==
        std::string("FFFFFFF") + "FBWFBWFBWFBW" + "FBWFBW" + "BWFBWBWFBWBWFBW" + "BWBWBWBW");
  CHECK(zbv[3] == std::string("F") + "FFFFFF" + "FBW" + "FBWFBWFBWFBWFBWFBWFBWFBW" + "BBBBBB" +
                      "BW" + "WWWWWW");
  // DualPipeV, rank 0: 2(p-1) F(s0); [F(s0) F(s1)]; 3 x [I(s1) W F(s1)]; 1 x main
  // [F(s0)+B(s1)][F(s1)+B(s0)]; 3 x [B(s1), F(s1)+B(s0)]; [B(s1) I(s0)]; 3 x [W I(s0)]; W.
  Orders dualpipev = orders(ScheduleKind::kDualPipeV);
  CHECK(dualpipev[0] ==
        std::string("FFFFFF") + "FF" + "BWFBWFBWF" + "FBFB" + "BFBBFBBFB" + "BB" + "WBWBWB" + "W");
  // Interleaved, v = 2: min((v-1) m/rounds + 2(p-1-r), m v) warm-up F, F B pairs, cool-down B.
  ScheduleStudy interleaved =
      run_schedule_study(uniform(ScheduleKind::kInterleaved1F1B, 4, 8, 1, 1, 1, 2));
  for (int32_t r = 0; r < 4; ++r) {
    const int32_t warmup = 4 + 2 * (3 - r);
    std::string expected = std::string(warmup, 'F');
    for (int32_t i = 0; i < 16 - warmup; ++i) expected += "FB";
    expected += std::string(warmup, 'B');
    CHECK(interleaved.stages[r].order == expected);
  }
}

TEST_CASE("ScheduleStudy: tw = 0 fuses B and W, also in split schedules") {
  // ZB-H1 with tw = 0 becomes 1F1B's order and time: (m + p - 1)(tf + tb).
  ScheduleStudy study = run_schedule_study(uniform(ScheduleKind::kZbH1, 4, 8, 1, 2, 0));
  CHECK_FALSE(study.schedule.split_backward);
  CHECK(study.stages[3].order == "FBFBFBFBFBFBFBFB");
  CHECK(study.makespan == 33);
  // A split schedule keeps W where tw > 0.
  ScheduleStudy split = run_schedule_study(uniform(ScheduleKind::kZbH1, 4, 8, 1, 1, 1));
  CHECK(split.schedule.split_backward);
  CHECK(fuse_backward(split.schedule).rank_actions[0].size() <
        split.schedule.rank_actions[0].size());
}

TEST_CASE("ScheduleStudy: activation peaks and the memory limit") {
  ScheduleStudyInput input = uniform(ScheduleKind::kOneFOneB, 4, 8, 1, 1, 1);
  input.memory_per_microbatch = 2.5;
  input.memory_limit = 8;
  ScheduleStudy study = run_schedule_study(input);
  for (int32_t r = 0; r < 4; ++r) {
    CHECK(study.stages[r].peak_microbatches == 4 - r);  // 1F1B: p - r in flight.
    CHECK(study.stages[r].peak_memory == 2.5 * (4 - r));
    CHECK(study.stages[r].over_limit == (2.5 * (4 - r) > 8));
  }
  CHECK(study.mem_limit_exceeded);
  // GPipe holds all m.
  ScheduleStudy gpipe = run_schedule_study(uniform(ScheduleKind::kGpipe, 4, 8, 1, 1, 1));
  for (const StageStudy& stage : gpipe.stages) CHECK(stage.peak_microbatches == 8);
  CHECK_FALSE(gpipe.mem_limit_exceeded);
  // Interleaved, v = 2, rank 0: 11 chunk-microbatches of half a microbatch each at the peak
  // (Megatron's (p-1-r)*2 + (v-1)*p + 1 = 6 + 4 + 1).
  ScheduleStudy interleaved =
      run_schedule_study(uniform(ScheduleKind::kInterleaved1F1B, 4, 8, 1, 1, 1, 2));
  CHECK(interleaved.stages[0].peak_microbatches == 5.5);
}

TEST_CASE("ScheduleStudy: every schedule runs, with sane metrics, for p <= 6, m <= 12") {
  // The graph is checked for a cycle first, so a deadlock fails this test with its path rather
  // than aborting the whole executable in the engine.
  for (ScheduleKind kind :
       {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved1F1B,
        ScheduleKind::kZbH1, ScheduleKind::kZbH2, ScheduleKind::kZbv, ScheduleKind::kDualPipeV}) {
    std::vector<int32_t> chunk_options = {
        kind == ScheduleKind::kZbv || kind == ScheduleKind::kDualPipeV ? 2 : 1};
    if (kind == ScheduleKind::kInterleaved1F1B) chunk_options = {1, 2, 3};
    for (int32_t v : chunk_options) {
      for (int32_t p = 1; p <= 6; ++p) {
        for (int32_t m = 1; m <= 12; ++m) {
          if (schedule_problem(kind, p, m, v)) continue;
          for (double tw : {1.0, 0.0}) {
            INFO(schedule_name(kind) << " p=" << p << " m=" << m << " v=" << v << " tw=" << tw);
            ScheduleStudyInput input = uniform(kind, p, m, 1, 1.5, tw, v);
            input.comm = 0.25;
            PipelineSchedule schedule = build_pipeline_schedule(kind, p, m, v);
            if (tw == 0) schedule = fuse_backward(schedule);
            AbstractCosts costs(input);
            Lowered lowered = lower_schedule(schedule, 1, std::vector<double>(p, 1.0), costs);
            std::optional<std::string> cycle = lowered.graph.find_cycle([&](TaskId id) {
              const TaskInfo& info = lowered.info[id];
              return action_label(Action{info.kind, info.chunk, info.microbatch}) + "@rank" +
                     std::to_string(info.worker);
            });
            CHECK(cycle.value_or("") == "");
            if (cycle) continue;
            ScheduleStudy study = run_schedule_study(input);
            for (const StageStudy& stage : study.stages) {
              CHECK(near(stage.busy, m * (1 + 1.5 + tw)));
              CHECK(stage.bubble >= -1e-9);
              CHECK(stage.span_bubble >= -1e-9);
              CHECK(stage.span_bubble <= stage.bubble + 1e-9);
              CHECK(stage.peak_microbatches >= 1.0 / v);
              CHECK(stage.peak_microbatches <= m);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("ScheduleStudy: invalid inputs are InputErrors") {
  using Catch::Matchers::Contains;
  // dualpipev needs m >= 2p.
  CHECK_THROWS_WITH(run_schedule_study(uniform(ScheduleKind::kDualPipeV, 4, 6, 1, 1, 1)),
                    Contains("dualpipev"));
  CHECK_THROWS_AS(run_schedule_study(uniform(ScheduleKind::kDualPipeV, 4, 6, 1, 1, 1)), InputError);
  CHECK_THROWS_WITH(run_schedule_study(uniform(ScheduleKind::kOneFOneB, 4, 8, 1, 1, 1, 2)),
                    Contains("--vpp"));
  CHECK_THROWS_WITH(run_schedule_study(uniform(ScheduleKind::kZbv, 4, 8, 1, 1, 1, 3)),
                    Contains("exactly 2 chunks"));
  CHECK_THROWS_WITH(run_schedule_study(uniform(ScheduleKind::kOneFOneB, 0, 8, 1, 1, 1)),
                    Contains("--stages"));
  CHECK_THROWS_WITH(run_schedule_study(uniform(ScheduleKind::kOneFOneB, 4, 8, -1, 1, 1)),
                    Contains("--tf: stage 0: expected a positive number"));
  CHECK_THROWS_WITH(run_schedule_study(uniform(ScheduleKind::kOneFOneB, 4, 8, 1, 1, NAN)),
                    Contains("--tw"));
  ScheduleStudyInput wrong_length = uniform(ScheduleKind::kOneFOneB, 4, 8, 1, 1, 1);
  wrong_length.costs.pop_back();
  CHECK_THROWS_WITH(run_schedule_study(wrong_length), Contains("3 stage cost entries for 4"));
  CHECK_THROWS_WITH(parse_schedule_name("zb-h3", "--schedule"),
                    Contains("unknown schedule 'zb-h3'") && Contains("did you mean"));
  CHECK(parse_schedule_name("interleaved-1f1b", "--schedule") == ScheduleKind::kInterleaved1F1B);
}

TEST_CASE("ScheduleStudy: --stage-costs JSON is read strictly") {
  using Catch::Matchers::Contains;
  std::vector<StageCosts> costs = parse_stage_costs(
      R"([{"tf": 1, "tb": 2, "tw": 0}, {"tf": 1.5, "tb": 3, "tw": 0.5}])", "c.json");
  REQUIRE(costs.size() == 2);
  CHECK(costs[1].tf == 1.5);
  CHECK(costs[1].tw == 0.5);
  CHECK_THROWS_WITH(parse_stage_costs(R"([{"tf": 1, "tb": 2, "tw": 0, "tx": 1}])", "c.json"),
                    Contains("c.json: /0/tx: unknown key 'tx'"));
  CHECK_THROWS_WITH(
      parse_stage_costs(R"([{"tf": 1, "tb": 2, "tw": 0}, {"tf": 1, "tw": 0}])", "c.json"),
      Contains("c.json: /1/tb: required key is missing"));
  CHECK_THROWS_WITH(parse_stage_costs(R"([{"tf": "1", "tb": 2, "tw": 0}])", "c.json"),
                    Contains("/0/tf: expected a number"));
  CHECK_THROWS_WITH(parse_stage_costs(R"([{"tf": 0, "tb": 2, "tw": 0}])", "c.json"),
                    Contains("/0/tf: expected a positive number"));
  CHECK_THROWS_WITH(parse_stage_costs(R"([{"tf": 1, "tb": 2, "tw": -1}])", "c.json"),
                    Contains("/0/tw"));
  CHECK_THROWS_WITH(parse_stage_costs(R"({"tf": 1})", "c.json"),
                    Contains("expected a non-empty list"));
  CHECK_THROWS_WITH(parse_stage_costs("[]", "c.json"), Contains("expected a non-empty list"));
  CHECK_THROWS_WITH(parse_stage_costs("[{", "c.json"), Contains("c.json: invalid JSON"));
  CHECK_THROWS_WITH(load_stage_costs("tests/data/no_such_costs.json"), Contains("cannot open"));
}

}  // namespace
}  // namespace ppsim
