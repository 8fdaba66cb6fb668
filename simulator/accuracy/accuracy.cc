#include "simulator/accuracy/accuracy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "simulator/engine/engine.h"
#include "simulator/spec/csv_reader.h"
#include "simulator/spec/error.h"
#include "simulator/step/step_builder.h"
#include "simulator/step/step_metrics.h"

namespace ppsim {
namespace {

constexpr double kBytesPerGB = 1e9;  // Decimal GB, as the sources print memory.

uint32_t fnv1a(const std::string& text) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

void add_error(ErrorSummary& summary, double error_pct, double& sum) {
  ++summary.rows;
  sum += std::abs(error_pct);
  summary.max_abs_error_pct = std::max(summary.max_abs_error_pct, std::abs(error_pct));
}

// Accumulates a summary from a list of errors.
ErrorSummary summarise(const std::vector<double>& errors) {
  ErrorSummary summary;
  double sum = 0;
  for (double error : errors) add_error(summary, error, sum);
  summary.mape = summary.rows > 0 ? sum / static_cast<double>(summary.rows) : 0;
  return summary;
}

// What makes two rows "the same run but for the schedule" (header).
using GroupKey = std::tuple<std::string, std::string, std::string, int64_t, int64_t, int64_t,
                            int64_t, int64_t, int64_t, int64_t, int64_t, int, bool, int, int>;

GroupKey group_key(const PublicRun& run) {
  const Plan& plan = run.plan;
  return GroupKey{run.source_id,
                  run.model_name,
                  run.cluster.name,
                  run.num_gpus,
                  plan.tp,
                  plan.pp,
                  plan.dp,
                  plan.cp,
                  plan.ep,
                  plan.micro_batch_size,
                  plan.global_batch_size,
                  static_cast<int>(plan.recompute),
                  plan.sequence_parallel,
                  plan.zero_stage,
                  static_cast<int>(plan.precision) * 4 +
                      static_cast<int>(fp8_recipe_in_force(plan))};
}

}  // namespace

bool in_test_split(const std::string& row_id) { return (fnv1a(row_id) & 1u) == 1u; }

std::string split_name(Split split) {
  switch (split) {
    case Split::kAll:
      return "all";
    case Split::kTrain:
      return "train";
    case Split::kTest:
      return "test";
  }
  return "all";
}

RowAccuracy predict_run(const PublicRun& run, const EfficiencyTable& efficiency,
                        const CollectiveEfficiency& collective) {
  PPSIM_CHECK(run.predictable(), "predict_run needs a predictable row");
  RowAccuracy row;
  row.run = run;
  row.test_split = in_test_split(run.row_id);
  StepOptions options;
  options.efficiency = efficiency;
  options.collective = collective;
  Step step = build_step(run.model, run.cluster, run.plan, options);
  Timeline timeline = simulate_graph(step.lowered.graph);
  StepMetrics metrics = compute_metrics(run.model, run.cluster, run.plan, step, timeline);
  row.simulated = true;
  row.iteration_time_s = metrics.iteration_time_s;
  row.mfu = metrics.mfu;
  row.fits = metrics.fits;
  row.predicted_tokens_per_s_per_gpu = metrics.tokens_per_s / static_cast<double>(run.num_gpus);
  if (run.target_tokens_per_s_per_gpu) {
    double target = *run.target_tokens_per_s_per_gpu;
    row.error_pct = 100.0 * (row.predicted_tokens_per_s_per_gpu - target) / target;
  }
  row.predicted_memory_gb = metrics.peak_memory_bytes / kBytesPerGB;
  if (run.published_memory_gb && *run.published_memory_gb > 0) {
    row.memory_error_pct =
        100.0 * (*row.predicted_memory_gb - *run.published_memory_gb) / *run.published_memory_gb;
  }
  return row;
}

AccuracyResult run_accuracy(const std::vector<PublicRun>& runs, const std::string& runs_file,
                            const AccuracyOptions& options) {
  AccuracyResult result;
  result.runs_file = runs_file;
  result.file_rows = static_cast<int64_t>(runs.size());
  result.split = options.split;
  result.only_source = options.only_source;
  for (const PublicRun& run : runs) {
    if (!options.only_source.empty() && run.source_id != options.only_source) continue;
    bool test = in_test_split(run.row_id);
    if (options.split == Split::kTrain && test) continue;
    if (options.split == Split::kTest && !test) continue;
    if (run.predictable()) {
      result.rows.push_back(predict_run(run, options.efficiency, options.collective));
    } else {
      RowAccuracy row;
      row.run = run;
      row.test_split = test;
      result.rows.push_back(std::move(row));
    }
  }

  std::vector<double> all, train, test, memory;
  std::map<std::string, std::vector<size_t>> by_source;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const RowAccuracy& row = result.rows[i];
    by_source[row.run.source_id].push_back(i);
    if (!row.simulated) {
      result.not_predicted.push_back(i);
      continue;
    }
    if (row.memory_error_pct) memory.push_back(*row.memory_error_pct);
    if (!row.error_pct) {
      result.not_compared.push_back(i);
      continue;
    }
    all.push_back(*row.error_pct);
    (row.test_split ? test : train).push_back(*row.error_pct);
    result.worst.push_back(i);
  }
  result.all = summarise(all);
  result.train = summarise(train);
  result.test = summarise(test);
  result.memory = summarise(memory);
  std::stable_sort(result.worst.begin(), result.worst.end(), [&](size_t a, size_t b) {
    return std::abs(*result.rows[a].error_pct) > std::abs(*result.rows[b].error_pct);
  });
  if (static_cast<int>(result.worst.size()) > options.worst_rows) {
    result.worst.resize(std::max(0, options.worst_rows));
  }

