// Chrome trace-event JSON for a simulated step: opens in Perfetto (ui.perfetto.dev) and in
// chrome://tracing.
//
// Layout of the trace:
// - one process per worker (one pipeline rank of one data-parallel replica), named by the
//   caller ("stage 2 replica 0 (GPUs 16-23)"), sorted by worker index;
// - one thread per stream of the TaskGraph that has a task on that worker, named after the
//   stream ("w2/compute", "w2/send_fwd", ...), sorted by stream id;
// - one complete event ("ph":"X") per task, so exactly one slice per task: zero-duration tasks
//   are emitted with "dur":0. Its name is the action letter(s) and microbatch ("F1", "B3", "I0",
//   "W7", "SEND_F2"; microbatches count from 0 as in the schedule), or the role for tasks the
//   cost provider added ("grad_reduce c1", "param_gather c0", "optimizer"). Its "args" carry
//   "task" (the TaskId), "kind", "chunk", "microbatch" and "role".
// Times: "ts" and "dur" are microseconds, as the format requires. Timeline times are multiplied
// by `microseconds_per_unit`: 1e6 when the timeline is in seconds (the default), 1 for the
// abstract costs of `ppsim schedule` (one input time unit is drawn as one microsecond).
//
// Deterministic: events come in a fixed order (metadata, then tasks by TaskId) and numbers are
// printed in shortest round-trip form, so the same step gives the same bytes.
#pragma once

#include <string>
#include <vector>

#include "simulator/engine/timeline.h"
#include "simulator/schedule/schedule_lowering.h"

namespace ppsim {

// The trace as JSON text, one event per line, ending in a newline.
// REQUIRES: timeline comes from simulate_graph(lowered.graph); lowered.info has one entry per
// task; worker_names.size() == number of workers (lowered.compute_stream.size()).
// microseconds_per_unit > 0.
std::string chrome_trace_json(const Lowered& lowered, const Timeline& timeline,
                              const std::vector<std::string>& worker_names,
                              double microseconds_per_unit = 1e6);

// The slice name of one task ("F1", "SEND_B0", "optimizer", ...), as the trace writes it.
std::string task_trace_name(const TaskInfo& info);

}  // namespace ppsim
