#include <algorithm>

#include "simulator/schedule/schedule_builders.h"

namespace ppsim {

// torch ScheduleZBVZeroBubble._calculate_single_rank_operations, phase by phase. It plans for
// n = max(2p-1, m) microbatches and idles the actions of microbatches >= m; here they are
// left out.
std::vector<Action> zbv_rank_order(int32_t p, int32_t m, int32_t r) {
  const int32_t n = std::max(2 * p - 1, m);
  const int32_t c0 = r;              // Chunk 0: stage r, on the way down the V.
  const int32_t c1 = 2 * p - 1 - r;  // Chunk 1: stage 2p-1-r, on the way back up.
  int32_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  std::vector<Action> order;
  auto add = [&](ActionKind kind, int32_t chunk, int32_t mb) {
    if (mb < m) order.push_back({kind, chunk, mb});
  };
  for (int32_t i = 0; i < 2 * (p - r) - 1; ++i) add(ActionKind::kForward, c0, f0++);
  for (int32_t i = 0; i < r; ++i) {
    add(ActionKind::kForward, c1, f1++);
    add(ActionKind::kForward, c0, f0++);
  }
  for (int32_t i = 0; i < p - r; ++i) {
    add(ActionKind::kForward, c1, f1++);
    add(ActionKind::kBackwardInput, c1, b1);
    add(ActionKind::kBackwardWeight, c1, b1++);
  }
  while (f1 < f0 || f0 < n) {
    if (f0 < n) add(ActionKind::kForward, c0, f0++);
    add(ActionKind::kBackwardInput, c0, b0);
    add(ActionKind::kBackwardWeight, c0, b0++);
    add(ActionKind::kForward, c1, f1++);
    add(ActionKind::kBackwardInput, c1, b1);
    add(ActionKind::kBackwardWeight, c1, b1++);
  }
  int32_t w0 = b0, w1 = b1;
  for (int32_t i = 0; i < r; ++i) {
    add(ActionKind::kBackwardInput, c0, b0++);
    add(ActionKind::kBackwardInput, c1, b1++);
  }
  for (int32_t i = 0; i < p - r; ++i) {
    add(ActionKind::kBackwardInput, c0, b0++);
    add(ActionKind::kBackwardWeight, c0, w0++);
  }
  while (w1 < b1) add(ActionKind::kBackwardWeight, c1, w1++);
  while (w0 < b0) add(ActionKind::kBackwardWeight, c0, w0++);
  return order;
}

}  // namespace ppsim
