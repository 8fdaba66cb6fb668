#include "simulator/schedule/pipeline_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "simulator/model/inflight_microbatches.h"

namespace ppsim {
namespace {

constexpr ScheduleKind kAllKinds[] = {
    ScheduleKind::kGpipe, ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved1F1B,
    ScheduleKind::kZbH1,  ScheduleKind::kZbH2,     ScheduleKind::kZb1p,
    ScheduleKind::kZb2p,  ScheduleKind::kZbv,      ScheduleKind::kDualPipeV};

// Chunks per rank the kind runs with by default (interleaved: 2).
int32_t default_chunks(ScheduleKind kind) {
  return kind == ScheduleKind::kGpipe || kind == ScheduleKind::kOneFOneB ||
                 kind == ScheduleKind::kZbH1 || kind == ScheduleKind::kZbH2 ||
                 kind == ScheduleKind::kZb1p || kind == ScheduleKind::kZb2p
             ? 1
             : 2;
}

// A rank's compute actions in torch's IR notation "<chunk><type><mb>", e.g. "4B0 0F7".
std::string ir_order(const PipelineSchedule& schedule, int32_t rank) {
  std::string text;
  for (const Action& action : schedule.rank_actions[rank]) {
    if (action.kind > ActionKind::kBackwardWeight) continue;
    if (!text.empty()) text += ' ';
    text += fmt::format("{}{}{}", action.chunk, action_kind_name(action.kind), action.microbatch);
  }
  return text;
}

// Every action label of a rank, space separated.
std::string labels(const PipelineSchedule& schedule, int32_t rank) {
  std::string text;
  for (const Action& action : schedule.rank_actions[rank]) {
    if (!text.empty()) text += ' ';
    text += action_label(action);
  }
  return text;
}

// A unit-time executor, independent of the event engine: each action starts when its rank is
// free and the actions it depends on are done (F on the previous chunk's F; B or I on the same
// chunk's F and the next chunk's B or I; W on its I; a receive on its send). Communication,
// gradient syncs and the optimizer step take no time.
struct UnitTimeRun {
  double makespan = 0;
  std::vector<double> first_start;  // Per rank: start of its first compute action.
  std::vector<double> last_end;     // Per rank: end of its last action.
  double span(int32_t rank) const { return last_end[rank] - first_start[rank]; }
};

UnitTimeRun run_unit_time(const PipelineSchedule& schedule, double forward, double backward,
                          double input_grad, double weight_grad) {
  using Key = std::tuple<int, int32_t, int32_t>;  // (kind, chunk, microbatch)
  auto key = [](ActionKind kind, int32_t chunk, int32_t mb) {
    // B and I both stand for "the input gradient of (chunk, mb) is known".
    if (kind == ActionKind::kBackward) kind = ActionKind::kBackwardInput;
    return Key{static_cast<int>(kind), chunk, mb};
  };
  std::map<Key, double> done;
  const int32_t p = schedule.ranks;
  const int32_t last_chunk = schedule.num_chunks() - 1;
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  UnitTimeRun run;
  run.first_start.assign(p, -1);
  run.last_end.assign(p, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int32_t r = 0; r < p; ++r) {
      while (next[r] < schedule.rank_actions[r].size()) {
        const Action& a = schedule.rank_actions[r][next[r]];
        std::vector<Key> needs;
        double duration = 0;
        switch (a.kind) {
          case ActionKind::kForward:
            if (a.chunk > 0) needs.push_back(key(ActionKind::kForward, a.chunk - 1, a.microbatch));
            duration = forward;
            break;
          case ActionKind::kBackward:
          case ActionKind::kBackwardInput:
            needs.push_back(key(ActionKind::kForward, a.chunk, a.microbatch));
            if (a.chunk < last_chunk) {
              needs.push_back(key(ActionKind::kBackwardInput, a.chunk + 1, a.microbatch));
            }
            duration = a.kind == ActionKind::kBackward ? backward : input_grad;
            break;
          case ActionKind::kBackwardWeight:
            needs.push_back(key(ActionKind::kBackwardInput, a.chunk, a.microbatch));
            duration = weight_grad;
            break;
          case ActionKind::kRecvForward:
            needs.push_back(key(ActionKind::kSendForward, a.chunk - 1, a.microbatch));
            break;
          case ActionKind::kRecvBackward:
            needs.push_back(key(ActionKind::kSendBackward, a.chunk + 1, a.microbatch));
            break;
          default:
            break;
        }
        double start = free_at[r];
        bool ready = true;
        for (const Key& need : needs) {
          auto found = done.find(need);
          if (found == done.end()) {
            ready = false;
            break;
          }
          start = std::max(start, found->second);
        }
        if (!ready) break;
        const double end = start + duration;
        if (a.kind <= ActionKind::kBackwardWeight && run.first_start[r] < 0) {
          run.first_start[r] = start;
        }
        done[key(a.kind, a.chunk, a.microbatch)] = end;
        free_at[r] = end;
        run.last_end[r] = end;
        run.makespan = std::max(run.makespan, end);
        ++next[r];
        progress = true;
      }
    }
  }
  for (int32_t r = 0; r < p; ++r) {
    INFO("rank " << r << " stuck at action " << next[r]);
    REQUIRE(next[r] == schedule.rank_actions[r].size());
  }
  return run;
}

std::vector<std::string> all_orders(const PipelineSchedule& schedule) {
  std::vector<std::string> orders;
  for (int32_t r = 0; r < schedule.ranks; ++r) orders.push_back(compute_order(schedule, r, false));
  return orders;
}

using Orders = std::vector<std::string>;

TEST_CASE("PipelineSchedule: p=4 m=8 per-rank compute orders") {
  // Derived by hand from REFERENCE.md 4 (Megatron/torch orders) and the zero-bubble family in
  // schedules/schedule_builders.h; I printed as I.
  auto orders = [](ScheduleKind kind) {
    return all_orders(build_pipeline_schedule(kind, 4, 8, default_chunks(kind)));
  };
  CHECK(orders(ScheduleKind::kGpipe) == Orders(4, "FFFFFFFFBBBBBBBB"));
  // Megatron 1F1B: p-r-1 warm-up F, (F,B) pairs, cool-down B.
  CHECK(orders(ScheduleKind::kOneFOneB) ==
        Orders{"FFFFBFBFBFBFBBBB", "FFFBFBFBFBFBFBBB", "FFBFBFBFBFBFBFBB", "FBFBFBFBFBFBFBFB"});
  // Interleaved, v=2: warm-up (p-r-1)*2 + (v-1)*p = 10, 8, 6, 4 of m*v = 16.
  CHECK(orders(ScheduleKind::kInterleaved1F1B) ==
        Orders{"FFFFFFFFFFFBFBFBFBFBFBBBBBBBBBBB", "FFFFFFFFFBFBFBFBFBFBFBFBBBBBBBBB",
               "FFFFFFFBFBFBFBFBFBFBFBFBFBBBBBBB", "FFFFFBFBFBFBFBFBFBFBFBFBFBFBBBBB"});
  // ZB-H1: 1F1B's warm-up, W held back for the first r input gradients.
  CHECK(orders(ScheduleKind::kZbH1) ==
        Orders{"FFFFIWFIWFIWFIWFIWIWIWIW", "FFFIFIWFIWFIWFIWFIWIWIWW", "FFIFIFIWFIWFIWFIWFIWIWWW",
               "FIFIFIFIWFIWFIWFIWFIWWWW"});
  // ZB-H2: twice the warm-up (2p-1 in flight on rank 0), W held back for 2r input gradients.
  CHECK(orders(ScheduleKind::kZbH2) ==
        Orders{"FFFFFFFIWFIWIWIWIWIWIWIW", "FFFFFIFIFIWFIWIWIWIWIWWW", "FFFIFIFIFIFIWFIWIWIWWWWW",
               "FIFIFIFIFIFIFIWFIWWWWWWW"});
  // Searched ZB-1p (unit costs, limit p microbatches): the heuristic finds ZB-H1's order.
  CHECK(orders(ScheduleKind::kZb1p) == orders(ScheduleKind::kZbH1));
  // Searched ZB-2p (limit 2p): ZB-H2's warm-up, but W wait until memory or an idle slot needs
  // them, so every rank holds up to 8 microbatches before its first W.
  CHECK(orders(ScheduleKind::kZb2p) ==
        Orders{"FFFFFFFIFWIWIWIWIWIWIWIW", "FFFFFIFIFIFIWIWIWIWIWWWW", "FFFIFIFIFIFIFIWIWIWWWWWW",
               "FIFIFIFIFIFIFIFIWWWWWWWW"});
  CHECK(orders(ScheduleKind::kZbv) == Orders{"FFFFFFFFIWFIWFIWFIWFIWFIWIWFIWIWFIWIWFIWIWIWIWIW",
                                             "FFFFFFFFIWFIWFIWFIWFIWFIWFIWIWFIWIWFIWIIIWIWIWWW",
                                             "FFFFFFFFIWFIWFIWFIWFIWFIWFIWFIWIWFIWIIIIIWIWWWWW",
                                             "FFFFFFFFIWFIWFIWFIWFIWFIWFIWFIWFIWIIIIIIIWWWWWWW"});
  // DualPipeV: an OVERLAP[F+B] pair reads as F then B.
  CHECK(orders(ScheduleKind::kDualPipeV) ==
        Orders{"FFFFFFFFIWFIWFIWFFBFBBFBBFBBFBBIWIWIWIW", "FFFFFFFFIWFIWFFBFBFBFBBFBBFBBBIIWIWIWW",
               "FFFFFFFFIWFFBFBFBFBFBFBBFBBBBIIIWIWWW", "FFFFFFFFFBFBFBFBFBFBFBFBBBBBIIIIWWWW"});
}

TEST_CASE("PipelineSchedule: zero-bubble letters print I as B") {
  PipelineSchedule zb = build_pipeline_schedule(ScheduleKind::kZbH1, 4, 8, 1);
  CHECK(compute_order(zb, 0) == "FFFFBWFBWFBWFBWFBWBWBWBW");
  CHECK(compute_order(zb, 0, false) == "FFFFIWFIWFIWFIWFIWIWIWIW");
}

TEST_CASE("PipelineSchedule: p=4 m=8 chunks and microbatches of ranks 0 and 3") {
  PipelineSchedule interleaved = build_pipeline_schedule(ScheduleKind::kInterleaved1F1B, 4, 8, 2);
  // Forwards follow Megatron's table (mb 0-3 chunk 0, mb 0-3 chunk 1, mb 4-7 chunk 0, ...);
  // backwards the same table with the chunks reversed.
  CHECK(ir_order(interleaved, 0) ==
        "0F0 0F1 0F2 0F3 4F0 4F1 4F2 4F3 0F4 0F5 0F6 4B0 0F7 4B1 4F4 4B2 4F5 4B3 4F6 0B0 4F7 0B1 "
        "0B2 0B3 4B4 4B5 4B6 4B7 0B4 0B5 0B6 0B7");
  CHECK(ir_order(interleaved, 3) ==
        "3F0 3F1 3F2 3F3 7F0 7B0 7F1 7B1 7F2 7B2 7F3 7B3 3F4 3B0 3F5 3B1 3F6 3B2 3F7 3B3 7F4 7B4 "
        "7F5 7B5 7F6 7B6 7F7 7B7 3B4 3B5 3B6 3B7");
  PipelineSchedule zb_h1 = build_pipeline_schedule(ScheduleKind::kZbH1, 4, 8, 1);
  CHECK(ir_order(zb_h1, 3) ==
        "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4 3W1 3F5 3I5 3W2 3F6 3I6 3W3 3F7 3I7 3W4 3W5 "
        "3W6 3W7");
  PipelineSchedule zb_h2 = build_pipeline_schedule(ScheduleKind::kZbH2, 4, 8, 1);
  CHECK(ir_order(zb_h2, 0) ==
        "0F0 0F1 0F2 0F3 0F4 0F5 0F6 0I0 0W0 0F7 0I1 0W1 0I2 0W2 0I3 0W3 0I4 0W4 0I5 0W5 0I6 0W6 "
        "0I7 0W7");
  // ZBV, V placement: rank 0 holds chunks 0 and 7, rank 3 chunks 3 and 4.
  PipelineSchedule zbv = build_pipeline_schedule(ScheduleKind::kZbv, 4, 8, 2);
  CHECK(ir_order(zbv, 0) ==
        "0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7I0 7W0 7F1 7I1 7W1 7F2 7I2 7W2 7F3 7I3 7W3 0F7 0I0 0W0 "
        "7F4 7I4 7W4 0I1 0W1 7F5 7I5 7W5 0I2 0W2 7F6 7I6 7W6 0I3 0W3 7F7 7I7 7W7 0I4 0W4 0I5 0W5 "
        "0I6 0W6 0I7 0W7");
  CHECK(ir_order(zbv, 3) ==
        "3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 4I0 4W0 3F4 3I0 3W0 4F4 4I1 4W1 3F5 3I1 3W1 4F5 4I2 4W2 "
        "3F6 3I2 3W2 4F6 4I3 4W3 3F7 3I3 3W3 4F7 4I4 4W4 3I4 4I5 3I5 4I6 3I6 4I7 3I7 3W4 4W5 4W6 "
        "4W7 3W5 3W6 3W7");
  PipelineSchedule dualpipev = build_pipeline_schedule(ScheduleKind::kDualPipeV, 4, 8, 2);
  CHECK(ir_order(dualpipev, 0) ==
        "0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7I0 7W0 7F1 7I1 7W1 7F2 7I2 7W2 7F3 0F7 7B3 7F4 0B0 7B4 "
        "7F5 0B1 7B5 7F6 0B2 7B6 7F7 0B3 7B7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7");
  CHECK(ir_order(dualpipev, 3) ==
        "3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 3F4 4B0 4F4 3B0 3F5 4B1 4F5 3B1 3F6 4B2 4F6 3B2 3F7 4B3 "
        "4F7 3B3 4B4 3B4 4B5 3B5 4I6 3I6 4I7 3I7 4W6 3W6 4W7 3W7");
}

TEST_CASE("PipelineSchedule: sends, receives, syncs and the optimizer step") {
  PipelineSchedule one_f_one_b = build_pipeline_schedule(ScheduleKind::kOneFOneB, 2, 1, 1);
  CHECK(labels(one_f_one_b, 0) ==
        "F[c0,mb0] SEND_F[c0,mb0] RECV_B[c0,mb0] B[c0,mb0] GRAD_SYNC[c0] OPT_STEP");
  CHECK(labels(one_f_one_b, 1) ==
        "RECV_F[c1,mb0] F[c1,mb0] B[c1,mb0] SEND_B[c1,mb0] GRAD_SYNC[c1] OPT_STEP");
  // V placement: chunks 1 and 2 share rank 1, so nothing is sent between them; the chunk's
  // gradient sync follows its last W, not its last I.
  PipelineSchedule zbv = build_pipeline_schedule(ScheduleKind::kZbv, 2, 1, 2);
  CHECK(zbv.chunk_rank == std::vector<int32_t>{0, 1, 1, 0});
  CHECK(labels(zbv, 1) ==
        "RECV_F[c1,mb0] F[c1,mb0] F[c2,mb0] SEND_F[c2,mb0] RECV_B[c2,mb0] I[c2,mb0] W[c2,mb0] "
        "GRAD_SYNC[c2] I[c1,mb0] SEND_B[c1,mb0] W[c1,mb0] GRAD_SYNC[c1] OPT_STEP");
  CHECK(labels(zbv, 0) ==
        "F[c0,mb0] SEND_F[c0,mb0] RECV_F[c3,mb0] F[c3,mb0] I[c3,mb0] SEND_B[c3,mb0] W[c3,mb0] "
        "GRAD_SYNC[c3] RECV_B[c0,mb0] I[c0,mb0] W[c0,mb0] GRAD_SYNC[c0] OPT_STEP");
  PipelineSchedule interleaved = build_pipeline_schedule(ScheduleKind::kInterleaved1F1B, 2, 2, 2);
  CHECK(interleaved.chunk_rank == std::vector<int32_t>{0, 1, 0, 1});
  CHECK(!interleaved.split_backward);
  CHECK(zbv.split_backward);
}

TEST_CASE("PipelineSchedule: action names and labels") {
  CHECK(action_kind_name(ActionKind::kBackwardInput) == "I");
  CHECK(action_kind_name(ActionKind::kRecvBackward) == "RECV_B");
  CHECK(action_label({ActionKind::kForward, 1, 3}) == "F[c1,mb3]");
  CHECK(action_label({ActionKind::kSendForward, 1, 3}) == "SEND_F[c1,mb3]");
  CHECK(action_label({ActionKind::kGradientSync, 2, -1}) == "GRAD_SYNC[c2]");
  CHECK(action_label({ActionKind::kOptimizerStep, -1, -1}) == "OPT_STEP");
}

TEST_CASE("PipelineSchedule: schedule_problem states each schedule's rule") {
  CHECK(!schedule_problem(ScheduleKind::kOneFOneB, 8, 3, 1));  // Megatron runs m < p.
  CHECK(!schedule_problem(ScheduleKind::kZbv, 4, 3, 2));       // torch idles the missing ones.
  CHECK(!schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 8, 3));
  CHECK(!schedule_problem(ScheduleKind::kInterleaved1F1B, 1, 5, 1));
  CHECK(!schedule_problem(ScheduleKind::kDualPipeV, 4, 8, 2));
  auto problem = schedule_problem(ScheduleKind::kDualPipeV, 4, 7, 2);
  REQUIRE(problem);
  CHECK(*problem == "dualpipev needs at least 2*pp = 8 microbatches; got 7");
  problem = schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 6, 2);
  REQUIRE(problem);
  CHECK_THAT(*problem, Catch::Contains("multiple of pp=4; got 6"));
  CHECK(schedule_problem(ScheduleKind::kInterleaved1F1B, 1, 4, 2));
  CHECK(schedule_problem(ScheduleKind::kZbv, 4, 8, 3));
  CHECK(schedule_problem(ScheduleKind::kOneFOneB, 4, 8, 2));
  CHECK(schedule_problem(ScheduleKind::kGpipe, 4, 0, 1));
}

