#include "simulator/step/work_estimate.h"

#include <fmt/format.h>

#include "simulator/spec/error.h"

namespace ppsim {

WorkEstimate estimate_step_work(const Plan& plan, int64_t simulated_replicas) {
  WorkEstimate estimate;
  estimate.replicas = simulated_replicas;
  // Doubles throughout: every factor is bounded by plan.h, but products may exceed 2^63.
  const double r = static_cast<double>(simulated_replicas);
  const double pp = static_cast<double>(plan.pp);
  const double vpp = static_cast<double>(plan.vpp);
  const double m = static_cast<double>(num_microbatches(plan));
  estimate.tasks = r * pp * (vpp * m * kTasksPerChunkMicrobatch + kTasksPerStage);
  estimate.flow_pairs = simulated_replicas > 1 ? r * r * pp : 0;
  estimate.gpus = static_cast<double>(plan.tp) * pp * static_cast<double>(plan.dp) *
                  static_cast<double>(plan.cp);
  estimate.work = estimate.tasks + estimate.gpus + estimate.flow_pairs / kFlowPairsPerTask;
  estimate.memory_bytes = estimate.tasks * kBytesPerTask + estimate.gpus * kBytesPerGpu;
  return estimate;
}

bool within_work_budget(const WorkEstimate& estimate, const WorkBudget& budget) {
  return estimate.work <= static_cast<double>(budget.max_tasks) &&
         estimate.memory_bytes <= budget.max_memory_bytes;
}

void check_work_budget(const Plan& plan, const WorkEstimate& estimate, const WorkBudget& budget) {
  std::string what = fmt::format(
      "plan {}: simulating one step needs about {:.3g} task-equivalents ({:.3g} tasks, {} "
      "replica{} simulated, {:.3g} GPUs{}) and {:.3g} GiB",
      plan_to_inline(plan), estimate.work, estimate.tasks, estimate.replicas,
      estimate.replicas == 1 ? "" : "s", estimate.gpus,
      estimate.flow_pairs > 0
          ? fmt::format(", {:.3g} flow pairs in data-parallel collectives", estimate.flow_pairs)
          : "",
      estimate.memory_bytes / (1u << 30));
  if (estimate.work > static_cast<double>(budget.max_tasks)) {
    throw InputError("--max-tasks", "",
                     fmt::format("{}, over the budget of {} task-equivalents; raise it with "
                                 "--max-tasks N, or simulate fewer microbatches or replicas "
                                 "(docs/limits.md)",
                                 what, budget.max_tasks));
  }
  if (estimate.memory_bytes > budget.max_memory_bytes) {
    throw InputError("--max-memory", "",
                     fmt::format("{}, over the budget of {:.3g} GiB; raise it with --max-memory "
                                 "GIB (docs/limits.md)",
                                 what, budget.max_memory_bytes / (1u << 30)));
  }
}

}  // namespace ppsim
