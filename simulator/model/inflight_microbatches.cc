#include "simulator/model/inflight_microbatches.h"

#include <map>
#include <mutex>
#include <tuple>

#include "simulator/schedule/pipeline_schedule.h"
#include "simulator/spec/error.h"

namespace ppsim {

double InflightMicrobatches::stage_equivalent() const {
  PPSIM_CHECK(!per_chunk.empty());
  double sum = 0;
  for (int64_t count : per_chunk) sum += static_cast<double>(count);
  return sum / static_cast<double>(per_chunk.size());
}

namespace {

std::vector<InflightMicrobatches> count_in_flight(ScheduleKind schedule, int64_t pp, int64_t vpp,
                                                  int64_t microbatches, int64_t group) {
  const PipelineSchedule order = build_pipeline_schedule(
      schedule, static_cast<int32_t>(pp), static_cast<int32_t>(microbatches),
      static_cast<int32_t>(chunks_per_rank(schedule, vpp)), static_cast<int32_t>(group));
  const ActivationRelease release = schedule_traits(schedule).releases_at_input_grad
                                        ? ActivationRelease::kAtInputGrad
                                        : ActivationRelease::kAtWeightGrad;
  std::vector<InflightMicrobatches> ranks;
  for (const InflightPeak& peak : inflight_peaks(order, release)) {
    InflightMicrobatches inflight;
    inflight.per_chunk.assign(peak.per_local_chunk.begin(), peak.per_local_chunk.end());
    ranks.push_back(std::move(inflight));
  }
  return ranks;
}

}  // namespace

const std::vector<InflightMicrobatches>& microbatches_in_flight_per_rank(
    ScheduleKind schedule, int64_t pp, int64_t vpp, int64_t microbatches,
    int64_t microbatch_group) {
  PPSIM_CHECK(pp >= 1 && microbatches >= 1 && vpp >= 1 && microbatch_group >= 0);
  // 0 and pp are the same group; one key for both.
  const int64_t group = microbatch_group > 0 ? microbatch_group : pp;
  // The planner asks for the same few (kind, p, v, m, g) for thousands of plans: each is
  // counted once. Entries are never removed, so references stay valid; the lock guards
  // insertion.
  static std::mutex mutex;
  static std::map<std::tuple<ScheduleKind, int64_t, int64_t, int64_t, int64_t>,
                  std::vector<InflightMicrobatches>>
      counted;
  const auto key = std::make_tuple(schedule, pp, vpp, microbatches, group);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = counted.find(key);
    if (it != counted.end()) return it->second;
  }
  std::vector<InflightMicrobatches> ranks =
      count_in_flight(schedule, pp, vpp, microbatches, group);
  std::lock_guard<std::mutex> lock(mutex);
  return counted.emplace(key, std::move(ranks)).first->second;
}

InflightMicrobatches microbatches_in_flight(ScheduleKind schedule, int64_t pp, int64_t vpp,
                                            int64_t microbatches, int64_t rank,
                                            int64_t microbatch_group) {
  PPSIM_CHECK(rank >= 0 && rank < pp);
  return microbatches_in_flight_per_rank(schedule, pp, vpp, microbatches,
                                         microbatch_group)[rank];
}

}  // namespace ppsim
