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
//
// Inside a domain the same holds GPU by GPU: DeepEP's and HybridEP's NVLink kernels send a token
// once to each destination GPU that holds any of its experts, and the GPU expands it to its
// local experts (deep_ep intranode dispatch; HybridEP's TMA copies), where the alltoall sends one
// copy per (token, expert). The share of NVLink copies is the formula above with every ep rank
// its own domain: destination_gpu_share. Qwen3-30B-A3B at ep 8 (16 experts per GPU, top 8):
// 8 (1 - C(112, 8)/C(128, 8)) / 8 = 0.662. The Megatron-Core MoE report (arXiv 2603.07685,
// Table 7: DeepSeek-V3's hidden 7168, 4,096 tokens, 256 experts, ep 8 inside one node) measures
// HybridEP's dispatch at 0.52 of the NCCL all-to-all's time on H100 (661 vs 1,265 us) and 0.53
// on GB200 (391 vs 735 us); the deduplication is 0.662 of the bytes, the rest is the copy
// engine's efficiency, which ppsim does not model (tests/cost/chunk_price_test.cc).
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

// The dispatcher's NVLink copies over the alltoall's, in (0, 1]: a token sent once per
// destination GPU instead of once per expert (above). 1 for the alltoall.
double destination_gpu_share(const MoeSpec& moe, int64_t ep, MoeDispatcher dispatcher);

}  // namespace ppsim
