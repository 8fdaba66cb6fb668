#include <algorithm>
#include <deque>

#include "simulator/schedule/schedule_builders.h"
#include "simulator/spec/error.h"

namespace ppsim {

// ZB-H1 is torch's ScheduleInterleavedZeroBubble (the paper's ZB1P) with one chunk per rank:
// warm-up p-r-1, W held back for the first r backwards. ZB-H2 doubles both, so rank r runs
// the 2(p-r)-1 forwards that fit before microbatch 0's input gradient comes back, and the
// held-back W fill the tail: with unit F, I, W every rank is busy for 3m without a gap once
// m >= 2p-1 (the parallelogram of the paper's Figure 3).
std::vector<Action> zero_bubble_rank_order(int32_t p, int32_t m, int32_t r, int32_t factor) {
  PPSIM_CHECK(factor == 1 || factor == 2, "zero-bubble factor is 1 (zb-h1) or 2 (zb-h2)");
  const int32_t warmup = std::min(factor * (p - r - 1), m);
  const int32_t held_back = factor * r;
  std::vector<Action> order;
  std::deque<int32_t> pending_w;
  int32_t backwards = 0;
  auto input_grad = [&](int32_t mb) {
    order.push_back({ActionKind::kBackwardInput, r, mb});
    pending_w.push_back(mb);
    if (backwards++ >= held_back) {
      order.push_back({ActionKind::kBackwardWeight, r, pending_w.front()});
      pending_w.pop_front();
    }
  };
  for (int32_t mb = 0; mb < warmup; ++mb) order.push_back({ActionKind::kForward, r, mb});
  for (int32_t i = 0; i < m - warmup; ++i) {
    order.push_back({ActionKind::kForward, r, warmup + i});
    input_grad(i);
  }
  for (int32_t mb = m - warmup; mb < m; ++mb) input_grad(mb);
  for (int32_t mb : pending_w) order.push_back({ActionKind::kBackwardWeight, r, mb});
  return order;
}

}  // namespace ppsim
