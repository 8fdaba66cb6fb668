// Timeline: when every task of a TaskGraph ran, and what the devices' memory did.
//
// The output of the event engine and (later) of the hardware executor, so both can be reported
// and compared the same way.
#pragma once

#include <cstdint>
#include <vector>

namespace ppsim {

struct Timeline {
  std::vector<double> start;        // Per task: start time, seconds from the step's start.
  std::vector<double> end;          // Per task: end time.
  std::vector<double> peak_memory;  // Per device: peak bytes allocated by tasks (alloc/free).
  double makespan = 0;              // Latest end (first start is 0).
  int64_t events = 0;               // Events the engine processed.
};

}  // namespace ppsim
