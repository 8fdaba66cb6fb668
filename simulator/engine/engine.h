// The discrete-event engine: simulates a TaskGraph and returns its Timeline.
//
// A task starts when its dependencies and its stream predecessor have ended (and, for a
// collective group, when every member is ready). Compute tasks take work / stream speed.
// Transfers wait their latency, then their bytes flow over their route (a collective group's
// members as one lockstep flow over all their links, task_graph.h); whenever the set of
// active flows changes, rates are recomputed by max-min fairness (progressive filling) over the
// links' capacities and each route's rate cap. Time jumps from event to event.
//
// Deterministic: ties are broken by event push order; no wall clock, no randomness.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "simulator/engine/task_graph.h"
#include "simulator/engine/timeline.h"

namespace ppsim {

// A task graph's structure in flat arrays, made once for many runs (Monte-Carlo iterations) of
// graphs that differ from it only in what those change. (The sensitivity probes change
// transfers' bytes, which a collective group's flow reads at preparation, so they do not.)
class PreparedGraph {
 public:
  explicit PreparedGraph(const TaskGraph& graph);
  ~PreparedGraph();
  PreparedGraph(PreparedGraph&&) noexcept;
  PreparedGraph& operator=(PreparedGraph&&) noexcept;

  struct Structure {
    int32_t tasks = 0, devices = 0, routes = 0, groups = 0, links = 0;  // The graph's counts.
    std::vector<int32_t> waiting;           // Per task: its predecessors (stream and explicit).
    std::vector<int32_t> successor_offset;  // Per task: its successors in `successors` (CSR).
    std::vector<TaskId> successors;
    // Per task, what the event loop reads (flat, not the graph's larger Task records): its
    // stream's device, collective group (-1: none), whether it computes, bytes it allocates at
    // start and frees at end.
    std::vector<int32_t> device;
    std::vector<int32_t> group;
    std::vector<uint8_t> compute;
    std::vector<double> alloc_bytes;
    std::vector<double> free_bytes;
    std::vector<int32_t> group_size;        // Per collective group: its members...
    std::vector<int32_t> group_offset;      // ...in group_members (CSR).
    std::vector<TaskId> group_members;
    std::vector<double> group_work;         // Per group: bytes each member moves (the largest).
    // Per route, the graph's then one per group (its members' links, each once, weighted by
    // their crossings): links and weights in CSR form.
    std::vector<int32_t> route_offset;
    std::vector<LinkId> route_link;
    std::vector<double> route_weight;
    std::vector<double> link_capacity;      // Per link.
  };
  const Structure& structure() const { return *structure_; }

 private:
  std::unique_ptr<Structure> structure_;
};

// Simulates the graph. A graph whose tasks cannot all run (a cycle, a collective group whose
// members wait on each other) is a bug in the builder: PPSIM_CHECK fails with the first stuck
// task's label.
Timeline simulate_graph(const TaskGraph& graph);
// The same on a structure prepared from `graph` or from a graph it differs from only in its
// compute tasks' work, its transfers' latency, its streams' speeds and its routes' rate caps
// (what straggler_effects.h's jitter and link faults change); same result, without redoing the
// structure. REQUIRES that; differing counts fail a PPSIM_CHECK.
Timeline simulate_graph(const PreparedGraph& prepared, const TaskGraph& graph);

}  // namespace ppsim
