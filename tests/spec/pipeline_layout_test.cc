// Megatron-Core pipeline layouts: the grammar of pipeline_parallel_layer_layout.py and ppsim's
// checks against a plan and model, on layouts from Megatron's docs and Megatron-Bridge's
// recipes, counted by hand.
#include "simulator/spec/pipeline_layout.h"

#include <catch2/catch.hpp>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

std::vector<LayoutStage> parse(const std::string& text) {
  return parse_pipeline_layout(text, "--plan", "/pipeline_layout");
}

std::vector<int64_t> decoder_layers(const std::vector<LayoutStage>& stages) {
  std::vector<int64_t> layers;
  for (const LayoutStage& stage : stages) layers.push_back(stage.decoder_layers);
  return layers;
}

TEST_CASE("pipeline layout: DeepSeek-V3 on pp 8 x vpp 4 (Megatron-Bridge's 25.09 H100 recipe)") {
  // "Et|(tt|)*30mL": the embedding and 1 layer, 30 stages of 2, MTP and the loss alone.
  const std::vector<LayoutStage> stages = parse("Et|(tt|)*30mL");
  REQUIRE(stages.size() == 32);
  std::vector<int64_t> expected(32, 2);
  expected.front() = 1;
  expected.back() = 0;
  CHECK(decoder_layers(stages) == expected);
  CHECK(stages.front().embedding);
  CHECK_FALSE(stages.front().loss);
  CHECK(stages.back().loss);
  CHECK(stages.back().mtp_layers == 1);
  CHECK_FALSE(stages[5].embedding);
  CHECK(pipeline_layout_problem(stages, 8, 4, 61, 1, "deepseek-v3") == std::nullopt);
}

TEST_CASE("pipeline layout: commas are cosmetic, x*n and (...)*n repeat") {
  // Megatron-Bridge's Llama 3 70B on 64 H100s (fp8, pp 8 x vpp 5): rank 3 takes a third layer
  // in its last virtual stage, rank 7 gives one up beside the loss.
  const std::vector<LayoutStage> stages = parse("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL");
  REQUIRE(stages.size() == 40);
  CHECK(stages[35].decoder_layers == 3);
  CHECK(stages[39].decoder_layers == 1);
  CHECK(stages[39].loss);
  int64_t total = 0;
  for (const LayoutStage& stage : stages) total += stage.decoder_layers;
  CHECK(total == 80);
  CHECK(decoder_layers(parse("Ettt|tt,tL")) == decoder_layers(parse("Et*3|t*3L")));
  // Megatron drops commas first, so one may even sit before a count.
  CHECK(decoder_layers(parse("E(t|),*2t,*2L")) == std::vector<int64_t>{1, 1, 2});
  // An empty stage is a stage ("E||t|L": four).
  CHECK(decoder_layers(parse("E||t|L")) == std::vector<int64_t>{0, 0, 1, 0});
}

TEST_CASE("pipeline layout: stage count, layers and MTP checked against the plan and model") {
  const std::vector<LayoutStage> stages = parse("Et*4|t*4|t*4|t*4L");
  CHECK(pipeline_layout_problem(stages, 4, 1, 16, 0, "m") == std::nullopt);
  CHECK(pipeline_layout_problem(stages, 2, 2, 16, 0, "m") == std::nullopt);
  CHECK_THAT(*pipeline_layout_problem(stages, 3, 1, 16, 0, "m"),
             Catch::Contains("4 virtual stages, not a multiple of pp=3"));
  CHECK_THAT(
      *pipeline_layout_problem(stages, 2, 1, 16, 0, "m"),
      Catch::Contains("2 per rank, and the plan runs 1 per rank") && Catch::Contains("vpp=2"));
  CHECK_THAT(*pipeline_layout_problem(stages, 4, 1, 17, 0, "m"),
             Catch::Contains("places 16 decoder layers (t) but m has 17"));
  CHECK_THAT(*pipeline_layout_problem(stages, 4, 1, 16, 1, "m"),
             Catch::Contains("places 0 MTP layers (m) but m has 1"));
  // Megatron's docstring example puts MTP on its own stage before the loss's (rank 14 of 16):
  // Megatron runs it, ppsim does not model it and says so.
  const std::vector<LayoutStage> standalone = parse("Ettt|(tt|)*29,m|L");
  REQUIRE(standalone.size() == 32);
  CHECK_THAT(*pipeline_layout_problem(standalone, 16, 2, 61, 1, "deepseek-v3"),
             Catch::Contains("virtual stage 30 holds MTP layers (m) but not the loss"));
  // Empty virtual stages anywhere, as Megatron allows: rank 1 of 4 holds nothing at all, or
  // on pp 2 x vpp 2 the last rank's first stage is empty.
  CHECK(pipeline_layout_problem(parse("E||t|L"), 4, 1, 1, 0, "m") == std::nullopt);
  CHECK(pipeline_layout_problem(parse("E||t|L"), 2, 2, 1, 0, "m") == std::nullopt);
}

