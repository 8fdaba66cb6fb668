#include "simulator/report/validation_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "simulator/spec/error.h"
#include "simulator/spec/units.h"

namespace ppsim {
namespace {

const std::vector<std::string>& action_types() {
  static const std::vector<std::string> kTypes = {"F", "B", "I", "W", "send", "collective",
                                                  "optimizer"};
  return kTypes;
}

// The comparison type of a task, or "" for tasks that belong to none.
std::string type_of(const TaskInfo& info) {
  switch (info.role) {
    case TaskInfo::Role::kGradientReduce:
    case TaskInfo::Role::kParamGather: return "collective";
    case TaskInfo::Role::kOptimizer:
    // Offload's copies and host Adam belong to the optimizer step (the executors reject
    // offload plans today, so these do not occur in a validation yet).
    case TaskInfo::Role::kOffloadD2H:
    case TaskInfo::Role::kCpuAdam:
    case TaskInfo::Role::kOffloadH2D: return "optimizer";
    case TaskInfo::Role::kBucketReady: return "";
    case TaskInfo::Role::kAction: break;
  }
  switch (info.kind) {
    case ActionKind::kForward: return "F";
    case ActionKind::kBackward: return "B";
    case ActionKind::kBackwardInput: return "I";
    case ActionKind::kBackwardWeight: return "W";
    case ActionKind::kSendForward:
    case ActionKind::kSendBackward: return "send";
    default: return "";
  }
}

double error_pct(double predicted, double measured) {
  return measured > 0 ? 100.0 * (predicted - measured) / measured : 0.0;
}

// Index of the iteration whose step time is the median (the lower middle for an even count).
size_t median_iteration(const std::vector<Timeline>& iterations) {
  std::vector<size_t> order(iterations.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return iterations[a].makespan < iterations[b].makespan;
  });
  return order[(order.size() - 1) / 2];
}

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / kMiB); }

}  // namespace

ValidationResult compare_step(const Step& step, const Timeline& predicted,
                              const MeasuredStep& measured, const ValidationSettings& settings) {
  const TaskGraph& graph = step.lowered.graph;
  PPSIM_CHECK(!measured.iterations.empty());
  PPSIM_CHECK(static_cast<int32_t>(measured.measured.size()) == graph.num_tasks());
  ValidationResult result;
  result.backend = settings.backend;
  result.device = measured.device;
  result.prediction = settings.prediction;
  result.iterations = static_cast<int64_t>(measured.iterations.size());
  result.warmup_iterations = settings.warmup_iterations;
  result.folded = measured.folded;
  result.tolerance_pct = settings.tolerance_pct;
  result.executed = measured.executed;

  size_t median = median_iteration(measured.iterations);
  result.predicted_step_s = predicted.makespan;
  result.measured_step_s = measured.iterations[median].makespan;
  result.error_pct = error_pct(result.predicted_step_s, result.measured_step_s);
  result.over_tolerance = std::abs(result.error_pct) > settings.tolerance_pct;

  for (const std::string& type : action_types()) {
    ActionTypeComparison row;
    row.type = type;
    double predicted_sum = 0, measured_sum = 0;
    int64_t measured_count = 0;
    for (TaskId id = 0; id < graph.num_tasks(); ++id) {
      if (type_of(step.lowered.info[id]) != type) continue;
      ++row.count;
      predicted_sum += predicted.end[id] - predicted.start[id];
      if (!measured.measured[id]) continue;
      for (const Timeline& timeline : measured.iterations) {
        measured_sum += timeline.end[id] - timeline.start[id];
        ++measured_count;
      }
    }
    if (row.count == 0) continue;
    row.predicted_s = predicted_sum / row.count;
    if (measured_count > 0) {
      row.measured_s = measured_sum / measured_count;
      row.error_pct = error_pct(row.predicted_s, *row.measured_s);
    }
    result.actions.push_back(row);
  }

  for (size_t w = 0; w < step.static_memory_bytes.size(); ++w) {
    double activations = w < predicted.peak_memory.size() ? predicted.peak_memory[w] : 0;
    result.predicted_peak_memory_bytes =
        std::max(result.predicted_peak_memory_bytes, step.static_memory_bytes[w] + activations);
  }
  for (double peak : measured.peak_memory_bytes) {
    result.measured_peak_memory_bytes = std::max(result.measured_peak_memory_bytes, peak);
  }

  result.compute_cpu_share = measured.compute_cpu_share;
  // Below this share of a core the run measured the machine's load more than the plan.
  constexpr double kBusyShare = 0.9;
  if (measured.compute_cpu_share > 0 && measured.compute_cpu_share < kBusyShare) {
    result.notes.push_back(fmt::format(
        "the worker threads were on a core for {:.0f}% of their compute actions' wall time: this "
        "machine is busy, and the measured times include waiting for a core (the profile's "
        "medians of short calls mostly do not); rerun on an idle machine",
        100 * measured.compute_cpu_share));
  }
  const Timeline& chosen = measured.iterations[median];
  if (measured.folded) {
    std::vector<double> durations(graph.num_tasks());
    for (TaskId id = 0; id < graph.num_tasks(); ++id) durations[id] = chosen.end[id] - chosen.start[id];
    result.measured_timeline = replay_with_measured(graph, durations, measured.measured);
    result.notes.push_back(
        "folded: the workers ran one after another on one device, so sends and collectives "
        "between them were not measured; the measured step is the schedule replayed with the "
        "measured compute times and the predicted communication");
  } else {
    result.measured_timeline = chosen;
  }
  return result;
}

