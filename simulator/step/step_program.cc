#include "simulator/step/step_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "simulator/model/chunk_layout.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

using ActionKey = std::tuple<int32_t, ActionKind, int32_t, int32_t>;  // worker, kind, chunk, mb.

void append(std::vector<Op>& ops, const OpList& list) {
  for (const Op& op : list) ops.push_back(op);
}

}  // namespace

StepProgram build_step_program(const Step& step, const ModelSpec& model) {
  const Plan& plan = step.plan;
  PPSIM_CHECK(plan.tp == 1 && plan.cp == 1 && plan.ep == 1,
              "step programs run one device per worker (tp = cp = ep = 1)");
  const PipelineSchedule& schedule = step.schedule;
  const Lowered& lowered = step.lowered;
  const int32_t p = schedule.ranks;
  StepProgram program;
  program.workers = static_cast<int32_t>(lowered.compute_stream.size());
  PPSIM_CHECK(program.workers == p * step.classes.count());
  PPSIM_CHECK(step.classes.count() == plan.dp, "replicas were deduplicated");
  program.task_count = lowered.graph.num_tasks();
  program.static_bytes = step.static_memory_bytes;

  // The chunks' ops, over the layout StepCosts prices (chunk_layout.h).
  OpShape shape = op_shape(plan, model);
  // Past recompute_num_layers in a chunk, layers run without recompute (plan.h).
  const OpShape plain_shape = op_shape(without_recompute(plan), model);
  const ChunkLayout layout = chunk_layout(plan, model);
  PPSIM_CHECK(layout.num_chunks() == schedule.num_chunks());
  for (int32_t c = 0; c < schedule.num_chunks(); ++c) {
    std::vector<Op> ops;
    if (c == 0) append(ops, embedding_ops(model, shape));
    const int64_t first = layout.chunk_first_layer[c];
    for (int64_t layer = first; layer < first + layout.chunk_layers[c]; ++layer) {
      append(ops, layer_ops(model, layer_recomputed(plan, layer - first) ? shape : plain_shape,
                            layer));
    }
    if (c == layout.loss_chunk()) append(ops, head_ops(model, shape));
    program.chunk_ops.push_back(std::move(ops));
  }

  // Every action task by its key; the step-action tasks by (worker, role, chunk) in id order.
  std::map<ActionKey, TaskId> action_task;
  std::map<std::tuple<int32_t, TaskInfo::Role, int32_t>, std::vector<TaskId>> step_tasks;
  std::map<int32_t, std::vector<TaskId>> group_tasks;
  for (TaskId id = 0; id < lowered.graph.num_tasks(); ++id) {
    const TaskInfo& info = lowered.info[id];
    if (info.worker < 0) continue;
    if (info.role == TaskInfo::Role::kAction) {
      action_task[{info.worker, info.kind, info.chunk, info.microbatch}] = id;
    } else {
      step_tasks[{info.worker, info.role, info.chunk}].push_back(id);
    }
    int32_t group = lowered.graph.task(id).group;
    if (group >= 0) group_tasks[group].push_back(id);
  }
  auto task_of = [&](int32_t worker, ActionKind kind, int32_t chunk, int32_t mb) {
    auto it = action_task.find({worker, kind, chunk, mb});
    PPSIM_CHECK(it != action_task.end(),
                fmt::format("worker {}: no task for {}", worker,
                            action_label(Action{kind, chunk, mb})));
    return it->second;
  };
  auto tasks_of = [&](int32_t worker, TaskInfo::Role role, int32_t chunk) {
    auto it = step_tasks.find({worker, role, chunk});
    return it == step_tasks.end() ? std::vector<TaskId>{} : it->second;
  };

  program.collectives.resize(lowered.graph.num_groups());
  for (const auto& [group, ids] : group_tasks) {
    CollectiveCall& call = program.collectives[group];
    const TaskInfo& info = lowered.info[ids.front()];
    call.kind = info.role == TaskInfo::Role::kParamGather ? Collective::kAllGather
                : zero_stage_in_force(plan) >= 1         ? Collective::kReduceScatter
                                                         : Collective::kAllReduce;
    call.bytes = step.task_bytes[ids.front()];
    for (TaskId id : ids) call.workers.push_back(lowered.info[id].worker);
    std::sort(call.workers.begin(), call.workers.end());
  }

  program.instructions.resize(program.workers);
  program.worker_chunk_count.assign(program.workers, schedule.chunks_per_rank);
  for (int32_t w = 0; w < program.workers; ++w) {
    const int32_t replica = w / p;
    for (const Action& action : schedule.rank_actions[w % p]) {
      Instruction in;
      in.action = action;
      in.label = action_label(action);
      const int32_t mb = action.microbatch;
      switch (action.kind) {
        case ActionKind::kSendForward:
        case ActionKind::kSendBackward: {
          in.transfer = task_of(w, action.kind, action.chunk, mb);
          in.tasks.push_back(in.transfer);
          int32_t to_chunk = action.chunk + (action.kind == ActionKind::kSendForward ? 1 : -1);
          in.peer = replica * p + schedule.chunk_rank[to_chunk];
          in.bytes = lowered.graph.task(in.transfer).work;
          break;
        }
        case ActionKind::kRecvForward:
        case ActionKind::kRecvBackward: {
          bool forward = action.kind == ActionKind::kRecvForward;
          int32_t from_chunk = action.chunk + (forward ? -1 : 1);
          in.peer = replica * p + schedule.chunk_rank[from_chunk];
          in.transfer = task_of(in.peer, forward ? ActionKind::kSendForward
                                                 : ActionKind::kSendBackward,
                                from_chunk, mb);
          in.bytes = lowered.graph.task(in.transfer).work;
          break;
        }
        case ActionKind::kGradientSync:
          in.tasks = tasks_of(w, TaskInfo::Role::kGradientReduce, action.chunk);
          break;
        case ActionKind::kOptimizerStep: {
          in.tasks = tasks_of(w, TaskInfo::Role::kOptimizer, -1);
          PPSIM_CHECK(in.tasks.size() == 1, "one optimizer task per worker");
          in.bytes = step.task_bytes[in.tasks.front()];
          for (TaskId id : tasks_of(w, TaskInfo::Role::kParamGather, -1)) in.tasks.push_back(id);
          break;
        }
        default: {
          PPSIM_CHECK(is_compute(action.kind));
          TaskId id = task_of(w, action.kind, action.chunk, mb);
          in.tasks.push_back(id);
          in.alloc_bytes = lowered.graph.task(id).alloc_bytes;
          in.free_bytes = lowered.graph.task(id).free_bytes;
        }
      }
      for (TaskId id : in.tasks) in.groups.push_back(lowered.graph.task(id).group);
      program.instructions[w].push_back(std::move(in));
    }
  }
  return program;
}

std::vector<OpPass> compute_passes(const std::vector<Op>& ops, ActionKind kind) {
  std::vector<OpPass> passes;
  const bool input = kind == ActionKind::kBackward || kind == ActionKind::kBackwardInput;
  const bool weight = kind == ActionKind::kBackward || kind == ActionKind::kBackwardWeight;
  if (kind == ActionKind::kForward) {
    for (const Op& op : ops) {
      if (op.kernels_fwd > 0) passes.push_back({&op, PassKind::kForward});
    }
    return passes;
  }
  if (input) {
    for (const Op& op : ops) {
      if (op.recomputed && op.kernels_fwd > 0) passes.push_back({&op, PassKind::kForward});
    }
  }
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (input && it->kernels_b > 0) passes.push_back({&*it, PassKind::kInputGrad});
    if (weight && it->kernels_w > 0) passes.push_back({&*it, PassKind::kWeightGrad});
  }
  return passes;
}

}  // namespace ppsim
