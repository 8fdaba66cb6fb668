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

// A round tick step (1, 2 or 5 times a power of ten) giving about eight ticks over `range`.
double tick_step(double range) {
  if (range <= 0) return 1;
  double raw = range / 8;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0}) {
    if (factor * magnitude >= raw) return factor * magnitude;
  }
  return 10 * magnitude;
}

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

std::string timeline_svg(const PipelineSchedule& schedule, const Lowered& lowered,
                         const Timeline& timeline, const TimelineSvgOptions& options) {
  const TaskGraph& graph = lowered.graph;
  const int32_t p = schedule.ranks;
  const int32_t v = schedule.chunks_per_rank;
  PPSIM_CHECK(options.row_names.empty() || static_cast<int32_t>(options.row_names.size()) == p);
  PPSIM_CHECK(static_cast<int32_t>(lowered.info.size()) == graph.num_tasks());
  PPSIM_CHECK(static_cast<int32_t>(timeline.start.size()) == graph.num_tasks());
  PPSIM_CHECK(options.plot_width > 0);

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
  const double makespan = timeline.makespan;
  const double x_scale = makespan > 0 ? options.plot_width / makespan : 0;
  auto x_of = [&](double time) { return left + time * x_scale; };
  auto row_top = [](int32_t rank) { return kTop + rank * (kRowHeight + kRowGap); };
  const double width = left + options.plot_width + kRight;
  const double axis_y = row_top(p) + 2;

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

  // Tasks of replica 0, in TaskId order.
  bool has[5] = {false, false, false, false, false};  // F, I, B, W, optimizer.
  bool has_reduce = false, has_gather = false;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskInfo& info = lowered.info[id];
    if (info.worker < 0 || info.worker >= p) continue;
    const double start = timeline.start[id];
    const double end = timeline.end[id];
    const double x = x_of(start);
    const double w = std::max(0.0, x_of(end) - x);
    const double y = row_top(info.worker);
    const std::string span =
        fmt::format("{} .. {}", start * options.axis_scale, end * options.axis_scale);
    if (info.role == TaskInfo::Role::kAction && is_compute(info.kind)) {
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
          info.microbatch, span);
      std::string number = std::to_string(info.microbatch);
      if (w >= kCharWidth * number.size() + 3) {
        body += fmt::format(
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" "
            "dominant-baseline=\"middle\" fill=\"{}\">{}</text>\n",
            px(x + w / 2), px(y + kRowHeight / 2), text_colour(fill), number);
      }
    } else if (info.role == TaskInfo::Role::kOptimizer) {
      has[4] = true;
      body += fmt::format(
          "<rect class=\"optimizer\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>optimizer: {}</title></rect>\n",
          px(x), px(y), px(w), px(kRowHeight), hex(kOptimizer), span);
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
          info.chunk, span);
    }
  }

  // Time axis with round ticks.
  const double range = makespan * options.axis_scale;
  const double step = tick_step(range);
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));
  body += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333333\"/>\n",
                      px(left), px(axis_y), px(left + options.plot_width), px(axis_y));
  const int ticks = range > 0 ? static_cast<int>(std::floor(range / step + 1e-9)) : 0;
  for (int i = 0; i <= ticks; ++i) {
    double value = i * step;
    double x = range > 0 ? left + value / range * options.plot_width : left;
    body += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333333\"/>\n",
                        px(x), px(axis_y), px(x), px(axis_y + 5));
    body += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{:.{}f}</text>\n", px(x),
        px(axis_y + 17), value, decimals);
  }
  const std::string axis_label =
      options.axis_unit.empty() ? "time" : fmt::format("time ({})", options.axis_unit);
  body += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
                      px(left + options.plot_width / 2), px(axis_y + 32), xml_escape(axis_label));

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
  for (const Entry& entry : entries) {
    if (!entry.present) continue;
    body += fmt::format(
        "<rect class=\"legend\" x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n",
        px(legend_x), px(legend_y), hex(entry.colour));
    body += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", px(legend_x + 16),
                        px(legend_y + 10), entry.text);
    legend_x += 16 + 6.2 * std::string(entry.text).size() + 18;
  }
  double height = legend_y + 24;
  if (v > 1) {
    body += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\">{} chunks per rank: lighter shades are the "
        "rank's later chunks; numbers are microbatches</text>\n",
        px(left), px(legend_y + 28), v);
    height += 18;
  }

  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"Helvetica, Arial, sans-serif\">\n",
      px(width), px(height));
  out += fmt::format(
      "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" "
      "fill=\"#ffffff\"/>\n",
      px(width), px(height));
  if (!options.title.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"26\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                       px(left), xml_escape(options.title));
  }
  out += body;
  out += "</svg>\n";
  return out;
}

}  // namespace ppsim
