#include "profiler/validation_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <tuple>

#include "profiler/cpu_cluster.h"
#include "profiler/cpu_executor.h"
#include "profiler/cuda_executor.h"
#include "profiler/executor_program_builder.h"
#include "simulator/engine/engine.h"
#include "simulator/model/activation_memory.h"
#include "simulator/model/memory_model.h"
#include "simulator/spec/error.h"
#include "simulator/spec/units.h"
#include "simulator/step/step_program.h"

namespace ppsim {
namespace {

// Bytes this machine can still give a process (MemAvailable), or 0 when unknown.
double available_host_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * kKiB;
  }
  return 0;
}

// A note when the profile measured only some of the GEMM shapes the program runs: the others
// are interpolated over FLOPs, the prediction's largest error source on a CPU (docs/validate.md).
std::optional<std::string> unmeasured_gemm_note(const ExecutorProgram& program,
                                                const ProfileTable& profile, Precision precision) {
  std::set<std::tuple<double, double, double, double>> shapes;
  for (const auto& instructions : program.instructions) {
    for (const ExecInstruction& in : instructions) {
      for (const KernelCall& call : in.kernels) {
        if (call.kind == KernelKind::kGemm) shapes.insert({call.m, call.n, call.k, call.batch});
      }
    }
  }
  size_t measured = 0;
  for (const auto& [m, n, k, batch] : shapes) {
    measured += profile.measured_gemm_shape(precision, GemmShape{m, n, k, batch}) ? 1 : 0;
  }
  if (measured == shapes.size()) return std::nullopt;
  return fmt::format("the profile measured {} of the {} GEMM shapes this plan runs; the others "
                     "are interpolated over FLOPs. `ppsim profile --model M --plan P` measures "
                     "them all",
                     measured, shapes.size());
}

// The largest share of available host memory a CPU run may hold: the rest is the OS's and
// the other processes' (a rule of thumb, not a measurement).
constexpr double kHostMemoryShare = 0.8;

}  // namespace

ValidationRun run_validation(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                             const ValidationRequest& request) {
  const bool cpu = request.backend == "cpu";
  StepOptions options;
  options.deduplicate_replicas = false;  // The executor runs every replica.
  // The executor has no framework around its kernels: no dispatch or per-step host time.
  options.efficiency.overheads(plan.runtime).microbatch_overhead_s = 0;
  options.efficiency.overheads(plan.runtime).step_overhead_s = 0;
  options.profile = request.profile;
  // The executor runs the profiler's attention kernel in place of the plan's.
  options.profile_attention_stand_in = true;
  ClusterSpec predicted_cluster = cluster;
  std::string prediction;
  double tensor_bytes = static_cast<double>(plan.micro_batch_size) *
                        static_cast<double>(effective_seq_length(plan, model)) *
                        static_cast<double>(model.hidden_size) * kActivationElementBytes;
  if (cpu) {
    if (!request.profile) {
      throw InputError("--profile", "",
                       "--backend cpu needs a CPU profile of this machine, since the cluster's "
                       "GPU datasheet says nothing about this CPU: run `ppsim profile --backend "
                       "cpu --quick --out cpu.json`, then pass --profile cpu.json");
    }
    const Profile& profile = request.profile->profile();
    predicted_cluster = cpu_validation_cluster(cluster, profile, request.profile_source, tensor_bytes);
    options.collective = cpu_collective_efficiency(profile, tensor_bytes);
    options.efficiency.overheads(plan.runtime).kernel_gap_s = 0;
    options.efficiency.memory = 1;
    prediction = fmt::format("profile {} (cpu: {}); links and bandwidth from its fits",
                             request.profile_source, profile.device.name);
  } else if (request.profile) {
    const Profile& profile = request.profile->profile();
    prediction = fmt::format("profile {} ({}: {})", request.profile_source, profile.backend,
                             profile.device.name);
  } else {
    prediction = fmt::format("datasheet roofline of {} (no profile: pass --profile from `ppsim "
                             "profile` on this GPU for a like-for-like comparison)",
                             cluster.nodes.front().gpu.name);
  }

  ValidationRun run;
  run.step = build_step(model, predicted_cluster, plan, options);
  // The static block an executor allocates per worker: weights, gradients and optimizer states
  // (and on CUDA the transient buffers); a CUDA context, cuBLAS workspace and NCCL buffers are
  // real on a GPU and absent on a CPU thread, so a CPU prediction leaves them out too.
  MemoryReport memory = estimate_memory(model, predicted_cluster, plan);
  std::vector<double> executor_static;
  for (size_t w = 0; w < run.step.layout_worker.size(); ++w) {
    const StageMemory& stage =
        memory.stages[run.step.layout.workers[run.step.layout_worker[w]].stage];
    double bytes = stage.weights_bytes + stage.gradients_bytes + stage.optimizer_bytes;
    executor_static.push_back(cpu ? bytes : bytes + stage.transient_bytes);
  }
  if (cpu) run.step.static_memory_bytes = executor_static;
  if (std::optional<std::string> problem = check_schedule(run.step.schedule)) {
    PPSIM_CHECK(false, "schedule " + schedule_name(plan.schedule) + ": " + *problem);
  }
  Timeline predicted = simulate_graph(run.step.lowered.graph);
  if (cpu) {
    double needed = 0;
    for (size_t w = 0; w < run.step.static_memory_bytes.size(); ++w) {
      needed += run.step.static_memory_bytes[w] +
                (w < predicted.peak_memory.size() ? predicted.peak_memory[w] : 0);
    }
    double available = available_host_memory();
    if (available > 0 && needed > kHostMemoryShare * available) {
      throw InputError("--model", "",
                       fmt::format("the CPU run would hold {:.1f} GiB, more than {:.0f}% of this "
                                   "machine's {:.1f} GiB available; use a smaller model (e.g. "
                                   "tests/data/validate/tiny_llama.json) or a shorter seq",
                                   needed / kGiB, 100 * kHostMemoryShare, available / kGiB));
    }
  }

  ExecutorProgram program = lower_step_program(build_step_program(run.step, model));
  program.static_bytes = executor_static;
  ExecutorResult executed = cpu ? run_step_on_cpu(program, request.run)
                                : run_step_on_cuda(program, request.run);
  MeasuredStep measured = measured_step_from(executed, run.step.lowered.graph, request.run.fold);
  ValidationSettings settings;
  settings.backend = request.backend;
  settings.prediction = prediction;
  settings.warmup_iterations = request.run.warmup_iterations;
  settings.tolerance_pct = request.tolerance_pct;
  run.result = compare_step(run.step, predicted, measured, settings);
  double stand_in = 0;
  for (double bytes : executed.stand_in_bytes) stand_in = std::max(stand_in, bytes);
  if (stand_in > 0) {
    run.result.notes.push_back(fmt::format(
        "the measured peak leaves out the stand-in kernels' operands ({:.1f} GiB on the largest "
        "worker: GEMM inputs and outputs, gemm_softmax scores, memory-bound arrays), which "
        "training does not hold",
        stand_in / kGiB));
  }
  if (request.profile) {
    if (std::optional<std::string> note =
            unmeasured_gemm_note(program, *request.profile, plan.precision)) {
      run.result.notes.push_back(*note);
    }
  }
  return run;
}

}  // namespace ppsim
