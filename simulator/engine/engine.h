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

#include <string>

#include "simulator/engine/task_graph.h"
#include "simulator/engine/timeline.h"

namespace ppsim {

// Simulates the graph. A graph whose tasks cannot all run (a cycle, a collective group whose
// members wait on each other) is a bug in the builder: PPSIM_CHECK fails with the first stuck
// task's label.
Timeline simulate_graph(const TaskGraph& graph);

}  // namespace ppsim
