#include "simulator/schedule/pipeline_schedule.h"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "simulator/schedule/schedule_builders.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

constexpr int kNumActionKinds = static_cast<int>(ActionKind::kOptimizerStep) + 1;

std::vector<Action> rank_compute_order(ScheduleKind kind, int32_t p, int32_t m, int32_t v,
                                       int32_t g, int32_t r) {
  switch (kind) {
    case ScheduleKind::kGpipe:
      return gpipe_rank_order(p, m, r);
    case ScheduleKind::kOneFOneB:
      return one_f_one_b_rank_order(p, m, r);
    case ScheduleKind::kInterleaved1F1B:
      return interleaved_1f1b_rank_order(p, m, v, g, r);
    case ScheduleKind::kZbH1:
      return zero_bubble_rank_order(p, m, r, 1);
    case ScheduleKind::kZbH2:
      return zero_bubble_rank_order(p, m, r, 2);
    case ScheduleKind::kZb1p:
      return zero_bubble_auto_rank_order(p, m, r, 1);
    case ScheduleKind::kZb2p:
      return zero_bubble_auto_rank_order(p, m, r, 2);
    case ScheduleKind::kZbv:
      return zbv_rank_order(p, m, r);
    case ScheduleKind::kDualPipeV:
      return dualpipev_rank_order(p, m, r);
  }
  PPSIM_CHECK(false, "unknown schedule kind");
}

// Surrounds one rank's compute actions with the receives and sends of the header's placement,
// the gradient sync after each chunk's last weight gradient, and the optimizer step.
std::vector<Action> with_communication(const std::vector<Action>& compute,
                                       const std::vector<int32_t>& chunk_rank, int32_t rank) {
  const int32_t chunks = static_cast<int32_t>(chunk_rank.size());
  std::vector<int64_t> last_grad(chunks, -1);  // Index in `compute` of the chunk's last B or W.
  for (size_t i = 0; i < compute.size(); ++i) {
    ActionKind kind = compute[i].kind;
    if (kind == ActionKind::kBackward || kind == ActionKind::kBackwardWeight) {
      last_grad[compute[i].chunk] = static_cast<int64_t>(i);
    }
  }
  std::vector<Action> order;
  for (size_t i = 0; i < compute.size(); ++i) {
    const Action& action = compute[i];
    const int32_t c = action.chunk;
    const int32_t mb = action.microbatch;
    const bool from_other_rank = c > 0 && chunk_rank[c - 1] != rank;
    const bool to_other_rank = c + 1 < chunks && chunk_rank[c + 1] != rank;
    switch (action.kind) {
      case ActionKind::kForward:
        if (from_other_rank) order.push_back({ActionKind::kRecvForward, c, mb});
        order.push_back(action);
        if (to_other_rank) order.push_back({ActionKind::kSendForward, c, mb});
        break;
      case ActionKind::kBackward:
      case ActionKind::kBackwardInput:
        if (to_other_rank) order.push_back({ActionKind::kRecvBackward, c, mb});
        order.push_back(action);
        if (from_other_rank) order.push_back({ActionKind::kSendBackward, c, mb});
        break;
      default:
        order.push_back(action);
        break;
    }
    if (last_grad[c] == static_cast<int64_t>(i)) {
      order.push_back({ActionKind::kGradientSync, c, -1});
    }
  }
  order.push_back({ActionKind::kOptimizerStep, -1, -1});
  return order;
}

}  // namespace

