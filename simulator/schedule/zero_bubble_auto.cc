// The Zero Bubble paper's searched schedules, ZB-1p and ZB-2p (Qi et al., "Zero Bubble Pipeline
// Parallelism", ICLR 2024, section 3.1): a greedy list scheduler that places F, I and W on every
// rank under an activation-memory limit of factor * p * M_B per rank. The sail-sg fork
// (megatron/core/pipeline_parallel/zerobubble/scheduler/zb.py) runs this heuristic as the initial
// solution of its search; its ILP refinement reorders within the same memory limit and is not
// modelled.
//
// Unit costs (F = I = W = 1, no communication time) keep the builder a pure function of
// (p, m, factor), as every schedule builder is. Memory in the fork's units: F holds 2, I frees 1
// (the input gradient's share), W frees the other 1, so M_B = 2 and the limit is 2 * factor * p.
// The simulator then charges the real bytes the step builder allocates and frees.
//
// Rules, per microbatch i in order:
// - i = 0: every rank runs F(0); then, from the last rank back, each rank adds forwards while it
//   would otherwise idle before I(0) reaches it (and they fit in memory); the counts are trimmed
//   to strictly decrease from rank 0; then I(0) from the last rank to rank 0.
// - i > 0: each rank that has forwards left runs one more F (with the "prioritise I" variant a
//   rank far ahead of the next may skip it); before it, W are placed while memory would overflow
//   and while the rank would otherwise wait for the F's input. Then I(i) from the last rank back,
//   with the same W rules against waiting for the gradient; rank 0 flushes its W once all its
//   forwards are done.
// - the remaining W close each rank's list.
// Eight variants (allow a bubble before the first I or not, prioritise I or not, fill a wait with
// W greedily or not) are built and the one with the shortest longest-rank span is kept, the first
// on ties, as the fork does.
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include "simulator/schedule/schedule_builders.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

enum Pass { kF = 0, kI = 1, kW = 2 };

constexpr double kCost = 1;                   // Unit time of F, I and W.
constexpr double kComm = 0;                   // Transfers take no time in the search.
constexpr std::array<double, 3> kMemory = {2, -1, -1};  // F holds M_B = 2; I and W free halves.

struct Variant {
  bool allow_bubble_before_first_input = false;
  bool prioritise_input = false;
  bool greedy_fill = false;
};

// One greedy construction; nullopt when the memory limit cannot be met.
class GreedyBuild {
 public:
  GreedyBuild(int32_t p, int32_t m, double limit)
      : p_(p), m_(m), limit_(limit), count_(3, std::vector<int32_t>(p, 0)),
        end_time_(3, std::vector<std::vector<double>>(p, std::vector<double>(m, 0))),
        rank_end_(p, 0), memory_(p, 0), bubble_(p, 0), order_(p) {}

  bool run(const Variant& v) {
    for (int32_t i = 0; i < m_; ++i) {
      if (i == 0 ? !first_microbatch(v) : !later_microbatch(v, i)) return false;
    }
    for (int32_t r = 0; r < p_; ++r) {
      while (count_[kW][r] < m_) put(r, kW);
    }
    return true;
  }

  // The longest rank span, first F start to last W end.
  double span() const {
    double longest = 0;
    for (int32_t r = 0; r < p_; ++r) {
      longest = std::max(longest, end_time_[kW][r][m_ - 1] - end_time_[kF][r][0] + kCost);
    }
    return longest;
  }

  std::vector<Action> rank_order(int32_t r) const { return order_[r]; }

 private:
  int32_t f(int32_t r) const { return count_[kF][r]; }
  int32_t b(int32_t r) const { return count_[kI][r]; }
  int32_t w(int32_t r) const { return count_[kW][r]; }
  double max_bubble() const { return *std::max_element(bubble_.begin(), bubble_.end()); }

