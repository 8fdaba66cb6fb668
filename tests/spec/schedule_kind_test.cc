// Schedule kinds: names round-trip, traits agree with the builders' action lists, and the rules
// a plan must meet (schedule_problem) match what the builders can run.
#include "simulator/spec/schedule_kind.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "simulator/schedule/pipeline_schedule.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

TEST_CASE("ScheduleKind: every kind has one row, and names round-trip") {
  const std::vector<ScheduleKind>& kinds = all_schedule_kinds();
  REQUIRE(kinds.size() == 9);
  std::set<std::string> names;
  for (ScheduleKind kind : kinds) {
    CHECK(schedule_traits(kind).kind == kind);
    CHECK(find_schedule(schedule_name(kind)) == kind);
    names.insert(schedule_name(kind));
  }
  CHECK(names.size() == kinds.size());
  CHECK(schedule_names() == std::vector<std::string>{"gpipe", "1f1b", "interleaved-1f1b", "zb-h1",
                                                     "zb-h2", "zb-1p", "zb-2p", "zbv",
                                                     "dualpipev"});
  CHECK_FALSE(find_schedule("onefoneb").has_value());
  CHECK(kDefaultSchedule == ScheduleKind::kOneFOneB);
}

TEST_CASE("ScheduleKind: parse_schedule_name names the flag and suggests the nearest") {
  CHECK(parse_schedule_name("zbv", "--schedule") == ScheduleKind::kZbv);
  CHECK_THROWS_WITH(parse_schedule_name("zb-h3", "--schedule"),
                    Catch::Contains("--schedule") && Catch::Contains("did you mean"));
}

TEST_CASE("ScheduleKind: the planner's default list leaves out only the searched zb-1p/zb-2p") {
  std::vector<ScheduleKind> defaults = default_search_schedules();
  CHECK(defaults == std::vector<ScheduleKind>{ScheduleKind::kGpipe, ScheduleKind::kOneFOneB,
                                              ScheduleKind::kInterleaved1F1B, ScheduleKind::kZbH1,
                                              ScheduleKind::kZbH2, ScheduleKind::kZbv,
                                              ScheduleKind::kDualPipeV});
}

TEST_CASE("ScheduleKind: traits match the builders' action lists") {
  for (ScheduleKind kind : all_schedule_kinds()) {
    INFO(schedule_name(kind));
    const int32_t p = 4, m = 8;
    const int32_t v =
        static_cast<int32_t>(is_interleaved(kind) ? 2 : default_chunks_per_rank(kind));
    REQUIRE_FALSE(schedule_problem(kind, p, m, v).has_value());
    PipelineSchedule schedule = build_pipeline_schedule(kind, p, m, v);
    CHECK(schedule.split_backward == schedule_traits(kind).splits_backward);
    CHECK(schedule.chunks_per_rank == chunks_per_rank(kind, v));
    bool has_input_grad = false;
    for (const std::vector<Action>& actions : schedule.rank_actions) {
      for (const Action& action : actions) {
        has_input_grad = has_input_grad || action.kind == ActionKind::kBackwardInput;
      }
    }
    CHECK(has_input_grad == schedule_traits(kind).splits_backward);
    for (int32_t c = 0; c < schedule.num_chunks(); ++c) {
      CHECK(schedule.chunk_rank[c] == rank_of_chunk(kind, p, v, c));
    }
    CHECK(rank_of_chunk(kind, p, v, p * v - 1) == loss_rank(kind, p));
  }
}

