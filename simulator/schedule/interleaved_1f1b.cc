#include <algorithm>
#include <utility>

#include "simulator/schedule/schedule_builders.h"

namespace ppsim {

std::vector<Action> interleaved_1f1b_rank_order(int32_t p, int32_t m, int32_t v, int32_t g,
                                                int32_t r) {
  if (v == 1) return one_f_one_b_rank_order(p, m, r);
  // Megatron's get_schedule_table: (microbatch, local chunk) of the k-th forward. Each group of
  // g microbatches (the last group takes the rest) runs through local chunk 0, then 1, ...
  std::vector<std::pair<int32_t, int32_t>> table;
  for (int32_t first = 0; first < m; first += g) {
    const int32_t end = std::min(first + g, m);
    for (int32_t local = 0; local < v; ++local) {
      for (int32_t mb = first; mb < end; ++mb) table.emplace_back(mb, local);
    }
  }
  const int32_t total = m * v;
  const int32_t warmup = std::min((p - r - 1) * 2 + (v - 1) * g, total);
  auto forward = [&](int32_t k) {
    return Action{ActionKind::kForward, table[k].second * p + r, table[k].first};
  };
  // The k-th backward takes the k-th table entry with the local chunk order reversed.
  auto backward = [&](int32_t k) {
    return Action{ActionKind::kBackward, (v - 1 - table[k].second) * p + r, table[k].first};
  };
  std::vector<Action> order;
  for (int32_t k = 0; k < warmup; ++k) order.push_back(forward(k));
  for (int32_t k = 0; k < total - warmup; ++k) {
    order.push_back(forward(warmup + k));
    order.push_back(backward(k));
  }
  for (int32_t k = total - warmup; k < total; ++k) order.push_back(backward(k));
  return order;
}

}  // namespace ppsim
