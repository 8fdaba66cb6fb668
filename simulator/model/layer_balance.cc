#include "simulator/model/layer_balance.h"

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {

std::optional<std::vector<int64_t>> balanced_split(int64_t layers, int64_t stages,
                                                   int64_t granularity) {
  PPSIM_CHECK(stages >= 1 && granularity >= 1);
  if (layers % granularity != 0 || layers / granularity < stages) return std::nullopt;
  int64_t units = layers / granularity;
  std::vector<int64_t> counts(stages, units / stages);
  std::vector<int64_t> order;
  for (int64_t stage = 1; stage + 1 < stages; ++stage) order.push_back(stage);
  if (stages > 1) order.push_back(stages - 1);
  order.push_back(0);
  for (int64_t i = 0; i < units % stages; ++i) counts[order[i % order.size()]] += 1;
  for (int64_t& count : counts) count *= granularity;
  return counts;
}

std::optional<std::vector<int64_t>> chunked_split(int64_t layers, int64_t stages,
                                                  int64_t granularity) {
  if (std::optional<std::vector<int64_t>> even = balanced_split(layers, stages, granularity)) {
    return even;
  }
  if (stages < 2) return std::nullopt;
  // k = ceil(layers / (stages x granularity)) units per middle stage leaves each end at most k
  // units; the lighter end must keep a layer and at least k - 1 units' layers.
  const int64_t units = (layers + stages * granularity - 1) / (stages * granularity);
  const int64_t ends = layers - (stages - 2) * units * granularity;
  const int64_t lighter = ends / 2;
  if (lighter < 1 || lighter < (units - 1) * granularity) return std::nullopt;
  std::vector<int64_t> counts(stages, units * granularity);
  counts.front() = lighter;
  counts.back() = ends - lighter;
  return counts;
}

std::optional<std::vector<int64_t>> trimmed_split(const std::vector<int64_t>& base,
                                                  int64_t trim_first, int64_t trim_last,
                                                  int64_t granularity, int64_t min_units) {
  PPSIM_CHECK(base.size() >= 2 && granularity >= 1);
  std::vector<int64_t> counts = base;
  size_t last = counts.size() - 1;
  std::vector<size_t> recipients;
  for (size_t s = 0; s < counts.size(); ++s) {
    if ((s == 0 && trim_first > 0) || (s == last && trim_last > 0)) continue;
    recipients.push_back(s);
  }
  if (recipients.empty()) return std::nullopt;
  auto move_units = [&](size_t from, int64_t units) {
    for (int64_t i = 0; i < units; ++i) {
      if (counts[from] - granularity < min_units * granularity) return false;
      counts[from] -= granularity;
      size_t to = recipients.front();
      for (size_t s : recipients) {
        if (counts[s] < counts[to]) to = s;
      }
      counts[to] += granularity;
    }
    return true;
  };
  if (!move_units(0, trim_first) || !move_units(last, trim_last)) return std::nullopt;
  return counts;
}

namespace {

double stage_seconds(const StageTimeModel& stage, int64_t first, int64_t end) {
  return stage.layer_prefix[end] - stage.layer_prefix[first] + stage.extra_seconds;
}

// Greedy feasibility: each stage takes as many units as fit under `limit`, leaving min_units
// for each later stage. Returns the split, or nullopt when the last stage overflows.
std::optional<std::vector<int64_t>> greedy_split(const std::vector<StageTimeModel>& stages,
                                                 int64_t units, int64_t granularity,
                                                 int64_t min_units, double limit) {
  int64_t p = static_cast<int64_t>(stages.size());
  std::vector<int64_t> split(p, 0);
  int64_t used = 0;
  for (int64_t s = 0; s < p; ++s) {
    int64_t later = (p - 1 - s) * min_units;
    int64_t most = units - used - later;
    int64_t cap = stages[s].max_layers / granularity;
    if (s + 1 < p) most = std::min(most, cap);
    if (most < min_units || (s + 1 == p && most > cap)) return std::nullopt;
    int64_t take = s + 1 == p ? most : min_units;
    if (s + 1 < p) {
      while (take + 1 <= most && stage_seconds(stages[s], used * granularity,
                                               (used + take + 1) * granularity) <= limit) {
        ++take;
      }
    }
    if (stage_seconds(stages[s], used * granularity, (used + take) * granularity) > limit) {
      return std::nullopt;
    }
    split[s] = take * granularity;
    used += take;
  }
  return split;
}

}  // namespace

std::optional<std::vector<int64_t>> time_balanced_split(const std::vector<StageTimeModel>& stages,
                                                        int64_t layers, int64_t granularity,
                                                        int64_t min_units) {
  int64_t p = static_cast<int64_t>(stages.size());
  PPSIM_CHECK(p >= 1 && granularity >= 1 && layers % granularity == 0);
  int64_t units = layers / granularity;
  PPSIM_CHECK(units >= p * min_units, "enough layers for every stage");
  for (const StageTimeModel& stage : stages) {
    PPSIM_CHECK(static_cast<int64_t>(stage.layer_prefix.size()) == layers + 1);
  }
  // Bounds on T*: the largest stage of any feasible split is at most the whole model on the
  // slowest stage; at least the largest fixed extra.
  double low = 0, high = 0;
  for (const StageTimeModel& stage : stages) {
    low = std::max(low, stage.extra_seconds);
    high = std::max(high, stage_seconds(stage, 0, layers));
  }
  std::optional<std::vector<int64_t>> best =
      greedy_split(stages, units, granularity, min_units, high);
  // Without caps the whole model on the slowest stage bounds every stage; with caps, failing
  // at that limit means the caps leave no split.
  if (!best) return std::nullopt;
  for (int iteration = 0; iteration < 100 && high - low > 1e-12 * high; ++iteration) {
    double middle = 0.5 * (low + high);
    if (auto split = greedy_split(stages, units, granularity, min_units, middle)) {
      high = middle;
      best = split;
    } else {
      low = middle;
    }
  }
  return best;
}

double bottleneck_seconds(const std::vector<StageTimeModel>& stages,
                          const std::vector<int64_t>& split) {
  PPSIM_CHECK(stages.size() == split.size());
  double worst = 0;
  int64_t first = 0;
  for (size_t s = 0; s < split.size(); ++s) {
    worst = std::max(worst, stage_seconds(stages[s], first, first + split[s]));
    first += split[s];
  }
  return worst;
}

}  // namespace ppsim
