// EventQueue: a min-time priority queue of simulation events.
//
// Invariant: pop() yields non-decreasing times; equal times come out in push order, so a
// simulation is deterministic byte for byte. (time, push order) is a total order, so any heap
// pops the same sequence; this one is 4-ary (half the levels of a binary heap, and a node's
// children share a cache line or two), over a vector that keeps its capacity, so pushes
// allocate only while the queue grows past its largest size so far.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ppsim {

enum class EventType : uint8_t {
  kTaskEnd,    // A compute task (or a zero-byte transfer, or a whole group) ends.
  kFlowStart,  // A transfer's latency has elapsed; its bytes start to flow.
  kFlowEnd,    // A flow's bytes have drained (valid only for the flow's version it was set for).
};

struct Event {
  double time = 0;
  uint64_t sequence = 0;  // Push order; breaks ties.
  int32_t id = 0;         // Task id (kTaskEnd, kFlowStart) or flow slot (kFlowEnd).
  uint32_t version = 0;   // kFlowEnd: the flow's rate version it was computed for.
  EventType type = EventType::kTaskEnd;
};

class EventQueue {
 public:
  void push(double time, EventType type, int32_t id, uint32_t version = 0) {
    const Event event{time, next_sequence_++, id, version, type};
    size_t at = heap_.size();
    heap_.push_back(event);
    while (at > 0) {
      const size_t parent = (at - 1) / kArity;
      if (!before(event, heap_[parent])) break;
      heap_[at] = heap_[parent];
      at = parent;
    }
    heap_[at] = event;
  }
  bool empty() const { return heap_.empty(); }
  // REQUIRES: !empty().
  double top_time() const { return heap_.front().time; }
  // REQUIRES: !empty().
  Event pop() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return top;
    // Sift `last` down from the root: each step moves up the earliest of up to kArity children.
    size_t at = 0;
    for (;;) {
      const size_t first = at * kArity + 1;
      if (first >= n) break;
      size_t earliest = first;
      const size_t end = std::min(first + kArity, n);
      for (size_t child = first + 1; child < end; ++child) {
        if (before(heap_[child], heap_[earliest])) earliest = child;
      }
      if (!before(heap_[earliest], last)) break;
      heap_[at] = heap_[earliest];
      at = earliest;
    }
    heap_[at] = last;
    return top;
  }
  void reserve(size_t capacity) { heap_.reserve(capacity); }

 private:
  static constexpr size_t kArity = 4;
  static bool before(const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.sequence < b.sequence;
  }
  std::vector<Event> heap_;
  uint64_t next_sequence_ = 0;
};

}  // namespace ppsim