  for (const auto& [source_id, indices] : by_source) {
    SourceAccuracy source;
    source.source_id = source_id;
    source.rows = static_cast<int64_t>(indices.size());
    std::vector<double> s_all, s_train, s_test, s_memory;
    for (size_t i : indices) {
      const RowAccuracy& row = result.rows[i];
      if (row.memory_error_pct) s_memory.push_back(*row.memory_error_pct);
      if (!row.error_pct) continue;
      s_all.push_back(*row.error_pct);
      (row.test_split ? s_test : s_train).push_back(*row.error_pct);
    }
    source.all = summarise(s_all);
    source.train = summarise(s_train);
    source.test = summarise(s_test);
    source.memory = summarise(s_memory);
    result.sources.push_back(std::move(source));
  }

  // Schedule groups, in order of each group's first row.
  std::map<GroupKey, size_t> group_of;
  std::vector<ScheduleGroup> groups;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const RowAccuracy& row = result.rows[i];
    if (!row.error_pct) continue;
    GroupKey key = group_key(row.run);
    auto [it, inserted] = group_of.emplace(key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].rows.push_back(i);
  }
  for (ScheduleGroup& group : groups) {
    // Only groups whose rows differ in schedule.
    bool differ = false;
    for (size_t i : group.rows) {
      const PublicRun& a = result.rows[i].run;
      const PublicRun& b = result.rows[group.rows.front()].run;
      if (a.plan.schedule != b.plan.schedule || a.plan.vpp != b.plan.vpp ||
          a.schedule_text != b.schedule_text) {
        differ = true;
      }
    }
    if (!differ || group.rows.size() < 2) continue;
    for (size_t x = 0; x < group.rows.size(); ++x) {
      for (size_t y = x + 1; y < group.rows.size(); ++y) {
        const RowAccuracy& a = result.rows[group.rows[x]];
        const RowAccuracy& b = result.rows[group.rows[y]];
        if (a.run.schedule_text == b.run.schedule_text) continue;
        double published = *a.run.target_tokens_per_s_per_gpu - *b.run.target_tokens_per_s_per_gpu;
        if (published == 0) continue;
        double predicted = a.predicted_tokens_per_s_per_gpu - b.predicted_tokens_per_s_per_gpu;
        ++group.pairs;
        if ((published > 0) == (predicted > 0) && predicted != 0) ++group.agreeing;
      }
    }
    if (group.pairs > 0) result.schedule_groups.push_back(group);
  }
  return result;
}

AccuracyResult run_accuracy_file(const std::string& path, const AccuracyOptions& options) {
  CsvTable table = load_csv(path);
  std::vector<PublicRun> runs = read_public_runs(table);
  return run_accuracy(runs, path, options);
}

}  // namespace ppsim
