#include "simulator/model/inflight_microbatches.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

namespace ppsim {
namespace {

// An independent oracle: a rank's local action order decides how many microbatches it holds,
// whatever the other ranks do. Replays an order of (allocate or free, chunk) actions and returns
// the per-chunk counts at the first moment the total is largest.
struct Action {
  bool allocate;  // Forward (true) or the pass that frees (B, or W for zero-bubble splits).
  int chunk;
};

std::vector<int64_t> peak_per_chunk(const std::vector<Action>& order, int chunks) {
  std::vector<int64_t> alive(chunks, 0), best(chunks, 0);
  int64_t best_total = -1;
  for (const Action& action : order) {
    alive[action.chunk] += action.allocate ? 1 : -1;
    REQUIRE(alive[action.chunk] >= 0);
    int64_t total = 0;
    for (int64_t count : alive) total += count;
    if (total > best_total) {
      best_total = total;
      best = alive;
    }
  }
  return best;
}

// Megatron forward_backward_pipelining_without_interleaving: p-r-1 warm-up forwards, then
// (F, B) pairs, then the cool-down backwards.
std::vector<Action> one_f_one_b_order(int64_t p, int64_t r, int64_t m) {
  std::vector<Action> order;
  int64_t warmup = std::min(p - r - 1, m);
  for (int64_t i = 0; i < warmup; ++i) order.push_back({true, 0});
  for (int64_t i = 0; i < m - warmup; ++i) {
    order.push_back({true, 0});
    order.push_back({false, 0});
  }
  for (int64_t i = 0; i < warmup; ++i) order.push_back({false, 0});
  return order;
}

// Megatron forward_backward_pipelining_with_interleaving, microbatch groups of g (default p):
// forwards follow the schedule table (chunk ids), backwards the same table with chunks reversed.
std::vector<Action> interleaved_order(int64_t p, int64_t v, int64_t r, int64_t m, int64_t g = 0) {
  if (g == 0) g = p;
  std::vector<int> table_chunks;
  for (int64_t first = 0; first < m; first += g) {
    int64_t size = first + g >= m ? m - first : g;
    for (int64_t chunk = 0; chunk < v; ++chunk) {
      for (int64_t i = 0; i < size; ++i) table_chunks.push_back(static_cast<int>(chunk));
    }
  }
  const int64_t total = m * v;
  const int64_t warmup = std::min((p - r - 1) * 2 + (v - 1) * g, total);
  std::vector<Action> order;
  int64_t forward = 0, backward = 0;
  for (; forward < warmup; ++forward) order.push_back({true, table_chunks[forward]});
  while (forward < total) {
    order.push_back({true, table_chunks[forward++]});
    order.push_back({false, static_cast<int>(v - 1 - table_chunks[backward++])});
  }
  while (backward < total) {
    order.push_back({false, static_cast<int>(v - 1 - table_chunks[backward++])});
  }
  return order;
}

// torch ScheduleZBVZeroBubble's rank order (REFERENCE.md 4), activations freed at W. Only the
// phases up to the first steady iterations matter for the peak; they are replayed with m large.
std::vector<Action> zbv_order(int64_t p, int64_t r) {
  std::vector<Action> order;
  auto f = [&](int c) { order.push_back({true, c}); };
  auto w = [&](int c) { order.push_back({false, c}); };  // I frees nothing; W frees.
  for (int64_t i = 0; i < 2 * (p - r) - 1; ++i) f(0);
  for (int64_t i = 0; i < r; ++i) {
    f(1);
    f(0);
  }
  for (int64_t i = 0; i < p - r; ++i) {
    f(1);
    w(1);
  }
  for (int i = 0; i < 4; ++i) {
    f(0);
    w(0);
    f(1);
    w(1);
  }
  return order;
}

// torch ScheduleDualPipeV's rank order: warm-up, then overlapped F+B pairs whose forward
// allocates before the backward frees.
std::vector<Action> dualpipev_order(int64_t p, int64_t r) {
  std::vector<Action> order;
  auto f = [&](int c) { order.push_back({true, c}); };
  auto b = [&](int c) { order.push_back({false, c}); };
  for (int64_t i = 0; i < 2 * (p - r - 1); ++i) f(0);
  for (int64_t i = 0; i < r + 1; ++i) {
    f(0);
    f(1);
  }
  for (int64_t i = 0; i < p - r - 1; ++i) {
    b(1);
    f(1);
  }  // I(c1), its W, then F(c1).
  for (int i = 0; i < 4; ++i) {
    f(0);
    b(1);
    f(1);
    b(0);
  }
  return order;
}

TEST_CASE("InflightMicrobatches: gpipe holds every microbatch on every rank") {
  for (int64_t rank = 0; rank < 4; ++rank) {
    InflightMicrobatches inflight = microbatches_in_flight(ScheduleKind::kGpipe, 4, 1, 12, rank);
    CHECK(inflight.per_chunk == std::vector<int64_t>{12});
    CHECK(inflight.stage_equivalent() == 12);
  }
}

TEST_CASE("InflightMicrobatches: 1f1b and zb-h1 hold min(p - r, m)") {
  for (ScheduleKind kind : {ScheduleKind::kOneFOneB, ScheduleKind::kZbH1}) {
    for (int64_t m : {2, 4, 8, 32}) {
      for (int64_t r = 0; r < 8; ++r) {
        INFO("m=" << m << " r=" << r);
        InflightMicrobatches inflight = microbatches_in_flight(kind, 8, 1, m, r);
        CHECK(inflight.per_chunk == std::vector<int64_t>{std::min<int64_t>(8 - r, m)});
        CHECK(inflight.per_chunk == peak_per_chunk(one_f_one_b_order(8, r, m), 1));
      }
    }
  }
}

TEST_CASE("InflightMicrobatches: zb-h2 holds 2(p - r) - 1, capped at m") {
  CHECK(microbatches_in_flight(ScheduleKind::kZbH2, 4, 1, 16, 0).per_chunk[0] == 7);
  CHECK(microbatches_in_flight(ScheduleKind::kZbH2, 4, 1, 16, 1).per_chunk[0] == 5);
  CHECK(microbatches_in_flight(ScheduleKind::kZbH2, 4, 1, 16, 3).per_chunk[0] == 1);
  CHECK(microbatches_in_flight(ScheduleKind::kZbH2, 4, 1, 4, 0).per_chunk[0] == 4);
}

TEST_CASE("InflightMicrobatches: interleaved stage 0 matches Megatron's 1 + (p-1)/(pv) factor") {
  for (int64_t p : {2, 4, 8, 16}) {
    for (int64_t v : {2, 3, 4}) {
      INFO("p=" << p << " v=" << v);
      InflightMicrobatches inflight =
          microbatches_in_flight(ScheduleKind::kInterleaved1F1B, p, v, 8 * p, 0);
      double megatron = p * (1.0 + (p - 1.0) / (p * v));
      CHECK(inflight.stage_equivalent() == Approx(megatron).epsilon(1e-12));
    }
  }
}

TEST_CASE("InflightMicrobatches: interleaved per-chunk counts follow Megatron's order") {
  // p=4, v=2, m=8. Rank 0: 2*3 + 4 + 1 = 11 forwards: mb 0-3 chunk 0, mb 0-3 chunk 1,
  // mb 4-6 chunk 0.
  CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, 4, 2, 8, 0).per_chunk ==
        std::vector<int64_t>{7, 4});
  // Last rank: 4 + 1 forwards; its last chunk (the loss) holds one microbatch.
  CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, 4, 2, 8, 3).per_chunk ==
        std::vector<int64_t>{4, 1});
  // Capped at m*v: m=2 gives one short group, all four forwards in the warm-up.
  CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, 4, 2, 2, 0).per_chunk ==
        std::vector<int64_t>{2, 2});
  // vpp == 1 is plain 1f1b (Megatron normalises it).
  CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, 4, 1, 8, 1).per_chunk ==
        std::vector<int64_t>{3});
  for (int64_t p : {2, 4, 8}) {
    for (int64_t v : {2, 4}) {
      for (int64_t m : {p, 2 * p, 3 * p + 1}) {
        for (int64_t r = 0; r < p; ++r) {
          INFO("p=" << p << " v=" << v << " m=" << m << " r=" << r);
          CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, p, v, m, r).per_chunk ==
                peak_per_chunk(interleaved_order(p, v, r, m), static_cast<int>(v)));
        }
      }
    }
  }
}

