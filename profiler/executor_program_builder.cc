#include "profiler/executor_program_builder.h"

#include <map>
#include <string_view>
#include <utility>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

KernelCall kernel_call(const OpPass& pass) {
  const Op& op = *pass.op;
  KernelCall call;
  switch (op.op_class) {
    case OpClass::kGemm: {
      const GemmShape& g = op.gemm;
      call.kind = KernelKind::kGemm;
      call.batch = g.batch;
      if (pass.pass == PassKind::kForward) {
        call.m = g.m, call.n = g.n, call.k = g.k;
      } else if (pass.pass == PassKind::kInputGrad) {
        call.m = g.m, call.n = g.k, call.k = g.n;
      } else {
        call.m = g.k, call.n = g.n, call.k = g.m;
      }
      break;
    }
    case OpClass::kAttention:
      call.kind = pass.pass == PassKind::kForward ? KernelKind::kAttentionForward
                                                   : KernelKind::kAttentionBackward;
      call.m = op.attention.batch_heads;
      call.n = op.attention.q_tokens;
      call.k = op.attention.head_dim;
      break;
    case OpClass::kMemoryBound:
      call.kind = op.name.find("norm") != std::string_view::npos ? KernelKind::kNorm
                                                                  : KernelKind::kElementwise;
      call.bytes = pass.pass == PassKind::kForward     ? op.bytes_fwd
                   : pass.pass == PassKind::kInputGrad ? op.bytes_b
                                                       : op.bytes_w;
      break;
  }
  return call;
}

ExecKind exec_kind(ActionKind kind) {
  switch (kind) {
    case ActionKind::kSendForward:
    case ActionKind::kSendBackward: return ExecKind::kSend;
    case ActionKind::kRecvForward:
    case ActionKind::kRecvBackward: return ExecKind::kRecv;
    case ActionKind::kGradientSync: return ExecKind::kCollective;
    case ActionKind::kOptimizerStep: return ExecKind::kOptimizer;
    default: return ExecKind::kCompute;
  }
}

ExecCollectiveKind exec_collective(Collective kind) {
  switch (kind) {
    case Collective::kAllGather: return ExecCollectiveKind::kAllGather;
    case Collective::kReduceScatter: return ExecCollectiveKind::kReduceScatter;
    case Collective::kAllReduce: return ExecCollectiveKind::kAllReduce;
    default: PPSIM_CHECK(false, "the step has no other collective"); return {};
  }
}

}  // namespace

ExecutorProgram lower_step_program(const StepProgram& program) {
  ExecutorProgram out;
  out.workers = program.workers;
  out.tasks = program.task_count;
  out.static_bytes = program.static_bytes;
  for (const CollectiveCall& call : program.collectives) {
    out.collectives.push_back({exec_collective(call.kind), call.bytes, call.workers});
  }
  out.instructions.resize(program.workers);
  for (int32_t w = 0; w < program.workers; ++w) {
    // What a split backward keeps from I to W, by (chunk, microbatch): W's free_bytes.
    std::map<std::pair<int32_t, int32_t>, double> kept;
    for (const Instruction& in : program.instructions[w]) {
      if (in.action.kind == ActionKind::kBackwardWeight) {
        kept[{in.action.chunk, in.action.microbatch}] = in.free_bytes;
      }
    }
    for (const Instruction& in : program.instructions[w]) {
      ExecInstruction e;
      e.kind = exec_kind(in.action.kind);
      e.label = in.label;
      e.chunk = in.action.chunk;
      e.microbatch = in.action.microbatch;
      e.tasks = in.tasks;
      e.collectives = in.groups;
      e.peer = in.peer;
      e.transfer = in.transfer;
      e.bytes = in.bytes;
      e.alloc_bytes = in.alloc_bytes;
      e.free_bytes = in.free_bytes;
      if (e.kind == ExecKind::kCompute) {
        for (const OpPass& pass : compute_passes(program.chunk_ops[in.action.chunk], in.action.kind)) {
          e.kernels.push_back(kernel_call(pass));
        }
        if (in.action.kind == ActionKind::kForward) {
          auto it = kept.find({in.action.chunk, in.action.microbatch});
          if (it != kept.end()) e.kept_for_weight_grad = it->second;
        }
      }
      out.instructions[w].push_back(std::move(e));
    }
  }
  return out;
}

MeasuredStep measured_step_from(const ExecutorResult& result, const TaskGraph& graph, bool folded) {
  MeasuredStep step;
  step.folded = folded;
  step.device = result.device;
  step.executed = result.executed;
  step.peak_memory_bytes = result.peak_bytes;
  step.compute_cpu_share = result.compute_cpu_share;
  step.measured.assign(result.measured.begin(), result.measured.end());
  for (size_t i = 0; i < result.start.size(); ++i) {
    Timeline timeline;
    timeline.start = result.start[i];
    timeline.end = result.end[i];
    timeline.peak_memory = result.peak_bytes;
    if (folded) {
      std::vector<double> durations(timeline.start.size());
      for (size_t t = 0; t < durations.size(); ++t) durations[t] = timeline.end[t] - timeline.start[t];
      timeline.makespan = replay_with_measured(graph, durations, step.measured).makespan;
    } else {
      timeline.makespan = result.makespan[i];
    }
    step.iterations.push_back(std::move(timeline));
  }
  return step;
}

}  // namespace ppsim