PipelineSchedule build_pipeline_schedule(ScheduleKind kind, int32_t ranks, int32_t microbatches,
                                         int32_t chunks_per_rank, int32_t microbatch_group) {
  PPSIM_CHECK(ranks >= 1 && microbatches >= 1 && chunks_per_rank >= 1 && microbatch_group >= 0);
  const int32_t group = microbatch_group > 0 ? microbatch_group : ranks;
  PPSIM_CHECK(is_interleaved(kind) || chunks_per_rank == ppsim::chunks_per_rank(kind, 1),
              schedule_name(kind) + " holds a fixed number of chunks per rank");
  PipelineSchedule schedule;
  schedule.kind = kind;
  schedule.ranks = ranks;
  schedule.microbatches = microbatches;
  schedule.chunks_per_rank = chunks_per_rank;
  schedule.microbatch_group = group;
  schedule.split_backward = schedule_traits(kind).splits_backward;
  for (int32_t c = 0; c < ranks * chunks_per_rank; ++c) {
    schedule.chunk_rank.push_back(
        static_cast<int32_t>(rank_of_chunk(kind, ranks, chunks_per_rank, c)));
  }
  for (int32_t r = 0; r < ranks; ++r) {
    schedule.rank_actions.push_back(with_communication(
        rank_compute_order(kind, ranks, microbatches, chunks_per_rank, group, r),
        schedule.chunk_rank, r));
  }
  return schedule;
}

std::string compute_order(const PipelineSchedule& schedule, int32_t rank,
                          bool zero_bubble_letters) {
  PPSIM_CHECK(rank >= 0 && rank < schedule.ranks);
  std::string letters;
  for (const Action& action : schedule.rank_actions[rank]) {
    switch (action.kind) {
      case ActionKind::kForward:
        letters += 'F';
        break;
      case ActionKind::kBackward:
        letters += 'B';
        break;
      case ActionKind::kBackwardInput:
        letters += zero_bubble_letters ? 'B' : 'I';
        break;
      case ActionKind::kBackwardWeight:
        letters += 'W';
        break;
      default:
        break;
    }
  }
  return letters;
}

std::string action_kind_name(ActionKind kind) {
  static const std::array<const char*, kNumActionKinds> kNames = {
      "F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "GRAD_SYNC", "OPT_STEP"};
  return kNames[static_cast<size_t>(kind)];
}

std::string action_label(const Action& action) {
  switch (action.kind) {
    case ActionKind::kGradientSync:
      return fmt::format("GRAD_SYNC[c{}]", action.chunk);
    case ActionKind::kOptimizerStep:
      return "OPT_STEP";
    default:
      return fmt::format("{}[c{},mb{}]", action_kind_name(action.kind), action.chunk,
                         action.microbatch);
  }
}

std::vector<InflightPeak> inflight_peaks(const PipelineSchedule& schedule,
                                         ActivationRelease release) {
  std::vector<InflightPeak> peaks;
  for (int32_t r = 0; r < schedule.ranks; ++r) {
    std::vector<int32_t> local(schedule.num_chunks(), -1);  // Chunk -> local index on rank r.
    int32_t held = 0;
    for (int32_t c = 0; c < schedule.num_chunks(); ++c) {
      if (schedule.chunk_rank[c] == r) local[c] = held++;
    }
    std::vector<int32_t> alive(held, 0);
    int32_t total = 0;
    InflightPeak peak;
    peak.per_local_chunk = alive;
    for (const Action& action : schedule.rank_actions[r]) {
      int32_t change = 0;
      if (action.kind == ActionKind::kForward) {
        change = 1;
      } else if (action.kind == ActionKind::kBackward ||
                 (action.kind == ActionKind::kBackwardInput &&
                  release == ActivationRelease::kAtInputGrad) ||
                 (action.kind == ActionKind::kBackwardWeight &&
                  release == ActivationRelease::kAtWeightGrad)) {
        change = -1;
      }
      if (change == 0) continue;
      PPSIM_CHECK(local[action.chunk] >= 0, "action on a chunk of another rank");
      alive[local[action.chunk]] += change;
      total += change;
      if (total > peak.total) {
        peak.total = total;
        peak.per_local_chunk = alive;
      }
    }
    peaks.push_back(std::move(peak));
  }
  return peaks;
}

std::vector<int32_t> peak_inflight_chunks(const PipelineSchedule& schedule,
                                          ActivationRelease release) {
  std::vector<int32_t> totals;
  for (const InflightPeak& peak : inflight_peaks(schedule, release)) totals.push_back(peak.total);
  return totals;
}

}  // namespace ppsim
