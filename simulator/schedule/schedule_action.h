// Action: one entry of a rank's schedule (pipeline_schedule.h): a forward, a backward (fused,
// or split into input and weight gradient), a send or receive, a gradient sync or the optimizer
// step, of one chunk and microbatch. Its own header so the per-schedule builders
// (schedule_builders.h) need not include the schedule they are dispatched from.
#pragma once

#include <cstdint>

namespace ppsim {

enum class ActionKind : uint8_t {
  kForward,
  kBackward,
  kBackwardInput,
  kBackwardWeight,
  kSendForward,
  kRecvForward,
  kSendBackward,
  kRecvBackward,
  kGradientSync,
  kOptimizerStep,
};

// True for the compute actions F, B, I and W (not sends, receives, syncs or the optimizer).
inline bool is_compute(ActionKind kind) {
  return kind == ActionKind::kForward || kind == ActionKind::kBackward ||
         kind == ActionKind::kBackwardInput || kind == ActionKind::kBackwardWeight;
}

struct Action {
  ActionKind kind = ActionKind::kForward;
  int32_t chunk = 0;       // Virtual stage the action belongs to (kOptimizerStep: -1).
  int32_t microbatch = 0;  // 0 .. m-1 (-1 for kGradientSync and kOptimizerStep).
};

}  // namespace ppsim
