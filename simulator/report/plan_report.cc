#include "simulator/report/plan_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "simulator/model/model_stats.h"
#include "simulator/report/report_format.h"
#include "simulator/report/time_to_train_report.h"
#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// The best plan's cost provenance, or the request's (profile only) when none was simulated.
const CostProvenance& report_provenance(const PlanRequest& request,
                                        const PlanSearchResult& result) {
  return result.plans.empty() ? request.costs : result.plans.front().metrics.provenance;
}

std::string search_summary(const PlanSearchResult& result, int64_t top) {
  const SearchStats& stats = result.stats;
  std::string rules;
  for (const RuleCount& rule : stats.rules) {
    if (rule.dropped == 0) continue;
    rules += fmt::format("{}{}: {}", rules.empty() ? "" : "; ", rule.rule, rule.dropped);
  }
  std::string text = fmt::format(
      "# search   {} plans considered ({} shapes x recompute, sequence parallelism, ZeRO, "
      "offload), {} fit in memory\n",
      stats.considered, stats.shapes, stats.fitting);
  if (stats.unsimulable > 0) {
    text += fmt::format(
        "#          {} plans left out: the simulator's schedule lowering "
        "deadlocks on their send streams\n",
        stats.unsimulable);
  }
  text += fmt::format("#          {} dropped by dominance{}\n", stats.dominated,
                      rules.empty() ? "" : " (" + rules + ")");
  text += fmt::format(
      "#          {} candidates: {} simulated, {} never simulated (a lower bound "
      "on their objective exceeds the {} best found)\n",
      stats.candidates, stats.simulated, stats.bounded_out,
      top == 1 ? std::string("best") : fmt::format("top {}", top));
  return text;
}

nlohmann::ordered_json breakdown_json(const Breakdown& breakdown) {
  return {{"compute", breakdown.compute},
          {"bubble", breakdown.bubble},
          {"exposed_comm", breakdown.exposed_comm},
          {"optimizer", breakdown.optimizer}};
}

}  // namespace

std::string closest_plan_sentence(const PlanSearchResult& result) {
  PPSIM_CHECK(result.closest.has_value());
  const ClosestPlan& closest = *result.closest;
  int64_t stage = closest.memory.worst_stage;
  if (closest.memory.over_bytes <= 0 && !closest.memory.host.fits) {
    const HostMemoryReport& host = closest.memory.host;
    return fmt::format(
        "the closest plan, {}, fits its GPUs but needs {} GiB of host memory on "
        "node {} for the offloaded optimizer, {} GiB over (lower the offload "
        "fraction or raise host_memory_GiB)",
        plan_to_inline(closest.plan), gib(host.peak_bytes), host.worst_node, gib(host.over_bytes));
  }
  return fmt::format("the closest plan, {}, needs {} GiB on stage {}, {} GiB over its {} GiB",
                     plan_to_inline(closest.plan), gib(closest.memory.stage_peak_bytes[stage]),
                     stage, gib(closest.memory.over_bytes),
                     gib(closest.memory.capacity_bytes[stage]));
}

