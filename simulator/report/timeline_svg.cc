#include "simulator/report/timeline_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// Layout, in pixels.
constexpr double kLabelCharWidth = 7;  // Of the 12 px row labels, for the left margin.
constexpr double kRight = 20;
constexpr double kTop = 44;  // Title.
constexpr double kRowHeight = 24;
constexpr double kRowGap = 12;  // Room for the reduce/gather bars under a row.
constexpr double kBarHeight = 4;
constexpr double kCharWidth = 6.5;  // Of the 10 px font, for "does the number fit".
constexpr double kSmallCharWidth = 5.2;  // Of the 8 px font.
constexpr double kTitleLeft = 12;        // Title margin.
constexpr double kTitleLine = 19;        // Title line spacing (15 px bold type).
// Widest mean advance of 15 px bold Helvetica/Arial over digits, capitals and punctuation
// (about 0.6 em), so a wrapped line never runs past the edge.
constexpr double kTitleCharWidth = 9;

struct Rgb {
  int r, g, b;
};

constexpr Rgb kForward{0x4e, 0x79, 0xa7};
constexpr Rgb kInputGradient{0x3f, 0xb2, 0xa8};
constexpr Rgb kFusedBackward{0x1b, 0x6e, 0x68};
constexpr Rgb kWeightGradient{0x59, 0xa1, 0x4f};
constexpr Rgb kOptimizer{0x9e, 0x9e, 0x9e};
constexpr Rgb kReduce{0xf2, 0x8e, 0x2b};
constexpr Rgb kGather{0xb0, 0x7a, 0xa1};

Rgb kind_colour(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return kForward;
    case ActionKind::kBackwardInput:
      return kInputGradient;
    case ActionKind::kBackward:
      return kFusedBackward;
    case ActionKind::kBackwardWeight:
      return kWeightGradient;
    default:
      return kOptimizer;
  }
}

// Mixes the colour with white: 0 keeps it, 1 is white.
Rgb lighten(Rgb colour, double amount) {
  auto mix = [amount](int c) { return static_cast<int>(std::lround(c + (255 - c) * amount)); };
  return {mix(colour.r), mix(colour.g), mix(colour.b)};
}

std::string hex(Rgb colour) {
  return fmt::format("#{:02x}{:02x}{:02x}", colour.r, colour.g, colour.b);
}

// Dark text on light fills, white on dark ones.
const char* text_colour(Rgb fill) {
  double luma = 0.299 * fill.r + 0.587 * fill.g + 0.114 * fill.b;
  return luma > 150 ? "#1a1a1a" : "#ffffff";
}

std::string px(double value) { return fmt::format("{:.2f}", value); }


}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<std::string> wrap_line(const std::string& text, size_t width) {
  PPSIM_CHECK(width > 0);
  auto trimmed = [](std::string line) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line;
  };
  std::vector<std::string> lines;
  std::string line;
  size_t at = 0;
  while (at < text.size()) {
    // The next piece: up to and including a space or a comma (a plan's "tp=8,pp=4,...").
    size_t stop = text.find_first_of(" ,", at);
    stop = stop == std::string::npos ? text.size() : stop + 1;
    std::string piece = text.substr(at, stop - at);
    at = stop;
    if (!line.empty() && trimmed(line + piece).size() > width) {
      lines.push_back(trimmed(line));
      line.clear();
    }
    if (line.empty()) {
      while (!piece.empty() && piece.front() == ' ') piece.erase(0, 1);
    }
    while (trimmed(piece).size() > width) {  // A piece longer than a line is cut.
      lines.push_back(piece.substr(0, width));
      piece = piece.substr(width);
    }
    line += piece;
  }
  if (!trimmed(line).empty()) lines.push_back(trimmed(line));
  return lines;
}

std::vector<std::string> svg_title_lines(const std::string& title, double width) {
  if (title.empty()) return {};
  return wrap_line(title, static_cast<size_t>(std::max(
                              10.0, std::floor((width - 2 * kTitleLeft) / kTitleCharWidth))));
}

double svg_round_step(double range, double ticks) {
  if (range <= 0) return 1;
  double raw = range / ticks;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0}) {
    if (factor * magnitude >= raw) return factor * magnitude;
  }
  return 10 * magnitude;
}

