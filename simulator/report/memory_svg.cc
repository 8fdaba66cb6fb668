#include "simulator/report/memory_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simulator/report/timeline_svg.h"
#include "simulator/spec/error.h"
#include "simulator/spec/units.h"

namespace ppsim {
namespace {

constexpr double kLeft = 150;         // Stage labels and the GiB ticks.
constexpr double kRight = 20;
constexpr double kTitleLeft = 12;
constexpr double kTitleLine = 19;
constexpr double kPanelHeight = 90;
constexpr double kPanelGap = 30;       // Room for the panel's label.

std::string px(double value) { return fmt::format("{:.2f}", value); }


double gib(double bytes) { return bytes / kGiB; }

}  // namespace

MemoryCurve memory_curve(const Lowered& lowered, const Timeline& timeline, int32_t worker,
                         double static_bytes) {
  const TaskGraph& graph = lowered.graph;
  // The worker's device: the one its compute tasks' stream allocates on.
  int32_t device = -1;
  for (TaskId id = 0; id < graph.num_tasks() && device < 0; ++id) {
    if (lowered.info[id].worker == worker && is_compute_action(lowered.info[id])) {
      device = graph.stream(graph.task(id).stream).device;
    }
  }
  struct Change {
    double time;
    int order;  // 0: a free, 1: an allocation (frees first at one instant).
    double bytes;
  };
  std::vector<Change> changes;
  for (TaskId id = 0; id < graph.num_tasks() && device >= 0; ++id) {
    const Task& task = graph.task(id);
    if (graph.stream(task.stream).device != device) continue;
    if (task.alloc_bytes != 0) changes.push_back({timeline.start[id], 1, task.alloc_bytes});
    if (task.free_bytes != 0) changes.push_back({timeline.end[id], 0, -task.free_bytes});
  }
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.time != b.time ? a.time < b.time : a.order < b.order;
  });
  MemoryCurve curve;
  double bytes = static_bytes;
  curve.time.push_back(0);
  curve.bytes.push_back(bytes);
  curve.peak_bytes = bytes;
  for (const Change& change : changes) {
    bytes += change.bytes;
    if (change.time == curve.time.back()) {
      curve.bytes.back() = bytes;
    } else {
      curve.time.push_back(change.time);
      curve.bytes.push_back(bytes);
    }
    if (bytes > curve.peak_bytes) {
      curve.peak_bytes = bytes;
      curve.peak_time = change.time;
    }
  }
  if (curve.time.back() < timeline.makespan) {
    curve.time.push_back(timeline.makespan);
    curve.bytes.push_back(bytes);
  }
  return curve;
}