std::string validation_report_text(const ValidationResult& r, const std::string& inputs) {
  std::string out;
  out += fmt::format("# ppsim validate: {}\n", inputs);
  out += fmt::format("# backend {}: {}\n", r.backend, r.device);
  out += fmt::format("# iterations: {} timed after {} warm-up; the median step is reported\n",
                     r.iterations, r.warmup_iterations);
  out += fmt::format("# prediction: {}\n", r.prediction);
  for (const std::string& note : r.notes) out += fmt::format("# note: {}\n", note);
  out += "#\n";
  out += fmt::format("# {:<10} {:>6} {:>14} {:>14} {:>9}\n", "action", "count", "predicted",
                     "measured", "error");
  out += fmt::format("# {:<10} {:>6} {:>14} {:>14} {:>9}\n", "", "", "(ms)", "(ms)", "(%)");
  for (const ActionTypeComparison& row : r.actions) {
    out += fmt::format("  {:<10} {:>6} {:>14.3f} {:>14} {:>9}\n", row.type, row.count,
                       row.predicted_s * 1e3,
                       row.measured_s ? fmt::format("{:.3f}", *row.measured_s * 1e3)
                                      : std::string("not run"),
                       row.error_pct ? fmt::format("{:+.1f}", *row.error_pct) : std::string("-"));
  }
  out += "#\n";
  out += fmt::format("# step: predicted {:.3f} ms, measured {:.3f} ms, error {:+.1f}%\n",
                     r.predicted_step_s * 1e3, r.measured_step_s * 1e3, r.error_pct);
  out += fmt::format("# peak memory per worker: predicted {}, measured {}\n",
                     mib(r.predicted_peak_memory_bytes), mib(r.measured_peak_memory_bytes));
  out += r.over_tolerance
             ? fmt::format("# FAILED: |error| {:.1f}% > tolerance {:g}%\n", std::abs(r.error_pct),
                           r.tolerance_pct)
             : fmt::format("# OK: |error| {:.1f}% <= tolerance {:g}%\n", std::abs(r.error_pct),
                           r.tolerance_pct);
  return out;
}

std::string validation_report_json(const ValidationResult& r) {
  nlohmann::ordered_json j;
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["prediction"] = r.prediction;
  j["iterations"] = r.iterations;
  j["warmup_iterations"] = r.warmup_iterations;
  j["folded"] = r.folded;
  j["predicted_step_s"] = r.predicted_step_s;
  j["measured_step_s"] = r.measured_step_s;
  j["error_pct"] = r.error_pct;
  j["tolerance_pct"] = r.tolerance_pct;
  j["over_tolerance"] = r.over_tolerance;
  nlohmann::ordered_json actions = nlohmann::ordered_json::object();
  for (const ActionTypeComparison& row : r.actions) {
    nlohmann::ordered_json a;
    a["count"] = row.count;
    a["predicted_s"] = row.predicted_s;
    a["measured_s"] = row.measured_s ? nlohmann::ordered_json(*row.measured_s) : nullptr;
    a["error_pct"] = row.error_pct ? nlohmann::ordered_json(*row.error_pct) : nullptr;
    actions[row.type] = a;
  }
  j["actions"] = actions;
  j["predicted_peak_memory_bytes"] = r.predicted_peak_memory_bytes;
  j["measured_peak_memory_bytes"] = r.measured_peak_memory_bytes;
  j["compute_cpu_share"] = r.compute_cpu_share > 0 ? nlohmann::ordered_json(r.compute_cpu_share)
                                                  : nlohmann::ordered_json(nullptr);
  j["notes"] = r.notes;
  j["executed"] = r.executed;
  return j.dump(2) + "\n";
}

}  // namespace ppsim
