// Chrome trace export: valid JSON, one "X" slice per task (zero-duration ones included), named
// processes and threads, microsecond times, byte-identical output for the same step.
#include "simulator/report/chrome_trace.h"

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "simulator/engine/engine.h"
#include "simulator/schedule/schedule_study.h"

namespace ppsim {
namespace {

// Unit-cost actions plus, per worker, a gradient reduction on its own stream after each
// chunk's last W and an optimizer step on the compute stream.
class StepCosts : public LoweringCosts {
 public:
  ComputeSpec compute(int32_t worker, const Action& action) override {
    return ComputeSpec{action.kind == ActionKind::kForward ? 1.0 : 2.0, 0, 0};
  }
  TransferSpec transfer(TaskGraph& graph, int32_t from, int32_t to, const Action&) override {
    return TransferSpec{};  // Free: zero-duration transfer tasks.
  }
  TaskId step_action(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                     StreamId compute_stream, const Action& action, TaskId after) override {
    Task task;
    task.work = 0.5;
    if (action.kind == ActionKind::kGradientSync) {
      if (!reduce_stream_.count(worker)) {
        reduce_stream_[worker] = graph.add_stream(worker, "w" + std::to_string(worker) + "/dp");
      }
      task.stream = reduce_stream_[worker];
    } else {
      task.stream = compute_stream;
    }
    TaskId id = graph.add_task(task);
    if (after >= 0) graph.add_dependency(after, id);
    info.resize(id);
    info.push_back(TaskInfo{worker, action.kind, action.chunk, -1,
                            action.kind == ActionKind::kGradientSync
                                ? TaskInfo::Role::kGradientReduce
                                : TaskInfo::Role::kOptimizer});
    return action.kind == ActionKind::kOptimizerStep ? id : -1;
  }

 private:
  mutable std::map<int32_t, StreamId> reduce_stream_;
};

struct Step {
  PipelineSchedule schedule;
  Lowered lowered;
  Timeline timeline;
};

Step two_replica_step() {
  Step step;
  step.schedule = build_pipeline_schedule(ScheduleKind::kOneFOneB, 3, 4, 1);
  StepCosts costs;
  step.lowered = lower_schedule(step.schedule, 2, std::vector<double>(6, 1.0), costs);
  step.timeline = simulate_graph(step.lowered.graph);
  return step;
}

std::vector<std::string> names(int32_t workers) {
  std::vector<std::string> result;
  for (int32_t w = 0; w < workers; ++w) {
    result.push_back("stage " + std::to_string(w % 3) + " replica " + std::to_string(w / 3) +
                     " (GPUs \"" + std::to_string(8 * w) + "\")");
  }
  return result;
}

TEST_CASE("ChromeTrace: valid JSON with exactly one X slice per task") {
  Step step = two_replica_step();
  const TaskGraph& graph = step.lowered.graph;
  std::string text = chrome_trace_json(step.lowered, step.timeline, names(6));
  nlohmann::json trace = nlohmann::json::parse(text);  // Throws when invalid.
  REQUIRE(trace["traceEvents"].is_array());
  std::multiset<int64_t> task_ids;
  int zero_duration = 0;
  std::map<int64_t, std::string> process_names;
  std::set<std::pair<int64_t, int64_t>> named_threads, used_threads;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] == "X") {
      int64_t id = event["args"]["task"];
      task_ids.insert(id);
      CHECK(event["ts"].get<double>() == step.timeline.start[id] * 1e6);
      CHECK(event["dur"].get<double>() == (step.timeline.end[id] - step.timeline.start[id]) * 1e6);
      CHECK(event["pid"] == step.lowered.info[id].worker);
      CHECK(event["tid"] == graph.task(id).stream);
      CHECK(event["name"] == task_trace_name(step.lowered.info[id]));
      if (event["dur"].get<double>() == 0) ++zero_duration;
      used_threads.insert({event["pid"].get<int64_t>(), event["tid"].get<int64_t>()});
    } else {
      CHECK(event["ph"] == "M");
      if (event["name"] == "process_name") {
        process_names[event["pid"].get<int64_t>()] = event["args"]["name"];
      }
      if (event["name"] == "thread_name") {
        named_threads.insert({event["pid"].get<int64_t>(), event["tid"].get<int64_t>()});
        CHECK(event["args"]["name"] == graph.stream(event["tid"].get<int32_t>()).name);
      }
    }
  }
  CHECK(static_cast<int32_t>(task_ids.size()) == graph.num_tasks());
  for (TaskId id = 0; id < graph.num_tasks(); ++id) CHECK(task_ids.count(id) == 1);
  CHECK(zero_duration > 0);  // The free transfers are still slices.
  REQUIRE(process_names.size() == 6);
  CHECK(process_names[4] == "stage 1 replica 1 (GPUs \"32\")");
  CHECK(named_threads == used_threads);
}

TEST_CASE("ChromeTrace: slice names, args and roles") {
  Step step = two_replica_step();
  nlohmann::json trace =
      nlohmann::json::parse(chrome_trace_json(step.lowered, step.timeline, names(6)));
  std::set<std::string> slice_names;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    slice_names.insert(event["name"]);
    if (event["name"] == "F1" && event["pid"] == 0) {
      CHECK(event["args"]["kind"] == "F");
      CHECK(event["args"]["chunk"] == 0);
      CHECK(event["args"]["microbatch"] == 1);
      CHECK(event["args"]["role"] == "action");
      CHECK(event["cat"] == "compute");
    }
    if (event["name"] == "optimizer") CHECK(event["args"]["role"] == "optimizer");
  }
  for (const char* name : {"F0", "F3", "B0", "B3", "SEND_F0", "SEND_B3", "optimizer",
                           "grad_reduce c0", "grad_reduce c2"}) {
    INFO(name);
    CHECK(slice_names.count(name) == 1);
  }
}

TEST_CASE("ChromeTrace: time scale and determinism") {
  ScheduleStudyInput input;
  input.schedule = ScheduleKind::kZbH1;
  input.stages = 4;
  input.microbatches = 8;
  input.costs.assign(4, StageCosts{1, 1, 1});
  ScheduleStudy a = run_schedule_study(input);
  ScheduleStudy b = run_schedule_study(input);
  std::vector<std::string> stage_names = {"stage 0", "stage 1", "stage 2", "stage 3"};
  std::string text = chrome_trace_json(a.lowered, a.timeline, stage_names, 1.0);
  CHECK(text == chrome_trace_json(b.lowered, b.timeline, stage_names, 1.0));
  nlohmann::json trace = nlohmann::json::parse(text);
  double last_end = 0;
  int slices = 0;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    ++slices;
    last_end = std::max(last_end, event["ts"].get<double>() + event["dur"].get<double>());
  }
  CHECK(slices == a.lowered.graph.num_tasks());
  CHECK(last_end == 27);  // One input time unit drawn as one microsecond: the makespan.
}

}  // namespace
}  // namespace ppsim
