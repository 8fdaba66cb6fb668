#include "simulator/inflight_microbatches.h"

#include <algorithm>

#include "simulator/error.h"
#include "simulator/schedules/schedule_builders.h"

namespace ppsim {
namespace {

// Megatron's interleaved forward order (schedules.py get_schedule_table): microbatches in groups
// of `group` (the last group takes the rest), each group run through chunk 0, then chunk 1, ...
// Returns how many of the first `forwards` entries belong to each chunk.
std::vector<int64_t> interleaved_chunk_counts(int64_t microbatches, int64_t chunks, int64_t group,
                                              int64_t forwards) {
  std::vector<int64_t> counts(chunks, 0);
  int64_t taken = 0;
  for (int64_t first = 0; first < microbatches && taken < forwards; first += group) {
    int64_t size = first + group >= microbatches ? microbatches - first : group;
    for (int64_t chunk = 0; chunk < chunks && taken < forwards; ++chunk) {
      int64_t now = std::min(size, forwards - taken);
      counts[chunk] += now;
      taken += now;
    }
  }
  return counts;
}

}  // namespace

double InflightMicrobatches::stage_equivalent() const {
  PPSIM_CHECK(!per_chunk.empty());
  double sum = 0;
  for (int64_t count : per_chunk) sum += static_cast<double>(count);
  return sum / static_cast<double>(per_chunk.size());
}

InflightMicrobatches microbatches_in_flight(ScheduleKind schedule, int64_t pp, int64_t vpp,
                                            int64_t microbatches, int64_t rank) {
  PPSIM_CHECK(pp >= 1 && rank >= 0 && rank < pp && microbatches >= 1 && vpp >= 1);
  const int64_t p = pp;
  const int64_t r = rank;
  const int64_t m = microbatches;
  InflightMicrobatches inflight;
  switch (schedule) {
    case ScheduleKind::kGpipe:
      PPSIM_CHECK(vpp == 1, "gpipe runs one chunk per rank");
      inflight.per_chunk = {m};
      break;
    case ScheduleKind::kOneFOneB:
    case ScheduleKind::kZbH1:
      PPSIM_CHECK(vpp == 1, "1f1b and zb-h1 run one chunk per rank");
      inflight.per_chunk = {std::min(p - r, m)};
      break;
    case ScheduleKind::kZbH2:
      PPSIM_CHECK(vpp == 1, "zb-h2 runs one chunk per rank");
      inflight.per_chunk = {std::min(2 * (p - r) - 1, m)};
      break;
    case ScheduleKind::kZb1p:
    case ScheduleKind::kZb2p:
      PPSIM_CHECK(vpp == 1, "zb-1p and zb-2p run one chunk per rank");
      inflight.per_chunk = {zero_bubble_auto_inflight(
          static_cast<int32_t>(p), static_cast<int32_t>(m), static_cast<int32_t>(r),
          schedule == ScheduleKind::kZb1p ? 1 : 2)};
      break;
    case ScheduleKind::kInterleaved1F1B: {
      if (vpp == 1) {
        inflight.per_chunk = {std::min(p - r, m)};
        break;
      }
      int64_t forwards = std::min((p - r - 1) * 2 + (vpp - 1) * p + 1, m * vpp);
      inflight.per_chunk = interleaved_chunk_counts(m, vpp, p, forwards);
      break;
    }
    case ScheduleKind::kZbv:
      PPSIM_CHECK(vpp == 2, "zbv holds exactly two chunks per rank");
      inflight.per_chunk = {std::min(2 * p - r - 1, m), std::min(r + 1, m)};
      break;
    case ScheduleKind::kDualPipeV:
      PPSIM_CHECK(vpp == 2, "dualpipev holds exactly two chunks per rank");
      inflight.per_chunk = {std::min(2 * p - r, m), std::min(r + 1, m)};
      break;
  }
  return inflight;
}

}  // namespace ppsim
