// Chunk layout: chunk -> rank and chunk -> layers for every placement, by hand.
#include "simulator/model/chunk_layout.h"

#include <catch2/catch.hpp>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

Plan plan_of(ScheduleKind kind, int64_t pp, int64_t vpp, std::vector<int64_t> stage_layers = {}) {
  Plan plan;
  plan.pp = pp;
  plan.vpp = vpp;
  plan.schedule = kind;
  plan.global_batch_size = 64;
  plan.stage_layers = std::move(stage_layers);
  return plan;
}

TEST_CASE("ChunkLayout: one chunk per rank follows the stage split") {
  ModelSpec model = testing::uniform_model(10);
  ChunkLayout layout = chunk_layout(plan_of(ScheduleKind::kOneFOneB, 3, 1, {3, 4, 3}), model);
  CHECK(layout.chunk_rank == std::vector<int64_t>{0, 1, 2});
  CHECK(layout.chunk_first_layer == std::vector<int64_t>{0, 3, 7});
  CHECK(layout.chunk_layers == std::vector<int64_t>{3, 4, 3});
  CHECK(layout.loss_rank() == 2);
  CHECK(layout.rank_chunks(1) == std::vector<int64_t>{1});
}

TEST_CASE("ChunkLayout: interleaved loop placement") {
  // 16 layers, pp 2, vpp 2: stage 0 holds 8 layers as chunks 0 and 2 of 4 layers each.
  ModelSpec model = testing::uniform_model(16);
  ChunkLayout layout = chunk_layout(plan_of(ScheduleKind::kInterleaved1F1B, 2, 2), model);
  CHECK(layout.chunk_rank == std::vector<int64_t>{0, 1, 0, 1});
  CHECK(layout.chunk_local_index == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(layout.chunk_first_layer == std::vector<int64_t>{0, 4, 8, 12});
  CHECK(layout.rank_chunks(0) == std::vector<int64_t>{0, 2});
  CHECK(layout.loss_rank() == 1);
}

TEST_CASE("ChunkLayout: V placement puts the loss on rank 0") {
  // 12 layers on pp 3 as stage splits 4/4/4, two chunks of 2 each: chunks 0,1,2 on ranks 0,1,2,
  // chunks 3,4,5 on ranks 2,1,0.
  ModelSpec model = testing::uniform_model(12);
  ChunkLayout layout = chunk_layout(plan_of(ScheduleKind::kZbv, 3, 2), model);
  CHECK(layout.chunk_rank == std::vector<int64_t>{0, 1, 2, 2, 1, 0});
  CHECK(layout.chunk_local_index == std::vector<int64_t>{0, 0, 0, 1, 1, 1});
  CHECK(layout.chunk_layers == std::vector<int64_t>{2, 2, 2, 2, 2, 2});
  CHECK(layout.chunk_first_layer == std::vector<int64_t>{0, 2, 4, 6, 8, 10});
  CHECK(layout.loss_rank() == 0);
  CHECK(layout.rank_chunks(0) == std::vector<int64_t>{0, 5});
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("ChunkLayout: a stage's layers spread as evenly as they go over its chunks") {
  // DeepSeek-V3's 61 layers (no MTP) on pp 8 x vpp 4: the default split gives 7 to the first
  // stage, 8 to the middle ones and 6 to the last (the loss takes a slot); a 7-layer stage holds
  // 2, 2, 2, 1 in its four chunks.
  ModelSpec model = testing::uniform_model(61);
  Plan plan = parse_plan("pp=8,vpp=4,gbs=64,schedule=interleaved-1f1b", "--plan");
  ChunkLayout layout = chunk_layout(plan, model);
  CHECK(layout.stage_layers == std::vector<int64_t>{7, 8, 8, 8, 8, 8, 8, 6});
  std::vector<int64_t> rank0;
  for (int64_t c : layout.rank_chunks(0)) rank0.push_back(layout.chunk_layers[c]);
  CHECK(rank0 == std::vector<int64_t>{2, 2, 2, 1});
  int64_t total = 0;
  for (int64_t layers : layout.chunk_layers) total += layers;
  CHECK(total == 61);
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("ChunkLayout: a pipeline layout sets every chunk's layers") {
  // DeepSeek-V3's 61 layers as Megatron-Bridge's H100 recipe lays them on pp 8 x vpp 4:
  // "Et|(tt|)*30mL". Rank 0 holds chunks 0, 8, 16, 24: 1 + 2 + 2 + 2; rank 7 chunks 7, 15, 23
  // and 31: 2 + 2 + 2 + 0 (the MTP layer and the loss).
  ModelSpec model = testing::uniform_model(61);
  model.mtp_layers = 1;
  Plan plan = parse_plan("pp=8,gbs=64,pipeline_layout=Et|(tt|)*30mL", "--plan");
  CHECK(plan.vpp == 4);
  CHECK(plan.schedule == ScheduleKind::kInterleaved1F1B);
  ChunkLayout layout = chunk_layout(plan, model);
  REQUIRE(layout.num_chunks() == 32);
  CHECK(layout.stage_layers == std::vector<int64_t>{7, 8, 8, 8, 8, 8, 8, 6});
  CHECK(layout.chunk_layers.front() == 1);
  CHECK(layout.chunk_layers[1] == 2);
  CHECK(layout.chunk_layers.back() == 0);
  CHECK(layout.chunk_first_layer[1] == 1);
  CHECK(layout.chunk_first_layer.back() == 61);
  CHECK(layout.loss_rank() == 7);
  CHECK(layout.rank_chunks(7) == std::vector<int64_t>{7, 15, 23, 31});
}

}  // namespace
}  // namespace ppsim
