// ExecutorProgram: a StepProgram lowered to kernel calls, in plain C++17 with no simulator
// types, so both executors of `ppsim validate` read one format: the CPU executor
// (cpu_executor.cc, Eigen and threads) and the CUDA executor (cuda_executor.cu, compiled by
// nvcc as C++17). lower_step_program (executor_program_builder.h) builds it.
//
// Per worker the instructions keep the schedule's order (step_program.h). A compute
// instruction's kernels are its op passes (compute_passes) as calls:
//   GEMM pass          kGemm (m, n, k, batch) of the pass shape: F (m,n,k), B (m,k,n), W (k,n,m);
//   attention pass     kAttentionForward / kAttentionBackward (m = batch_heads, n = query tokens,
//                      k = head_dim), as the profiler times it;
//   memory-bound pass  kNorm for ops named *norm, else kElementwise, moving the pass's bytes
//                      (the cost model looks up the same kernel names in a profile).
// Task ids index the simulated step's TaskGraph, so results come back in its numbering.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppsim {

enum class KernelKind : uint8_t { kGemm, kAttentionForward, kAttentionBackward, kNorm, kElementwise };

struct KernelCall {
  KernelKind kind = KernelKind::kGemm;
  double m = 0, n = 0, k = 0, batch = 1;  // kGemm: Y[m,n] = X[m,k] W[k,n], batch times.
                                          // Attention: m batch_heads, n tokens, k head_dim.
  double bytes = 0;                       // kNorm, kElementwise: bytes read + written.
};

enum class ExecKind : uint8_t { kCompute, kSend, kRecv, kCollective, kOptimizer };

// Which collective a call runs (nccl-tests names).
enum class ExecCollectiveKind : uint8_t { kAllReduce, kAllGather, kReduceScatter };

struct ExecCollective {
  ExecCollectiveKind kind = ExecCollectiveKind::kAllReduce;
  double bytes = 0;              // nccl-tests size.
  std::vector<int32_t> workers;  // Members, ascending; call rank i is workers[i].
};

struct ExecInstruction {
  ExecKind kind = ExecKind::kCompute;
  std::string label;               // "F[c0,mb2]", "SEND_F[c0,mb2]", "GRAD_SYNC[c1]", ...
  int32_t chunk = -1, microbatch = -1;
  std::vector<KernelCall> kernels;  // kCompute.
  std::vector<int32_t> tasks;       // Tasks it times: compute 1; collective one per bucket;
                                    // optimizer: the update, then any parameter gathers.
  std::vector<int32_t> collectives; // Per task: index into ExecutorProgram::collectives or -1.
  int32_t peer = -1;                // kSend: receiver; kRecv: sender.
  int32_t transfer = -1;            // kSend, kRecv: the transfer task (recorded by the receiver).
  double bytes = 0;                 // kSend, kRecv: tensor bytes; kOptimizer: Adam bytes.
  double alloc_bytes = 0;           // kCompute: allocated at its start (saved activations).
  double free_bytes = 0;            // kCompute: freed at its end.
  // kCompute F: of alloc_bytes, what survives the input-gradient action (freed by W).
  double kept_for_weight_grad = 0;
};

struct ExecutorProgram {
  int32_t workers = 0;
  int32_t tasks = 0;  // Tasks of the simulated step's graph.
  std::vector<std::vector<ExecInstruction>> instructions;  // Per worker.
  std::vector<ExecCollective> collectives;
  std::vector<double> static_bytes;  // Per worker: weights, gradients, optimizer, workspace.
};

// How to run it.
struct ExecutorOptions {
  int64_t warmup_iterations = 1;  // Untimed steps first (buffers grow, caches warm).
  int64_t iterations = 3;         // Timed steps.
  bool fold = false;              // Run the workers one after another on one device; sends
                                  // and collectives are skipped (not measured).
  double timeout = 60;            // Seconds a worker waits on a peer before the run aborts.
};

// What it measured, in the program's task numbering.
struct ExecutorResult {
  std::vector<std::vector<double>> start, end;  // Per timed iteration, per task (seconds).
  std::vector<double> makespan;                 // Per timed iteration.
  std::vector<char> measured;                   // Per task: 1 when timed.
  std::vector<std::vector<std::string>> executed;  // Per worker: labels, in executed order.
  std::vector<double> peak_bytes;               // Per worker.
  // Per worker (CUDA): device memory of the stand-in kernels' operands (GEMM inputs and outputs,
  // gemm_softmax scores, memory-bound arrays), allocated but left out of peak_bytes, since
  // training's kernels work in the activations and transient buffers the prediction counts.
  std::vector<double> stand_in_bytes;
  std::string device;
  // CPU executor: the worker threads' CPU time over the wall time of their compute actions
  // (timed iterations, all workers): 1 when no thread ever waited for a core, lower on a busy
  // machine. 0 when not measured (CUDA).
  double compute_cpu_share = 0;
};

}  // namespace ppsim
