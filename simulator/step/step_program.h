// StepProgram: what an executor (ppsim validate) runs for one training step, per worker, in
// the schedule's own order, with every instruction tied to the lowered tasks whose predicted
// times it is compared with.
//
// One source of truth (DESIGN.md): the instructions of worker w (replica d, rank r) are
// step.schedule.rank_actions[r], one per action, in that order; nothing is re-derived. Each
// action finds its tasks in step.lowered by its TaskInfo (worker, kind, chunk, microbatch):
//   F, B, I, W      its compute task;
//   SEND_F, SEND_B  its transfer task (on a send stream);
//   RECV_F, RECV_B  no task of its own: it completes the matching send's transfer (the
//                   rendezvous of schedule_lowering.h), whose TaskId it carries;
//   GRAD_SYNC(c)    the chunk's gradient-reduction buckets (kGradientReduce), in bucket order;
//                   their kBucketReady delays are part of the backward and are not executed;
//   OPT_STEP        the optimizer task, then the distributed optimizer's parameter all-gather.
// The work of a compute action is its chunk's ops (layer_ops.h): chunk 0 starts with the
// embedding, the last chunk ends with the head. Passes (cost_model.h's split):
//   F  forward of every op in order;        I  recomputed forwards, then B passes in reverse;
//   W  W passes in reverse;                 B  recomputed forwards, then B and W in reverse.
//
// Thread-safety: a plain value, immutable once built; executors share it across threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/cost/collective_cost.h"
#include "simulator/model/layer_ops.h"
#include "simulator/step/step_builder.h"

namespace ppsim {

// One collective call: the tasks of one group (TaskGraph::Task::group) across workers.
struct CollectiveCall {
  Collective kind = Collective::kAllReduce;
  double bytes = 0;              // nccl-tests size (Step::task_bytes).
  std::vector<int32_t> workers;  // Members, ascending; rank i of the call is workers[i].
};

struct Instruction {
  Action action;               // As the schedule lists it.
  std::string label;           // action_label(action), e.g. "F[c0,mb2]".
  std::vector<TaskId> tasks;   // The lowered tasks it runs (see header); empty for a RECV.
  std::vector<int32_t> groups; // Per task: its collective (StepProgram::collectives), or -1.
  int32_t peer = -1;           // SEND: the receiving worker; RECV: the sending worker.
  TaskId transfer = -1;        // SEND and RECV: the transfer task both sides complete.
  double bytes = 0;            // SEND, RECV: tensor bytes; OPT_STEP: Adam bytes.
  double alloc_bytes = 0;      // Compute: allocated when it starts (saved activations).
  double free_bytes = 0;       // Compute: freed when it ends.
};

struct StepProgram {
  int32_t workers = 0;
  std::vector<std::vector<Instruction>> instructions;  // Per worker, in execution order.
  std::vector<std::vector<Op>> chunk_ops;               // Per chunk, in forward order.
  std::vector<int32_t> worker_chunk_count;              // Per worker: chunks it holds.
  std::vector<CollectiveCall> collectives;              // Per TaskGraph group id.
  std::vector<double> static_bytes;                     // Per worker: Step::static_memory_bytes.
  int32_t task_count = 0;                               // Tasks of the lowered graph.
};

// REQUIRES: `step` was built with deduplicate_replicas false or dp == 1 (every worker present),
// from the same model; tp == cp == ep == 1 (one device per worker: ops are per GPU).
StepProgram build_step_program(const Step& step, const ModelSpec& model);

// The tasks a compute pass runs, for executors: which op passes, in order.
enum class PassKind : uint8_t { kForward, kInputGrad, kWeightGrad };
struct OpPass {
  const Op* op = nullptr;
  PassKind pass = PassKind::kForward;
};
// The op passes of compute action `kind` on a chunk's ops (header rules). Passes with no
// kernels (a W pass of an op without weights) are left out.
std::vector<OpPass> compute_passes(const std::vector<Op>& ops, ActionKind kind);

}  // namespace ppsim
