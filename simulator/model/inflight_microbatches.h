// Microbatches whose activations a pipeline rank holds at its activation peak, per schedule.
//
// Counted from the schedule's own action order (schedule/pipeline_schedule.h: the lists the step
// builder lowers and the timeline runs), every F allocating and its B, or its I or W per the
// schedule's release trait (spec/schedule_kind.h), freeing: the analytic memory model and the
// simulated timeline count from one source. Counts are per local model chunk, because under
// interleaved and V-shaped schedules the chunks of one rank hold different numbers of
// microbatches at the peak. The closed forms below are what those counts come to (the tests
// hold them against independent replays of Megatron's and torch's orders).
//
// Notation: p pipeline ranks, r this rank (0 = first), m microbatches per step, v chunks per rank.
// A forward allocates a microbatch's activations; its backward frees them (for zbv and
// dualpipev, the weight-gradient pass W frees them, since W still needs the layer inputs; the
// zb-h*/zb-*p family releases at I, the Zero Bubble paper's accounting).
// - gpipe: all m forwards come before any backward: m on every rank.
// - 1f1b (Megatron non-interleaved, torch Schedule1F1B): p-r-1 warm-up forwards, then one more
//   forward before the first backward: min(p - r, m). Stage 0 holds p (REFERENCE.md 4).
// - interleaved-1f1b (Megatron, microbatch groups of g, default p): warm-up (p-r-1)*2 + (v-1)*g
//   forwards, one more before the first backward: N = min((p-r-1)*2 + (v-1)*g + 1, m*v)
//   chunk-microbatches, distributed over chunks in Megatron's order (for each group of g
//   microbatches, chunk 0 of the group, then chunk 1, ...; the last group may be short). Each
//   chunk holds layers/v layers, so with g = p stage 0 holds, in whole-rank units,
//   (p*v + p - 1)/v = p*(1 + (p-1)/(p*v)): Megatron's interleaving factor (REFERENCE.md 1.5);
//   each microbatch of g beyond p adds (v-1)/v. vpp == 1 is plain 1f1b (Megatron normalises it).
// - zb-h1 (Qi et al. 2024, arXiv 2401.10241): same warm-up as 1f1b, W only delayed: min(p - r, m).
// - zb-h2: extra warm-up forwards so no stage waits. With unit-time F, B, W: microbatch 0's
//   forward reaches rank r at time r and its backward (B only; W deferred) returns at 2p-1-r, so
//   rank r can run 2(p-r)-1 forwards before its first backward: min(2(p-r) - 1, m); stage 0
//   holds 2p-1 (the paper's (2p-1) M_B peak); the last rank holds 1.
// - zb-1p, zb-2p (the paper's searched schedules, schedules/zero_bubble_auto.cc): no closed
//   form; the peak of (forwards - input gradients) along rank r's searched order, released at
//   I as zb-h1 and zb-h2 are here. What W still holds after I (its weight stash) is not counted:
//   under zb-2p the search holds W back until its memory limit forces them, so every rank fills
//   towards 2p and the simulated timeline (which frees the stash at W) peaks higher than this.
// - zbv (V placement: rank r holds chunk 0 = stage r and chunk 1 = stage 2p-1-r; torch
//   ScheduleZBVZeroBubble): warm-up 2(p-r)-1 F(c0), then r x [F(c1), F(c0)], then the first
//   F(c1) of the (p-r) x [F(c1), I(c1), W(c1)] phase: chunk 0 holds min(2p-r-1, m), chunk 1
//   min(r+1, m), 2p chunk-microbatches = p whole-rank microbatches on every rank: 1F1B's peak.
// - dualpipev (same V placement; torch ScheduleDualPipeV, DualPipe README "PP+1 activations"
//   with PP = 2p stages): 2(p-r-1) F(c0), then (r+1) x [F(c0), F(c1)] gives 2p; the first
//   overlapped F(c0)+B(c1) pair allocates before it frees: chunk 0 holds min(2p-r, m), chunk 1
//   min(r+1, m), 2p+1 chunk-microbatches = p + 1/2 whole-rank microbatches.
// The chunk holding the loss (last rank's last chunk; rank 0's chunk 1 for V schedules) holds
// one microbatch at the peak under every schedule but gpipe (m), which these counts reproduce.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/spec/schedule_kind.h"

namespace ppsim {

// Microbatches alive on one rank at its activation peak.
struct InflightMicrobatches {
  // Microbatches whose activations each local chunk holds, in local chunk order (chunk c of an
  // interleaved rank r is virtual stage c*p + r; V schedules: chunk 0 is stage r, chunk 1 is
  // stage 2p-1-r). One entry for single-chunk schedules.
  std::vector<int64_t> per_chunk;

  // Whole-rank equivalent: sum(per_chunk) / number of chunks, i.e. in units of one microbatch's
  // activations through all of the rank's layers (equal-sized chunks).
  double stage_equivalent() const;
};

// In-flight microbatches of every rank (pp entries) of `pp` with `microbatches` per step, `vpp`
// chunks per rank and interleaved groups of `microbatch_group` (0 = pp), from the schedule's
// action order. Counted once per (schedule, pp, vpp, microbatches, group) and kept: the
// reference stays valid for the process's life. Thread-safe. REQUIRES: microbatches >= 1;
// vpp == 1 except interleaved-1f1b (>= 1) and zbv/dualpipev (== 2).
const std::vector<InflightMicrobatches>& microbatches_in_flight_per_rank(
    ScheduleKind schedule, int64_t pp, int64_t vpp, int64_t microbatches,
    int64_t microbatch_group = 0);

// The same for one rank. REQUIRES: 0 <= rank < pp, and the above.
InflightMicrobatches microbatches_in_flight(ScheduleKind schedule, int64_t pp, int64_t vpp,
                                            int64_t microbatches, int64_t rank,
                                            int64_t microbatch_group = 0);

}  // namespace ppsim
