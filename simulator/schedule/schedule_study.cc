#include "simulator/schedule/schedule_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "simulator/engine/engine.h"
#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {
namespace {

// Bounds that keep a study interactive (tasks ~ 4 p v m).
constexpr int32_t kMaxStages = 4096;
constexpr int64_t kMaxChunkMicrobatches = 4'000'000;

void check_time(double value, const std::string& source, bool positive) {
  if (!std::isfinite(value) || value < 0 || (positive && value == 0)) {
    throw InputError(
        source, "",
        fmt::format("expected a {} number, got {}", positive ? "positive" : "non-negative", value));
  }
}

void validate(const ScheduleStudyInput& input) {
  const std::string name = schedule_name(input.schedule);
  if (input.stages < 1 || input.stages > kMaxStages) {
    throw InputError("--stages", "",
                     fmt::format("expected 1 to {} stages, got {}", kMaxStages, input.stages));
  }
  if (input.microbatches < 1) {
    throw InputError("--microbatches", "",
                     fmt::format("expected at least 1 microbatch, got {}", input.microbatches));
  }
  const int32_t v = input.chunks_per_rank;
  if (is_v_shaped(input.schedule)) {
    if (v != 2) {
      throw InputError(
          "--vpp", "",
          fmt::format("{} places exactly 2 chunks per rank (a V), got --vpp {}", name, v));
    }
  } else if (is_interleaved(input.schedule)) {
    if (v < 1) throw InputError("--vpp", "", fmt::format("expected at least 1, got {}", v));
  } else if (v != 1) {
    throw InputError("--vpp", "",
                     fmt::format("{} has one chunk per rank; --vpp {} needs interleaved-1f1b "
                                 "(or zbv/dualpipev with 2)",
                                 name, v));
  }
  if (static_cast<int64_t>(input.stages) * v * input.microbatches > kMaxChunkMicrobatches) {
    throw InputError("--microbatches", "",
                     fmt::format("stages * vpp * microbatches = {} is more than {} (too large "
                                 "for a study)",
                                 static_cast<int64_t>(input.stages) * v * input.microbatches,
                                 kMaxChunkMicrobatches));
  }
  if (static_cast<int32_t>(input.costs.size()) != input.stages) {
    throw InputError("--stage-costs", "",
                     fmt::format("{} stage cost entries for {} stages (give one per stage)",
                                 input.costs.size(), input.stages));
  }
  for (size_t s = 0; s < input.costs.size(); ++s) {
    const StageCosts& cost = input.costs[s];
    const double values[] = {cost.tf, cost.tb, cost.tw};
    const char* keys[] = {"tf", "tb", "tw"};
    for (int k = 0; k < 3; ++k) {
      const bool positive = k < 2;
      if (std::isfinite(values[k]) && values[k] >= 0 && !(positive && values[k] == 0)) continue;
      throw InputError(fmt::format("--{}", keys[k]), "",
                       fmt::format("stage {}: expected a {} number, got {}", s,
                                   positive ? "positive" : "non-negative", values[k]));
    }
  }
  check_time(input.comm, "--comm", false);
  check_time(input.memory_per_microbatch, "--mem-per-microbatch", true);
  if (input.memory_limit) check_time(*input.memory_limit, "--mem-limit", true);
  if (std::optional<std::string> problem = schedule_problem(
          input.schedule, input.stages, input.microbatches, v, input.microbatch_group)) {
    throw InputError("--schedule", "", fmt::format("{}: {}", name, *problem));
  }
}

// Drops rank r's W actions and turns its I actions into fused B.
void fuse_rank(PipelineSchedule& schedule, int32_t rank) {
  std::vector<Action> fused;
  for (Action action : schedule.rank_actions[rank]) {
    if (action.kind == ActionKind::kBackwardWeight) continue;
    if (action.kind == ActionKind::kBackwardInput) action.kind = ActionKind::kBackward;
    fused.push_back(action);
  }
  schedule.rank_actions[rank] = std::move(fused);
}

bool has_weight_gradient(const PipelineSchedule& schedule) {
  for (const std::vector<Action>& actions : schedule.rank_actions) {
    for (const Action& action : actions) {
      if (action.kind == ActionKind::kBackwardWeight) return true;
    }
  }
  return false;
}

}  // namespace

ComputeSpec AbstractCosts::compute(int32_t worker, const Action& action) {
  const StageCosts& cost = input_.costs.at(worker % input_.stages);
  const double v = input_.chunks_per_rank;
  ComputeSpec spec;
  switch (action.kind) {
    case ActionKind::kForward:
      spec.seconds = cost.tf / v;
      spec.alloc_bytes = 1;  // One chunk-microbatch; peak_microbatches divides by v.
      break;
    case ActionKind::kBackward:
      spec.seconds = (cost.tb + cost.tw) / v;
      spec.free_bytes = 1;
      break;
    case ActionKind::kBackwardInput:
      spec.seconds = cost.tb / v;
      break;
    case ActionKind::kBackwardWeight:
      spec.seconds = cost.tw / v;
      spec.free_bytes = 1;
      break;
    default:
      PPSIM_CHECK(false, "not a compute action: " + action_label(action));
  }
  return spec;
}

