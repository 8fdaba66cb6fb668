#include "simulator/plan_candidates.h"

namespace ppsim {
namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) result.push_back(d);
  }
  return result;
}

}  // namespace

std::vector<Plan> enumerate_plans(const ModelSpec& model, const ClusterSpec& cluster,
                                  const CandidateLimits& limits) {
  int64_t gpus = limits.gpus > 0 ? limits.gpus : cluster.num_gpus();
  int64_t seq = limits.seq_length.value_or(model.seq_length);
  // Context parallelism pays off only for long sequences (Megatron recommends it from 8K on).
  std::vector<int64_t> cp_options = seq >= 8192 ? std::vector<int64_t>{1, 2, 4, 8}
                                                : std::vector<int64_t>{1};
  std::vector<Plan> plans;
  for (int64_t tp = 1; tp <= gpus; tp *= 2) {
    if (gpus % tp != 0) break;
    for (int64_t cp : cp_options) {
      if ((gpus / tp) % cp != 0) continue;
      for (int64_t pp : divisors(gpus / tp / cp)) {
        int64_t dp = gpus / (tp * cp * pp);
        for (int64_t mbs : {1, 2, 4, 8}) {
          for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
            Plan plan;
            plan.tp = tp;
            plan.pp = pp;
            plan.dp = dp;
            plan.cp = cp;
            plan.micro_batch_size = mbs;
            plan.global_batch_size = limits.global_batch_size;
            plan.seq_length = limits.seq_length;
            plan.schedule = pp > 1 ? limits.schedule : ScheduleKind::kOneFOneB;
            plan.recompute = recompute;
            plan.sequence_parallel = tp > 1;
            plan.zero_stage = dp > 1 ? 1 : 0;
            if (!plan_problem(plan, model, cluster)) plans.push_back(plan);
          }
        }
      }
    }
  }
  return plans;
}

}  // namespace ppsim
