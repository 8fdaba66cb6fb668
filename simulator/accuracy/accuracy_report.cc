#include "simulator/accuracy/accuracy_report.h"

#include "simulator/spec/error.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

namespace ppsim {
namespace {

constexpr const char* kSplitRule =
    "test = rows whose row_id text has an odd 32-bit FNV-1a hash; train = the others";
constexpr const char* kErrorDefinition =
    "error_pct = 100 * (predicted - target) / target, target = target_tokens_per_s_per_gpu";
constexpr const char* kMemoryUnit = "GB = 1e9 bytes";

std::string status_of(const RowAccuracy& row) {
  if (!row.simulated) return "not_predicted";
  return row.error_pct ? "compared" : "not_compared";
}

std::string optional_number(const std::optional<double>& value, const char* format) {
  return value ? fmt::format(fmt::runtime(format), *value) : std::string("-");
}

// "104-106, 110" from row ids: runs of consecutive integers collapse; long lists are elided.
std::string row_list(const std::vector<std::string>& ids) {
  auto as_int = [](const std::string& id, long long& out) {
    if (id.empty() || id.size() > 15) return false;
    for (char c : id) {
      if (c < '0' || c > '9') return false;
    }
    out = std::stoll(id);
    return true;
  };
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < ids.size()) {
    size_t j = i;
    long long current = 0, next = 0;
    if (as_int(ids[i], current)) {
      while (j + 1 < ids.size() && as_int(ids[j + 1], next) && next == current + 1) {
        current = next;
        ++j;
      }
    }
    if (j >= i + 2) {
      parts.push_back(ids[i] + "-" + ids[j]);
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(ids[k]);
    }
    i = j + 1;
  }
  constexpr size_t kMaxParts = 12;
  if (parts.size() > kMaxParts) {
    return fmt::format("{}, {}, {}, ..., {} ({} rows)", parts[0], parts[1], parts[2],
                       parts.back(), ids.size());
  }
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text;
}

// "row 7" or "rows 7-9, 12".
std::string rows_label(const std::vector<std::string>& ids) {
  return (ids.size() == 1 ? "row " : "rows ") + row_list(ids);
}

// "MAPE 4.68% over 174 rows" or "no rows".
std::string mape_phrase(const ErrorSummary& summary) {
  if (summary.rows == 0) return "no rows";
  return fmt::format("{:.2f}% over {}", summary.mape, summary.rows);
}

std::string summary_line(const std::string& name, const ErrorSummary& summary) {
  if (summary.rows == 0) return fmt::format("# {:<12} {:>5} {:>9} {:>12}\n", name, 0, "-", "-");
  return fmt::format("# {:<12} {:>5} {:>9.2f} {:>12.2f}\n", name, summary.rows, summary.mape,
                     summary.max_abs_error_pct);
}

nlohmann::ordered_json summary_json(const ErrorSummary& summary) {
  nlohmann::ordered_json json;
  json["rows"] = summary.rows;
  json["mape_pct"] = summary.rows > 0 ? nlohmann::ordered_json(summary.mape) : nullptr;
  json["max_abs_error_pct"] =
      summary.rows > 0 ? nlohmann::ordered_json(summary.max_abs_error_pct) : nullptr;
  return json;
}

nlohmann::ordered_json number_or_null(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

std::string constants_text(const AccuracyOptions& options) {
  const EfficiencyTable& e = options.efficiency;
  const CollectiveEfficiency& c = options.collective;
  std::string text = fmt::format(
      "kernel_scale {:.3g}, flash2_scale {:.3g} (of each GPU's kernel datasheet), "
      "gemm_half_tiles {:.3g}, gemm_half_k {:.3g}, memory {:.3g}; NCCL intra {:.3g} inter {:.3g} "
      "of line rate, base {:.3g} us",
      e.kernel_scale, e.flash2_scale, e.gemm_half_tiles, e.gemm_half_k, e.memory,
      c.intra_bandwidth, c.inter_bandwidth, c.base_latency * 1e6);
  for (Runtime runtime : all_runtimes()) {
    const RuntimeOverheads& o = e.overheads(runtime);
    text += fmt::format("; {} gap {:.3g} us, microbatch {:.3g} us, step {:.3g} ms",
                        runtime_name(runtime), o.kernel_gap_s * 1e6, o.microbatch_overhead_s * 1e6,
                        o.step_overhead_s * 1e3);
  }
  return text;
}

std::string schedule_label(const PublicRun& run) {
  return run.predictable() ? schedule_name(run.plan.schedule) : run.schedule_text;
}


std::string loso_text(const LeaveOneSourceOut* loso) {
  if (!loso) return "# leave-one-source-out: not computed (--no-loso)\n";
  std::string out = fmt::format(
      "# leave-one-source-out: MAPE {:.2f}% over {} rows (mean of sources {:.2f}%); worst source "
      "{} {:.2f}%; worst row {} ({}) {:+.2f}%\n",
      loso->mape_pct, loso->rows, loso->source_mape_pct, loso->worst_source,
      loso->worst_source_mape_pct, loso->worst_row, loso->worst_row_source,
      loso->worst_row_error_pct);
  out += fmt::format("#   {:<8} {:>5} {:>13} {:>12} {:>14}  {}\n", "source", "rows",
                     "held-out(%)", "max|err|(%)", "all-fitted(%)", "worst row");
  for (const HeldOutSource& source : loso->per_source) {
    out += fmt::format("#   {:<8} {:>5} {:>13.2f} {:>12.2f} {:>14.2f}  {} {:+.2f}%\n",
                       source.source_id, source.rows, source.mape_pct, source.max_abs_error_pct,
                       source.fitted_mape_pct, source.worst_row, source.worst_row_error_pct);
  }
  return out;
}

nlohmann::ordered_json loso_json(const LeaveOneSourceOut* loso) {
  using Json = nlohmann::ordered_json;
  if (!loso) return nullptr;
  Json json;
  json["mape_pct"] = loso->mape_pct;
  json["source_mape_pct"] = loso->source_mape_pct;
  json["rows"] = loso->rows;
  json["worst_source"] = loso->worst_source;
  json["worst_source_mape_pct"] = loso->worst_source_mape_pct;
  json["worst_row"] = {{"row_id", loso->worst_row},
                       {"source_id", loso->worst_row_source},
                       {"error_pct", loso->worst_row_error_pct}};
  json["simulations"] = loso->simulations;
  Json per_source = Json::array();
  for (const HeldOutSource& source : loso->per_source) {
    // The constants its fold fitted without it, to see what a held-out error comes from.
    Json constants = Json::object();
    EfficiencyTable fold = source.efficiency;
    for (const FitParameter& parameter : fit_parameters()) {
      constants[parameter.name] = parameter.field(fold);
    }
    per_source.push_back({{"source_id", source.source_id},
                          {"rows", source.rows},
                          {"mape_pct", source.mape_pct},
                          {"max_abs_error_pct", source.max_abs_error_pct},
                          {"fitted_mape_pct", source.fitted_mape_pct},
                          {"worst_row", source.worst_row},
                          {"worst_row_error_pct", source.worst_row_error_pct},
                          {"constants", constants}});
  }
  json["per_source"] = per_source;
  return json;
}

}  // namespace

std::string accuracy_report_text(const AccuracyResult& result, const AccuracyOptions& options,
                                 const LeaveOneSourceOut* loso) {
  std::string out;
  out += "# ppsim accuracy: predicted vs published training throughput\n";
  out += fmt::format("# runs       {}: {} rows; running split {}, {}\n", result.runs_file,
                     result.file_rows, split_name(result.split),
                     result.only_source.empty() ? "every source" : "source " + result.only_source);
  out += fmt::format("# split      {}\n", kSplitRule);
  out += fmt::format("# error      {}\n", kErrorDefinition);
  out += fmt::format("# memory     mem_gb_per_gpu vs the simulated peak of the fullest stage, in {}\n",
                     kMemoryUnit);
  out += fmt::format("# constants  {}\n", constants_text(options));
  out += "#\n";
  const char* row_format =
      "{:>1} {:>5} {:<6} {:<5} {:>5} {:<16} {:>11} {:>11} {:>8} {:>7} {:>7} {:>7}  {}\n";
  out += fmt::format(fmt::runtime(row_format), "#", "row", "source", "split", "gpus", "gpu",
                     "predicted", "published", "error", "mem", "mem_pub", "mem_err",
                     "model: plan");
  out += fmt::format(fmt::runtime(row_format), "#", "", "", "", "", "", "(tok/s/GPU)",
                     "(tok/s/GPU)", "(%)", "(GB)", "(GB)", "(%)", "");
  for (const RowAccuracy& row : result.rows) {
    const PublicRun& run = row.run;
    std::string gpu = run.predictable() ? run.cluster.nodes.front().gpu.name : "?";
    std::string split = row.test_split ? "test" : "train";
    if (!row.simulated) {
      out += fmt::format(fmt::runtime(row_format), " ", run.row_id, run.source_id, split,
                         run.num_gpus, gpu, "-",
                         optional_number(run.target_tokens_per_s_per_gpu, "{:.1f}"), "-", "-",
                         optional_number(run.published_memory_gb, "{:.1f}"), "-",
                         run.model_name + ": not predicted");
      continue;
    }
    out += fmt::format(fmt::runtime(row_format), " ", run.row_id, run.source_id, split,
                       run.num_gpus, gpu, fmt::format("{:.1f}", row.predicted_tokens_per_s_per_gpu),
                       optional_number(run.target_tokens_per_s_per_gpu, "{:.1f}"),
                       optional_number(row.error_pct, "{:+.2f}"),
                       optional_number(row.predicted_memory_gb, "{:.1f}"),
                       optional_number(run.published_memory_gb, "{:.1f}"),
                       optional_number(row.memory_error_pct, "{:+.1f}"),
                       run.model_name + ": " + plan_to_inline(run.plan) +
                           (row.fits ? "" : " (does not fit)"));
  }
  if (!result.not_compared.empty()) {
    std::vector<std::string> ids;
    for (size_t i : result.not_compared) ids.push_back(result.rows[i].run.row_id);
    out += fmt::format("# not compared (simulated; no published target): {}\n", rows_label(ids));
  }
  if (!result.not_predicted.empty()) {
    out += fmt::format("# not predicted: {} row{}\n", result.not_predicted.size(),
                       result.not_predicted.size() == 1 ? "" : "s");
    // Each distinct reason once, with its rows.
    std::map<std::string, std::vector<std::string>> by_reason;
    std::vector<std::string> order;
    for (size_t i : result.not_predicted) {
      const PublicRun& run = result.rows[i].run;
      if (by_reason[run.reason].empty()) order.push_back(run.reason);
      by_reason[run.reason].push_back(run.row_id);
    }
    for (const std::string& reason : order) {
      out += fmt::format("#   {}: {}\n", rows_label(by_reason[reason]), reason);
    }
  }
  {
    std::map<std::string, std::vector<std::string>> by_default;
    std::vector<std::string> order;
    for (const RowAccuracy& row : result.rows) {
      for (const std::string& text : row.run.defaults) {
        if (by_default[text].empty()) order.push_back(text);
        by_default[text].push_back(row.run.row_id);
      }
    }
    if (!order.empty()) out += "# defaults applied (assumed where the file is silent):\n";
    for (const std::string& text : order) {
      out += fmt::format("#   {}: {}\n", rows_label(by_default[text]), text);
    }
  }
  out += "#\n";
  out += loso_text(loso);
  out += fmt::format("# {:<12} {:>5} {:>9} {:>12}\n", "summary", "rows", "MAPE(%)", "max|err|(%)");
  out += summary_line("all", result.all);
  out += summary_line("train", result.train);
  out += summary_line("test", result.test);
  for (const SourceAccuracy& source : result.sources) {
    out += summary_line(source.source_id, source.all);
    if (source.all.rows > 0) {
      out += summary_line(fmt::format("  train", source.source_id), source.train);
      out += summary_line(fmt::format("  test", source.source_id), source.test);
    }
  }
  out += summary_line("memory", result.memory);
  if (!result.worst.empty()) {
    out += fmt::format("# worst {} rows:\n", result.worst.size());
    for (size_t i : result.worst) {
      const RowAccuracy& row = result.rows[i];
      out += fmt::format("#   row {} ({}, {}, {} GPUs {}): {:+.2f}% (predicted {:.1f}, published {:.1f} "
                         "tok/s/GPU)\n",
                         row.run.row_id, row.run.source_id, row.run.model_name, row.run.num_gpus,
                         row.run.cluster.nodes.front().gpu.name, *row.error_pct,
                         row.predicted_tokens_per_s_per_gpu, *row.run.target_tokens_per_s_per_gpu);
    }
  }
  if (!result.schedule_groups.empty()) {
    int64_t pairs = 0, agreeing = 0;
    for (const ScheduleGroup& group : result.schedule_groups) {
      pairs += group.pairs;
      agreeing += group.agreeing;
    }
    out += fmt::format("# schedule order (rows that differ only in schedule): {} groups, {} of {} "
                       "pairs ordered as published\n",
                       result.schedule_groups.size(), agreeing, pairs);
    for (const ScheduleGroup& group : result.schedule_groups) {
      std::string published, predicted;
      std::vector<size_t> by_published = group.rows, by_predicted = group.rows;
      std::stable_sort(by_published.begin(), by_published.end(), [&](size_t a, size_t b) {
        return *result.rows[a].run.target_tokens_per_s_per_gpu <
               *result.rows[b].run.target_tokens_per_s_per_gpu;
      });
      std::stable_sort(by_predicted.begin(), by_predicted.end(), [&](size_t a, size_t b) {
        return result.rows[a].predicted_tokens_per_s_per_gpu <
               result.rows[b].predicted_tokens_per_s_per_gpu;
      });
      for (size_t i : by_published) {
        published += (published.empty() ? "" : " < ") + schedule_label(result.rows[i].run);
      }
      for (size_t i : by_predicted) {
        predicted += (predicted.empty() ? "" : " < ") + schedule_label(result.rows[i].run);
      }
      std::vector<std::string> ids;
      for (size_t i : group.rows) ids.push_back(result.rows[i].run.row_id);
      const PublicRun& first = result.rows[group.rows.front()].run;
      out += fmt::format("#   {} rows {} ({}): published {}; predicted {}{}\n", first.source_id,
                         row_list(ids), first.model_name, published, predicted,
                         group.published_order_reproduced() ? "" : "  MISMATCH");
    }
  }
  if (result.all.rows > 0) {
    if (loso) {
      out += fmt::format("# leave-one-source-out MAPE {:.2f}% over {} rows (worst source {} "
                         "{:.2f}%)\n",
                         loso->mape_pct, loso->rows, loso->worst_source,
                         loso->worst_source_mape_pct);
    }
    out += fmt::format("# OK: MAPE {} rows (train {}, test {}); {} not predicted\n",
                       mape_phrase(result.all), mape_phrase(result.train),
                       mape_phrase(result.test), result.not_predicted.size());
  } else {
    out += fmt::format("# NO ROWS COMPARED: none of the {} rows run could be predicted against a "
                       "published target\n",
                       result.rows.size());
  }
  return out;
}

std::string accuracy_report_json(const AccuracyResult& result, const AccuracyOptions& options,
                                 const LeaveOneSourceOut* loso) {
  using Json = nlohmann::ordered_json;
  Json json;
  json["runs_file"] = result.runs_file;
  json["file_rows"] = result.file_rows;
  json["split"] = split_name(result.split);
  json["only_source"] = result.only_source.empty() ? Json(nullptr) : Json(result.only_source);
  json["split_rule"] = kSplitRule;
  json["error_definition"] = kErrorDefinition;
  json["memory_unit"] = kMemoryUnit;
  const EfficiencyTable& e = options.efficiency;
  const CollectiveEfficiency& c = options.collective;
  Json runtimes = Json::object();
  for (Runtime runtime : all_runtimes()) {
    const RuntimeOverheads& o = e.overheads(runtime);
    runtimes[runtime_name(runtime)] = {{"kernel_gap_s", o.kernel_gap_s},
                                       {"microbatch_overhead_s", o.microbatch_overhead_s},
                                       {"step_overhead_s", o.step_overhead_s}};
  }
  json["constants"] = {
      {"efficiency",
       {{"kernel_scale", e.kernel_scale},
        {"flash2_scale", e.flash2_scale},
        {"gemm_tile", e.gemm_tile},
        {"gemm_half_tiles", e.gemm_half_tiles},
        {"gemm_half_k", e.gemm_half_k},
        {"attention_q_tile", e.attention_q_tile},
        {"memory", e.memory},
        {"roofline_sharpness", e.roofline_sharpness}}},
      {"runtimes", runtimes},
      {"collective",
       {{"intra_bandwidth", c.intra_bandwidth},
        {"inter_bandwidth", c.inter_bandwidth},
        {"base_latency_s", c.base_latency},
        {"overlap_phases", c.overlap_phases}}}};
  Json rows = Json::array();
  for (const RowAccuracy& row : result.rows) {
    const PublicRun& run = row.run;
    Json entry;
    entry["row_id"] = run.row_id;
    entry["line"] = run.line;
    entry["source_id"] = run.source_id;
    entry["model"] = run.model_name;
    entry["framework"] = framework_name(run.framework);
    entry["gpu_type"] = run.gpu_type;
    entry["gpu"] = run.predictable() ? Json(run.cluster.nodes.front().gpu.name) : Json(nullptr);
    entry["num_gpus"] = run.num_gpus;
    entry["split"] = row.test_split ? "test" : "train";
    entry["status"] = status_of(row);
    entry["reason"] = run.predictable() ? Json(nullptr) : Json(run.reason);
    entry["plan"] = run.predictable() ? Json(plan_to_inline(run.plan)) : Json(nullptr);
    entry["runtime"] = run.predictable() ? Json(runtime_name(run.plan.runtime)) : Json(nullptr);
    entry["attention"] =
        run.predictable() ? Json(attention_kernel_name(attention_kernel(run.plan))) : Json(nullptr);
    entry["flash_attention"] = attention_kernel(run.plan) != AttentionKernel::kUnfused;
    entry["defaults"] = run.defaults;
    entry["predicted_tokens_per_s_per_gpu"] =
        row.simulated ? Json(row.predicted_tokens_per_s_per_gpu) : Json(nullptr);
    entry["target_tokens_per_s_per_gpu"] = number_or_null(run.target_tokens_per_s_per_gpu);
    entry["error_pct"] = number_or_null(row.error_pct);
    std::optional<double> held_out;
    if (loso) {
      auto found = loso->held_out_error_pct.find(run.row_id);
      if (found != loso->held_out_error_pct.end()) held_out = found->second;
    }
    entry["held_out_error_pct"] = number_or_null(held_out);
    entry["iteration_time_s"] = row.simulated ? Json(row.iteration_time_s) : Json(nullptr);
    entry["mfu"] = row.simulated ? Json(row.mfu) : Json(nullptr);
    entry["fits"] = row.simulated ? Json(row.fits) : Json(nullptr);
    entry["predicted_memory_gb"] = number_or_null(row.predicted_memory_gb);
    entry["published_memory_gb"] = number_or_null(run.published_memory_gb);
    entry["memory_error_pct"] = number_or_null(row.memory_error_pct);
    rows.push_back(entry);
  }
  json["rows"] = rows;
  json["leave_one_source_out"] = loso_json(loso);
  json["summary"] = {{"all", summary_json(result.all)},
                     {"train", summary_json(result.train)},
                     {"test", summary_json(result.test)},
                     {"memory", summary_json(result.memory)}};
  Json sources = Json::array();
  for (const SourceAccuracy& source : result.sources) {
    sources.push_back({{"source_id", source.source_id},
                       {"rows", source.rows},
                       {"all", summary_json(source.all)},
                       {"train", summary_json(source.train)},
                       {"test", summary_json(source.test)},
                       {"memory", summary_json(source.memory)}});
  }
  json["sources"] = sources;
  Json worst = Json::array();
  for (size_t i : result.worst) {
    const RowAccuracy& row = result.rows[i];
    worst.push_back({{"row_id", row.run.row_id},
                     {"source_id", row.run.source_id},
                     {"model", row.run.model_name},
                     {"error_pct", *row.error_pct},
                     {"predicted_tokens_per_s_per_gpu", row.predicted_tokens_per_s_per_gpu},
                     {"target_tokens_per_s_per_gpu", *row.run.target_tokens_per_s_per_gpu}});
  }
  json["worst"] = worst;
  Json not_predicted = Json::array();
  for (size_t i : result.not_predicted) {
    const PublicRun& run = result.rows[i].run;
    not_predicted.push_back(
        {{"row_id", run.row_id}, {"source_id", run.source_id}, {"reason", run.reason}});
  }
  json["not_predicted"] = not_predicted;
  Json not_compared = Json::array();
  for (size_t i : result.not_compared) not_compared.push_back(result.rows[i].run.row_id);
  json["not_compared"] = not_compared;
  Json groups = Json::array();
  for (const ScheduleGroup& group : result.schedule_groups) {
    Json entry;
    const PublicRun& first = result.rows[group.rows.front()].run;
    entry["source_id"] = first.source_id;
    entry["model"] = first.model_name;
    Json ids = Json::array(), schedules = Json::array(), published = Json::array(),
         predicted = Json::array();
    for (size_t i : group.rows) {
      const RowAccuracy& row = result.rows[i];
      ids.push_back(row.run.row_id);
      schedules.push_back(row.run.schedule_text);
      published.push_back(*row.run.target_tokens_per_s_per_gpu);
      predicted.push_back(row.predicted_tokens_per_s_per_gpu);
    }
    entry["rows"] = ids;
    entry["schedules"] = schedules;
    entry["published"] = published;
    entry["predicted"] = predicted;
    entry["pairs"] = group.pairs;
    entry["agreeing"] = group.agreeing;
    entry["reproduced"] = group.published_order_reproduced();
    groups.push_back(entry);
  }
  json["schedule_groups"] = groups;
  return json.dump(2) + "\n";
}

std::string fit_report_text(const FitResult& fit, const LeaveOneSourceOut* loso) {
  std::string out = "# ppsim accuracy --fit: global constants fitted on published runs\n";
  out += fmt::format("# sources    {} (weighted equally); {} dense rows compared\n",
                     join_names(fit.sources), fit.rows);
  out += fmt::format("# objective  mean over sources of MAPE: {:.2f}% at the priors, {:.2f}% "
                     "fitted ({} sweeps, {} evaluations)\n",
                     fit.prior_objective_pct, fit.objective_pct, fit.sweeps, fit.evaluations);
  out += "# constant                             value        state\n";
  out += fitted_constants_text(fit);
  if (loso) out += loso_text(loso);
  return out;
}

std::string fit_report_json(const FitResult& fit, const LeaveOneSourceOut* loso) {
  using Json = nlohmann::ordered_json;
  Json json;
  json["sources"] = fit.sources;
  json["rows"] = fit.rows;
  json["prior_objective_pct"] = fit.prior_objective_pct;
  json["objective_pct"] = fit.objective_pct;
  json["sweeps"] = fit.sweeps;
  json["evaluations"] = fit.evaluations;
  Json constants = Json::object();
  EfficiencyTable e = fit.efficiency;
  for (const FitParameter& parameter : fit_parameters()) {
    bool fitted =
        std::find(fit.fitted.begin(), fit.fitted.end(), parameter.name) != fit.fitted.end();
    constants[parameter.name] = {{"value", parameter.field(e)}, {"fitted", fitted}};
  }
  json["constants"] = constants;
  json["leave_one_source_out"] = loso_json(loso);
  return json.dump(2) + "\n";
}

std::string accuracy_residual_svg(const AccuracyResult& result) {
  constexpr double kSize = 560, kMargin = 60;
  constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  double low = 1e300, high = 0;
  for (const RowAccuracy& row : result.rows) {
    if (!row.error_pct) continue;
    for (double v : {row.predicted_tokens_per_s_per_gpu, *row.run.target_tokens_per_s_per_gpu}) {
      low = std::min(low, v);
      high = std::max(high, v);
    }
  }
  if (high <= 0) {  // No compared row: an empty decade.
    low = 1;
    high = 10;
  }
  double lo = std::floor(std::log10(low)), hi = std::ceil(std::log10(high));
  if (hi <= lo) hi = lo + 1;
  auto at = [&](double v) { return (std::log10(v) - lo) / (hi - lo) * kSize; };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{0}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<title>ppsim accuracy: predicted vs published tokens/s per GPU</title>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kSize + 2 * kMargin);
  auto x = [&](double v) { return kMargin + at(v); };
  auto y = [&](double v) { return kMargin + kSize - at(v); };
  for (double d = lo; d <= hi; ++d) {
    double v = std::pow(10.0, d);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<line x1=\"{1:.1f}\" y1=\"{3:.1f}\" x2=\"{4:.1f}\" y2=\"{3:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{5:.1f}\" text-anchor=\"middle\">{6:g}</text>"
        "<text x=\"{7:.1f}\" y=\"{3:.1f}\" text-anchor=\"end\">{6:g}</text>\n",
        x(v), kMargin, kMargin + kSize, y(v), kMargin + kSize, kMargin + kSize + 16, v,
        kMargin - 4);
  }
  // y = x and the +-10% band.
  double a = std::pow(10.0, lo), b = std::pow(10.0, hi);
  out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n",
                     x(a), y(a), x(b), y(b));
  for (double f : {1.1, 1 / 1.1}) {
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
                       "stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n",
                       x(a), y(std::max(a, a * f)), x(std::min(b, b / f)), y(std::min(b, b / f) * f));
  }
  std::map<std::string, size_t> colour;
  for (const SourceAccuracy& source : result.sources) {
    if (source.all.rows > 0) colour.emplace(source.source_id, colour.size());
  }
  for (const RowAccuracy& row : result.rows) {
    if (!row.error_pct) continue;
    const char* fill = kPalette[colour[row.run.source_id] % std::size(kPalette)];
    out += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" fill-opacity=\"0.7\">"
        "<title>row {} ({}, {}): predicted {:.1f}, published {:.1f} tok/s/GPU ({:+.1f}%)</title>"
        "</circle>\n",
        x(*row.run.target_tokens_per_s_per_gpu), y(row.predicted_tokens_per_s_per_gpu), fill,
        row.run.row_id, row.run.source_id, row.run.model_name, row.predicted_tokens_per_s_per_gpu,
        *row.run.target_tokens_per_s_per_gpu, *row.error_pct);
  }
  double legend_y = kMargin + 14;
  for (const auto& [source, index] : colour) {
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                       kMargin + 12, legend_y - 4, kPalette[index % std::size(kPalette)],
                       kMargin + 22, legend_y, source);
    legend_y += 16;
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">published "
                     "tokens/s per GPU (log)</text>\n",
                     kMargin + kSize / 2, kMargin + kSize + 40);
  out += fmt::format("<text transform=\"translate(16 {:.1f}) rotate(-90)\" "
                     "text-anchor=\"middle\">predicted tokens/s per GPU (log)</text>\n",
                     kMargin + kSize / 2);
  out += fmt::format("<text x=\"{:.1f}\" y=\"24\" text-anchor=\"middle\">ppsim accuracy: "
                     "{} rows, MAPE {:.2f}% (line: exact; dashed: +-10%)</text>\n",
                     kMargin + kSize / 2, result.all.rows, result.all.mape);
  out += "</svg>\n";
  return out;
}

}  // namespace ppsim
