// The per-schedule builders behind build_pipeline_schedule (private to simulator/schedule/).
//
// Each returns one rank's compute actions (F, B, I, W) in execution order, with chunks numbered
// globally (PipelineSchedule's placement). build_pipeline_schedule adds the sends, receives,
// gradient syncs and the optimizer step around them. Notation: p ranks, m microbatches, v chunks
// per rank, r the rank. REQUIRES (all): p >= 1, m >= 1, 0 <= r < p.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/schedule/schedule_action.h"

namespace ppsim {

// GPipe (torch ScheduleGPipe): F for microbatches 0..m-1, then B for 0..m-1.
std::vector<Action> gpipe_rank_order(int32_t p, int32_t m, int32_t r);

// Megatron's non-interleaved 1F1B (forward_backward_pipelining_without_interleaving):
// w = min(p-r-1, m) warm-up F, then m-w pairs (F, B), then w cool-down B.
std::vector<Action> one_f_one_b_rank_order(int32_t p, int32_t m, int32_t r);

// Megatron's interleaved 1F1B, loop placement (chunk k*p + r is local chunk k), microbatch
// groups of g (microbatch_group_size_per_vp_stage; Megatron's default is p). v == 1 is
// one_f_one_b_rank_order (Megatron normalises vpp 1 away). REQUIRES: v >= 1, g >= 1; for v > 1
// Megatron's rules are p <= g <= m and m % g of 0 or at least p (schedule_problem).
std::vector<Action> interleaved_1f1b_rank_order(int32_t p, int32_t m, int32_t v, int32_t g,
                                                int32_t r);

// The handcrafted zero-bubble family ZB-H1 (factor 1) and ZB-H2 (factor 2): warm-up
// min(factor*(p-r-1), m) F, then (F, I) pairs, then cool-down I; the W of the oldest pending
// microbatch follows every I after the first factor*r ones; the rest of the W close the list.
// REQUIRES: factor is 1 or 2.
std::vector<Action> zero_bubble_rank_order(int32_t p, int32_t m, int32_t r, int32_t factor);

// The Zero Bubble paper's searched ZB-1p (factor 1) and ZB-2p (factor 2): its greedy heuristic
// over unit F, I, W under an activation limit of factor*p microbatches per rank
// (zero_bubble_auto.cc). REQUIRES: factor is 1 or 2.
std::vector<Action> zero_bubble_auto_rank_order(int32_t p, int32_t m, int32_t r, int32_t factor);
// Rank r's peak count of microbatches between their F and their I in that order (the release
// inflight_microbatches.h counts the zero-bubble family with).
int64_t zero_bubble_auto_inflight(int32_t p, int32_t m, int32_t r, int32_t factor);

// torch ScheduleZBVZeroBubble (V placement, two chunks per rank).
std::vector<Action> zbv_rank_order(int32_t p, int32_t m, int32_t r);

// torch ScheduleDualPipeV (V placement, two chunks per rank); an OVERLAP_F_B pair is its F
// followed by its B. REQUIRES: m >= 2p.
std::vector<Action> dualpipev_rank_order(int32_t p, int32_t m, int32_t r);

}  // namespace ppsim
