// The report of `ppsim schedule`: a schedule study (schedule_study.h) as text (nccl-tests
// layout: '#' header with the inputs and warnings, one row per stage with a units row, '#'
// footer with the makespan, the bubble ratio and OK or FAILED) or as JSON with the same fields
// (docs/schedule.md lists them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/schedule/schedule_study.h"

namespace ppsim {

// Ten significant digits for people (30.30000000000002 prints 30.3); JSON keeps every digit.
std::string schedule_number(double value);

// "stage 2", or "stage 2 (chunks 2,5)" when ranks hold several chunks: row names for the SVG
// and the trace.
std::string schedule_stage_name(const PipelineSchedule& schedule, int32_t rank);

// One warning per stage whose activation peak exceeds the study's memory limit.
std::vector<std::string> schedule_memory_warnings(const ScheduleStudy& study);

// The study as JSON (ending in a newline) and as text, with `warnings` in both.
std::string schedule_report_json(const ScheduleStudy& study,
                                 const std::vector<std::string>& warnings);
std::string schedule_report_text(const ScheduleStudy& study,
                                 const std::vector<std::string>& warnings);

}  // namespace ppsim
