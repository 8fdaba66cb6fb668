// The pipeline timeline SVG: well-formed XML with escaped text, one task box per compute task of
// replica 0, optimizer boxes and reduce bars, chunk shades, byte-identical output; the wrapped
// title, microbatch labels, tooltips with units, windows and the long-plan summary; and the
// memory-over-time SVG.
#include "simulator/report/timeline_svg.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "simulator/engine/engine.h"
#include "simulator/report/memory_svg.h"
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

// Every match of `pattern`'s first group in `svg`.
std::vector<std::string> matches(const std::string& svg, const std::string& pattern) {
  std::vector<std::string> out;
  std::regex re(pattern);
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

TEST_CASE("TimelineSvg: wrap_line breaks after spaces and commas within the width") {
  CHECK(wrap_line("a bb ccc dddd", 6) == std::vector<std::string>{"a bb", "ccc", "dddd"});
  CHECK(wrap_line("abcdefghij", 4) == std::vector<std::string>{"abcd", "efgh", "ij"});
  CHECK(wrap_line("", 4).empty());
  CHECK(wrap_line("one", 10) == std::vector<std::string>{"one"});
  CHECK(wrap_line("m: tp=8,pp=4,dp=1,mbs=1", 12) ==
        std::vector<std::string>{"m: tp=8,", "pp=4,dp=1,", "mbs=1"});
}

TEST_CASE("TimelineSvg: a long title wraps onto lines that fit the width") {
  ScheduleStudy a = study(ScheduleKind::kOneFOneB, 1, 0);
  TimelineSvgOptions options;
  options.plot_width = 400;  // 500 px wide with the labels and margin: 52 characters a line.
  options.title =
      "llama3-70b on dgx-h100-4: tp=8,pp=4,dp=1,cp=1,ep=1,mbs=1,gbs=64,schedule=1f1b,"
      "recompute=selective,sequence_parallel=true and more words to wrap";
  std::string svg = timeline_svg(a.schedule, a.lowered, a.timeline, options);
  CHECK(xml_problem(svg) == "");
  std::vector<std::string> lines = matches(svg, R"re(<text class="title"[^>]*>([^<]*)</text>)re");
  REQUIRE(lines.size() >= 3);
  std::string joined;
  for (const std::string& line : lines) {
    CHECK(line.size() * 9.0 <= 500 - 24);  // 9 px a character, 12 px margins.
    joined += line;
  }
  // Nothing lost: the lines are the title less the spaces at the breaks.
  auto no_spaces = [](std::string text) {
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    return text;
  };
  CHECK(no_spaces(joined) == no_spaces(options.title));
  // The rows start below the last title line.
  std::vector<std::string> ys = matches(svg, R"re(<text class="title" x="[^"]*" y="([^"]*)")re");
  std::vector<std::string> rows = matches(svg, R"re(<rect class="row" x="[^"]*" y="([^"]*)")re");
  CHECK(std::stod(rows.front()) > std::stod(ys.back()) + 10);
}

TEST_CASE("TimelineSvg: every box wide enough carries its microbatch; tooltips have units") {
  ScheduleStudy a = study(ScheduleKind::kOneFOneB, 1, 0);
  TimelineSvgOptions options;
  options.axis_unit = "ms";
  std::string svg = timeline_svg(a.schedule, a.lowered, a.timeline, options);
  // 4 ranks x 8 microbatches x (F + B), each box 1000/makespan px wide: all are labelled.
  std::vector<std::string> labels =
      matches(svg, R"re(<text class="microbatch"[^>]*>([0-9]+)</text>)re");
  CHECK(labels.size() == 64);
  CHECK(std::count(labels.begin(), labels.end(), "7") == 8);
  // F0 on rank 0 runs from 0 to 1 (unit costs): the tooltip says so with the unit.
  CHECK(svg.find("<title>F0 chunk 0 microbatch 0: 0 ms .. 1 ms (1 ms)</title>") !=
        std::string::npos);
  // Narrow boxes: 8 px type down to 2 characters in about 12 px, then none.
  options.plot_width = 180;  // A box of 1 unit is 180/22 = 8.2 px: too narrow for "0" at 10 px.
  svg = timeline_svg(a.schedule, a.lowered, a.timeline, options);
  CHECK(count(svg, "font-size=\"8\"") == 64);
  options.plot_width = 40;
  svg = timeline_svg(a.schedule, a.lowered, a.timeline, options);
  CHECK(count(svg, "class=\"microbatch\"") == 0);
}

