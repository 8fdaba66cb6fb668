#include "simulator/engine/measured_step.h"

#include "simulator/engine/engine.h"
#include "simulator/spec/error.h"

namespace ppsim {

Timeline replay_with_measured(const TaskGraph& graph, const std::vector<double>& durations,
                              const std::vector<bool>& measured) {
  PPSIM_CHECK(static_cast<int32_t>(durations.size()) == graph.num_tasks() &&
              static_cast<int32_t>(measured.size()) == graph.num_tasks());
  TaskGraph replay = graph;
  for (TaskId id = 0; id < replay.num_tasks(); ++id) {
    Task& task = replay.mutable_task(id);
    if (!measured[id] || task.kind != TaskKind::kCompute) continue;
    task.work = durations[id] * replay.stream(task.stream).speed;
  }
  return simulate_graph(replay);
}

}  // namespace ppsim
