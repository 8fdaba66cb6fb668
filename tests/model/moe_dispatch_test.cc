// Cross-domain copies per token under each MoE dispatcher, against hand-computed values.
#include "simulator/model/moe_dispatch.h"

#include <catch2/catch.hpp>

#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

TEST_CASE("MoE dispatch: DeepSeek-V3 on ep 64 over 8 domains (the header's worked example)") {
  MoeSpec moe = *load_model_spec("deepseek-v3").moe;
  REQUIRE(moe.num_groups == 8);
  REQUIRE(moe.group_topk == 4);
  // alltoall: 8 copies, 7/8 of them to another domain.
  CHECK(cross_domain_copies(moe, 64, 8, MoeDispatcher::kAllToAll) == Approx(7.0));
  // DeepEP: 4 of the 8 groups (one per domain) chosen; a given remote domain is hit with
  // probability 1 - C(7,4)/C(8,4) = 1/2, so 7/2 copies.
  CHECK(cross_domain_copies(moe, 64, 8, MoeDispatcher::kDeepEp) == Approx(3.5));
  CHECK(cross_domain_share(moe, 64, 8, MoeDispatcher::kDeepEp) == Approx(0.5));
  CHECK(cross_domain_share(moe, 64, 8, MoeDispatcher::kHybridEp) == Approx(0.5));
  // Without groups: 7 (1 - prod_{i<8} (224-i)/(256-i)) = 7 x 0.66183 = 4.6328.
  moe.num_groups = moe.group_topk = 0;
  CHECK(cross_domain_copies(moe, 64, 8, MoeDispatcher::kDeepEp) == Approx(4.6328).epsilon(1e-4));
  CHECK(cross_domain_share(moe, 64, 8, MoeDispatcher::kDeepEp) == Approx(0.66183).epsilon(1e-4));
}

TEST_CASE("MoE dispatch: one domain sends nothing across; groups that do not tile fall back") {
  MoeSpec moe = *load_model_spec("deepseek-v3").moe;
  CHECK(cross_domain_copies(moe, 8, 8, MoeDispatcher::kAllToAll) == 0);
  CHECK(cross_domain_share(moe, 8, 8, MoeDispatcher::kDeepEp) == 1);
  // 16 domains of 4 ranks: 8 groups span two domains each, so the expert-level formula:
  // 15 (1 - prod_{i<8} (240-i)/(256-i)).
  double avoid = 1;
  for (int i = 0; i < 8; ++i) avoid *= (240.0 - i) / (256.0 - i);
  CHECK(cross_domain_copies(moe, 64, 4, MoeDispatcher::kDeepEp) == Approx(15 * (1 - avoid)));
  CHECK(cross_domain_copies(moe, 64, 4, MoeDispatcher::kAllToAll) == Approx(8.0 * 15 / 16));
  // Fewer experts than chosen groups: a token reaches at most top_k groups, so DeepEP never
  // sends more than the all-to-all (top-2 over 4 of 8 groups: 7 (1 - C(7,2)/C(8,2)) = 1.75).
  MoeSpec top2 = moe;
  top2.top_k = 2;
  CHECK(cross_domain_copies(top2, 64, 8, MoeDispatcher::kDeepEp) == Approx(1.75));
  CHECK(cross_domain_copies(top2, 64, 8, MoeDispatcher::kAllToAll) == Approx(1.75));
  // Top-1 routing: one copy at most, so deduplication saves nothing.
  MoeSpec top1;
  top1.num_experts = 64;
  top1.top_k = 1;
  top1.expert_ffn_hidden_size = 1;
  CHECK(cross_domain_share(top1, 16, 4, MoeDispatcher::kDeepEp) == Approx(1.0));
}

}  // namespace
}  // namespace ppsim
