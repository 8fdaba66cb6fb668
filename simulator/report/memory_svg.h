// Memory over time, one panel per pipeline stage: what `ppsim simulate --memory-svg FILE` draws.
//
// Each panel is one worker of data-parallel replica 0 (stage r = worker r), top to bottom:
// - a grey band for its static memory (weights, gradients, optimizer state, workspace: the
//   step's static_memory_bytes), and over it the activation memory the timeline allocates:
//   every task allocates its alloc_bytes on its stream's device when it starts and frees its
//   free_bytes when it ends (task_graph.h), drawn as a step line (<path class="memory">) with
//   the area under it filled; at one instant frees come before allocations, as in the engine,
//   so the line's highest point is the stage's peak (static + the timeline's peak_memory);
// - a dashed red line at the GPU's capacity (<line class="capacity">) when it is within twice
//   the highest peak, else the capacity is named in the panel's label;
// - the label "stage 0: peak 22.98 GiB at 1.234 s of 79.65 GiB" and a <title> tooltip with the
//   static, activation and peak memory in GiB.
// The vertical scale (GiB) is shared by the panels so stages compare at a glance; the time axis
// is the step's, or the window's like timeline_svg.h. Valid XML; deterministic.
#pragma once

#include <string>
#include <vector>

#include "simulator/engine/timeline.h"
#include "simulator/schedule/schedule_lowering.h"

namespace ppsim {

struct MemorySvgOptions {
  std::string title;                   // Wrapped to the width like timeline_svg's.
  std::vector<std::string> row_names;  // Per stage; empty = "stage 0", ...
  std::vector<double> static_bytes;    // Per stage: memory held all step. Size = stages.
  std::vector<double> capacity_bytes;  // Per stage: the GPU's usable memory. Size = stages.
  double axis_scale = 1;               // Tick value = time * axis_scale (1e3: s -> ms).
  std::string axis_unit;               // "ms"; empty = none.
  double plot_width = 1000;            // Pixels of the time axis. > 0.
  double window_start = 0;             // As TimelineSvgOptions.
  double window_end = -1;
};

// One stage's memory over time: (time, bytes) corners of the step line, static memory included,
// from time 0 to the makespan. Exposed for tests.
struct MemoryCurve {
  std::vector<double> time;
  std::vector<double> bytes;
  double peak_bytes = 0;
  double peak_time = 0;
};
MemoryCurve memory_curve(const Lowered& lowered, const Timeline& timeline, int32_t worker,
                         double static_bytes);

// REQUIRES: static_bytes and capacity_bytes have one entry per stage (>= 1 stage); the workers
// 0 .. stages-1 of `lowered` are replica 0's stages.
std::string memory_svg(const Lowered& lowered, const Timeline& timeline,
                       const MemorySvgOptions& options);

}  // namespace ppsim