std::string plan_report_text(const ModelSpec& model, const ClusterSpec& cluster,
                             const PlanRequest& request, const PlanSearchResult& result,
                             const EmittedFiles& emitted) {
  std::string out = "# ppsim plan\n";
  ParameterCounts counts = count_parameters(model);
  out += fmt::format(
      "# model    {}: {} parameters ({} active), {} layers, hidden {}, {:.3g} "
      "GFLOP per token at sequence {}\n",
      model.name, human_count(counts.total), human_count(counts.active), model.num_layers,
      model.hidden_size, training_flops_per_token(model, request.seq_length) / 1e9,
      request.seq_length);
  out += fmt::format("# cluster  {}\n", describe_cluster(cluster));
  out += fmt::format("# batch    {} sequences of {} tokens per step on {} GPUs\n",
                     request.global_batch_size, request.seq_length,
                     fmt::join(request.gpu_counts, " or "));
  if (request.training) {
    out += fmt::format(
        "# run      {} tokens, {} checkpoint interval; wall days, goodput and run cost per "
        "plan (docs/time-to-train.md)\n",
        human_count(static_cast<double>(request.training->tokens)),
        request.training->interval_rule == IntervalRule::kSteps
            ? fmt::format("{}-step", request.training->interval_steps)
            : interval_rule_name(request.training->interval_rule));
  }
  out += fmt::format("# {}\n", result.objective_note);
  out += fmt::format(
      "# runtime  {}; memory margin {:g}% of each GPU kept free; min gain {:g}% for offload, "
      "recompute or a more complex schedule\n",
      request.runtime == "any" ? "any (every plan the simulator runs, megatron-core's costs)"
                               : request.runtime + " (only plans it runs)",
      100 * request.memory_margin, 100 * request.min_gain);
  out += provenance_text(report_provenance(request, result));
  int64_t top = static_cast<int64_t>(std::max<size_t>(result.plans.size(), 1));
  out += search_summary(result, top);
  out += "#\n";
  const char* row = "{} {:>4} {:>10} {:>10} {:>5} {:>7} {:>4} {:>8}  {:<46} {}\n";
  const char* run_row =
      "{} {:>4} {:>10} {:>10} {:>5} {:>7} {:>4} {:>8} {:>8} {:>7} {:>11}  {:<46} {}\n";
  if (request.training) {
    out += fmt::format(fmt::runtime(run_row), "#", "rank", "step", "tokens/s", "MFU", "peak",
                       "fits", "cost", "wall", "goodput", "run cost", "why", "plan");
    out += fmt::format(fmt::runtime(run_row), "#", "", "(s)", "(tok/s)", "(%)", "(GiB)", "",
                       "($/step)", "(days)", "", "($)", "", "");
  } else {
    out += fmt::format(fmt::runtime(row), "#", "rank", "step", "tokens/s", "MFU", "peak", "fits",
                       "cost", "why", "plan");
    out += fmt::format(fmt::runtime(row), "#", "", "(s)", "(tok/s)", "(%)", "(GiB)", "", "($/step)",
                       "", "");
  }
  for (size_t i = 0; i < result.plans.size(); ++i) {
    const RankedPlan& plan = result.plans[i];
    std::string cost =
        plan.dollars_per_step > 0 ? fmt::format("{:.4f}", plan.dollars_per_step) : std::string("-");
    if (plan.time_to_train) {
      const TimeToTrain& run = *plan.time_to_train;
      out += fmt::format(
          fmt::runtime(run_row), " ", i + 1, fmt::format("{:.4f}", plan.metrics.iteration_time_s),
          fmt::format("{:.0f}", plan.metrics.tokens_per_s),
          fmt::format("{:.1f}", 100 * plan.metrics.mfu), gib(plan.metrics.peak_memory_bytes),
          plan.metrics.fits ? "yes" : "no", cost,
          fmt::format("{:.2f}", seconds_to_days(run.wall_s)), fmt::format("{:.4f}", run.goodput),
          run.cost_usd ? fmt::format("{:.0f}", *run.cost_usd) : std::string("-"), plan.why,
          plan_to_inline(plan.plan));
      continue;
    }
    out += fmt::format(
        fmt::runtime(row), " ", i + 1, fmt::format("{:.4f}", plan.metrics.iteration_time_s),
        fmt::format("{:.0f}", plan.metrics.tokens_per_s),
        fmt::format("{:.1f}", 100 * plan.metrics.mfu), gib(plan.metrics.peak_memory_bytes),
        plan.metrics.fits ? "yes" : "no", cost, plan.why, plan_to_inline(plan.plan));
  }
  if (result.plans.empty()) {
    if (result.closest) {
      out += fmt::format("# NOTHING FITS: {}\n", closest_plan_sentence(result));
    } else {
      out += "# NOTHING FITS: no plan of the search space is valid for this model on these GPUs\n";
    }
    return out;
  }
  const RankedPlan& best = result.plans.front();
  const StepMetrics& metrics = best.metrics;
  out += "#\n";
  out += fmt::format("# best     {}\n", plan_to_inline(best.plan));
  out += fmt::format(
      "# breakdown of its step on the critical worker (s): compute {:.4f}, bubble "
      "{:.4f}, exposed_comm {:.4f}, optimizer {:.4f}; bubble {:.1f}%\n",
      metrics.breakdown_s.compute, metrics.breakdown_s.bubble, metrics.breakdown_s.exposed_comm,
      metrics.breakdown_s.optimizer, metrics.bubble_pct);
  const char* stage_row = "# {:>7} {:>6} {:<16} {:>10} {:>10} {:>10}\n";
  out += fmt::format(fmt::runtime(stage_row), "stage", "layers", "gpu", "busy(s)", "peak(GiB)",
                     "cap(GiB)");
  for (const StageResult& stage : metrics.stages) {
    out += fmt::format(fmt::runtime(stage_row), stage.index, stage.layers, stage.gpu,
                       fmt::format("{:.4f}", stage.busy_s), gib(stage.peak_memory_bytes),
                       gib(stage.capacity_bytes));
  }
  for (const std::string& path : emitted.paths) {
    out += fmt::format("# wrote {} ({} launcher for the best plan)\n", path, emitted.format);
  }
  for (const std::string& warning : emitted.warnings)
    out += fmt::format("# warning: {}\n", warning);
  if (best.time_to_train) out += time_to_train_text(*best.time_to_train);
  out += fmt::format("# OK: best step {:.4f} s, {:.0f} tokens/s, MFU {:.1f}%, peak {} GiB\n",
                     metrics.iteration_time_s, metrics.tokens_per_s, 100 * metrics.mfu,
                     gib(metrics.peak_memory_bytes));
  return out;
}