  void put(int32_t r, Pass pass) {
    int32_t mb = count_[pass][r];
    double start = rank_end_[r];
    if (pass == kF && r > 0) start = std::max(start, end_time_[kF][r - 1][mb] + kComm);
    if (pass == kI && r + 1 < p_) start = std::max(start, end_time_[kI][r + 1][mb] + kComm);
    if (f(r) > 0) bubble_[r] += start - rank_end_[r];
    rank_end_[r] = start + kCost;
    end_time_[pass][r][mb] = rank_end_[r];
    memory_[r] += kMemory[pass];
    ++count_[pass][r];
    static constexpr ActionKind kKinds[] = {ActionKind::kForward, ActionKind::kBackwardInput,
                                            ActionKind::kBackwardWeight};
    order_[r].push_back({kKinds[pass], r, mb});
  }

  // W until `extra` more memory fits; false when no W is left to free it.
  bool make_room(int32_t r, double extra) {
    while (memory_[r] + extra > limit_) {
      if (w(r) >= b(r)) return false;
      put(r, kW);
    }
    return true;
  }

  // W while rank r would otherwise wait until `ready` for its next pass's input.
  void fill_wait(int32_t r, double ready, const Variant& v) {
    while (w(r) < b(r) && rank_end_[r] + kCost <= ready) put(r, kW);
    if (w(r) < b(r) && rank_end_[r] < ready) {
      // A W that overruns the wait: taken when this rank's bubbles already lead, or greedily.
      if (ready - rank_end_[r] > max_bubble() - bubble_[r] || v.greedy_fill) put(r, kW);
    }
  }

  bool first_microbatch(const Variant& v) {
    for (int32_t r = 0; r < p_; ++r) put(r, kF);
    std::vector<int32_t> extra(p_, 0);
    double input_ready = end_time_[kF][p_ - 1][0] + kCost;  // I(0) ends on the last rank.
    for (int32_t r = p_ - 2; r >= 0; --r) {
      double memory = memory_[r], busy_until = rank_end_[r];
      while (f(r) + extra[r] < m_ && memory + kMemory[kF] <= limit_) {
        bool idle = v.allow_bubble_before_first_input
                        ? busy_until + kCost <= input_ready + kComm
                        : busy_until < input_ready + kComm;
        if (!idle) break;
        memory += kMemory[kF];
        busy_until += kCost;
        ++extra[r];
      }
      input_ready = std::max(busy_until, input_ready + kComm) + kCost;
    }
    for (int32_t r = 1; r < p_; ++r) {
      while (extra[r] > 0 && extra[r] >= extra[r - 1] && f(r) + extra[r] < m_) --extra[r];
    }
    for (int32_t r = 0; r < p_; ++r) {
      for (int32_t k = 0; k < extra[r]; ++k) put(r, kF);
    }
    for (int32_t r = p_ - 1; r >= 0; --r) put(r, kI);
    return true;
  }

  // Whether rank r runs a forward this round (before the trim to the next rank's choice).
  bool wants_forward(int32_t r, const Variant& v) const {
    if (f(r) >= m_) return false;
    if (!v.prioritise_input || r + 1 >= p_ || f(r) < f(r + 1) + 2) return true;
    // Far ahead of the next rank: skip the F unless it (with the W it needs for memory) ends
    // before the next rank can send back a gradient, or the wait would cost more bubble than
    // the leading rank has.
    double next_gradient = rank_end_[r + 1] + 2 * kCost + kComm;
    if (rank_end_[r] >= next_gradient) return false;
    double w_cost = 0, memory = memory_[r] + kMemory[kF];
    for (int32_t k = 0; memory > limit_ && w(r) + k < b(r); ++k) {
      w_cost += kCost;
      memory += kMemory[kW];
    }
    if (rank_end_[r] + kCost + w_cost <= next_gradient) return true;
    return next_gradient - rank_end_[r] > max_bubble() - bubble_[r];
  }

