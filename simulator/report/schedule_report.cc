#include "simulator/report/schedule_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace ppsim {

std::string schedule_number(double value) { return fmt::format("{:.10g}", value); }

std::string schedule_stage_name(const PipelineSchedule& schedule, int32_t rank) {
  if (schedule.chunks_per_rank == 1) return fmt::format("stage {}", rank);
  std::string chunks;
  for (int32_t c = 0; c < schedule.num_chunks(); ++c) {
    if (schedule.chunk_rank[c] != rank) continue;
    chunks += chunks.empty() ? fmt::format("{}", c) : fmt::format(",{}", c);
  }
  return fmt::format("stage {} (chunks {})", rank, chunks);
}

std::vector<std::string> schedule_memory_warnings(const ScheduleStudy& study) {
  std::vector<std::string> warnings;
  for (size_t s = 0; s < study.stages.size(); ++s) {
    const StageStudy& stage = study.stages[s];
    if (!stage.over_limit) continue;
    warnings.push_back(fmt::format(
        "stage {} peaks at {} > limit {} (schedule {} keeps {} microbatches in flight on it); "
        "the schedule is not changed",
        s, schedule_number(stage.peak_memory), schedule_number(*study.input.memory_limit),
        schedule_name(study.input.schedule), schedule_number(stage.peak_microbatches)));
  }
  return warnings;
}

std::string schedule_report_json(const ScheduleStudy& study,
                                 const std::vector<std::string>& warnings) {
  const ScheduleStudyInput& input = study.input;
  nlohmann::ordered_json json;
  json["schedule"] = schedule_name(input.schedule);
  json["stages_count"] = input.stages;
  json["microbatches"] = input.microbatches;
  json["vpp"] = input.chunks_per_rank;
  // The interleaved schedule's microbatch group in force; null for other schedules.
  json["microbatch_group"] = is_interleaved(input.schedule) && input.chunks_per_rank > 1
                                 ? nlohmann::ordered_json(study.schedule.microbatch_group)
                                 : nlohmann::ordered_json(nullptr);
  json["split_backward"] = study.schedule.split_backward;
  json["comm"] = input.comm;
  json["mem_per_microbatch"] = input.memory_per_microbatch;
  json["mem_limit"] = input.memory_limit ? nlohmann::ordered_json(*input.memory_limit)
                                         : nlohmann::ordered_json(nullptr);
  json["makespan"] = study.makespan;
  json["bubble_ratio"] = study.bubble_ratio;
  json["mem_limit_exceeded"] = study.mem_limit_exceeded;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (size_t s = 0; s < study.stages.size(); ++s) {
    const StageStudy& stage = study.stages[s];
    nlohmann::ordered_json entry;
    entry["stage"] = s;
    entry["tf"] = input.costs[s].tf;
    entry["tb"] = input.costs[s].tb;
    entry["tw"] = input.costs[s].tw;
    entry["busy"] = stage.busy;
    entry["bubble"] = stage.bubble;
    entry["span_bubble"] = stage.span_bubble;
    entry["first_start"] = stage.first_start;
    entry["last_end"] = stage.last_end;
    entry["peak_microbatches"] = stage.peak_microbatches;
    entry["peak_memory"] = stage.peak_memory;
    entry["over_limit"] = stage.over_limit;
    entry["order"] = stage.order;
    stages.push_back(entry);
  }
  json["stages"] = stages;
  json["warnings"] = warnings;
  return json.dump(2) + "\n";
}

std::string schedule_report_text(const ScheduleStudy& study,
                                 const std::vector<std::string>& warnings) {
  const ScheduleStudyInput& input = study.input;
  std::string out = "# ppsim schedule\n";
  out += fmt::format("# schedule {}: {} stages x {} chunk{} per stage, {} microbatches, {}\n",
                     schedule_name(input.schedule), input.stages, input.chunks_per_rank,
                     input.chunks_per_rank == 1 ? "" : "s", input.microbatches,
                     study.schedule.split_backward ? "backward split into B (input) + W (weight)"
                                                   : "backward fused (B = input + weight)");
  out += fmt::format(
      "# costs    per stage per microbatch in the input's time unit (columns tf tb "
      "tw); comm {} per transfer\n",
      schedule_number(input.comm));
  out += fmt::format("# memory   {} per microbatch of activations; limit {}\n",
                     schedule_number(input.memory_per_microbatch),
                     input.memory_limit ? schedule_number(*input.memory_limit) : "none");
  for (const std::string& warning : warnings) out += "# warning: " + warning + "\n";
  out += "#\n";
  const char* row =
      "{} {:>5} {:>8} {:>8} {:>8} {:>10} {:>10} {:>11} {:>10} {:>10} {:>9} {:>10}  {}\n";
  out += fmt::format(fmt::runtime(row), "#", "stage", "tf", "tb", "tw", "busy", "bubble",
                     "span_bubble", "first", "last", "peak", "peak", "order");
  std::string units =
      fmt::format(fmt::runtime(row), "#", "", "(time)", "(time)", "(time)", "(time)", "(time)",
                  "(time)", "(time)", "(time)", "(mb)", "(mem)", "");
  units.erase(units.find_last_not_of(" \n") + 1);
  out += units + "\n";
  for (size_t s = 0; s < study.stages.size(); ++s) {
    const StageStudy& stage = study.stages[s];
    out += fmt::format(fmt::runtime(row), " ", s, schedule_number(input.costs[s].tf),
                       schedule_number(input.costs[s].tb), schedule_number(input.costs[s].tw),
                       schedule_number(stage.busy), schedule_number(stage.bubble),
                       schedule_number(stage.span_bubble), schedule_number(stage.first_start),
                       schedule_number(stage.last_end), schedule_number(stage.peak_microbatches),
                       schedule_number(stage.peak_memory), stage.order);
  }
  out += fmt::format("# makespan {} (first start to last end, input time unit)\n",
                     schedule_number(study.makespan));
  out += fmt::format("# bubble ratio {:.4f} = 1 - sum(busy) / (stages * makespan)\n",
                     study.bubble_ratio);
  out += study.mem_limit_exceeded ? "# FAILED: memory limit exceeded (see the warnings above)\n"
                                  : "# OK\n";
  return out;
}

}  // namespace ppsim
