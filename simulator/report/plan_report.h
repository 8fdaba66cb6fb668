// The report of `ppsim plan`: a plan search's result as text or JSON.
//
// Text (nccl-tests layout: '#' lines around a table with a units row):
//   header   model, cluster, batch, objective (and its caveats), the search's counts;
//   table    rank, step time (s), tokens/s, MFU (%), peak memory (GiB), fits, $/step, (with a
//            training run: wall days, goodput, run cost in $), why, plan;
//   best     its breakdown_s on the critical worker and its stages (layers, GPU, busy, peak);
//   footer   "# OK: ..." or, when nothing fits, "# NOTHING FITS: ..." with the closest plan.
//
// JSON fields (the same numbers; docs/plan.md):
//   model, cluster, gpus, global_batch_size, seq_length, objective, objective_note,
//   cost_source, profile, profile_device, cost_passes, comm_costs, unprofiled_gpus (the best
//   plan's step; simulator/cost/cost_provenance.h),
//   shapes, considered, unsimulable, fitting, dominated, dominance_rules {rule: plans dropped},
//   candidates, simulated, bounded_out,
//   plans [ best first: {rank, plan (the plan object `simulate --plan` accepts as is),
//           iteration_time_s, tokens_per_s, mfu, model_tflops_per_gpu, bubble_pct,
//           peak_memory_bytes, fits, objective, dollars_per_step, time_bound_s, why,
//           time_to_train (with --train-tokens; time_to_train_report.h),
//           breakdown_s {compute, bubble, exposed_comm, optimizer},
//           stages [{index, layers, gpu, busy_s, peak_memory_bytes, capacity_bytes}]} ],
//   closest (only when nothing fits): {plan, peak_memory_bytes, capacity_bytes, over_bytes,
//           worst_stage},
//   emitted, emit_warnings (only with --emit): the launcher files written and their warnings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "simulator/planner/planner.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"

namespace ppsim {

// What the search was asked, for the header.
struct PlanRequest {
  int64_t gpus = 0;               // The largest GPU count searched (gpu_counts.back()).
  std::vector<int64_t> gpu_counts;  // GPU counts searched, ascending; each plan uses one.
  int64_t global_batch_size = 0;  // Sequences per step.
  int64_t seq_length = 0;         // Tokens per sequence.
  Objective objective = Objective::kTime;
  std::string runtime = "megatron-core";  // `plan --runtime`: a runtime name, or "any".
  double memory_margin = 0;  // SearchSpace::memory_margin (fraction of GPU memory kept free).
  double min_gain = 0;       // PlannerOptions::min_gain (fraction).
  // The profile used (path, device, unprofiled GPUs); the report's counts come from the best
  // plan's step, this only when no plan was simulated.
  CostProvenance costs;
  std::optional<TrainingSpec> training;  // The run timed for each plan (--train-tokens).
};

// Launcher files written for the best plan (`plan --emit`), for the report's footer.
struct EmittedFiles {
  std::string format;                 // "megatron", "deepspeed" or "torchtitan".
  std::vector<std::string> paths;     // Files written.
  std::vector<std::string> warnings;  // What the launcher cannot express.
};

std::string plan_report_text(const ModelSpec& model, const ClusterSpec& cluster,
                             const PlanRequest& request, const PlanSearchResult& result,
                             const EmittedFiles& emitted = {});
std::string plan_report_json(const ModelSpec& model, const ClusterSpec& cluster,
                             const PlanRequest& request, const PlanSearchResult& result,
                             const EmittedFiles& emitted = {});

// One sentence on the closest plan when nothing fits: which plan, its peak on which stage and
// how far over capacity it is. REQUIRES: result.closest.
std::string closest_plan_sentence(const PlanSearchResult& result);

}  // namespace ppsim
