// What of an MoE layer's dispatched tokens crosses NVLink domains, under each token dispatcher
// (Plan::moe_dispatcher).
//
// The ep group spans D = ep / r NVLink domains of r ep ranks each; Megatron gives ep rank i the
// experts [i E/ep, (i+1) E/ep), so a domain holds E/D consecutive experts. Under balanced
// routing a token picks top_k = k distinct experts:
//   alltoall   one copy per (token, expert): k (D-1)/D copies cross domains on average;
//   deepep,    one copy per remote domain that holds any of its experts, forwarded over NVLink
//   hybridep   inside it: (D-1) P copies, P = 1 - C(E - E/D, k) / C(E, k) the chance that a
//              given remote domain holds one of the k experts (hypergeometric).
// With group-limited routing (MoeSpec num_groups G, group_topk Gk) whose groups tile the domains
// (G a multiple of D, q = G/D groups per domain), the k experts lie in Gk of the G groups:
// P = 1 - C(G - q, u) / C(G, u) with u = min(Gk, k), counting every used group as holding one of
// them (the most domains a token can reach; DeepSeek-V3: G 8, Gk 4 on 8 domains, P = 1/2).
// Groups that do not tile the domains are left to the expert-level formula.
//
// Worked example (tests/model/moe_dispatch_test.cc): DeepSeek-V3, ep 64 over 8 domains of 8:
// alltoall 7 cross-domain copies per token, deepep 3.5 (share 0.5); without its groups
// 7 (1 - C(224, 8)/C(256, 8)) = 4.63 (share 0.662).
#pragma once

#include <cstdint>

#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// Copies of one token that cross NVLink domains on average (above). REQUIRES: ranks_per_domain
// divides ep, ep divides num_experts.
double cross_domain_copies(const MoeSpec& moe, int64_t ep, int64_t ranks_per_domain,
                           MoeDispatcher dispatcher);

// The dispatcher's cross-domain copies over the alltoall's, in (0, 1]: the share of an
// all-to-all's cross-domain bytes it sends (collective_cost.h CollectiveGroup). 1 within one
// domain.
double cross_domain_share(const MoeSpec& moe, int64_t ep, int64_t ranks_per_domain,
                          MoeDispatcher dispatcher);

}  // namespace ppsim
