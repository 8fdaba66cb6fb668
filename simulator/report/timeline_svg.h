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
//   The microbatch number (from 0, as in the schedule) is written inside the box when it fits;
//   each box carries a <title> tooltip "F3 chunk 1 microbatch 3: 2.5 .. 3.5";
// - <rect class="optimizer"> grey boxes for optimizer steps in the row, and thin bars under the
//   row for the DP gradient reduction (<rect class="reduce">, orange) and ZeRO parameter gathers
//   (<rect class="gather">, purple) when the lowered step has them;
// - a time axis with round ticks, a legend of the kinds present, and a title.
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
};

// The SVG document as text, ending in a newline.
// REQUIRES: `lowered` was lowered from `schedule` and `timeline` simulated from lowered.graph;
// options.row_names is empty or has schedule.ranks entries.
std::string timeline_svg(const PipelineSchedule& schedule, const Lowered& lowered,
                         const Timeline& timeline, const TimelineSvgOptions& options = {});

// `text` with the five XML special characters replaced by entities.
std::string xml_escape(const std::string& text);

}  // namespace ppsim
