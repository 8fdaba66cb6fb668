// PipelineSchedule: for each pipeline rank, the ordered actions of one training step.
//
// The one source of truth for a schedule: the simulator lowers these lists to a TaskGraph with
// costs (step_builder.h, schedule_study.h), and the hardware executor of `ppsim validate` runs
// the same lists. The builder knows no costs: it is a pure function of the schedule kind, the
// number of ranks p, microbatches m and chunks per rank v.
//
// Chunks ("virtual stages", torch's stage_index) number the model's pieces in forward order,
// 0 .. p*v-1. Placement: one chunk per rank (v == 1) puts chunk r on rank r; interleaved-1f1b's
// loop placement puts chunk c on rank c % p; the V placement of zbv and dualpipev puts chunk c
// on rank c for c < p and on rank 2p-1-c otherwise (rank r holds chunks r and 2p-1-r).
//
// Per rank, actions come in execution order:
//   kForward F(c, mb), kBackward B(c, mb) (input and weight gradient fused),
//   kBackwardInput I(c, mb) and kBackwardWeight W(c, mb) (split, zero-bubble schedules),
//   kRecvForward before the F that consumes an activation from another rank, kSendForward right
//   after the F that produces it; kRecvBackward / kSendBackward likewise for gradients (the
//   send follows the B or I that produces the input gradient),
//   kGradientSync(c) once chunk c's last weight gradient of the step is done (the DP reduction
//   of its gradients may start), kOptimizerStep last.
// A send and its receive pair up by (kind, chunk, microbatch): SEND_F(c, mb) on rank(c) matches
// RECV_F(c+1, mb) on rank(c+1); SEND_B(c, mb) matches RECV_B(c-1, mb). Sends and receives
// between chunks on the same rank are omitted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/schedule/schedule_action.h"
#include "simulator/spec/schedule_kind.h"

namespace ppsim {

struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::kOneFOneB;
  int32_t ranks = 1;                // p.
  int32_t microbatches = 1;         // m.
  int32_t chunks_per_rank = 1;      // v.
  int32_t microbatch_group = 1;     // interleaved-1f1b's g as built (p unless given); else p.
  bool split_backward = false;      // True when backward is I + W (zb-*, zbv, dualpipev).
  std::vector<int32_t> chunk_rank;  // Chunk -> rank; size p*v.
  std::vector<std::vector<Action>> rank_actions;  // Per rank, in execution order.

  int32_t num_chunks() const { return ranks * chunks_per_rank; }
};

// The orders (per rank r; builders in schedules/, one file each; w = warm-up forwards):
// - gpipe (torch ScheduleGPipe): F for microbatches 0..m-1, then B for 0..m-1.
// - 1f1b (Megatron, not torch's m >= p variant): w = min(p-r-1, m), then m-w pairs (F, B),
//   then w B. Runs any m.
// - interleaved-1f1b (Megatron, loop placement): forwards follow Megatron's schedule table,
//   microbatches in groups of g (microbatch_group_size_per_vp_stage, default p), each group
//   through local chunk 0, then chunk 1, ...; the k-th backward takes the table's k-th entry
//   with the local chunks reversed. w = min((p-r-1)*2 + (v-1)*g, m*v), then pairs (F, B), then
//   B. Needs p <= g <= m and a last group m % g of 0 or at least p (Megatron refuses a shorter
//   one for its dependency bubbles; with g = p any short group deadlocks this order).
//   v == 1 is 1f1b.
// - zb-h1 (Qi et al. 2024; torch ScheduleInterleavedZeroBubble with v == 1): w = min(p-r-1, m),
//   then pairs (F, I), then I; after the first r input gradients each I is followed by the W of
//   the oldest pending microbatch, and the remaining W close the list. Unit F, I, W: step
//   3m + p - 1 for m >= p, i.e. bubble (p-1)(T_F + T_I - T_W).
// - zb-h2: the same with w = min(2(p-r-1), m) and the W held back for 2r input gradients:
//   rank 0 holds 2p-1 microbatches, and with unit F, I, W every rank is busy 3m without a gap
//   for m >= 2p-1 (the paper's parallelogram; the step ends at 3m + p - 1 on the last rank).
// - zb-1p, zb-2p: the paper's searched schedules (section 3.1's greedy heuristic, as the
//   sail-sg fork builds its initial solution) over unit F, I, W under an activation limit of p
//   (zb-1p) or 2p (zb-2p) microbatches per rank, an I freeing half a microbatch and its W the
//   rest (schedules/zero_bubble_auto.cc). Unit costs: zb-1p finds zb-h1's order (step
//   3m + p - 1 for m >= p); zb-2p keeps zb-h2's warm-up and gap-free ranks (m >= 2p-1) but holds
//   W back until the limit or an idle slot needs them, so later ranks also fill towards 2p.
// - zbv: torch ScheduleZBVZeroBubble step by step (REFERENCE.md 4), V placement.
// - dualpipev: torch ScheduleDualPipeV step by step, V placement; each OVERLAP[F+B] pair is
//   written as its F followed by its B (a full backward): the order and the dependencies are
//   kept, the overlap is the cost model's to credit. Some microbatches run B, others I and W.
//
// Builds the schedule. `microbatch_group` is interleaved-1f1b's g (0 = p; other schedules ignore
// it). REQUIRES: p >= 1, m >= 1, v >= 1; v == 2 for zbv and dualpipev; v == 1 for gpipe, 1f1b
// and the zb-* family. Schedule-specific requirements (dualpipev: m >= 2p; interleaved groups)
// are checked by schedule_problem() (spec/schedule_kind.h), not here.
PipelineSchedule build_pipeline_schedule(ScheduleKind kind, int32_t ranks, int32_t microbatches,
                                         int32_t chunks_per_rank, int32_t microbatch_group = 0);

