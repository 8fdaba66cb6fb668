// The report of `ppsim simulate`: a simulated step as text or JSON.
//
// JSON fields: model, cluster, plan (the plan object), microbatches (per replica; the largest
// share with replica_microbatches), replica_microbatches (each replica's count), seq_length,
// iteration_time_s, tokens_per_s, model_tflops_per_gpu, mfu, bubble_pct,
// breakdown_s {compute, bubble, exposed_comm, straggler_wait, optimizer} (step_metrics.h), stages [{index, layers, gpu, busy_s,
// activation_peak_bytes, peak_memory_bytes, capacity_bytes, fits}], peak_memory_bytes, fits,
// events (engine events processed), tasks (tasks simulated), simulated_replicas (replicas
// simulated: one per class of identical replicas, dp when every replica is), replica_classes
// (per simulated replica, in replica order: how many replicas it stands for; they sum to dp;
// simulator/step/replica_classes.h), cost_source, profile, profile_device, cost_passes
// {roofline, profile, extrapolated}, comm_costs {modelled, profile, extrapolated},
// unprofiled_gpus (simulator/cost/cost_provenance.h), critical_path_length,
// critical_path [{worker, task, start_s, end_s}] (the chain of tasks, each starting when the
// previous ended, that sets the step time), gpu_types [{gpu, count, busy_fraction, compute_s,
// idle_s, peak_memory_bytes, capacity_bytes}] (gpu_utilisation.h; the text report prints the table
// when the plan uses several GPU types), and with optimizer offload, offload {fraction, worker,
// d2h_bytes_per_gpu, h2d_bytes_per_gpu, d2h_bytes_total, h2d_bytes_total, pcie_d2h_s, pcie_h2d_s,
// cpu_adam_s, exposed_s, host_memory {nodes [{node, node_group, gpus, bytes, capacity_bytes,
// fits}], peak_bytes, fits, worst_node, over_bytes}} (offload_traffic.h). Definitions:
// simulator/step/step_metrics.h. Straggler runs add keys (straggler_report.h); --train-tokens
// (or a plan's "training") adds time_to_train (time_to_train_report.h).
//
// Text: a '#' header echoing the inputs and the cost provenance, the metrics, the per-stage
// table, the GPU-type and offload sections when they apply, the critical path, the straggler
// sections when run, the time-to-train section when asked, and the '# OK' / '# DOES NOT FIT'
// footer.
#pragma once

#include <string>

#include "simulator/report/straggler_report.h"
#include "simulator/step/step_metrics.h"
#include "simulator/step/time_to_train.h"

namespace ppsim {

// What `ppsim simulate` reports: one value, rendered as text or JSON with the same fields.
// The pointed-to objects outlive the report.
struct SimulateReport {
  const ModelSpec* model = nullptr;
  const ClusterSpec* cluster = nullptr;
  const Plan* plan = nullptr;
  const Step* step = nullptr;           // Iteration 0's step under the straggler model.
  const StepMetrics* metrics = nullptr;  // Its metrics.
  const StragglerRun* stragglers = nullptr;  // The Monte-Carlo run and sensitivity; null: none.
  const TimeToTrain* time_to_train = nullptr;  // The whole run (--train-tokens); null: none.
};

// The report as text (ending in the footer line) and as pretty-printed JSON (ending in "\n").
std::string simulate_report_text(const SimulateReport& report);
std::string simulate_report_json(const SimulateReport& report);

}  // namespace ppsim
