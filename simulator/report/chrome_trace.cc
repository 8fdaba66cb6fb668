#include "simulator/report/chrome_trace.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

using Json = nlohmann::ordered_json;

std::string role_name(TaskInfo::Role role) {
  switch (role) {
    case TaskInfo::Role::kAction:
      return "action";
    case TaskInfo::Role::kGradientReduce:
      return "grad_reduce";
    case TaskInfo::Role::kBucketReady:
      return "bucket_ready";
    case TaskInfo::Role::kParamGather:
      return "param_gather";
    case TaskInfo::Role::kOptimizer:
      return "optimizer";
    case TaskInfo::Role::kOffloadD2H:
      return "offload_d2h";
    case TaskInfo::Role::kCpuAdam:
      return "cpu_adam";
    case TaskInfo::Role::kOffloadH2D:
      return "offload_h2d";
  }
  return "action";
}

Json metadata(const char* name, int32_t pid, int32_t tid, const char* key, Json value) {
  Json event;
  event["name"] = name;
  event["ph"] = "M";
  event["pid"] = pid;
  event["tid"] = tid;
  event["args"][key] = std::move(value);
  return event;
}

}  // namespace

std::string task_trace_name(const TaskInfo& info) {
  switch (info.role) {
    case TaskInfo::Role::kAction:
      if (info.microbatch < 0) return action_kind_name(info.kind);
      return fmt::format("{}{}", action_kind_name(info.kind), info.microbatch);
    case TaskInfo::Role::kOptimizer:
      return "optimizer";
    case TaskInfo::Role::kGradientReduce:
    case TaskInfo::Role::kBucketReady:
    case TaskInfo::Role::kParamGather:
    case TaskInfo::Role::kOffloadD2H:
    case TaskInfo::Role::kCpuAdam:
    case TaskInfo::Role::kOffloadH2D:
      if (info.chunk < 0) return role_name(info.role);
      return fmt::format("{} c{}", role_name(info.role), info.chunk);
  }
  return "task";
}

std::string chrome_trace_json(const Lowered& lowered, const Timeline& timeline,
                              const std::vector<std::string>& worker_names,
                              double microseconds_per_unit) {
  const TaskGraph& graph = lowered.graph;
  const int32_t workers = static_cast<int32_t>(lowered.compute_stream.size());
  PPSIM_CHECK(static_cast<int32_t>(worker_names.size()) == workers);
  PPSIM_CHECK(static_cast<int32_t>(lowered.info.size()) == graph.num_tasks());
  PPSIM_CHECK(static_cast<int32_t>(timeline.start.size()) == graph.num_tasks());
  PPSIM_CHECK(microseconds_per_unit > 0);

  // A task's process: its worker; tasks no worker claims go to one extra process.
  auto process_of = [&](TaskId id) {
    int32_t worker = lowered.info[id].worker;
    if (worker >= 0 && worker < workers) return worker;
    int32_t device = graph.stream(graph.task(id).stream).device;
    return device >= 0 && device < workers ? device : workers;
  };
  std::set<std::pair<int32_t, StreamId>> threads;  // (pid, tid), sorted.
  bool has_other = false;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    int32_t pid = process_of(id);
    has_other = has_other || pid == workers;
    threads.insert({pid, graph.task(id).stream});
  }

  std::vector<Json> events;
  for (int32_t w = 0; w <= workers; ++w) {
    if (w == workers && !has_other) break;
    const std::string name = w < workers ? worker_names[w] : "other";
    events.push_back(metadata("process_name", w, 0, "name", name));
    events.push_back(metadata("process_sort_index", w, 0, "sort_index", w));
  }
  for (const auto& [pid, stream] : threads) {
    events.push_back(metadata("thread_name", pid, stream, "name", graph.stream(stream).name));
    events.push_back(metadata("thread_sort_index", pid, stream, "sort_index", stream));
  }
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskInfo& info = lowered.info[id];
    const Task& task = graph.task(id);
    Json event;
    event["name"] = task_trace_name(info);
    event["cat"] = task.kind == TaskKind::kCompute ? "compute" : "transfer";
    event["ph"] = "X";
    event["pid"] = process_of(id);
    event["tid"] = task.stream;
    event["ts"] = timeline.start[id] * microseconds_per_unit;
    event["dur"] = (timeline.end[id] - timeline.start[id]) * microseconds_per_unit;
    Json& args = event["args"];
    args["task"] = id;
    args["kind"] =
        info.role == TaskInfo::Role::kAction ? action_kind_name(info.kind) : role_name(info.role);
    args["chunk"] = info.chunk;
    args["microbatch"] = info.microbatch;
    args["role"] = role_name(info.role);
    events.push_back(std::move(event));
  }

  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) {
    out += events[i].dump();
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  return out;
}

}  // namespace ppsim