// The rank's compute order as a string, one letter per action: F, B, I (input grad, printed
// "B" when `zero_bubble_letters` is true, as the zero-bubble paper writes it), W; sends,
// receives and syncs are left out. E.g. "FFFBFBFBBB".
std::string compute_order(const PipelineSchedule& schedule, int32_t rank,
                          bool zero_bubble_letters = true);

// Short names for messages and traces: "F", "B", "I", "W", "SEND_F", ...; and
// "F[c1,mb3]"-style labels.
std::string action_kind_name(ActionKind kind);
std::string action_label(const Action& action);

// How long a microbatch's activations stay alive when the backward is split into I and W.
enum class ActivationRelease : uint8_t {
  kAtWeightGrad,  // Freed by B, or by W: W still reads the layer inputs (ppsim's default).
  kAtInputGrad,   // Freed by B or I: the zero-bubble paper's model, where only the small
                  // weight-gradient state (its M_W) waits for W.
};

// A rank's activation peak, counted from its action order alone: every F allocates one
// microbatch of one chunk and its B (or I or W, per ActivationRelease) frees it. Counts are in
// chunk-microbatches; a whole-rank microbatch is chunks_per_rank of them.
struct InflightPeak {
  int32_t total = 0;                     // Chunk-microbatches alive at the peak.
  std::vector<int32_t> per_local_chunk;  // At the first moment of the peak, per chunk of the
                                         // rank in increasing chunk order (the V placement:
                                         // chunk r, then chunk 2p-1-r).
};

// Per rank, the activation peak of `schedule`. Reference values for m >= 2p (REFERENCE.md 4,
// Qi et al. 2024), rank r, at kAtWeightGrad: gpipe m; 1f1b p - r; interleaved-1f1b
// min((p-r-1)*2 + (v-1)*p + 1, m*v); zb-h1 p and zb-h2 2p-1 on every rank (p - r and
// 2(p-r)-1 at kAtInputGrad); zbv 2p; dualpipev 2p+1.
std::vector<InflightPeak> inflight_peaks(
    const PipelineSchedule& schedule, ActivationRelease release = ActivationRelease::kAtWeightGrad);

// Per rank, inflight_peaks(schedule, release)[r].total.
std::vector<int32_t> peak_inflight_chunks(
    const PipelineSchedule& schedule, ActivationRelease release = ActivationRelease::kAtWeightGrad);

// Checks the schedule's dependency graph with Boost.Graph: every F/B/I/W appears exactly once per
// (chunk, microbatch); every send has its receive and vice versa; and the graph of per-rank
// order plus data dependencies (F(c) before F(c+1), last F before first B, B/I(c+1) before
// B/I(c), I before W, send before its receive) is acyclic. Returns the problem (a cycle is
// reported as its path: "F[c1,mb3] -> SEND_F[c1,mb3] -> ... -> F[c1,mb3]"), or nullopt.
// Also checks the placement (each receive before its consumer, each send after its producer,
// GRAD_SYNC after the chunk's last B or W, OPT_STEP last). In schedules/schedule_check.cc.
std::optional<std::string> check_schedule(const PipelineSchedule& schedule);

}  // namespace ppsim