TEST_CASE("TimelineSvg: a window draws only its part, cut at its edges") {
  ScheduleStudy a = study(ScheduleKind::kGpipe, 1, 0);
  // GPipe, p 4, m 8, tf 1, tb 1: rank 0's forwards run 0..8; the makespan is 2 x (8 + 3) = 22.
  REQUIRE(a.timeline.makespan == Approx(22));
  TimelineSvgOptions options;
  options.axis_unit = "s";
  options.window_start = 2.5;
  options.window_end = 5;
  std::string svg = timeline_svg(a.schedule, a.lowered, a.timeline, options);
  CHECK(xml_problem(svg) == "");
  // Rank r runs F k at r + k .. r + k + 1. Rank 0: F2 (2..3, cut to 2.5..3), F3, F4 (F5 starts
  // at the window's end: not drawn); rank 1: F1 (cut), F2, F3; rank 2: F0 (cut), F1, F2;
  // rank 3: F0 (3..4), F1 (4..5).
  CHECK(count(svg, "<rect class=\"task\"") == 3 + 3 + 3 + 2);
  // Boxes start at the plot's left edge or later and end by its right edge.
  for (const std::string& x : matches(svg, R"re(<rect class="task" x="([^"]*)")re")) {
    CHECK(std::stod(x) >= 80 - 1e-9);
  }
  CHECK(svg.find("window 2.5 .. 5 of a 22 s step") != std::string::npos);
  // The axis counts from the window's start: its first tick is 2.5 (ticks of 0.5).
  CHECK(svg.find(">2.5</text>") != std::string::npos);
  CHECK(svg.find(">0.0</text>") == std::string::npos);
}

TEST_CASE("TimelineSvg: long plans get a per-stage summary") {
  ScheduleStudyInput input;
  input.schedule = ScheduleKind::kOneFOneB;
  input.stages = 2;
  input.microbatches = 40;
  input.costs.assign(2, StageCosts{1, 2, 0});
  ScheduleStudy a = run_schedule_study(input);
  TimelineSvgOptions options;
  options.row_names = {"stage 0", "stage 1"};
  options.long_plan_hint = "Draw a part with --svg-window.";
  std::string svg = timeline_svg(a.schedule, a.lowered, a.timeline, options);
  CHECK(xml_problem(svg) == "");
  std::vector<std::string> lines =
      matches(svg, R"re(<text class="summary"[^>]*>([^<]*)</text>)re");
  REQUIRE(lines.size() == 5);  // Heading, columns, two stages, the hint.
  CHECK(lines[0].find("40 microbatches: per-stage summary") != std::string::npos);
  // Stage 0: 40 F and 40 B, busy 40 x 3 = 120 of a makespan of 40 x 3 + 3 = 123.
  REQUIRE(a.timeline.makespan == Approx(123));
  CHECK(lines[2].find("stage 0") == 0);
  CHECK(lines[2].find("    40     40      0            120   97.6              3") !=
        std::string::npos);
  CHECK(lines[4] == "Draw a part with --svg-window.");
  // 32 microbatches or fewer: no summary.
  input.microbatches = 32;
  ScheduleStudy b = run_schedule_study(input);
  svg = timeline_svg(b.schedule, b.lowered, b.timeline, options);
  CHECK(count(svg, "class=\"summary\"") == 0);
}

TEST_CASE("MemorySvg: the curve and the picture per stage") {
  ScheduleStudyInput input;
  input.schedule = ScheduleKind::kOneFOneB;
  input.stages = 2;
  input.microbatches = 4;
  input.costs.assign(2, StageCosts{1, 1, 0});
  ScheduleStudy a = run_schedule_study(input);
  // The study's graph allocates 1 per microbatch; make it 1 GiB.
  for (TaskId id = 0; id < a.lowered.graph.num_tasks(); ++id) {
    a.lowered.graph.mutable_task(id).alloc_bytes *= 1024.0 * 1024 * 1024;
    a.lowered.graph.mutable_task(id).free_bytes *= 1024.0 * 1024 * 1024;
  }
  // 1F1B, p 2: stage 0 holds at most 2 microbatches, stage 1 one.
  MemoryCurve curve = memory_curve(a.lowered, a.timeline, 0, 3.0 * 1024 * 1024 * 1024);
  CHECK(curve.peak_bytes == Approx(5.0 * 1024 * 1024 * 1024));
  CHECK(*std::min_element(curve.bytes.begin(), curve.bytes.end()) ==
        Approx(3.0 * 1024 * 1024 * 1024));  // Never below the static memory.
  CHECK(curve.bytes.back() == Approx(3.0 * 1024 * 1024 * 1024));  // All freed at the end.
  // The same peaks as the engine's (in microbatches, before the scaling above).
  CHECK(curve.peak_bytes - 3.0 * 1024 * 1024 * 1024 ==
        Approx(a.timeline.peak_memory[0] * 1024.0 * 1024 * 1024));
  CHECK(memory_curve(a.lowered, a.timeline, 1, 0).peak_bytes ==
        Approx(a.timeline.peak_memory[1] * 1024.0 * 1024 * 1024));

  MemorySvgOptions options;
  options.title = "memory";
  options.static_bytes = {3.0 * 1024 * 1024 * 1024, 3.0 * 1024 * 1024 * 1024};
  options.capacity_bytes = {8.0 * 1024 * 1024 * 1024, 80.0 * 1024 * 1024 * 1024};
  options.axis_unit = "s";
  std::string svg = memory_svg(a.lowered, a.timeline, options);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "<path class=\"memory\"") == 2);
  CHECK(count(svg, "<rect class=\"static\"") == 2);
  // Stage 0's 8 GiB is within twice the highest peak (5 GiB): drawn; stage 1's 80 GiB is not.
  CHECK(count(svg, "<line class=\"capacity\"") == 1);
  CHECK(svg.find("stage 0: peak 5.00 GiB at") != std::string::npos);
  CHECK(svg.find("(3.00 static + 2.00 activations) of 8.00 GiB (dashed)") != std::string::npos);
  CHECK(svg.find("(3.00 static + 1.00 activations) of 80.00 GiB (off the scale)") !=
        std::string::npos);
  CHECK(svg == memory_svg(a.lowered, a.timeline, options));  // Deterministic.
  options.window_start = 1;
  options.window_end = 3;
  svg = memory_svg(a.lowered, a.timeline, options);
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("window 1 .. 3 of a") != std::string::npos);
}

}  // namespace
}  // namespace ppsim