std::string plan_report_json(const ModelSpec& model, const ClusterSpec& cluster,
                             const PlanRequest& request, const PlanSearchResult& result,
                             const EmittedFiles& emitted) {
  const SearchStats& stats = result.stats;
  nlohmann::ordered_json json;
  json["model"] = model.name;
  json["cluster"] = cluster.name;
  json["gpus"] = request.gpus;
  json["gpu_counts"] = request.gpu_counts;
  json["global_batch_size"] = request.global_batch_size;
  json["seq_length"] = request.seq_length;
  json["objective"] = objective_name(request.objective);
  json["objective_note"] = result.objective_note;
  json["runtime"] = request.runtime;
  json["memory_margin"] = request.memory_margin;
  json["min_gain"] = request.min_gain;
  add_provenance_json(json, report_provenance(request, result));
  json["shapes"] = stats.shapes;
  json["considered"] = stats.considered;
  json["unsimulable"] = stats.unsimulable;
  json["fitting"] = stats.fitting;
  json["dominated"] = stats.dominated;
  nlohmann::ordered_json rules = nlohmann::ordered_json::object();
  for (const RuleCount& rule : stats.rules) rules[rule.rule] = rule.dropped;
  json["dominance_rules"] = rules;
  json["candidates"] = stats.candidates;
  json["simulated"] = stats.simulated;
  json["bounded_out"] = stats.bounded_out;
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (size_t i = 0; i < result.plans.size(); ++i) {
    const RankedPlan& plan = result.plans[i];
    const StepMetrics& metrics = plan.metrics;
    nlohmann::ordered_json entry;
    entry["rank"] = i + 1;
    entry["plan"] = nlohmann::ordered_json::parse(plan_to_json(plan.plan));
    entry["gpus"] = plan.plan.num_gpus();
    entry["iteration_time_s"] = metrics.iteration_time_s;
    entry["tokens_per_s"] = metrics.tokens_per_s;
    entry["mfu"] = metrics.mfu;
    entry["model_tflops_per_gpu"] = metrics.model_tflops_per_gpu;
    entry["bubble_pct"] = metrics.bubble_pct;
    entry["peak_memory_bytes"] = metrics.peak_memory_bytes;
    entry["fits"] = metrics.fits;
    entry["objective"] = plan.objective;
    entry["dollars_per_step"] = plan.dollars_per_step;
    entry["time_bound_s"] = plan.time_bound_s;
    entry["why"] = plan.why;
    if (plan.time_to_train) entry["time_to_train"] = time_to_train_json(*plan.time_to_train);
    entry["breakdown_s"] = breakdown_json(metrics.breakdown_s);
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const StageResult& stage : metrics.stages) {
      stages.push_back({{"index", stage.index},
                        {"layers", stage.layers},
                        {"gpu", stage.gpu},
                        {"busy_s", stage.busy_s},
                        {"peak_memory_bytes", stage.peak_memory_bytes},
                        {"capacity_bytes", stage.capacity_bytes}});
    }
    entry["stages"] = stages;
    plans.push_back(entry);
  }
  json["plans"] = plans;
  if (result.closest) {
    const ClosestPlan& closest = *result.closest;
    int64_t stage = closest.memory.worst_stage;
    json["closest"] = {{"plan", nlohmann::ordered_json::parse(plan_to_json(closest.plan))},
                       {"peak_memory_bytes", closest.memory.stage_peak_bytes[stage]},
                       {"capacity_bytes", closest.memory.capacity_bytes[stage]},
                       {"over_bytes", closest.memory.over_bytes},
                       {"worst_stage", stage}};
  }
  if (!emitted.paths.empty()) {
    json["emitted"] = emitted.paths;
    json["emit_warnings"] = emitted.warnings;
  }
  return json.dump(2) + "\n";
}

}  // namespace ppsim
