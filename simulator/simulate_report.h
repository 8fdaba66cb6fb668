// The report of `ppsim simulate`: a simulated step as text or JSON.
//
// JSON fields: model, cluster, plan (the plan object), microbatches, seq_length,
// iteration_time_s, tokens_per_s, model_tflops_per_gpu, mfu, bubble_pct,
// breakdown_s {compute, bubble, exposed_comm, optimizer}, stages [{index, layers, gpu, busy_s,
// activation_peak_bytes, peak_memory_bytes, capacity_bytes, fits}], peak_memory_bytes, fits,
// events (engine events processed), tasks (tasks simulated), simulated_replicas (1 when
// identical replicas were simulated once), critical_path_length, critical_path [{worker, task,
// start_s, end_s}] (the chain of tasks, each starting when the previous ended, that sets the
// step time). Definitions: simulator/step_metrics.h. Straggler runs add keys (straggler_report.h).
#pragma once

#include <string>

#include "simulator/step_metrics.h"

namespace ppsim {

std::string simulate_report_text(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan, const Step& step, const StepMetrics& metrics);
std::string simulate_report_json(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan, const Step& step, const StepMetrics& metrics);

}  // namespace ppsim
