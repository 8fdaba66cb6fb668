#include "simulator/planner/replica_shares.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "simulator/model/chunk_layout.h"
#include "simulator/model/worker_layout.h"
#include "simulator/spec/error.h"

namespace ppsim {

std::vector<double> replica_throughputs(const PlanScreen& screen, const Plan& plan) {
  Plan equal = plan;
  equal.replica_microbatches.clear();
  WorkerLayout layout = build_worker_layout(equal, screen.cluster());
  const ChunkLayout chunks = chunk_layout(equal, screen.model());
  // Layers recomputed and plain: a chunk's layers past recompute_num_layers run without.
  const LayerSettings settings = layer_settings(equal);
  std::vector<double> throughput;
  for (int32_t d = 0; d < layout.replicas; ++d) {
    double slowest = 0;
    for (int32_t r = 0; r < layout.stages; ++r) {
      const int64_t group = layout.at(d, r).node_group;
      std::shared_ptr<const LayerSeconds> seconds =
          screen.layer_seconds(settings.recomputed, group);
      std::shared_ptr<const LayerSeconds> plain_seconds =
          settings.partial ? screen.layer_seconds(settings.plain, group) : seconds;
      double stage = 0;
      for (int64_t c : chunks.rank_chunks(r)) {
        const int64_t recomputed = settings.recomputed_count(chunks.chunk_layers[c]);
        for (int64_t i = 0; i < chunks.chunk_layers[c]; ++i) {
          const LayerSeconds& source = i < recomputed ? *seconds : *plain_seconds;
          stage += source.layers[chunks.chunk_first_layer[c] + i].total();
        }
      }
      // With interleaving the first chunk sits on stage 0 and the last on stage pp-1.
      if (r == 0) stage += seconds->embedding.total();
      if (r == layout.stages - 1) stage += seconds->head.total();
      slowest = std::max(slowest, stage);
    }
    PPSIM_CHECK(slowest > 0, "a replica without work");
    throughput.push_back(1 / slowest);
  }
  return throughput;
}

std::optional<std::vector<int64_t>> proportional_shares(const std::vector<double>& throughput,
                                                        int64_t total, int64_t unit,
                                                        int64_t minimum) {
  PPSIM_CHECK(!throughput.empty() && unit >= 1 && total >= 0);
  if (total % unit != 0) return std::nullopt;
  const int64_t n = static_cast<int64_t>(throughput.size());
  const int64_t units = total / unit;
  const int64_t min_units = (minimum + unit - 1) / unit;
  if (min_units * n > units) return std::nullopt;
  // Every replica gets its minimum; the rest goes in proportion, by largest remainder.
  double sum = std::accumulate(throughput.begin(), throughput.end(), 0.0);
  std::vector<int64_t> share(n);
  std::vector<double> remainder(n);
  int64_t given = 0;
  for (int64_t d = 0; d < n; ++d) {
    double ideal = units * throughput[d] / sum;
    share[d] = std::max<int64_t>(min_units, static_cast<int64_t>(std::floor(ideal)));
    remainder[d] = ideal - static_cast<double>(share[d]);
    given += share[d];
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return remainder[a] > remainder[b]; });
  for (size_t i = 0; given < units; i = (i + 1) % order.size(), ++given) ++share[order[i]];
  // Minimums may have over-given: take back from the replicas furthest above their ideal.
  for (size_t i = order.size(); given > units;) {
    i = i == 0 ? order.size() - 1 : i - 1;
    int64_t d = order[i];
    if (share[d] > min_units) {
      --share[d];
      --given;
    }
  }
  for (int64_t& s : share) s *= unit;
  return share;
}

std::optional<Plan> with_proportional_shares(const PlanScreen& screen, const Plan& plan) {
  if (plan.dp < 2) return std::nullopt;
  std::vector<double> throughput = replica_throughputs(screen, plan);
  auto [low, high] = std::minmax_element(throughput.begin(), throughput.end());
  if (*high <= *low * (1 + 1e-9)) return std::nullopt;  // One speed: equal shares are right.
  int64_t unit = microbatch_unit(plan.schedule, plan.pp, plan.vpp);
  int64_t minimum = min_microbatches(plan.schedule, plan.pp, plan.vpp);
  if (plan.global_batch_size % plan.micro_batch_size != 0) return std::nullopt;
  std::optional<std::vector<int64_t>> shares = proportional_shares(
      throughput, plan.global_batch_size / plan.micro_batch_size, unit, minimum);
  if (!shares) return std::nullopt;
  Plan shared = plan;
  shared.replica_microbatches = *shares;
  if (!has_unequal_shares(shared)) return std::nullopt;
  if (plan_problem(shared, screen.model(), screen.cluster())) return std::nullopt;
  return shared;
}

}  // namespace ppsim
