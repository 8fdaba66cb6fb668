#include <algorithm>

#include "simulator/schedule/schedule_builders.h"

namespace ppsim {

std::vector<Action> one_f_one_b_rank_order(int32_t p, int32_t m, int32_t r) {
  const int32_t warmup = std::min(p - r - 1, m);
  std::vector<Action> order;
  for (int32_t mb = 0; mb < warmup; ++mb) order.push_back({ActionKind::kForward, r, mb});
  for (int32_t i = 0; i < m - warmup; ++i) {
    order.push_back({ActionKind::kForward, r, warmup + i});
    order.push_back({ActionKind::kBackward, r, i});
  }
  for (int32_t mb = m - warmup; mb < m; ++mb) order.push_back({ActionKind::kBackward, r, mb});
  return order;
}

}  // namespace ppsim
