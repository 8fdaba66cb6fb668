// EventQueue: a min-time priority queue of simulation events.
//
// Invariant: pop() yields non-decreasing times; equal times come out in push order, so a
// simulation is deterministic byte for byte. A binary heap over a vector that keeps its
// capacity, so pushes allocate only while the queue grows past its largest size so far.
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
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
    heap_.push(Event{time, next_sequence_++, id, version, type});
  }
  bool empty() const { return heap_.empty(); }
  // REQUIRES: !empty().
  double top_time() const { return heap_.top().time; }
  // REQUIRES: !empty().
  Event pop() {
    Event event = heap_.top();
    heap_.pop();
    return event;
  }
  void reserve(size_t capacity) {
    std::vector<Event> storage;
    storage.reserve(capacity);
    heap_ = Heap(Later(), std::move(storage));
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      return a.sequence > b.sequence;
    }
  };
  using Heap = std::priority_queue<Event, std::vector<Event>, Later>;
  Heap heap_;
  uint64_t next_sequence_ = 0;
};

}  // namespace ppsim