std::string svg_time_axis(const SvgTimeAxis& axis) {
  const double axis_from = axis.window_start * axis.axis_scale;
  const double range = (axis.window_end - axis.window_start) * axis.axis_scale;
  const double step = svg_round_step(range, 8);
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));
  std::string svg =
      fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333333\"/>\n",
                  px(axis.left), px(axis.y), px(axis.left + axis.plot_width), px(axis.y));
  if (range > 0) {
    const int64_t first = static_cast<int64_t>(std::ceil(axis_from / step - 1e-9));
    const int64_t last = static_cast<int64_t>(std::floor((axis_from + range) / step + 1e-9));
    for (int64_t i = first; i <= last; ++i) {
      double value = i * step;
      double x = axis.left + (value - axis_from) / range * axis.plot_width;
      svg += fmt::format(
          "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333333\"/>\n"
          "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{:.{}f}</text>\n",
          px(x), px(axis.y), px(x), px(axis.y + 5), px(x), px(axis.y + 17), value, decimals);
    }
  }
  std::string label =
      axis.axis_unit.empty() ? "time" : fmt::format("time ({})", axis.axis_unit);
  if (axis.windowed) {
    label += fmt::format("; window {:.6g} .. {:.6g} of a {:.6g}{}{} step",
                         axis.window_start * axis.axis_scale, axis.window_end * axis.axis_scale,
                         axis.makespan * axis.axis_scale, axis.axis_unit.empty() ? "" : " ",
                         axis.axis_unit);
  }
  svg += fmt::format(
      "<text class=\"axis\" x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
      px(axis.left + axis.plot_width / 2), px(axis.y + 32), xml_escape(label));
  return svg;
}

std::string svg_document(double width, double height, const std::vector<std::string>& title_lines,
                         const std::string& body) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"Helvetica, Arial, sans-serif\">\n",
      px(width), px(height));
  out += fmt::format(
      "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" "
      "fill=\"#ffffff\"/>\n",
      px(width), px(height));
  for (size_t i = 0; i < title_lines.size(); ++i) {
    out += fmt::format(
        "<text class=\"title\" x=\"{}\" y=\"{}\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
        px(kTitleLeft), px(kTitleLeft + 14 + kTitleLine * i), xml_escape(title_lines[i]));
  }
  out += body;
  out += "</svg>\n";
  return out;
}

