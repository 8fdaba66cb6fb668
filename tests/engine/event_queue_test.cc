#include "simulator/engine/event_queue.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace ppsim {
namespace {

TEST_CASE("EventQueue: pops by time, equal times in push order") {
  EventQueue queue;
  queue.push(2.0, EventType::kTaskEnd, 0);
  queue.push(1.0, EventType::kFlowStart, 1);
  queue.push(2.0, EventType::kFlowEnd, 2, 7);
  queue.push(1.0, EventType::kTaskEnd, 3);
  queue.push(0.5, EventType::kTaskEnd, 4);
  std::vector<int32_t> ids;
  while (!queue.empty()) ids.push_back(queue.pop().id);
  CHECK(ids == std::vector<int32_t>{4, 1, 3, 0, 2});
}

TEST_CASE("EventQueue: interleaved pushes and pops match an ordered-set oracle") {
  // Times from a small set, so ties are frequent; the oracle orders by (time, push order).
  std::mt19937_64 random(12345);
  std::uniform_int_distribution<int> time_of(0, 40);
  std::uniform_int_distribution<int> action(0, 2);
  EventQueue queue;
  std::set<std::tuple<double, uint64_t, int32_t>> oracle;
  uint64_t pushed = 0;
  int64_t compared = 0;
  for (int step = 0; step < 20000; ++step) {
    if (action(random) > 0 || oracle.empty()) {  // Two pushes for each pop on average.
      double time = time_of(random) * 0.25;
      int32_t id = static_cast<int32_t>(pushed);
      queue.push(time, EventType::kTaskEnd, id);
      oracle.emplace(time, pushed++, id);
    } else {
      REQUIRE(queue.top_time() == std::get<0>(*oracle.begin()));
      Event event = queue.pop();
      CHECK(event.time == std::get<0>(*oracle.begin()));
      CHECK(event.id == std::get<2>(*oracle.begin()));
      oracle.erase(oracle.begin());
      ++compared;
    }
  }
  while (!oracle.empty()) {
    Event event = queue.pop();
    CHECK(event.id == std::get<2>(*oracle.begin()));
    oracle.erase(oracle.begin());
    ++compared;
  }
  CHECK(queue.empty());
  CHECK(compared == static_cast<int64_t>(pushed));
}

}  // namespace
}  // namespace ppsim
