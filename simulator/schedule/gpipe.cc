#include "simulator/schedule/schedule_builders.h"

namespace ppsim {

std::vector<Action> gpipe_rank_order(int32_t p, int32_t m, int32_t r) {
  std::vector<Action> order;
  for (int32_t mb = 0; mb < m; ++mb) order.push_back({ActionKind::kForward, r, mb});
  for (int32_t mb = 0; mb < m; ++mb) order.push_back({ActionKind::kBackward, r, mb});
  return order;
}

}  // namespace ppsim