TEST_CASE("InflightMicrobatches: a larger interleaving group holds (v-1) more per microbatch") {
  // p=4, v=2, m=12 in groups of 6 (microbatch_group_size_per_vp_stage): rank 0 warms up
  // 2*3 + 6 = 12 forwards (mb 0-5 chunk 0, mb 0-5 chunk 1) and runs one more (mb 6, chunk 0):
  // 13 chunk-microbatches against 11 with groups of p = 4.
  CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, 4, 2, 12, 0, 6).per_chunk ==
        std::vector<int64_t>{7, 6});
  CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, 4, 2, 12, 0).per_chunk ==
        std::vector<int64_t>{7, 4});
  // Group 0 and group p are one schedule.
  CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, 4, 2, 12, 2, 4).per_chunk ==
        microbatches_in_flight(ScheduleKind::kInterleaved1F1B, 4, 2, 12, 2).per_chunk);
  for (int64_t p : {2, 4}) {
    for (int64_t v : {2, 3}) {
      for (int64_t g : {p + 1, 2 * p}) {
        for (int64_t m : {2 * g, 3 * g, 2 * g + p}) {
          for (int64_t r = 0; r < p; ++r) {
            INFO("p=" << p << " v=" << v << " g=" << g << " m=" << m << " r=" << r);
            CHECK(microbatches_in_flight(ScheduleKind::kInterleaved1F1B, p, v, m, r, g).per_chunk ==
                  peak_per_chunk(interleaved_order(p, v, r, m, g), static_cast<int>(v)));
          }
        }
      }
    }
  }
}

