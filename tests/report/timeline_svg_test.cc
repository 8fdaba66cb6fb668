// The pipeline timeline SVG: well-formed XML with escaped text, one task box per compute task of
// replica 0, optimizer boxes and reduce bars, chunk shades, byte-identical output.
#include "simulator/report/timeline_svg.h"

#include <catch2/catch.hpp>
#include <map>
#include <regex>
#include <set>

#include "simulator/engine/engine.h"
#include "simulator/schedule/schedule_study.h"

namespace ppsim {
namespace {

// A strict little XML well-formedness check: an optional <?xml ...?> prolog, one root element,
// balanced tags with matching names, attributes with quoted values, no raw '<' or '&' outside
// entities. Returns "" when well formed, else the problem.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  int roots = 0;
  auto entity_ok = [&](size_t at) {
    static const std::regex entity("^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
    return std::regex_search(xml.begin() + at, xml.end(), entity);
  };
  if (xml.rfind("<?xml", 0) == 0) {
    i = xml.find("?>");
    if (i == std::string::npos) return "unterminated prolog";
    i += 2;
  }
  while (i < xml.size()) {
    if (xml[i] == '&') {
      if (!entity_ok(i)) return "raw '&' at " + std::to_string(i);
      ++i;
      continue;
    }
    if (xml[i] != '<') {
      if (open.empty() && !isspace(static_cast<unsigned char>(xml[i]))) return "text outside root";
      ++i;
      continue;
    }
    size_t end = xml.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1))
        return "mismatched </" + tag.substr(1) + ">";
      open.pop_back();
      continue;
    }
    bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    static const std::regex element(R"(^([A-Za-z_][\w.:-]*)(\s+[A-Za-z_][\w.:-]*="[^"<]*")*\s*$)");
    std::smatch match;
    if (!std::regex_match(tag, match, element)) return "malformed tag <" + tag + ">";
    // Attribute values may hold only entities, not raw '&'.
    for (size_t at = tag.find('&'); at != std::string::npos; at = tag.find('&', at + 1)) {
      static const std::regex entity("^&(amp|lt|gt|quot|apos);");
      if (!std::regex_search(tag.begin() + at, tag.end(), entity)) return "raw '&' in attribute";
    }
    if (open.empty()) ++roots;
    if (!self_closing) open.push_back(match[1]);
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (roots != 1) return "expected one root element";
  return "";
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

int compute_tasks_of_replica0(const Lowered& lowered, int32_t ranks) {
  int n = 0;
  for (const TaskInfo& info : lowered.info) {
    bool compute = info.kind == ActionKind::kForward || info.kind == ActionKind::kBackward ||
                   info.kind == ActionKind::kBackwardInput ||
                   info.kind == ActionKind::kBackwardWeight;
    if (info.role == TaskInfo::Role::kAction && compute && info.worker >= 0 &&
        info.worker < ranks) {
      ++n;
    }
  }
  return n;
}

ScheduleStudy study(ScheduleKind kind, int32_t v, double tw) {
  ScheduleStudyInput input;
  input.schedule = kind;
  input.stages = 4;
  input.microbatches = 8;
  input.chunks_per_rank = v;
  input.costs.assign(4, StageCosts{1, 1, tw});
  return run_schedule_study(input);
}

TEST_CASE("TimelineSvg: the checker rejects broken XML") {
  CHECK(xml_problem("<svg><rect/></svg>").empty());
  CHECK_FALSE(xml_problem("<svg><rect></svg>").empty());
  CHECK_FALSE(xml_problem("<svg><text>a < b</text></svg>").empty());
  CHECK_FALSE(xml_problem("<svg><text>a & b</text></svg>").empty());
  CHECK_FALSE(xml_problem("<svg x=\"1></svg>").empty());
  CHECK_FALSE(xml_problem("<svg/><svg/>").empty());
}

TEST_CASE("TimelineSvg: well formed, one box per compute task, deterministic") {
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB, ScheduleKind::kZbH1,
                            ScheduleKind::kZbH2, ScheduleKind::kDualPipeV}) {
    const int32_t v = kind == ScheduleKind::kDualPipeV ? 2 : 1;
    ScheduleStudy a = study(kind, v, 1);
    TimelineSvgOptions options;
    options.title = "p=4 <m=8> & \"tf=tb\" 'tw'";
    options.row_names = {"stage 0", "stage <1>", "stage 2 & more", "stage 3"};
    options.axis_unit = "us";
    std::string svg = timeline_svg(a.schedule, a.lowered, a.timeline, options);
    INFO(schedule_name(kind));
    CHECK(xml_problem(svg) == "");
    CHECK(count(svg, "<rect class=\"task\"") ==
          static_cast<size_t>(compute_tasks_of_replica0(a.lowered, 4)));
    CHECK(count(svg, "<text") > 0);
    CHECK(svg.find("p=4 &lt;m=8&gt; &amp; &quot;tf=tb&quot; &apos;tw&apos;") != std::string::npos);
    CHECK(svg.find("stage &lt;1&gt;") != std::string::npos);
    CHECK(svg.find("time (us)") != std::string::npos);
    ScheduleStudy b = study(kind, v, 1);
    CHECK(svg == timeline_svg(b.schedule, b.lowered, b.timeline, options));
  }
}

