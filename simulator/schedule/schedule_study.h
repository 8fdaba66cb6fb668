// A pipeline schedule in abstract costs, as schedule papers reason about it (zero-bubble,
// Qi et al. 2024): p stages, m microbatches, per-stage times for F, B (input gradient) and W
// (weight gradient), a fixed time per point-to-point transfer and activation memory per
// microbatch. The backend of `ppsim schedule`.
//
// It runs on the same pieces as a full simulation: build_pipeline_schedule() gives the per-rank
// action lists, lower_schedule() turns them into a TaskGraph with AbstractCosts, and
// simulate_graph() gives the Timeline. One replica, no DP reduction, no optimizer step.
//
// Units: times and memory are in the caller's units, unchanged ("the input's time unit"); the
// engine's "seconds" are those units. Each stage is one pipeline rank, and its costs are per
// microbatch for the whole rank: with v chunks per rank (interleaved-1f1b, zbv, dualpipev) each
// chunk's action costs 1/v of them and holds 1/v of the rank's activations.
//
// Costs of one action of chunk c on rank r (tf, tb, tw = the rank's costs):
//   F: tf/v.  I: tb/v.  W: tw/v.  B (fused, non-split schedules and dualpipev's full
//   backwards): (tb + tw)/v.
// A stage with tw == 0 has input and weight gradient as one pass: in split schedules (zb-h1,
// zb-h2, zbv, dualpipev) that rank's I actions become fused B and its W actions are removed
// (as fuse_backward does for every rank), so its activations are freed when that B ends.
// Transfers between ranks take `comm` each (latency only, no bytes), with the lowering's
// rendezvous rule: a transfer starts once the producer has ended and the receiver has reached
// the matching receive in its own order.
// Memory: an F allocates 1/v of a microbatch's activations, freed when its W (split) or B
// (fused) ends; peak_microbatches is the peak of what a rank holds, in microbatches.
//
// Metrics per stage (= rank), all from the Timeline:
//   busy        = sum of the rank's compute durations;
//   bubble      = makespan - busy, makespan = last end - first start of the whole step
//                 (the zero-bubble paper's per-stage bubble: (p-1)(tf+tb+tw) for GPipe and
//                 1F1B, (p-1)(tf+tb-tw) for ZB-H1, on every stage);
//   span_bubble = (rank's last end - rank's first start) - busy: idle between the rank's own
//                 first and last action. It is what remains when consecutive steps overlap (no
//                 optimizer barrier), the sense in which zb-h2's parallelogram has zero bubble:
//                 stage 0's span_bubble is the paper's (p-1)(tf+tb-2tw) for ZB-H2, while its
//                 bubble, like every schedule's last stage's, is at least (p-1)*tf.
//   bubble_ratio = 1 - sum(busy) / (stages * makespan).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/engine/timeline.h"
#include "simulator/schedule/pipeline_schedule.h"
#include "simulator/schedule/schedule_lowering.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// One stage's (rank's) costs per microbatch, in the input's time unit. JSON (--stage-costs):
// {"tf": 1, "tb": 1, "tw": 1}, all three required.
struct StageCosts {
  double tf = 0;  // Forward. > 0.
  double tb = 0;  // Backward, input gradient (the whole backward when tw == 0). > 0.
  double tw = 0;  // Backward, weight gradient; 0 = fused into B. >= 0.
};

struct ScheduleStudyInput {
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  int32_t stages = 1;                  // p, pipeline ranks. >= 1.
  int32_t microbatches = 1;            // m. >= 1.
  int32_t chunks_per_rank = 1;         // v: 2 for zbv/dualpipev, >= 1 for interleaved-1f1b, else 1.
  int32_t microbatch_group = 0;        // interleaved-1f1b's g (0 = p; pipeline_schedule.h).
  std::vector<StageCosts> costs;       // Per stage, size p.
  double comm = 0;                     // Time per point-to-point transfer. >= 0.
  double memory_per_microbatch = 1;    // Activation memory of one microbatch on a rank. > 0.
  std::optional<double> memory_limit;  // Per stage, same unit; none = no check.
};

struct StageStudy {
  double busy = 0;               // Sum of the rank's compute durations.
  double bubble = 0;             // makespan - busy.
  double first_start = 0;        // The rank's first compute start.
  double last_end = 0;           // The rank's last compute end.
  double span_bubble = 0;        // (last_end - first_start) - busy.
  double peak_microbatches = 0;  // Peak activations held, in microbatches.
  double peak_memory = 0;        // peak_microbatches * memory_per_microbatch.
  bool over_limit = false;       // peak_memory > memory_limit.
  std::string order;             // compute_order(): "FFFBFBW..." (I printed as B).
};

struct ScheduleStudy {
  ScheduleStudyInput input;
  PipelineSchedule schedule;  // As run (ranks with tw == 0 fused; split_backward = any W left).
  Lowered lowered;
  Timeline timeline;
  double makespan = 0;              // First start (0) to last end.
  double bubble_ratio = 0;          // 1 - sum(busy) / (stages * makespan).
  bool mem_limit_exceeded = false;  // Some stage is over_limit.
  std::vector<StageStudy> stages;   // Per stage.
};

// The LoweringCosts of a study (see the top of this file). kGradientSync and kOptimizerStep add
// no tasks.
class AbstractCosts : public LoweringCosts {
 public:
  // REQUIRES: input.costs.size() == input.stages; `input` outlives this object (it is kept by
  // reference).
  explicit AbstractCosts(const ScheduleStudyInput& input) : input_(input) {}
  ComputeSpec compute(int32_t worker, const Action& action) override;
  TransferSpec transfer(TaskGraph& graph, int32_t from_worker, int32_t to_worker,
                        const Action& send) override;
  TaskId step_action(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                     StreamId compute_stream, const Action& action, TaskId after) override;

 private:
  const ScheduleStudyInput& input_;
};

// The schedule with input and weight gradient fused: each I becomes B, each W is dropped.
PipelineSchedule fuse_backward(PipelineSchedule schedule);

// Builds, lowers and simulates the schedule and computes the metrics above.
// Throws InputError (source "--schedule", "--vpp", "--stages", ...) when the input is invalid:
// sizes out of range, a cost list of the wrong length, negative or non-finite numbers, or a
// schedule that cannot be built for (p, m, v) (schedule_problem's reason, e.g. dualpipev needs
// m >= 2p).
ScheduleStudy run_schedule_study(const ScheduleStudyInput& input);

// Per-stage costs from JSON text: a list of {"tf","tb","tw"} objects, one per stage, read
// strictly (unknown keys, missing keys, wrong types and out-of-range numbers are InputErrors
// naming `source` and the JSON path, e.g. "costs.json: /2/tw: ..."). Pure.
std::vector<StageCosts> parse_stage_costs(const std::string& text, const std::string& source);
// Reads the file and parses it; a missing file is an InputError naming the path.
std::vector<StageCosts> load_stage_costs(const std::string& path);

}  // namespace ppsim
