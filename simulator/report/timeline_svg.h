// The pipeline timeline as the papers draw it (GPipe, Megatron, zero-bubble): an SVG image with
// one row per pipeline rank and one box per compute action, in time order.
//
// What is drawn:
// - rows: the pipeline ranks of data-parallel replica 0 (workers 0 .. p-1), top to bottom,
//   labelled with `row_names` (default "rank r");
// - one <rect class="task"> per compute task (F, B, I, W) of replica 0, coloured by kind:
//   F blue, I (input gradient, "B" in the zero-bubble papers) teal, B (fused input and weight
//   gradient) darker teal, W (weight gradient) green. With several chunks per rank
//   (interleaved-1f1b, zbv, dualpipev) the rank's later chunks are lighter shades of the colour.
//   The microbatch number (from 0, as in the schedule) is written inside every box wide enough
//   for it (10 px type, or 8 px in a narrower box); each box carries a <title> tooltip with the
//   axis unit, "F3 chunk 1 microbatch 3: 2.5 ms .. 3.5 ms (1 ms)";
// - <rect class="optimizer"> grey boxes for optimizer steps in the row, and thin bars under the
//   row for the DP gradient reduction (<rect class="reduce">, orange) and ZeRO parameter gathers
//   (<rect class="gather">, purple) when the lowered step has them;
// - a time axis with round ticks, a legend of the kinds present, and a title wrapped onto as
//   many lines as the picture's width needs (<text class="title">, one per line);
// - with a window (window_start/window_end), only that part of the step: boxes that cross its
//   edges are cut at them, the axis counts from the window's start, and a caption names the
//   window and the step's length;
// - for a long plan (more microbatches than summary_microbatches), a per-stage summary table
//   under the legend (<text class="summary">): each stage's F, B/I and W counts, busy time,
//   busy share and idle time, and (without a window) the `long_plan_hint` line (how to draw
//   one).
// Transfers (sends) are not drawn; a gap before a box is a bubble or a wait for a transfer.
//
// Valid XML: text is escaped. Deterministic: elements come in TaskId order and coordinates are
// printed with two decimals, so the same step gives the same bytes.
#pragma once

#include <string>
#include <vector>

#include "simulator/engine/timeline.h"
#include "simulator/schedule/pipeline_schedule.h"
#include "simulator/schedule/schedule_lowering.h"

namespace ppsim {

struct TimelineSvgOptions {
  std::string title;                   // Drawn at the top. Default none.
  std::vector<std::string> row_names;  // Per rank, size p; empty = "rank 0", "rank 1", ...
  double axis_scale = 1;               // Tick value = timeline time * axis_scale (1e3: s -> ms).
  std::string axis_unit;               // Tick unit for the axis label ("ms"); empty = none.
  double plot_width = 1000;            // Pixels given to the time axis. > 0.
  // The part of the step drawn, in timeline time (seconds for a step): [window_start,
  // window_end]; window_end < 0 means the step's end. REQUIRES 0 <= window_start < window_end.
  double window_start = 0;
  double window_end = -1;
  // A plan with more microbatches than this gets the per-stage summary table.
  int32_t summary_microbatches = 32;
  std::string long_plan_hint;  // A line under the summary table; empty = none.
};

// The SVG document as text, ending in a newline.
// REQUIRES: `lowered` was lowered from `schedule` and `timeline` simulated from lowered.graph;
// options.row_names is empty or has schedule.ranks entries.
std::string timeline_svg(const PipelineSchedule& schedule, const Lowered& lowered,
                         const Timeline& timeline, const TimelineSvgOptions& options = {});

// `text` broken after spaces and commas into lines of at most `width` characters (a longer
// piece is cut).
std::vector<std::string> wrap_line(const std::string& text, size_t width);

// `text` with the five XML special characters replaced by entities.
std::string xml_escape(const std::string& text);

// A picture's title wrapped to its width (15 px bold type from x = 12 on both sides); empty
// for an empty title. Shared by the timeline and memory pictures.
std::vector<std::string> svg_title_lines(const std::string& title, double width);

// 1, 2 or 5 times a power of ten, giving about `ticks` steps over `range` (1 when range <= 0).
double svg_round_step(double range, double ticks);

// The time axis under a picture's plot, shared by the timeline and memory pictures.
struct SvgTimeAxis {
  double left = 0;        // x of the plot's left edge (time window_start).
  double plot_width = 0;  // Width of the plot (time window_end at left + plot_width).
  double y = 0;           // y of the axis line.
  double axis_scale = 1;  // Display units per timeline second.
  std::string axis_unit;  // Display unit, e.g. "ms"; "" none.
  double window_start = 0, window_end = 0, makespan = 0;  // Timeline seconds.
  bool windowed = false;  // The label names the window of the step.
};

// The axis's SVG: its line, round ticks (about eight) with their values, and the label "time
// (UNIT)", with a window "; window A .. B of a M UNIT step" (the unit said once, on M).
std::string svg_time_axis(const SvgTimeAxis& axis);

// The whole SVG document: the XML header, a white background, the title lines (from
// svg_title_lines) at the top left, then `body`.
std::string svg_document(double width, double height, const std::vector<std::string>& title_lines,
                         const std::string& body);

}  // namespace ppsim