TEST_CASE("InflightMicrobatches: zbv holds 2p chunk-microbatches (p whole-rank) on every rank") {
  for (int64_t p : {2, 4, 8}) {
    for (int64_t r = 0; r < p; ++r) {
      INFO("p=" << p << " r=" << r);
      InflightMicrobatches inflight = microbatches_in_flight(ScheduleKind::kZbv, p, 2, 64, r);
      CHECK(inflight.per_chunk == std::vector<int64_t>{2 * p - r - 1, r + 1});
      CHECK(inflight.stage_equivalent() == p);
      CHECK(inflight.per_chunk == peak_per_chunk(zbv_order(p, r), 2));
    }
  }
  // Rank 0's chunk 1 is the last stage: one loss microbatch at the peak.
  CHECK(microbatches_in_flight(ScheduleKind::kZbv, 4, 2, 64, 0).per_chunk[1] == 1);
  // Few microbatches cap each chunk.
  CHECK(microbatches_in_flight(ScheduleKind::kZbv, 4, 2, 3, 0).per_chunk ==
        std::vector<int64_t>{3, 1});
}

TEST_CASE("InflightMicrobatches: dualpipev holds 2p + 1 chunk-microbatches (PP + 1)") {
  for (int64_t p : {2, 4, 8}) {
    for (int64_t r = 0; r < p; ++r) {
      INFO("p=" << p << " r=" << r);
      InflightMicrobatches inflight = microbatches_in_flight(ScheduleKind::kDualPipeV, p, 2, 64, r);
      CHECK(inflight.per_chunk == std::vector<int64_t>{2 * p - r, r + 1});
      CHECK(inflight.stage_equivalent() == Approx(p + 0.5));
      CHECK(inflight.per_chunk == peak_per_chunk(dualpipev_order(p, r), 2));
    }
  }
}

}  // namespace
}  // namespace ppsim
