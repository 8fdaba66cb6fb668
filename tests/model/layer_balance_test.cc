#include "simulator/model/layer_balance.h"

#include <catch2/catch.hpp>

namespace ppsim {
namespace {

using Split = std::vector<int64_t>;

// Stages whose layers each cost `per_layer` seconds, plus an extra per stage.
std::vector<StageTimeModel> stages(const std::vector<double>& per_layer,
                                   const std::vector<double>& extra, int64_t layers) {
  std::vector<StageTimeModel> result(per_layer.size());
  for (size_t s = 0; s < per_layer.size(); ++s) {
    result[s].layer_prefix.assign(1, 0.0);
    for (int64_t l = 0; l < layers; ++l) {
      result[s].layer_prefix.push_back(result[s].layer_prefix.back() + per_layer[s]);
    }
    result[s].extra_seconds = extra[s];
  }
  return result;
}

TEST_CASE("LayerBalance: balanced split gives the remainder to the middle stages") {
  CHECK(*balanced_split(32, 4, 1) == Split{8, 8, 8, 8});
  CHECK(*balanced_split(126, 16, 1) == Split{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7});
  CHECK(*balanced_split(10, 4, 1) == Split{2, 3, 3, 2});
  CHECK(*balanced_split(11, 4, 1) == Split{2, 3, 3, 3});
  // In units of 2 layers (two chunks per rank): 126 = 63 units over 16 stages.
  CHECK(*balanced_split(126, 16, 2) == Split{6, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8});
  CHECK_FALSE(balanced_split(7, 2, 2));  // Not a multiple of the granularity.
  CHECK_FALSE(balanced_split(3, 4, 1));  // Fewer layers than stages.
}

TEST_CASE("LayerBalance: chunked split is balanced in whole units, else uneven ends") {
  CHECK(*chunked_split(32, 4, 4) == Split{8, 8, 8, 8});       // Whole units: balanced_split.
  CHECK(*chunked_split(126, 16, 2) == *balanced_split(126, 16, 2));
  // Llama 3.1 405B at 8 chunks per rank (Meta's plan): 14 middle stages of 8, ends of 7.
  CHECK(*chunked_split(126, 16, 8) ==
        Split{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7});
  // k = ceil(94 / 32) = 3 units of 4 per middle stage; 94 - 72 = 22 for the ends.
  CHECK(*chunked_split(94, 8, 4) == Split{11, 12, 12, 12, 12, 12, 12, 11});
  // DeepSeek-V3's 61 layers: the last stage takes the larger half of the ends' 13.
  CHECK(*chunked_split(61, 8, 4) == Split{6, 8, 8, 8, 8, 8, 8, 7});
  CHECK(*chunked_split(32, 4, 5) == Split{6, 10, 10, 6});
  CHECK(*chunked_split(22, 8, 3) == Split{2, 3, 3, 3, 3, 3, 3, 2});  // Zero Bubble's rows.
  CHECK(*chunked_split(47, 2, 4) == Split{23, 24});                   // Two stages: ends only.
  // Whole units but fewer than the stages (63 of 2 layers on 64): the ends take one layer each.
  Split deep(64, 2);
  deep.front() = deep.back() = 1;
  CHECK(*chunked_split(126, 64, 2) == deep);
  CHECK_FALSE(chunked_split(32, 4, 6));   // Ends of 4 against middles of 12: over one unit.
  CHECK_FALSE(chunked_split(32, 4, 7));   // 2, 14, 14, 2.
  CHECK_FALSE(chunked_split(10, 8, 2));   // The middle stages alone need 12 layers.
  CHECK_FALSE(chunked_split(5, 1, 2));    // One stage has no ends to shorten.
}

TEST_CASE("LayerBalance: trimming moves units off the ends to the smallest other stage") {
  Split base{8, 8, 8, 8};
  CHECK(*trimmed_split(base, 1, 0, 1) == Split{7, 9, 8, 8});
  CHECK(*trimmed_split(base, 1, 1, 1) == Split{7, 9, 9, 7});
  CHECK(*trimmed_split(base, 2, 2, 1) == Split{6, 10, 10, 6});
  CHECK(*trimmed_split(base, 0, 1, 2) == Split{10, 8, 8, 6});  // The first stage may receive.
  // Two stages: the other end takes the layers; both ends at once has no recipient.
  CHECK(*trimmed_split(Split{5, 5}, 1, 0, 1) == Split{4, 6});
  CHECK_FALSE(trimmed_split(Split{5, 5}, 1, 1, 1));
  // Never below min_units.
  CHECK_FALSE(trimmed_split(Split{1, 3, 3, 1}, 1, 0, 1));
}

TEST_CASE("LayerBalance: time-balanced split puts more layers on faster stages") {
  // Stage 0 runs layers at 2 s, stage 1 at 1 s: 12 layers split 4 (8 s) and 8 (8 s).
  std::vector<StageTimeModel> model = stages({2, 1}, {0, 0}, 12);
  Split split = time_balanced_split(model, 12, 1).value();
  CHECK(split == Split{4, 8});
  CHECK(bottleneck_seconds(model, split) == 8);
  // An extra 3 s (the embedding) on stage 0 of four equal stages: it gets fewer layers.
  model = stages({1, 1, 1, 1}, {3, 0, 0, 0}, 16);
  split = time_balanced_split(model, 16, 1).value();
  CHECK(bottleneck_seconds(model, split) == 5);
  CHECK(split[0] == 2);
  // Granularity: stages hold multiples of 2 layers.
  model = stages({2, 1}, {0, 0}, 12);
  split = time_balanced_split(model, 12, 2).value();
  CHECK(split[0] % 2 == 0);
  CHECK(split[1] % 2 == 0);
  CHECK(bottleneck_seconds(model, split) == 8);
  // Every stage keeps at least one unit, even when one stage alone would be faster.
  model = stages({100, 1, 1}, {0, 0, 0}, 6);
  split = time_balanced_split(model, 6, 1).value();
  CHECK(split[0] == 1);
  CHECK(split[0] + split[1] + split[2] == 6);
}

TEST_CASE("LayerBalance: a stage's memory cap bounds its layers, and the split re-balances") {
  // Stage 1 is twice as fast (8 of 12 layers without caps) but its memory holds only 6 layers:
  // it takes 6 and stage 0 the other 6 (12 s, against 8 s without the cap).
  std::vector<StageTimeModel> model = stages({2, 1}, {0, 0}, 12);
  model[1].max_layers = 6;
  Split split = time_balanced_split(model, 12, 1).value();
  CHECK(split == Split{6, 6});
  CHECK(bottleneck_seconds(model, split) == 12);
  // A cap on the first stage too: 5 + 6 < 12 layers leaves no split.
  model[0].max_layers = 5;
  CHECK_FALSE(time_balanced_split(model, 12, 1).has_value());
  // Caps count whole units of the granularity: a cap of 5 with units of 2 layers holds 4.
  model = stages({2, 1}, {0, 0}, 12);
  model[1].max_layers = 5;
  split = time_balanced_split(model, 12, 2).value();
  CHECK(split == Split{8, 4});
}

}  // namespace
}  // namespace ppsim