TEST_CASE("pipeline layout: GLM-5.2 on pp 13 x vpp 2 keeps five middle virtual stages empty") {
  // Megatron-Bridge's GLM-5.2 H100 recipe (recipes/glm/h100/glm5.py, _GLM52_VPP2_LAYOUT): 78
  // layers and one MTP layer in 26 virtual stages; stages 2, 7, 12, 17 and 22 are empty (ranks
  // 2, 7, 12, 4 and 9), "to keep every four-layer index-sharing group intact".
  const std::vector<LayoutStage> stages = parse(
      "Et|t||tttt|tttt|tttt|tttt||tttt|tttt|tttt|tttt||tttt|tttt|tttt|tttt||tttt|tttt|tttt|"
      "tttt||tttt|tttt|ttttmL");
  REQUIRE(stages.size() == 26);
  for (size_t i : {2, 7, 12, 17, 22}) CHECK(stages[i].decoder_layers == 0);
  CHECK(stages[0].decoder_layers == 1);
  CHECK(stages[1].decoder_layers == 1);
  CHECK(stages[25].mtp_layers == 1);
  // Rank r holds stages r and r + 13: rank 0 1 + 4, rank 1 1 + 4, rank 2 0 + 4, rank 4 4 + 0,
  // rank 12 (the last) 0 + 4 with the MTP layer and the loss.
  const std::vector<int64_t> ranks = rank_decoder_layers(stages, 13);
  CHECK(ranks == std::vector<int64_t>{5, 5, 4, 8, 4, 8, 8, 4, 8, 4, 8, 8, 4});
  CHECK(pipeline_layout_problem(stages, 13, 2, 78, 1, "glm-5.2") == std::nullopt);
}

TEST_CASE("pipeline layout: bad strings are errors that name the place") {
  auto error_of = [](const std::string& text) {
    try {
      parse(text);
    } catch (const InputError& error) {
      CHECK(error.source() == "--plan");
      CHECK(error.json_path() == "/pipeline_layout");
      return error.message();
    }
    FAIL("no error for " << text);
    return std::string();
  };
  CHECK_THAT(error_of("Ex*4L"), Catch::Contains("'x' at 1 is not a layout symbol"));
  CHECK_THAT(error_of("E(t*4|t*4L"), Catch::Contains("'(' at 1 is never closed"));
  CHECK_THAT(error_of("E(t|(t|)*2)*2L"), Catch::Contains("groups do not nest"));
  CHECK_THAT(error_of("E(t*4|)L"), Catch::Contains("the group at 1 needs a count"));
  CHECK_THAT(error_of("Et*|tL"), Catch::Contains("'*' at 2 needs a count"));
  CHECK_THAT(error_of("E*2t"), Catch::Contains("the embedding (E) must be the first symbol"));
  CHECK_THAT(error_of("*2EtL"), Catch::Contains("'*' at 0 follows no symbol"));
  CHECK_THAT(error_of("Et)L"), Catch::Contains("')' at 2 has no '('"));
  CHECK_THAT(error_of("tEL"), Catch::Contains("the embedding (E) must be the first symbol"));
  CHECK_THAT(error_of("Et|t"), Catch::Contains("must end with the loss (L)"));
  CHECK_THAT(error_of("EtL|t"), Catch::Contains("the loss (L) must be the last symbol"));
  CHECK_THAT(error_of("Etmt|L"), Catch::Contains("decoder layers (t) must come before the MTP"));
  CHECK_THAT(error_of("Et*99999999L"), Catch::Contains("the count at 3 is above 1000000"));
  CHECK_THAT(error_of("E(t*1000|)*2000L"), Catch::Contains("expands to more than 1000000"));
  CHECK_THAT(error_of(""), Catch::Contains("must start with the embedding (E)"));
  // Positions count without the commas, and the message quotes that text.
  CHECK_THAT(error_of("Et,t,x|tL"), Catch::Contains("pipeline layout 'Ettx|tL': 'x' at 3"));
}

}  // namespace
}  // namespace ppsim