std::string timeline_svg(const PipelineSchedule& schedule, const Lowered& lowered,
                         const Timeline& timeline, const TimelineSvgOptions& options) {
  const TaskGraph& graph = lowered.graph;
  const int32_t p = schedule.ranks;
  const int32_t v = schedule.chunks_per_rank;
  PPSIM_CHECK(options.row_names.empty() || static_cast<int32_t>(options.row_names.size()) == p);
  PPSIM_CHECK(static_cast<int32_t>(lowered.info.size()) == graph.num_tasks());
  PPSIM_CHECK(static_cast<int32_t>(timeline.start.size()) == graph.num_tasks());
  PPSIM_CHECK(options.plot_width > 0);
  const double makespan = timeline.makespan;
  const double window_start = options.window_start;
  const double window_end = options.window_end < 0 ? makespan : options.window_end;
  const bool windowed = window_start > 0 || (options.window_end >= 0 && window_end < makespan);
  PPSIM_CHECK(window_start >= 0 && (window_end > window_start || makespan <= 0));

  // The position of each chunk among its rank's chunks (0 = the rank's earliest chunk).
  std::vector<int32_t> local_chunk(schedule.num_chunks(), 0);
  for (int32_t c = 0; c < schedule.num_chunks(); ++c) {
    for (int32_t other = 0; other < c; ++other) {
      if (schedule.chunk_rank[other] == schedule.chunk_rank[c]) ++local_chunk[c];
    }
  }
  std::vector<std::string> row_names = options.row_names;
  if (row_names.empty()) {
    for (int32_t r = 0; r < p; ++r) row_names.push_back(fmt::format("rank {}", r));
  }
  size_t longest = 0;
  for (const std::string& name : row_names) longest = std::max(longest, name.size());
  const double left = std::max(80.0, kLabelCharWidth * longest + 16);  // Row labels.
  const double width = left + options.plot_width + kRight;
  // The title, wrapped to the picture's width.
  const std::vector<std::string> title_lines = svg_title_lines(options.title, width);
  const double top =
      title_lines.empty() ? kTop : kTop + kTitleLine * (static_cast<double>(title_lines.size()) - 1);
  const double span = window_end - window_start;
  const double x_scale = span > 0 ? options.plot_width / span : 0;
  auto x_of = [&](double time) { return left + (time - window_start) * x_scale; };
  auto row_top = [top](int32_t rank) { return top + rank * (kRowHeight + kRowGap); };
  const double axis_y = row_top(p) + 2;
  const std::string unit = options.axis_unit.empty() ? "" : " " + options.axis_unit;
  auto when = [&](double time) { return fmt::format("{:.6g}{}", time * options.axis_scale, unit); };

  std::string body;
  // Row backgrounds and labels.
  for (int32_t r = 0; r < p; ++r) {
    const std::string& name = row_names[r];
    body += fmt::format(
        "<rect class=\"row\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>\n",
        px(left), px(row_top(r)), px(options.plot_width), px(kRowHeight));
    body += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" "
        "dominant-baseline=\"middle\">{}</text>\n",
        px(left - 8), px(row_top(r) + kRowHeight / 2), xml_escape(name));
  }

  // Tasks of replica 0, in TaskId order; per stage counts for the summary.
  struct StageSummary {
    int64_t forward = 0, backward = 0, weight = 0;
    double busy = 0;
  };
  std::vector<StageSummary> summary(p);
  int32_t microbatches = 0;
  bool has[5] = {false, false, false, false, false};  // F, I, B, W, optimizer.
  bool has_reduce = false, has_gather = false;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskInfo& info = lowered.info[id];
    if (info.worker < 0 || info.worker >= p) continue;
    const double start = timeline.start[id];
    const double end = timeline.end[id];
    const bool compute = info.role == TaskInfo::Role::kAction && is_compute(info.kind);
    if (compute) {
      StageSummary& stage = summary[info.worker];
      stage.busy += end - start;
      microbatches = std::max(microbatches, info.microbatch + 1);
      if (info.kind == ActionKind::kForward) {
        ++stage.forward;
      } else if (info.kind == ActionKind::kBackwardWeight) {
        ++stage.weight;
      } else {
        ++stage.backward;
      }
    }
    // Outside the window: not drawn; across its edges: cut.
    if (end < window_start || start > window_end) continue;
    if (end > start && (end <= window_start || start >= window_end)) continue;
    const double x = x_of(std::max(start, window_start));
    const double w = std::max(0.0, x_of(std::min(end, window_end)) - x);
    const double y = row_top(info.worker);
    const std::string timing =
        fmt::format("{} .. {} ({})", when(start), when(end), when(end - start));
    if (compute) {
      Rgb fill = kind_colour(info.kind);
      if (v > 1 && info.chunk >= 0) fill = lighten(fill, 0.55 * local_chunk[info.chunk] / (v - 1));
      has[info.kind == ActionKind::kForward         ? 0
          : info.kind == ActionKind::kBackwardInput ? 1
          : info.kind == ActionKind::kBackward      ? 2
                                                    : 3] = true;
      std::string label = action_kind_name(info.kind);
      body += fmt::format(
          "<rect class=\"task\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
          "stroke=\"#ffffff\" stroke-width=\"0.5\"><title>{}{} chunk {} microbatch {}: "
          "{}</title></rect>\n",
          px(x), px(y), px(w), px(kRowHeight), hex(fill), label, info.microbatch, info.chunk,
          info.microbatch, timing);
      // The microbatch number in 10 px type, or 8 px when only that fits.
      std::string number = std::to_string(info.microbatch);
      int font = w >= kCharWidth * number.size() + 3         ? 10
                 : w >= kSmallCharWidth * number.size() + 2 ? 8
                                                             : 0;
      if (font > 0) {
        body += fmt::format(
            "<text class=\"microbatch\" x=\"{}\" y=\"{}\" font-size=\"{}\" "
            "text-anchor=\"middle\" dominant-baseline=\"middle\" fill=\"{}\">{}</text>\n",
            px(x + w / 2), px(y + kRowHeight / 2), font, text_colour(fill), number);
      }
    } else if (info.role == TaskInfo::Role::kOptimizer) {
      has[4] = true;
      body += fmt::format(
          "<rect class=\"optimizer\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>optimizer: {}</title></rect>\n",
          px(x), px(y), px(w), px(kRowHeight), hex(kOptimizer), timing);
    } else if (info.role == TaskInfo::Role::kGradientReduce ||
               info.role == TaskInfo::Role::kParamGather) {
      bool reduce = info.role == TaskInfo::Role::kGradientReduce;
      (reduce ? has_reduce : has_gather) = true;
      double bar_y = y + kRowHeight + 2 + (reduce ? 0 : kBarHeight + 1);
      body += fmt::format(
          "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>{} chunk {}: {}</title></rect>\n",
          reduce ? "reduce" : "gather", px(x), px(bar_y), px(w), px(kBarHeight),
          hex(reduce ? kReduce : kGather), reduce ? "gradient reduce" : "parameter gather",
          info.chunk, timing);
    }
  }

  // Time axis with round ticks over the window.
  body += svg_time_axis({left, options.plot_width, axis_y, options.axis_scale, options.axis_unit,
                         window_start, window_end, makespan, windowed});

  // Legend of the kinds present.
  struct Entry {
    bool present;
    Rgb colour;
    const char* text;
  };
  const Entry entries[] = {
      {has[0], kForward, "F forward"},
      {has[1], kInputGradient, "B input gradient"},
      {has[2], kFusedBackward, "B backward (input + weight gradient)"},
      {has[3], kWeightGradient, "W weight gradient"},
      {has[4], kOptimizer, "optimizer step"},
      {has_reduce, kReduce, "gradient reduce"},
      {has_gather, kGather, "parameter gather"},
  };
  const double legend_y = axis_y + 46;
  double legend_x = left;
  double legend_row = legend_y;
  for (const Entry& entry : entries) {
    if (!entry.present) continue;
    const double entry_width = 16 + 6.2 * std::string(entry.text).size() + 18;
    if (legend_x > left && legend_x + entry_width > width) {  // Wrap the legend too.
      legend_x = left;
      legend_row += 18;
    }
    body += fmt::format(
        "<rect class=\"legend\" x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n",
        px(legend_x), px(legend_row), hex(entry.colour));
    body += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", px(legend_x + 16),
                        px(legend_row + 10), entry.text);
    legend_x += entry_width;
  }
  double height = legend_row + 24;
  if (v > 1) {
    body += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\">{} chunks per rank: lighter shades are the "
        "rank's later chunks; numbers are microbatches</text>\n",
        px(left), px(legend_row + 28), v);
    height += 18;
  }
  // Long plans: one line per stage with its counts, busy and idle time.
  if (microbatches > options.summary_microbatches) {
    double y = height + 14;
    auto line = [&](const std::string& text, bool bold) {
      body += fmt::format(
          "<text class=\"summary\" x=\"{}\" y=\"{}\" font-size=\"11\"{} "
          "font-family=\"Menlo, Consolas, monospace\" xml:space=\"preserve\">{}</text>\n",
          px(kTitleLeft), px(y), bold ? " font-weight=\"bold\"" : "", xml_escape(text));
      y += 15;
    };
    line(fmt::format("{} microbatches: per-stage summary over the whole step ({})", microbatches,
                     when(makespan)),
         true);
    const std::string busy_head = fmt::format("busy{}", unit.empty() ? "" : " (" + options.axis_unit + ")");
    const std::string idle_head = fmt::format("idle{}", unit.empty() ? "" : " (" + options.axis_unit + ")");
    line(fmt::format("{:<{}}  {:>6} {:>6} {:>6} {:>14} {:>6} {:>14}", "stage", longest, "F",
                     "B/I", "W", busy_head, "busy%", idle_head),
         false);
    for (int32_t r = 0; r < p; ++r) {
      const StageSummary& stage = summary[r];
      double busy_pct = makespan > 0 ? 100 * stage.busy / makespan : 0;
      line(fmt::format("{:<{}}  {:>6} {:>6} {:>6} {:>14.6g} {:>6.1f} {:>14.6g}", row_names[r],
                       longest, stage.forward, stage.backward, stage.weight,
                       stage.busy * options.axis_scale, busy_pct,
                       (makespan - stage.busy) * options.axis_scale),
           false);
    }
    if (!options.long_plan_hint.empty() && !windowed) line(options.long_plan_hint, false);
    height = y + 6;
  }

  return svg_document(width, height, title_lines, body);
}

}  // namespace ppsim
