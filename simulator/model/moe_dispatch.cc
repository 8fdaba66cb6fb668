#include "simulator/model/moe_dispatch.h"

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// C(a - b, k) / C(a, k): the chance that k of a items drawn without replacement avoid b given
// ones. 0 when fewer than k items are left.
double avoid_probability(int64_t a, int64_t b, int64_t k) {
  if (a - b < k) return 0;
  double p = 1;
  for (int64_t i = 0; i < k; ++i) {
    p *= static_cast<double>(a - b - i) / static_cast<double>(a - i);
  }
  return p;
}

}  // namespace

double cross_domain_copies(const MoeSpec& moe, int64_t ep, int64_t ranks_per_domain,
                           MoeDispatcher dispatcher) {
  PPSIM_CHECK(ranks_per_domain >= 1 && ep % ranks_per_domain == 0,
              "ranks per domain must divide ep");
  PPSIM_CHECK(moe.num_experts % ep == 0, "ep must divide the expert count");
  const int64_t domains = ep / ranks_per_domain;
  if (domains == 1) return 0;
  const double remote = static_cast<double>(domains - 1);
  if (dispatcher == MoeDispatcher::kAllToAll) {
    return static_cast<double>(moe.top_k) * remote / static_cast<double>(domains);
  }
  double hit;
  if (moe.num_groups > 0 && moe.num_groups % domains == 0) {
    // A token's experts lie in at most min(group_topk, top_k) of its chosen groups.
    const int64_t used = std::min(moe.group_topk, moe.top_k);
    hit = 1 - avoid_probability(moe.num_groups, moe.num_groups / domains, used);
  } else {
    hit = 1 - avoid_probability(moe.num_experts, moe.num_experts / domains, moe.top_k);
  }
  return remote * hit;
}

double cross_domain_share(const MoeSpec& moe, int64_t ep, int64_t ranks_per_domain,
                          MoeDispatcher dispatcher) {
  const double all = cross_domain_copies(moe, ep, ranks_per_domain, MoeDispatcher::kAllToAll);
  if (all <= 0) return 1;
  return cross_domain_copies(moe, ep, ranks_per_domain, dispatcher) / all;
}

double destination_gpu_share(const MoeSpec& moe, int64_t ep, MoeDispatcher dispatcher) {
  return cross_domain_share(moe, ep, 1, dispatcher);
}

}  // namespace ppsim