TEST_CASE("PipelineSchedule: every valid schedule is complete and deadlock-free") {
  int32_t checked = 0;
  for (ScheduleKind kind : kAllKinds) {
    std::vector<int32_t> chunk_options = {default_chunks(kind)};
    if (kind == ScheduleKind::kInterleaved1F1B) chunk_options = {1, 2, 3, 4};
    for (int32_t v : chunk_options) {
      for (int32_t p = 1; p <= 8; ++p) {
        for (int32_t m = 1; m <= 16; ++m) {
          if (schedule_problem(kind, p, m, v)) continue;
          PipelineSchedule schedule = build_pipeline_schedule(kind, p, m, v);
          INFO(schedule_name(kind) << " p=" << p << " m=" << m << " v=" << v);
          std::optional<std::string> problem = check_schedule(schedule);
          CHECK(problem.value_or("") == "");
          // Independently of check_schedule: each (kind, chunk, microbatch) at most once, and
          // each (chunk, microbatch) has F and either B or both I and W.
          std::map<std::tuple<ActionKind, int32_t, int32_t>, int> count;
          for (const auto& actions : schedule.rank_actions) {
            for (const Action& a : actions) {
              if (a.kind <= ActionKind::kBackwardWeight) ++count[{a.kind, a.chunk, a.microbatch}];
            }
          }
          CHECK(std::all_of(count.begin(), count.end(),
                            [](const auto& entry) { return entry.second == 1; }));
          bool complete = true;
          for (int32_t c = 0; c < p * v; ++c) {
            for (int32_t mb = 0; mb < m; ++mb) {
              int f = count[{ActionKind::kForward, c, mb}];
              int b = count[{ActionKind::kBackward, c, mb}];
              int i = count[{ActionKind::kBackwardInput, c, mb}];
              int w = count[{ActionKind::kBackwardWeight, c, mb}];
              complete = complete && f == 1 && b + i == 1 && i == w;
            }
          }
          CHECK(complete);
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 1166);
}

TEST_CASE("PipelineSchedule: interleaved microbatches not a multiple of p deadlock") {
  // Why schedule_problem insists on m % p == 0: Megatron's warm-up count assumes full groups.
  REQUIRE(schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 5, 3));
  auto problem = check_schedule(build_pipeline_schedule(ScheduleKind::kInterleaved1F1B, 4, 5, 3));
  REQUIRE(problem);
  CHECK_THAT(*problem, Catch::StartsWith("schedule has a dependency cycle: "));
}

TEST_CASE("PipelineSchedule: interleaved microbatch groups larger than p, by hand") {
  // p=2, v=2, m=4 in one group of g=4 (Megatron's microbatch_group_size_per_vp_stage): every
  // microbatch runs local chunk 0, then local chunk 1. Warm-up (p-r-1)*2 + (v-1)*g: rank 0 six
  // forwards, rank 1 four; with Megatron's default g=p=2, four and two.
  const PipelineSchedule grouped =
      build_pipeline_schedule(ScheduleKind::kInterleaved1F1B, 2, 4, 2, 4);
  CHECK(compute_order(grouped, 0) == "FFFFFFFBFBBBBBBB");
  CHECK(compute_order(grouped, 1) == "FFFFFBFBFBFBBBBB");
  const PipelineSchedule plain = build_pipeline_schedule(ScheduleKind::kInterleaved1F1B, 2, 4, 2);
  CHECK(compute_order(plain, 0) == "FFFFFBFBFBFBBBBB");
  CHECK(compute_order(plain, 1) == "FFFBFBFBFBFBFBBB");
  // g = p is the default, action for action.
  const PipelineSchedule given_p =
      build_pipeline_schedule(ScheduleKind::kInterleaved1F1B, 2, 4, 2, 2);
  for (int32_t r = 0; r < 2; ++r) {
    std::vector<std::string> given, defaulted;
    for (const Action& action : given_p.rank_actions[r]) given.push_back(action_label(action));
    for (const Action& action : plain.rank_actions[r]) defaulted.push_back(action_label(action));
    CHECK(given == defaulted);
  }
  // Rank 0's forwards: microbatches 0-3 through chunk 0, then chunk 2 (its local chunk 1).
  std::vector<std::pair<int32_t, int32_t>> forwards;
  for (const Action& action : grouped.rank_actions[0]) {
    if (action.kind == ActionKind::kForward) forwards.emplace_back(action.chunk, action.microbatch);
  }
  CHECK(forwards == std::vector<std::pair<int32_t, int32_t>>{
                        {0, 0}, {0, 1}, {0, 2}, {0, 3}, {2, 0}, {2, 1}, {2, 2}, {2, 3}});
  // One more forward before the first backward: rank 0 holds 7 chunk-microbatches (4 of chunk
  // 0, 3 of chunk 2) against 5 with g=2; rank 1 5 against 3.
  const std::vector<InflightPeak> peaks = inflight_peaks(grouped);
  CHECK(peaks[0].total == 7);
  CHECK(peaks[0].per_local_chunk == std::vector<int32_t>{4, 3});
  CHECK(peaks[1].total == 5);
  CHECK(peak_inflight_chunks(plain) == std::vector<int32_t>{5, 3});
  CHECK(check_schedule(grouped).value_or("") == "");
}

TEST_CASE("PipelineSchedule: interleaved groups follow Megatron's rules and never deadlock") {
  // Megatron (forward_backward_pipelining_with_interleaving): p <= g <= m, and the last group
  // m % g is 0 or at least p.
  CHECK(!schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 6, 2, 6));   // One group of 6.
  CHECK(!schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 10, 2, 6));  // 6, then 4 = p.
  auto problem = schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 9, 2, 6);
  REQUIRE(problem);
  CHECK_THAT(*problem, Catch::Contains("leave a last group of 3, fewer than pp=4"));
  problem = schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 8, 2, 3);
  REQUIRE(problem);
  CHECK_THAT(*problem, Catch::Contains("microbatch_group_size_per_vp_stage=3 is outside"));
  CHECK(schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 8, 2, 9));   // More than m.
  CHECK(!schedule_problem(ScheduleKind::kInterleaved1F1B, 4, 8, 2, 4));  // g = p: as before.
  // Every grouping the rules allow is complete and free of dependency cycles.
  int32_t checked = 0;
  for (int32_t v = 2; v <= 3; ++v) {
    for (int32_t p = 2; p <= 5; ++p) {
      for (int32_t m = p; m <= 13; ++m) {
        for (int32_t g = p; g <= m; ++g) {
          if (schedule_problem(ScheduleKind::kInterleaved1F1B, p, m, v, g)) continue;
          INFO("p=" << p << " m=" << m << " v=" << v << " g=" << g);
          PipelineSchedule schedule =
              build_pipeline_schedule(ScheduleKind::kInterleaved1F1B, p, m, v, g);
          CHECK(check_schedule(schedule).value_or("") == "");
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 150);
}

TEST_CASE("PipelineSchedule: check_schedule reports broken schedules") {
  auto find = [](std::vector<Action>& actions, ActionKind kind, int32_t chunk, int32_t mb) {
    auto it = std::find_if(actions.begin(), actions.end(), [&](const Action& a) {
      return a.kind == kind && a.chunk == chunk && a.microbatch == mb;
    });
    REQUIRE(it != actions.end());
    return it;
  };
  SECTION("waiting for a gradient before sending the activation it needs") {
    PipelineSchedule schedule = build_pipeline_schedule(ScheduleKind::kGpipe, 2, 1, 1);
    auto& rank0 = schedule.rank_actions[0];
    std::iter_swap(find(rank0, ActionKind::kSendForward, 0, 0),
                   find(rank0, ActionKind::kRecvBackward, 0, 0));
    auto problem = check_schedule(schedule);
    REQUIRE(problem);
    CHECK(*problem ==
          "schedule has a dependency cycle: RECV_B[c0,mb0] -> SEND_F[c0,mb0] -> RECV_F[c1,mb0] "
          "-> F[c1,mb0] -> B[c1,mb0] -> SEND_B[c1,mb0] -> RECV_B[c0,mb0]");
  }
  SECTION("a backward before its own forward") {
    // Rank 1 (last stage) runs B of microbatch 1 before F of microbatch 1.
    PipelineSchedule schedule = build_pipeline_schedule(ScheduleKind::kOneFOneB, 2, 2, 1);
    auto& rank1 = schedule.rank_actions[1];
    std::iter_swap(find(rank1, ActionKind::kForward, 1, 1),
                   find(rank1, ActionKind::kBackward, 1, 1));
    auto problem = check_schedule(schedule);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::StartsWith("schedule has a dependency cycle: "));
    CHECK_THAT(*problem, Catch::Contains("F[c1,mb1] -> B[c1,mb1]"));
  }
  SECTION("a dropped receive") {
    PipelineSchedule schedule = build_pipeline_schedule(ScheduleKind::kOneFOneB, 4, 8, 1);
    auto& rank2 = schedule.rank_actions[2];
    rank2.erase(find(rank2, ActionKind::kRecvForward, 2, 5));
    CHECK(check_schedule(schedule).value_or("") == "SEND_F[c1,mb5] has no matching RECV_F[c2,mb5]");
  }
  SECTION("a receive after the action that needs it") {
    PipelineSchedule schedule = build_pipeline_schedule(ScheduleKind::kOneFOneB, 2, 2, 1);
    auto& rank1 = schedule.rank_actions[1];
    std::iter_swap(find(rank1, ActionKind::kRecvForward, 1, 0),
                   find(rank1, ActionKind::kForward, 1, 0));
    CHECK(check_schedule(schedule).value_or("") ==
          "schedule has a dependency cycle: RECV_F[c1,mb0] -> F[c1,mb0] -> RECV_F[c1,mb0]");
  }
  SECTION("a duplicated forward and a missing weight gradient") {
    PipelineSchedule schedule = build_pipeline_schedule(ScheduleKind::kZbH1, 2, 2, 1);
    PipelineSchedule twice = schedule;
    twice.rank_actions[0].insert(twice.rank_actions[0].begin(), {ActionKind::kForward, 0, 1});
    CHECK(check_schedule(twice).value_or("") == "rank 0: F[c0,mb1] appears twice");
    auto& rank1 = schedule.rank_actions[1];
    rank1.erase(find(rank1, ActionKind::kBackwardWeight, 1, 0));
    CHECK(check_schedule(schedule).value_or("") == "missing W[c1,mb0]");
  }
  SECTION("an action on the wrong rank") {
    PipelineSchedule schedule = build_pipeline_schedule(ScheduleKind::kGpipe, 2, 1, 1);
    schedule.rank_actions[0].insert(schedule.rank_actions[0].begin(), {ActionKind::kForward, 1, 0});
    CHECK(check_schedule(schedule).value_or("") == "rank 0: F[c1,mb0] belongs to rank 1");
  }
}

TEST_CASE("PipelineSchedule: activation peaks per rank, p=4 m=8") {
  auto peaks = [](ScheduleKind kind, ActivationRelease release) {
    return peak_inflight_chunks(build_pipeline_schedule(kind, 4, 8, default_chunks(kind)), release);
  };
  using Peaks = std::vector<int32_t>;
  const ActivationRelease at_w = ActivationRelease::kAtWeightGrad;
  const ActivationRelease at_i = ActivationRelease::kAtInputGrad;
  CHECK(peaks(ScheduleKind::kGpipe, at_w) == Peaks{8, 8, 8, 8});
  CHECK(peaks(ScheduleKind::kOneFOneB, at_w) == Peaks{4, 3, 2, 1});
  // Megatron's interleaved count: warm-up + 1 chunk-microbatches, (p-r-1)*2 + (v-1)*p + 1.
  CHECK(peaks(ScheduleKind::kInterleaved1F1B, at_w) == Peaks{11, 9, 7, 5});
  // ZB-H1 keeps 1F1B's p on rank 0; holding W back lets every rank reach p when the layer
  // inputs stay until W, and 1F1B's p - r when they go at I (the paper's accounting).
  CHECK(peaks(ScheduleKind::kZbH1, at_w) == Peaks{4, 4, 4, 4});
  CHECK(peaks(ScheduleKind::kZbH1, at_i) == Peaks{4, 3, 2, 1});
  // ZB-H2: the paper's (2p-1) M_B.
  CHECK(peaks(ScheduleKind::kZbH2, at_w) == Peaks{7, 7, 7, 7});
  CHECK(peaks(ScheduleKind::kZbH2, at_i) == Peaks{7, 5, 3, 1});
  // ZBV: 2p chunk-microbatches = p whole-rank microbatches, 1F1B's peak, on every rank.
  CHECK(peaks(ScheduleKind::kZbv, at_w) == Peaks{8, 8, 8, 8});
  // DualPipeV: 2p+1 chunk-microbatches (DualPipe README: PP+1 activations, PP = 2p stages).
  CHECK(peaks(ScheduleKind::kDualPipeV, at_w) == Peaks{9, 9, 9, 9});
}

TEST_CASE("PipelineSchedule: activation peaks over the grid, m >= 2p") {
  for (int32_t p = 1; p <= 8; ++p) {
    for (int32_t m = 2 * p; m <= 16; ++m) {
      INFO("p=" << p << " m=" << m);
      for (int32_t r = 0; r < p; ++r) {
        auto peak = [&](ScheduleKind kind, int32_t v, ActivationRelease release) {
          return peak_inflight_chunks(build_pipeline_schedule(kind, p, m, v), release)[r];
        };
        const ActivationRelease at_w = ActivationRelease::kAtWeightGrad;
        const ActivationRelease at_i = ActivationRelease::kAtInputGrad;
        CHECK(peak(ScheduleKind::kGpipe, 1, at_w) == m);
        CHECK(peak(ScheduleKind::kOneFOneB, 1, at_w) == p - r);
        CHECK(peak(ScheduleKind::kZbH1, 1, at_w) == p);
        CHECK(peak(ScheduleKind::kZbH1, 1, at_i) == p - r);
        CHECK(peak(ScheduleKind::kZbH2, 1, at_w) == 2 * p - 1);
        CHECK(peak(ScheduleKind::kZbH2, 1, at_i) == 2 * (p - r) - 1);
        CHECK(peak(ScheduleKind::kZbv, 2, at_w) == 2 * p);
        CHECK(peak(ScheduleKind::kDualPipeV, 2, at_w) == 2 * p + 1);
        if (p >= 2 && m % p == 0) {
          for (int32_t v = 2; v <= 4; ++v) {
            CHECK(peak(ScheduleKind::kInterleaved1F1B, v, at_w) ==
                  std::min((p - r - 1) * 2 + (v - 1) * p + 1, m * v));
          }
        }
      }
    }
  }
}

TEST_CASE("PipelineSchedule: searched zero-bubble orders keep their memory limit") {
  // The search's units: F holds 2 (M_B), I frees 1, W frees 1; the limit is 2 * factor * p.
  for (int32_t factor : {1, 2}) {
    ScheduleKind kind = factor == 1 ? ScheduleKind::kZb1p : ScheduleKind::kZb2p;
    for (int32_t p = 1; p <= 8; ++p) {
      for (int32_t m = 1; m <= 24; ++m) {
        PipelineSchedule schedule = build_pipeline_schedule(kind, p, m, 1);
        for (int32_t r = 0; r < p; ++r) {
          INFO(schedule_name(kind) << " p=" << p << " m=" << m << " r=" << r);
          int32_t memory = 0, peak = 0;
          for (const Action& a : schedule.rank_actions[r]) {
            if (a.kind == ActionKind::kForward) memory += 2;
            if (a.kind == ActionKind::kBackwardInput || a.kind == ActionKind::kBackwardWeight) {
              memory -= 1;
            }
            peak = std::max(peak, memory);
          }
          CHECK(peak <= 2 * factor * p);
          CHECK(memory == 0);
        }
      }
    }
  }
  // Under 2p the searched order fills the limit on later ranks too: with m = 24 and p = 8 every
  // rank holds more than ZB-H2's 2p - 1 microbatches between F and W at some point.
  std::vector<int32_t> peaks = peak_inflight_chunks(
      build_pipeline_schedule(ScheduleKind::kZb2p, 8, 24, 1), ActivationRelease::kAtWeightGrad);
  for (int32_t peak : peaks) CHECK(peak > 15);
}

TEST_CASE("PipelineSchedule: counted peaks agree with the analytic in-flight model") {
  // inflight_microbatches.h counts the zero-bubble family (zb-h1, zb-h2, zb-1p, zb-2p) with
  // 1F1B-style release at the input gradient; the other schedules release at W or B.
  for (ScheduleKind kind : kAllKinds) {
    std::vector<int32_t> chunk_options = {default_chunks(kind)};
    if (kind == ScheduleKind::kInterleaved1F1B) chunk_options = {1, 2, 3, 4};
    const ActivationRelease release = kind == ScheduleKind::kZbH1 || kind == ScheduleKind::kZbH2 ||
                                              kind == ScheduleKind::kZb1p ||
                                              kind == ScheduleKind::kZb2p
                                          ? ActivationRelease::kAtInputGrad
                                          : ActivationRelease::kAtWeightGrad;
    for (int32_t v : chunk_options) {
      for (int32_t p = 1; p <= 8; ++p) {
        for (int32_t m = 1; m <= 16; ++m) {
          if (schedule_problem(kind, p, m, v)) continue;
          std::vector<InflightPeak> counted =
              inflight_peaks(build_pipeline_schedule(kind, p, m, v), release);
          for (int32_t r = 0; r < p; ++r) {
            INFO(schedule_name(kind) << " p=" << p << " m=" << m << " v=" << v << " r=" << r);
            InflightMicrobatches model = microbatches_in_flight(kind, p, v, m, r);
            std::vector<int64_t> counted_chunks(counted[r].per_local_chunk.begin(),
                                                counted[r].per_local_chunk.end());
            CHECK(counted_chunks == model.per_chunk);
          }
        }
      }
    }
  }
}

TEST_CASE("PipelineSchedule: unit-time makespans hold the bubble formulas") {
  for (int32_t p = 1; p <= 8; ++p) {
    for (int32_t m = 1; m <= 16; ++m) {
      INFO("p=" << p << " m=" << m);
      // GPipe and 1F1B with F = 1, B = 2: (m + p - 1)(tF + tB), for m < p too.
      CHECK(run_unit_time(build_pipeline_schedule(ScheduleKind::kGpipe, p, m, 1), 1, 2, 1, 1)
                .makespan == 3 * (m + p - 1));
      CHECK(run_unit_time(build_pipeline_schedule(ScheduleKind::kOneFOneB, p, m, 1), 1, 2, 1, 1)
                .makespan == 3 * (m + p - 1));
      // Interleaved, per chunk F = 1, B = 2: the bubble shrinks to (p-1) chunk steps,
      // 3(m*v + p - 1).
      if (p >= 2 && m % p == 0) {
        for (int32_t v = 2; v <= 4; ++v) {
          CHECK(run_unit_time(build_pipeline_schedule(ScheduleKind::kInterleaved1F1B, p, m, v), 1,
                              2, 1, 1)
                    .makespan == 3 * (m * v + p - 1));
        }
      }
      // ZB-H1 with F = I = W = 1: bubble (p-1)(tF + tI - tW) = p - 1; the searched ZB-1p finds
      // the same.
      for (ScheduleKind kind : {ScheduleKind::kZbH1, ScheduleKind::kZb1p}) {
        if (m < p) continue;
        INFO(schedule_name(kind));
        CHECK(run_unit_time(build_pipeline_schedule(kind, p, m, 1), 1, 2, 1, 1).makespan ==
              3 * m + p - 1);
      }
      // ZB-H2 and the searched ZB-2p: every rank busy 3m without a gap (the parallelogram); the
      // last rank starts p-1 late, so the step ends at 3m + p - 1. Holds from m = 2p - 1.
      if (m >= 2 * p - 1) {
        for (ScheduleKind kind : {ScheduleKind::kZbH2, ScheduleKind::kZb2p}) {
          INFO(schedule_name(kind));
          UnitTimeRun run = run_unit_time(build_pipeline_schedule(kind, p, m, 1), 1, 2, 1, 1);
          for (int32_t r = 0; r < p; ++r) CHECK(run.span(r) == 3 * m);
          CHECK(run.makespan == 3 * m + p - 1);
        }
        // ZBV, two chunks per rank, per chunk F = I = W = 1: also gap-free, 6m per rank.
        UnitTimeRun zbv =
            run_unit_time(build_pipeline_schedule(ScheduleKind::kZbv, p, m, 2), 1, 2, 1, 1);
        for (int32_t r = 0; r < p; ++r) CHECK(zbv.span(r) == 6 * m);
        CHECK(zbv.makespan == 6 * m + p - 1);
      }
      // DualPipeV with its overlapped pairs run one after the other (no overlap gain), F = I =
      // W = 1, B = 2: 6m + p - 1; rank 0 idles p - 1.
      if (m >= 2 * p) {
        UnitTimeRun run =
            run_unit_time(build_pipeline_schedule(ScheduleKind::kDualPipeV, p, m, 2), 1, 2, 1, 1);
        CHECK(run.makespan == 6 * m + p - 1);
      }
    }
  }
}

}  // namespace
}  // namespace ppsim