TEST_CASE("ScheduleKind: placements by hand") {
  // V: rank r holds chunks r and 2p-1-r; loop: chunk c on rank c % p.
  CHECK(rank_of_chunk(ScheduleKind::kZbv, 4, 2, 5) == 2);
  CHECK(local_index_of_chunk(ScheduleKind::kZbv, 4, 2, 5) == 1);
  CHECK(rank_of_chunk(ScheduleKind::kInterleaved1F1B, 4, 3, 9) == 1);
  CHECK(local_index_of_chunk(ScheduleKind::kInterleaved1F1B, 4, 3, 9) == 2);
  CHECK(loss_rank(ScheduleKind::kDualPipeV, 8) == 0);
  CHECK(loss_rank(ScheduleKind::kOneFOneB, 8) == 7);
  CHECK(chunks_per_rank(ScheduleKind::kGpipe, 4) == 1);
  CHECK(chunks_per_rank(ScheduleKind::kInterleaved1F1B, 4) == 4);
  CHECK(chunks_per_rank(ScheduleKind::kDualPipeV, 1) == 2);
  // 32 layers on 4 stages, up to 8 chunks: every v with a layer per chunk on the middle stages
  // (the split is layer_balance.h's to find); 22 layers on 8 stages: v * 6 <= 22.
  CHECK(chunk_count_options(ScheduleKind::kInterleaved1F1B, 32, 4, 8) ==
        std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8});
  CHECK(chunk_count_options(ScheduleKind::kInterleaved1F1B, 22, 8, 8) ==
        std::vector<int64_t>{2, 3});
  CHECK(chunk_count_options(ScheduleKind::kZbv, 32, 4, 8) == std::vector<int64_t>{2});
}

TEST_CASE("ScheduleKind: microbatch units and minimums") {
  CHECK(microbatch_unit(ScheduleKind::kInterleaved1F1B, 4, 2) == 4);
  CHECK(microbatch_unit(ScheduleKind::kInterleaved1F1B, 4, 1) == 1);
  CHECK(min_microbatches(ScheduleKind::kDualPipeV, 4, 2) == 8);
  CHECK(min_microbatches(ScheduleKind::kOneFOneB, 4, 1) == 1);
  auto problem = schedule_problem(ScheduleKind::kDualPipeV, 4, 7, 2);
  REQUIRE(problem.has_value());
  CHECK(*problem == "dualpipev needs at least 2*pp = 8 microbatches; got 7");
}

TEST_CASE("ScheduleKind: launcher mapping") {
  CHECK(schedule_traits(ScheduleKind::kInterleaved1F1B).megatron_native);
  CHECK_FALSE(schedule_traits(ScheduleKind::kZbv).megatron_native);
  CHECK(schedule_traits(ScheduleKind::kOneFOneB).deepspeed_native);
  CHECK_FALSE(schedule_traits(ScheduleKind::kInterleaved1F1B).deepspeed_native);
  CHECK(std::string(schedule_traits(ScheduleKind::kZbH2).torch_class) == "InterleavedZeroBubble");
  CHECK(std::string(schedule_traits(ScheduleKind::kDualPipeV).torch_class) == "DualPipeV");
}

TEST_CASE("ScheduleKind: the smallest microbatch group interleaving runs a count in") {
  CHECK(smallest_microbatch_group(4, 8) == 4);    // pp divides: groups of pp.
  CHECK(smallest_microbatch_group(4, 10) == 5);   // 10 % 4 = 2 < 4; 10 % 5 = 0.
  CHECK(smallest_microbatch_group(4, 11) == 6);   // 11 % 5 = 1 < 4; 11 % 6 = 5 >= 4.
  CHECK(smallest_microbatch_group(4, 5) == 5);    // One group of all five.
  CHECK(smallest_microbatch_group(4, 3) == std::nullopt);  // Fewer microbatches than pp.
  CHECK(smallest_microbatch_group(13, 16) == 16);  // GLM-5.2's H100 recipe: pp 13, 16 each.
  // Against Megatron's rule written out here (pp <= g <= m, a last group of 0 or at least pp):
  // the smallest g that keeps it.
  for (int32_t pp = 2; pp <= 6; ++pp) {
    for (int32_t m = pp; m <= 40; ++m) {
      int32_t expected = pp;
      while (m % expected != 0 && m % expected < pp) ++expected;
      INFO("pp " << pp << ", m " << m);
      CHECK(smallest_microbatch_group(pp, m) == expected);
    }
  }
}

}  // namespace
}  // namespace ppsim