TransferSpec AbstractCosts::transfer(TaskGraph& graph, int32_t from_worker, int32_t to_worker,
                                     const Action& send) {
  TransferSpec spec;
  spec.latency = input_.comm;
  return spec;
}

TaskId AbstractCosts::step_action(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                                  StreamId compute_stream, const Action& action, TaskId after) {
  return -1;
}

PipelineSchedule fuse_backward(PipelineSchedule schedule) {
  for (int32_t r = 0; r < schedule.ranks; ++r) fuse_rank(schedule, r);
  schedule.split_backward = false;
  return schedule;
}

ScheduleStudy run_schedule_study(const ScheduleStudyInput& input) {
  validate(input);
  ScheduleStudy study;
  study.input = input;
  const int32_t p = input.stages;
  const int32_t v = input.chunks_per_rank;
  study.schedule =
      build_pipeline_schedule(input.schedule, p, input.microbatches, v, input.microbatch_group);
  // A stage with tw == 0 has no separate weight-gradient pass.
  for (int32_t r = 0; r < p; ++r) {
    if (input.costs[r].tw == 0) fuse_rank(study.schedule, r);
  }
  study.schedule.split_backward = has_weight_gradient(study.schedule);

  AbstractCosts costs(study.input);
  study.lowered = lower_schedule(study.schedule, 1, std::vector<double>(p, 1.0), costs);
  study.timeline = simulate_graph(study.lowered.graph);

  const Lowered& lowered = study.lowered;
  const Timeline& timeline = study.timeline;
  study.stages.assign(p, StageStudy{});
  std::vector<double> first(p, std::numeric_limits<double>::infinity());
  std::vector<double> last(p, 0.0);
  double step_start = std::numeric_limits<double>::infinity();
  double step_end = 0;
  for (TaskId id = 0; id < lowered.graph.num_tasks(); ++id) {
    step_start = std::min(step_start, timeline.start[id]);
    step_end = std::max(step_end, timeline.end[id]);
    const TaskInfo& info = lowered.info[id];
    if (info.role != TaskInfo::Role::kAction || !is_compute(info.kind)) continue;
    PPSIM_CHECK(info.worker >= 0 && info.worker < p);
    StageStudy& stage = study.stages[info.worker];
    stage.busy += timeline.end[id] - timeline.start[id];
    first[info.worker] = std::min(first[info.worker], timeline.start[id]);
    last[info.worker] = std::max(last[info.worker], timeline.end[id]);
  }
  study.makespan = step_end - step_start;
  double busy_total = 0;
  for (int32_t r = 0; r < p; ++r) {
    StageStudy& stage = study.stages[r];
    stage.first_start = first[r] - step_start;
    stage.last_end = last[r] - step_start;
    stage.bubble = study.makespan - stage.busy;
    stage.span_bubble = (last[r] - first[r]) - stage.busy;
    stage.peak_microbatches = timeline.peak_memory.at(r) / v;
    stage.peak_memory = stage.peak_microbatches * input.memory_per_microbatch;
    stage.over_limit = input.memory_limit && stage.peak_memory > *input.memory_limit;
    study.mem_limit_exceeded = study.mem_limit_exceeded || stage.over_limit;
    stage.order = compute_order(study.schedule, r);
    busy_total += stage.busy;
  }
  study.bubble_ratio = study.makespan > 0 ? 1 - busy_total / (p * study.makespan) : 0;
  return study;
}

std::vector<StageCosts> parse_stage_costs(const std::string& text, const std::string& source) {
  nlohmann::json json = parse_json_text(text, source);
  if (!json.is_array() || json.empty()) {
    throw InputError(source, "/",
                     fmt::format("expected a non-empty list of {{\"tf\", \"tb\", \"tw\"}} objects, "
                                 "one per stage, got {}",
                                 describe_json_type(json)));
  }
  std::vector<StageCosts> costs;
  for (size_t i = 0; i < json.size(); ++i) {
    JsonReader reader(json[i], source, fmt::format("/{}", i));
    // Unknown keys first, so a typo ("t_w") is named as such rather than as a missing "tw".
    for (const char* key : {"tf", "tb", "tw"}) reader.allow(key);
    reader.finish();
    StageCosts cost;
    cost.tf = reader.required_number("tf", 0);
    cost.tb = reader.required_number("tb", 0);
    cost.tw = reader.required_number("tw", 0);
    if (cost.tf == 0) reader.fail("tf", "expected a positive number, got 0");
    if (cost.tb == 0) reader.fail("tb", "expected a positive number, got 0");
    costs.push_back(cost);
  }
  return costs;
}

std::vector<StageCosts> load_stage_costs(const std::string& path) {
  return parse_stage_costs(read_text_file(path), path);
}

}  // namespace ppsim