std::string memory_svg(const Lowered& lowered, const Timeline& timeline,
                       const MemorySvgOptions& options) {
  const int32_t stages = static_cast<int32_t>(options.static_bytes.size());
  PPSIM_CHECK(stages >= 1);
  PPSIM_CHECK(options.capacity_bytes.size() == options.static_bytes.size());
  PPSIM_CHECK(options.row_names.empty() ||
              static_cast<int32_t>(options.row_names.size()) == stages);
  PPSIM_CHECK(options.plot_width > 0);
  const double makespan = timeline.makespan;
  const double window_start = options.window_start;
  const double window_end = options.window_end < 0 ? makespan : options.window_end;
  PPSIM_CHECK(window_start >= 0 && (window_end > window_start || makespan <= 0));
  const double span = window_end - window_start;
  const double width = kLeft + options.plot_width + kRight;
  const std::string unit = options.axis_unit.empty() ? "" : " " + options.axis_unit;
  auto when = [&](double time) { return fmt::format("{:.6g}{}", time * options.axis_scale, unit); };

  std::vector<MemoryCurve> curves;
  double highest = 0;
  for (int32_t r = 0; r < stages; ++r) {
    curves.push_back(memory_curve(lowered, timeline, r, options.static_bytes[r]));
    highest = std::max(highest, curves.back().peak_bytes);
  }
  // The shared scale: the highest peak, or the capacities too when they are near it.
  double top_bytes = highest;
  for (double capacity : options.capacity_bytes) {
    if (capacity <= 2 * highest) top_bytes = std::max(top_bytes, capacity);
  }
  const double gib_step = svg_round_step(gib(top_bytes) * 1.05, 4);
  const double scale_gib = std::max(gib_step, std::ceil(gib(top_bytes) * 1.05 / gib_step) * gib_step);

  const std::vector<std::string> title_lines = svg_title_lines(options.title, width);
  const double top = kTitleLeft + 14 + kTitleLine * static_cast<double>(title_lines.size()) + 10;
  auto panel_top = [&](int32_t r) { return top + kPanelGap + r * (kPanelHeight + kPanelGap); };
  auto x_of = [&](double time) {
    return kLeft + (std::clamp(time, window_start, window_end) - window_start) /
                       (span > 0 ? span : 1) * options.plot_width;
  };

  std::string body;
  for (int32_t r = 0; r < stages; ++r) {
    const MemoryCurve& curve = curves[r];
    const double y0 = panel_top(r);
    const double bottom = y0 + kPanelHeight;
    auto y_of = [&](double bytes) { return bottom - gib(bytes) / scale_gib * kPanelHeight; };
    const std::string name =
        options.row_names.empty() ? fmt::format("stage {}", r) : options.row_names[r];
    const double capacity = options.capacity_bytes[r];
    const bool capacity_drawn = capacity <= 2 * highest;
    body += fmt::format(
        "<rect class=\"panel\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\">"
        "<title>{}: static {:.2f} GiB, activations up to {:.2f} GiB, peak {:.2f} GiB at {}, "
        "capacity {:.2f} GiB</title></rect>\n",
        px(kLeft), px(y0), px(options.plot_width), px(kPanelHeight), xml_escape(name),
        gib(options.static_bytes[r]), gib(curve.peak_bytes - options.static_bytes[r]),
        gib(curve.peak_bytes), when(curve.peak_time), gib(capacity));
    // GiB ticks.
    for (double value = 0; value <= scale_gib + 1e-9; value += gib_step) {
      double y = bottom - value / scale_gib * kPanelHeight;
      body += fmt::format(
          "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#dddddd\"/>\n"
          "<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"end\" "
          "dominant-baseline=\"middle\">{:g}</text>\n",
          px(kLeft), px(y), px(kLeft + options.plot_width), px(y), px(kLeft - 4), px(y), value);
    }
    // Static memory band.
    body += fmt::format(
        "<rect class=\"static\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#bdbdbd\">"
        "<title>{}: static memory {:.2f} GiB (weights, gradients, optimizer state, workspace)"
        "</title></rect>\n",
        px(kLeft), px(y_of(options.static_bytes[r])), px(options.plot_width),
        px(bottom - y_of(options.static_bytes[r])), xml_escape(name),
        gib(options.static_bytes[r]));
    // The step line and the area under it, within the window.
    std::string line = fmt::format("M{},{}", px(x_of(window_start)),
                                   px(y_of(curve.bytes.front())));
    double level = curve.bytes.front();
    for (size_t i = 1; i < curve.time.size(); ++i) {
      if (curve.time[i] <= window_start) {
        level = curve.bytes[i];
        line = fmt::format("M{},{}", px(x_of(window_start)), px(y_of(level)));
        continue;
      }
      if (curve.time[i] > window_end) break;
      line += fmt::format(" H{} V{}", px(x_of(curve.time[i])), px(y_of(curve.bytes[i])));
      level = curve.bytes[i];
    }
    line += fmt::format(" H{}", px(x_of(window_end)));
    body += fmt::format(
        "<path class=\"memory-area\" d=\"{} V{} H{} Z\" fill=\"#4e79a7\" fill-opacity=\"0.25\" "
        "stroke=\"none\"/>\n",
        line, px(bottom), px(x_of(window_start)));
    body += fmt::format(
        "<path class=\"memory\" d=\"{}\" fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"1.5\"/>\n",
        line);
    if (capacity_drawn) {
      body += fmt::format(
          "<line class=\"capacity\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#d62728\" "
          "stroke-dasharray=\"6 3\"><title>capacity {:.2f} GiB</title></line>\n",
          px(kLeft), px(y_of(capacity)), px(kLeft + options.plot_width), px(y_of(capacity)),
          gib(capacity));
    }
    if (curve.peak_time >= window_start && curve.peak_time <= window_end) {
      body += fmt::format(
          "<circle class=\"peak\" cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"#d62728\"/>\n",
          px(x_of(curve.peak_time)), px(y_of(curve.peak_bytes)));
    }
    body += fmt::format(
        "<text class=\"stage\" x=\"{}\" y=\"{}\" font-size=\"12\">{}: peak {:.2f} GiB at {} "
        "({:.2f} static + {:.2f} activations) of {:.2f} GiB{}</text>\n",
        px(kLeft), px(y0 - 8), xml_escape(name), gib(curve.peak_bytes), when(curve.peak_time),
        gib(options.static_bytes[r]), gib(curve.peak_bytes - options.static_bytes[r]),
        gib(capacity), capacity_drawn ? " (dashed)" : " (off the scale)");
    body += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" "
        "transform=\"rotate(-90 {} {})\">GiB</text>\n",
        px(kLeft - 30), px(y0 + kPanelHeight / 2), px(kLeft - 30), px(y0 + kPanelHeight / 2));
  }

  // Time axis under the last panel.
  const double axis_y = panel_top(stages - 1) + kPanelHeight + 2;
  body += svg_time_axis({kLeft, options.plot_width, axis_y, options.axis_scale, options.axis_unit,
                         window_start, window_end, makespan,
                         window_start > 0 || window_end < makespan});
  body += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"11\">grey: static memory; blue: static + activations "
      "(allocated at a task's start, freed at its end); red dot: peak; dashed red: capacity"
      "</text>\n",
      px(kTitleLeft), px(axis_y + 52));
  const double height = axis_y + 66;

  return svg_document(width, height, title_lines, body);
}

}  // namespace ppsim
