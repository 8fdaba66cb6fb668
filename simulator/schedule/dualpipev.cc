#include <deque>
#include <map>

#include "simulator/schedule/schedule_builders.h"
#include "simulator/spec/error.h"

namespace ppsim {

// torch ScheduleDualPipeV._calculate_single_rank_operations, step by step. Its OVERLAP_F_B
// (a forward of one chunk run together with a full backward of the other, so that one's
// communication hides under the other's compute) becomes the F followed by the B: the pair's
// order and dependencies are kept, the overlap is left to the cost model.
std::vector<Action> dualpipev_rank_order(int32_t p, int32_t m, int32_t r) {
  const int32_t c0 = r;
  const int32_t c1 = 2 * p - 1 - r;
  std::map<int32_t, int32_t> forwards, backwards;  // Chunk -> next microbatch.
  std::deque<Action> pending_w;                    // W of each I, oldest first.
  std::vector<Action> order;
  auto forward = [&](int32_t chunk) {
    order.push_back({ActionKind::kForward, chunk, forwards[chunk]++});
  };
  // A full backward (B), or an input gradient (I) whose W waits in pending_w.
  auto backward = [&](int32_t chunk, bool split) {
    int32_t mb = backwards[chunk]++;
    order.push_back({split ? ActionKind::kBackwardInput : ActionKind::kBackward, chunk, mb});
    if (split) pending_w.push_back({ActionKind::kBackwardWeight, chunk, mb});
  };
  auto weight_if_pending = [&] {
    if (pending_w.empty()) return;
    order.push_back(pending_w.front());
    pending_w.pop_front();
  };
  // 1) and 2): warm-up forwards, then pairs of forwards down and up the V.
  for (int32_t i = 0; i < 2 * (p - r - 1); ++i) forward(c0);
  for (int32_t i = 0; i < r + 1; ++i) {
    forward(c0);
    forward(c1);
  }
  // 3) zero-bubble steps on chunk 1.
  for (int32_t i = 0; i < p - r - 1; ++i) {
    backward(c1, true);
    weight_if_pending();
    forward(c1);
  }
  // 4) main loop: OVERLAP[F(c0)+B(c1)], OVERLAP[F(c1)+B(c0)]. torch runs the first pair of the
  // last rank un-overlapped; as a sequence it is the same F then B.
  for (int32_t i = 0; i < m - 2 * p + r + 1; ++i) {
    forward(c0);
    backward(c1, false);
    forward(c1);
    backward(c0, false);
  }
  // 5) B(c1), OVERLAP[F(c1)+B(c0)].
  for (int32_t i = 0; i < p - r - 1; ++i) {
    backward(c1, false);
    forward(c1);
    backward(c0, false);
  }
  // 6) backward pairs, switching to the zero-bubble split half-way (odd ranks switch before
  // chunk 1's action of that step, even ranks after it).
  const int32_t pairs = r + 1;
  bool split = false;
  for (int32_t i = 0; i < pairs; ++i) {
    if (i == pairs / 2 && r % 2 == 1) split = true;
    backward(c1, split);
    if (i == pairs / 2 && r % 2 == 0) split = true;
    backward(c0, split);
  }
  // 7) and 8): drain the W, interleaved with the last chunk-0 backwards.
  for (int32_t i = 0; i < p - r - 1; ++i) {
    weight_if_pending();
    backward(c0, split);
  }
  for (int32_t i = 0; i < r + 1; ++i) weight_if_pending();
  PPSIM_CHECK(pending_w.empty(), "dualpipev left a weight gradient unscheduled");
  return order;
}

}  // namespace ppsim