TEST_CASE("TimelineSvg: colours by kind, shades by chunk, legend") {
  ScheduleStudy split = study(ScheduleKind::kZbH1, 1, 1);
  std::string svg = timeline_svg(split.schedule, split.lowered, split.timeline);
  CHECK(svg.find("F forward") != std::string::npos);
  CHECK(svg.find("B input gradient") != std::string::npos);
  CHECK(svg.find("W weight gradient") != std::string::npos);
  CHECK(svg.find("B backward (input + weight gradient)") == std::string::npos);
  CHECK(svg.find("rank 3") != std::string::npos);  // Default row names.

  ScheduleStudy fused = study(ScheduleKind::kOneFOneB, 1, 0);
  svg = timeline_svg(fused.schedule, fused.lowered, fused.timeline);
  CHECK(svg.find("B backward (input + weight gradient)") != std::string::npos);
  CHECK(svg.find("W weight gradient") == std::string::npos);

  // Interleaved, v = 2: the F boxes of a rank's two chunks have two different fills.
  ScheduleStudy interleaved = study(ScheduleKind::kInterleaved1F1B, 2, 0);
  svg = timeline_svg(interleaved.schedule, interleaved.lowered, interleaved.timeline);
  std::set<std::string> forward_fills;
  std::regex forward_box(R"re(<rect class="task"[^>]*fill="(#[0-9a-f]{6})"[^>]*><title>F)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), forward_box);
       it != std::sregex_iterator(); ++it) {
    forward_fills.insert((*it)[1]);
  }
  CHECK(forward_fills.size() == 2);
  CHECK(svg.find("2 chunks per rank") != std::string::npos);
}

// Unit costs with a DP gradient reduction per chunk and an optimizer step per worker.
class StepCosts : public LoweringCosts {
 public:
  ComputeSpec compute(int32_t worker, const Action& action) override {
    return ComputeSpec{1, 0, 0};
  }
  TransferSpec transfer(TaskGraph& graph, int32_t from, int32_t to, const Action&) override {
    return TransferSpec{};
  }
  TaskId step_action(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                     StreamId compute_stream, const Action& action, TaskId after) override {
    Task task;
    task.work = 2;
    bool reduce = action.kind == ActionKind::kGradientSync;
    if (reduce && !reduce_stream_.count(worker)) {
      reduce_stream_[worker] = graph.add_stream(worker, "dp");
    }
    task.stream = reduce ? reduce_stream_[worker] : compute_stream;
    TaskId id = graph.add_task(task);
    if (after >= 0) graph.add_dependency(after, id);
    info.resize(id);
    info.push_back(TaskInfo{worker, action.kind, action.chunk, -1,
                            reduce ? TaskInfo::Role::kGradientReduce : TaskInfo::Role::kOptimizer});
    return reduce ? -1 : id;
  }

 private:
  mutable std::map<int32_t, StreamId> reduce_stream_;
};

TEST_CASE("TimelineSvg: replica 0 only, with optimizer boxes and reduce bars") {
  PipelineSchedule schedule = build_pipeline_schedule(ScheduleKind::kOneFOneB, 2, 4, 1);
  StepCosts costs;
  Lowered lowered = lower_schedule(schedule, 3, std::vector<double>(6, 1.0), costs);
  Timeline timeline = simulate_graph(lowered.graph);
  TimelineSvgOptions options;
  options.title = "1f1b, 3 replicas";
  std::string svg = timeline_svg(schedule, lowered, timeline, options);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "<rect class=\"task\"") == 2 * 8);  // 2 ranks x (4 F + 4 B), not 3 replicas.
  CHECK(count(svg, "<rect class=\"optimizer\"") == 2);
  CHECK(count(svg, "<rect class=\"reduce\"") == 2);
  CHECK(svg.find("gradient reduce") != std::string::npos);
  CHECK(svg.find("optimizer step") != std::string::npos);
}

}  // namespace
}  // namespace ppsim