  bool later_microbatch(const Variant& v, int32_t i) {
    std::vector<bool> forward(p_);
    for (int32_t r = 0; r < p_; ++r) forward[r] = wants_forward(r, v);
    for (int32_t r = p_ - 2; r >= 0; --r) forward[r] = forward[r] && forward[r + 1];
    for (int32_t r = 0; r < p_; ++r) {
      if (!forward[r]) continue;
      if (!make_room(r, kMemory[kF])) return false;
      if (r > 0) fill_wait(r, end_time_[kF][r - 1][f(r)] + kComm, v);
      put(r, kF);
    }
    for (int32_t r = p_ - 1; r >= 0; --r) {
      PPSIM_CHECK(b(r) == i, "zero-bubble search: input gradients out of order");
      if (!make_room(r, kMemory[kI])) return false;
      if (r + 1 < p_) fill_wait(r, end_time_[kI][r + 1][i] + kComm, v);
      if (r == 0 && f(r) == m_) {
        while (w(r) < b(r)) put(r, kW);
      }
      put(r, kI);
    }
    return true;
  }

  int32_t p_, m_;
  double limit_;
  std::vector<std::vector<int32_t>> count_;                  // [pass][rank].
  std::vector<std::vector<std::vector<double>>> end_time_;   // [pass][rank][microbatch].
  std::vector<double> rank_end_, memory_, bubble_;
  std::vector<std::vector<Action>> order_;
};

// Every rank's order for (p, m, factor): the shortest-span variant of the header's eight.
std::vector<std::vector<Action>> search_orders(int32_t p, int32_t m, int32_t factor) {
  const double limit = kMemory[kF] * factor * p;
  std::optional<GreedyBuild> best;
  double best_span = std::numeric_limits<double>::infinity();
  for (bool allow_bubble : {true, false}) {
    for (bool prioritise : {true, false}) {
      for (bool greedy : {true, false}) {
        GreedyBuild build(p, m, limit);
        if (!build.run({allow_bubble, prioritise, greedy})) continue;
        if (build.span() < best_span) {
          best_span = build.span();
          best = std::move(build);
        }
      }
    }
  }
  PPSIM_CHECK(best.has_value(), "zero-bubble search found no schedule within the memory limit");
  std::vector<std::vector<Action>> orders;
  for (int32_t r = 0; r < p; ++r) orders.push_back(best->rank_order(r));
  return orders;
}

using Orders = std::shared_ptr<const std::vector<std::vector<Action>>>;

// search_orders, cached: the step builder asks rank by rank and the planner asks the same shapes
// again and again. Entries are shared, so a cache cleared by another thread cannot pull the
// orders from under a caller; the search itself runs outside the lock.
Orders searched_orders(int32_t p, int32_t m, int32_t factor) {
  // Bounded so a planner sweep over many microbatch counts cannot grow it without limit.
  constexpr size_t kMaxCached = 64;
  static std::mutex mutex;
  static std::map<std::tuple<int32_t, int32_t, int32_t>, Orders> cache;
  auto key = std::make_tuple(p, m, factor);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  Orders orders = std::make_shared<const std::vector<std::vector<Action>>>(search_orders(p, m, factor));
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= kMaxCached) cache.clear();
  return cache.emplace(key, orders).first->second;
}

}  // namespace

std::vector<Action> zero_bubble_auto_rank_order(int32_t p, int32_t m, int32_t r, int32_t factor) {
  PPSIM_CHECK(factor == 1 || factor == 2, "zero-bubble memory limit is p (zb-1p) or 2p (zb-2p)");
  PPSIM_CHECK(p >= 1 && m >= 1 && r >= 0 && r < p, "zero-bubble search: bad shape");
  return (*searched_orders(p, m, factor))[r];
}

int64_t zero_bubble_auto_inflight(int32_t p, int32_t m, int32_t r, int32_t factor) {
  int64_t alive = 0, peak = 0;
  for (const Action& a : zero_bubble_auto_rank_order(p, m, r, factor)) {
    if (a.kind == ActionKind::kForward) peak = std::max(peak, ++alive);
    if (a.kind == ActionKind::kBackwardInput) --alive;
  }
  return peak;
}

}  // namespace ppsim
