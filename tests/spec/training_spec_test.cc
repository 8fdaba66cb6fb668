// TrainingSpec: token counts with suffixes, the "training" object in a plan, the checkpoint
// interval, and the errors (each names the flag or the JSON path).
#include "simulator/spec/training_spec.h"

#include <catch2/catch.hpp>

#include "simulator/spec/error.h"
#include "simulator/spec/plan.h"

namespace ppsim {
namespace {

std::string token_error(const std::string& text) {
  try {
    parse_token_count(text, "--train-tokens");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

std::string plan_error(const std::string& text) {
  try {
    parse_plan(text, "p.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("Token counts: plain integers and decimal suffixes, exactly") {
  CHECK(parse_token_count("15.6T", "t") == 15'600'000'000'000);
  CHECK(parse_token_count("300B", "t") == 300'000'000'000);
  CHECK(parse_token_count("2.87T", "t") == 2'870'000'000'000);
  CHECK(parse_token_count("252M", "t") == 252'000'000);
  CHECK(parse_token_count("1.5K", "t") == 1500);
  CHECK(parse_token_count("2G", "t") == 2'000'000'000);
  CHECK(parse_token_count("15.6t", "t") == 15'600'000'000'000);
  CHECK(parse_token_count("1000000", "t") == 1'000'000);
  CHECK(parse_token_count("0.5M", "t") == 500'000);
}

TEST_CASE("Token counts: bad input names the flag and says how to write one") {
  CHECK_THAT(token_error("15.6X"), Catch::Contains("--train-tokens: '15.6X' is not a token count: "
                                                   "unexpected 'X'"));
  CHECK_THAT(token_error("15.6X"), Catch::Contains("e.g. 15.6T, 300B"));
  CHECK_THAT(token_error(""), Catch::Contains("it is empty"));
  CHECK_THAT(token_error("T"), Catch::Contains("does not start with a number"));
  CHECK_THAT(token_error("-5"), Catch::Contains("does not start with a number"));
  CHECK_THAT(token_error("0"), Catch::Contains("it is zero"));
  CHECK_THAT(token_error("1.5"), Catch::Contains("a fraction needs a suffix"));
  CHECK_THAT(token_error("1.2345K"), Catch::Contains("not a whole number"));
  CHECK_THAT(token_error("10TB"), Catch::Contains("unexpected 'TB'"));
  CHECK_THAT(token_error("99999999T"), Catch::Contains("too large"));
}

TEST_CASE("Checkpoint interval: daly, young or steps") {
  TrainingSpec spec;
  parse_checkpoint_interval("young", spec, "--checkpoint-interval");
  CHECK(spec.interval_rule == IntervalRule::kYoung);
  parse_checkpoint_interval("500", spec, "--checkpoint-interval");
  CHECK(spec.interval_rule == IntervalRule::kSteps);
  CHECK(spec.interval_steps == 500);
  parse_checkpoint_interval("daly", spec, "--checkpoint-interval");
  CHECK(spec.interval_rule == IntervalRule::kDaly);
  CHECK_THROWS_WITH(parse_checkpoint_interval("dally", spec, "--checkpoint-interval"),
                    Catch::Contains("--checkpoint-interval: unknown checkpoint interval 'dally'") &&
                        Catch::Contains("did you mean 'daly'"));
  CHECK_THROWS_WITH(parse_checkpoint_interval("0", spec, "--checkpoint-interval"),
                    Catch::Contains("a positive number of steps"));
}

TEST_CASE("Plan spec: a training object with a batch ramp") {
  Plan plan = parse_plan(R"({"gbs": 2048, "training": {"tokens": "15.6T",
      "batch_ramp": [{"tokens": "252M", "global_batch_size": 512, "seq_length": 4096},
                     {"tokens": 2618000000000, "global_batch_size": 1024}],
      "checkpoint_interval": 1000}})",
                         "p.json");
  REQUIRE(plan.training);
  const TrainingSpec& training = *plan.training;
  CHECK(training.tokens == 15'600'000'000'000);
  REQUIRE(training.batch_ramp.size() == 2);
  CHECK(training.batch_ramp[0].tokens == 252'000'000);
  CHECK(training.batch_ramp[0].global_batch_size == 512);
  CHECK(training.batch_ramp[0].seq_length == 4096);
  CHECK(training.batch_ramp[1].tokens == 2'618'000'000'000);
  CHECK_FALSE(training.batch_ramp[1].seq_length);
  CHECK(training.interval_rule == IntervalRule::kSteps);
  CHECK(training.interval_steps == 1000);
  // plan_to_json writes it back in a form parse_plan reads.
  Plan again = parse_plan(plan_to_json(plan), "again");
  REQUIRE(again.training);
  CHECK(again.training->tokens == training.tokens);
  CHECK(again.training->batch_ramp.size() == 2);
  CHECK(again.training->interval_steps == 1000);
  // Without it, a plan has none.
  CHECK_FALSE(parse_plan("gbs=8", "inline").training);
}

TEST_CASE("Plan spec: training errors name the JSON path") {
  CHECK_THAT(plan_error(R"({"gbs": 8, "training": {}})"),
             Catch::Contains("p.json: /training: required key 'tokens' is missing"));
  CHECK_THAT(plan_error(R"({"gbs": 8, "training": {"tokens": "1.2.3T"}})"),
             Catch::Contains("p.json: /training/tokens: '1.2.3T' is not a token count"));
  CHECK_THAT(plan_error(R"({"gbs": 8, "training": {"tokens": -3}})"),
             Catch::Contains("/training/tokens"));
  CHECK_THAT(plan_error(R"({"gbs": 8, "training": {"tokens": 100, "batch_ramp":
      [{"tokens": 200, "global_batch_size": 4}]}})"),
             Catch::Contains("/training/batch_ramp: the ramp's phases hold 200 tokens, more than "
                             "the run's 100"));
  CHECK_THAT(plan_error(R"({"gbs": 8, "training": {"tokens": 100, "batch_ramp":
      [{"tokens": 10}]}})"),
             Catch::Contains("/training/batch_ramp/0/global_batch_size"));
  CHECK_THAT(plan_error(R"({"gbs": 8, "training": {"tokens": 100, "token": 5}})"),
             Catch::Contains("/training/token"));
  CHECK_THAT(
      plan_error(R"({"gbs": 8, "training": {"tokens": 100, "checkpoint_interval": "yung"}})"),
      Catch::Contains("/training/checkpoint_interval: unknown checkpoint interval 'yung'"));
  CHECK_THAT(plan_error(R"({"gbs": 8, "training": 5})"), Catch::Contains("/training"));
}

}  // namespace
}  // namespace ppsim
