#include "simulator/step/sensitivity.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "simulator/engine/engine.h"
#include "simulator/engine/thread_pool.h"
#include "simulator/spec/error.h"
#include "simulator/step/straggler_effects.h"

namespace ppsim {
namespace {

bool is_send(const TaskInfo& info) {
  return info.role == TaskInfo::Role::kAction &&
         (info.kind == ActionKind::kSendForward || info.kind == ActionKind::kSendBackward);
}

// The two pipeline ranks a send joins, lower first.
std::pair<int32_t, int32_t> send_ranks(const Step& step, const TaskInfo& info) {
  int32_t to_chunk = info.kind == ActionKind::kSendForward ? info.chunk + 1 : info.chunk - 1;
  int32_t a = step.schedule.chunk_rank[info.chunk], b = step.schedule.chunk_rank[to_chunk];
  return {std::min(a, b), std::max(a, b)};
}

// Stretches a transfer's time on its own by 1/speed: bytes and latency.
void slow_transfer(Task& task) {
  task.work /= kSensitivitySpeed;
  task.latency /= kSensitivitySpeed;
}

// The fixed part of a model: slow GPUs, nodes and links that do not flap.
StragglerModel fixed_faults(const StragglerModel& model) {
  StragglerModel fixed;
  for (const Straggler& straggler : model.stragglers) {
    if (!straggler.flapping) fixed.stragglers.push_back(straggler);
  }
  return fixed;
}

// "TP+CP" for the kinds of communication costed inside compute tasks that the plan has.
std::string embedded_kinds(const Plan& plan, const ModelSpec& model) {
  std::vector<std::string> kinds;
  if (plan.tp > 1) kinds.push_back("TP");
  if (model.is_moe() && plan.ep > 1) kinds.push_back("EP all-to-all");
  if (plan.cp > 1) kinds.push_back("CP ring");
  if (zero_stage_in_force(plan) == 3 && plan.dp * plan.cp > 1) kinds.push_back("ZeRO-3 gather");
  return join_names(kinds, "+");
}

}  // namespace

Sensitivity step_sensitivity(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                             const StepOptions& base, const StragglerModel& stragglers,
                             int threads, const WorkSplit* split) {
  StragglerModel fixed = fixed_faults(stragglers);
  StepOptions options = straggler_step_options(base, fixed, cluster);
  auto build = [&](const StepOptions& step_options) {
    Step step = build_step(model, cluster, plan, step_options);
    apply_iteration_faults(step.lowered.graph, step, fixed, 0, 0, 0);
    return step;
  };
  const Step step = build(options);
  Sensitivity result;
  result.base_step_time_s = simulate_graph(step.lowered.graph).makespan;
  const TaskGraph& graph = step.lowered.graph;
  const std::vector<TaskInfo>& info = step.lowered.info;
  // The components are collected first, in report order, then simulated on the thread pool;
  // each job writes its own slot, so the entries do not depend on the thread count.
  std::vector<std::string> names;
  std::vector<std::function<std::optional<double>()>> jobs;
  auto add = [&](std::string component, std::function<std::optional<double>()> job) {
    names.push_back(std::move(component));
    jobs.push_back(std::move(job));
  };
  // A component acting on the built graph: `change` edits a copy; nothing changed, no entry.
  auto graph_component = [&](std::string component, std::function<bool(TaskGraph&)> change) {
    add(std::move(component), [&graph, change = std::move(change)]() -> std::optional<double> {
      TaskGraph copy = graph;
      if (!change(copy)) return std::nullopt;
      return simulate_graph(copy).makespan;
    });
  };

  // Each stage's GPUs, as a gpu_speed of 0.9 would slow them (step_builder.cc): compute tasks
  // and bucket delays by 1/0.9; the optimizer's host-side overhead is not GPU work.
  double overhead = options.efficiency.overheads(step.plan.runtime).step_overhead_s;
  for (int32_t stage = 0; stage < step.layout.stages; ++stage) {
    const WorkerSlot& slot = step.layout.at(0, stage);
    std::string gpus =
        step.layout.replicas == 1
            ? fmt::format("GPUs {}-{}", slot.first_gpu, slot.first_gpu + slot.num_gpus - 1)
            : fmt::format("{} GPUs, {} per replica", slot.num_gpus * step.layout.replicas,
                          slot.num_gpus);
    graph_component(fmt::format("stage {} GPUs ({})", stage, gpus), [&, stage](TaskGraph& copy) {
      for (TaskId id = 0; id < copy.num_tasks(); ++id) {
        if (info[id].worker < 0) continue;
        int32_t layout_index = step.layout_worker[info[id].worker];
        if (step.layout.workers[layout_index].stage != stage) continue;
        Task& task = copy.mutable_task(id);
        if (is_compute_action(info[id])) {
          task.work /= kSensitivitySpeed;
        } else if (info[id].role == TaskInfo::Role::kOptimizer) {
          double host = overhead * copy.stream(task.stream).speed;
          task.work = (task.work - host) / kSensitivitySpeed + host;
        } else if (info[id].role == TaskInfo::Role::kBucketReady) {
          task.latency /= kSensitivitySpeed;
        }
      }
      return true;
    });
  }

  // Link classes: the step rebuilt with slower links.
  if (!options.ideal_links) {
    StepOptions intra = options;
    intra.collective.intra_bandwidth *= kSensitivitySpeed;
    add("NVLink (intra-node links)", [&build, intra]() -> std::optional<double> {
      return simulate_graph(build(intra).lowered.graph).makespan;
    });
    bool spans_nodes = false;
    for (const WorkerSlot& slot : step.layout.workers) {
      spans_nodes = spans_nodes || slot.spans_nodes() || slot.node != step.layout.workers[0].node;
    }
    if (spans_nodes) {
      StepOptions inter = options;
      inter.collective.inter_bandwidth *= kSensitivitySpeed;
      add("NICs (inter-node links)", [&build, inter]() -> std::optional<double> {
        return simulate_graph(build(inter).lowered.graph).makespan;
      });
    }
  }

  // Pipeline links, one per stage boundary, then all sends together.
  for (int32_t stage = 0; stage + 1 < step.layout.stages; ++stage) {
    bool cross_node = false;
    for (int32_t d = 0; d < step.layout.replicas; ++d) {
      cross_node = cross_node || step.layout.at(d, stage).node != step.layout.at(d, stage + 1).node;
    }
    graph_component(fmt::format("PP link stage {}-{} ({})", stage, stage + 1,
                                cross_node ? "cross-node" : "NVLink"),
                    [&, stage](TaskGraph& copy) {
                      bool any = false;
                      for (TaskId id = 0; id < copy.num_tasks(); ++id) {
                        if (!is_send(info[id]) || send_ranks(step, info[id]).first != stage)
                          continue;
                        slow_transfer(copy.mutable_task(id));
                        any = true;
                      }
                      return any;
                    });
  }
  auto role_component = [&](std::string component, std::function<bool(const TaskInfo&)> is) {
    graph_component(std::move(component), [&, is](TaskGraph& copy) {
      bool any = false;
      for (TaskId id = 0; id < copy.num_tasks(); ++id) {
        if (!is(info[id])) continue;
        slow_transfer(copy.mutable_task(id));
        any = true;
      }
      return any;
    });
  };
  if (step.layout.stages > 1) role_component("PP send/recv (all stages)", is_send);
  role_component("DP gradient reduce",
                 [](const TaskInfo& task) { return task.role == TaskInfo::Role::kGradientReduce; });
  role_component("DP parameter all-gather",
                 [](const TaskInfo& task) { return task.role == TaskInfo::Role::kParamGather; });
  std::string kinds = embedded_kinds(plan, model);
  if (!kinds.empty()) {
    graph_component(kinds + " collectives (inside compute)", [&](TaskGraph& copy) {
      bool any = false;
      for (TaskId id = 0; id < copy.num_tasks(); ++id) {
        double comm = step.embedded_comm_seconds[id];
        if (comm <= 0) continue;
        copy.mutable_task(id).work += comm * (1 / kSensitivitySpeed - 1);
        any = true;
      }
      return any;
    });
  }
  std::vector<std::optional<double>> times(jobs.size());
  ThreadPool pool(static_cast<int>(
      std::min<int64_t>(resolve_thread_count(threads), static_cast<int64_t>(jobs.size()))));
  // Bytes of a result: none for "no entry", else the step time's 8 bytes.
  run_split(
      split, pool, static_cast<int64_t>(jobs.size()), [&](int64_t i) { times[i] = jobs[i](); },
      [&](int64_t i) { return times[i] ? value_bytes(*times[i]) : std::string(); },
      [&](int64_t i, std::string_view bytes) {
        if (!bytes.empty()) times[i] = bytes_value<double>(bytes);
      });
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!times[i]) continue;
    double increase = 100.0 * (*times[i] - result.base_step_time_s) / result.base_step_time_s;
    result.entries.push_back(SensitivityEntry{names[i], *times[i], increase});
  }
  std::stable_sort(result.entries.begin(), result.entries.end(),
                   [](const SensitivityEntry& a, const SensitivityEntry& b) {
                     return a.step_time_increase_pct > b.step_time_increase_pct;
                   });
  return result;
}

}  // namespace ppsim
