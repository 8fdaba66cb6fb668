// Time to train from the command line: simulate --train-tokens (every JSON field, the text
// section, the Monte-Carlo by seed, a plan's "training" object), plan --train-tokens with the
// time-to-train and cost objectives, and bad input (exit status 2 naming the flag or path).
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

constexpr const char* kSimulate =
    "simulate --model llama3.2-1b --cluster dgx-h100-4 --plan tp=8,pp=4,dp=1,mbs=1,gbs=16";

TEST_CASE("CLI time to train: simulate --train-tokens prints every field") {
  testing::CommandResult result = run_ppsim(std::string(kSimulate) + " --train-tokens 300B --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  REQUIRE(json.contains("time_to_train"));
  const nlohmann::json& run = json["time_to_train"];
  for (const char* key : {"steps", "tokens", "step_time_s", "compute_days", "checkpoint",
                          "failures", "goodput", "wall_days", "gpu_hours", "cost_usd"}) {
    INFO(key);
    CHECK(run.contains(key));
  }
  for (const char* key :
       {"bytes_per_rank", "bytes_total", "save_s", "blocking_s", "interval_s", "count"}) {
    INFO(key);
    CHECK(run["checkpoint"].contains(key));
  }
  for (const char* key : {"expected", "rate_per_day", "lost_s", "restart_s"}) {
    INFO(key);
    CHECK(run["failures"].contains(key));
  }
  CHECK_FALSE(run.contains("wall_days_p50"));  // Only with --iterations.
  CHECK_FALSE(run.contains("phases"));         // Only with a batch ramp.
  // 300e9 tokens / (16 x 8192 per step) = 2,288,818.4 -> 2,288,819 steps.
  CHECK(run["tokens"] == 300'000'000'000);
  CHECK(run["steps"] == 2'288'819);
  CHECK(run["step_time_s"].get<double>() == json["iteration_time_s"].get<double>());
  CHECK(run["compute_days"].get<double>() ==
        Approx(2'288'819 * json["iteration_time_s"].get<double>() / 86400).epsilon(1e-12));
  CHECK(run["goodput"].get<double>() > 0.9);
  CHECK(run["goodput"].get<double>() < 1);
  CHECK(run["wall_days"].get<double>() > run["compute_days"].get<double>());
  // 32 GPUs at 2.9 $/h.
  CHECK(run["cost_usd"].get<double>() ==
        Approx(run["gpu_hours"].get<double>() * 2.9).epsilon(1e-9));
  // Without --train-tokens the report has no such key.
  nlohmann::json plain = nlohmann::json::parse(run_ppsim(std::string(kSimulate) + " --json").out);
  CHECK_FALSE(plain.contains("time_to_train"));
  // The text section, before the footer.
  testing::CommandResult text = run_ppsim(std::string(kSimulate) + " --train-tokens 300B");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("# time to train 300.00 B tokens: daly interval"));
  CHECK_THAT(text.out, Catch::Contains("wall_days"));
  CHECK(text.out.rfind("# OK") > text.out.find("goodput"));
}

TEST_CASE("CLI time to train: --iterations adds p50/p90, the same for the same seed") {
  std::string arguments = std::string(kSimulate) + " --train-tokens 300B --iterations 40 --json";
  testing::CommandResult result = run_ppsim(arguments);
  REQUIRE(result.exit_code == 0);
  nlohmann::json run = nlohmann::json::parse(result.out)["time_to_train"];
  REQUIRE(run.contains("wall_days_p50"));
  CHECK(run["wall_days_p50"].get<double>() <= run["wall_days_p90"].get<double>());
  CHECK(run["wall_days_p50"].get<double>() > run["compute_days"].get<double>());
  CHECK(run_ppsim(arguments).out == result.out);
  nlohmann::json other =
      nlohmann::json::parse(run_ppsim(arguments + " --seed 5").out)["time_to_train"];
  CHECK(other["wall_days_p90"] != run["wall_days_p90"]);
  CHECK(other["wall_days"] == run["wall_days"]);  // The expectation does not depend on the seed.
}

TEST_CASE("CLI time to train: a plan's training object with a ramp and an interval") {
  std::string path = testing::temp_path("ttt_plan.json");
  std::ofstream(path) << R"({"tp": 8, "pp": 4, "dp": 1, "mbs": 1, "gbs": 16,
    "training": {"tokens": "10B", "checkpoint_interval": 500,
                 "batch_ramp": [{"tokens": "1B", "global_batch_size": 8, "seq_length": 4096}]}})";
  testing::CommandResult result =
      run_ppsim("simulate --model llama3.2-1b --cluster dgx-h100-4 --plan " + path + " --json");
  std::remove(path.c_str());
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  const nlohmann::json& run = json["time_to_train"];
  REQUIRE(run["phases"].size() == 2);
  // 1e9 / (8 x 4096) = 30,517.6 -> 30,518 steps; 9e9 / (16 x 8192) = 68,664.6 -> 68,665.
  CHECK(run["phases"][0]["steps"] == 30518);
  CHECK(run["phases"][0]["seq_length"] == 4096);
  CHECK(run["phases"][1]["steps"] == 68665);
  CHECK(run["steps"] == 30518 + 68665);
  CHECK(run["phases"][0]["step_time_s"].get<double>() <
        run["phases"][1]["step_time_s"].get<double>());
  CHECK(run["checkpoint"]["interval_s"].get<double>() ==
        Approx(500 * run["step_time_s"].get<double>()).epsilon(1e-12));
}

TEST_CASE("CLI time to train: plan --train-tokens --objective time-to-train and cost") {
  const std::string plan =
      "plan --model llama3.2-1b --cluster dgx-h100-4 --global-batch 32 "
      "--top 3 --schedule 1f1b --train-tokens 100B";
  testing::CommandResult result = run_ppsim(plan + " --objective time-to-train --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["objective"] == "time-to-train");
  REQUIRE(json["plans"].size() == 3);
  double previous = 0;
  for (const nlohmann::json& entry : json["plans"]) {
    const nlohmann::json& run = entry["time_to_train"];
    // The objective is the expected wall days, best first.
    CHECK(entry["objective"].get<double>() == run["wall_days"].get<double>());
    CHECK(run["wall_days"].get<double>() >= previous);
    previous = run["wall_days"].get<double>();
  }
  CHECK_THAT(json["plans"][0]["why"].get<std::string>(), Catch::Contains("fewest wall days"));
  // Text: wall days, goodput and run cost per plan.
  testing::CommandResult text = run_ppsim(plan + " --objective time-to-train");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("(days)"));
  CHECK_THAT(text.out, Catch::Contains("goodput"));
  CHECK_THAT(text.out, Catch::Contains("# run      100.00 B tokens"));
  // Cost: the whole run's dollars, the same price.
  nlohmann::json cost = nlohmann::json::parse(run_ppsim(plan + " --objective cost --json").out);
  for (const nlohmann::json& entry : cost["plans"]) {
    CHECK(entry["objective"].get<double>() ==
          Approx(entry["time_to_train"]["cost_usd"].get<double>()));
  }
  // The time objective lists the run too.
  nlohmann::json by_time = nlohmann::json::parse(run_ppsim(plan + " --json").out);
  CHECK(by_time["plans"][0].contains("time_to_train"));
}

TEST_CASE("CLI time to train: bad input exits 2 naming the flag") {
  auto error = [](const std::string& arguments) {
    testing::CommandResult result = run_ppsim(arguments);
    CHECK(result.exit_code == 2);
    return result.err;
  };
  CHECK_THAT(error(std::string(kSimulate) + " --train-tokens 15.6X"),
             Catch::Contains("ppsim: error: --train-tokens: '15.6X' is not a token count"));
  CHECK_THAT(error(std::string(kSimulate) + " --train-tokens 0"),
             Catch::Contains("--train-tokens: '0' is not a token count: it is zero"));
  CHECK_THAT(error(std::string(kSimulate) + " --checkpoint-interval young"),
             Catch::Contains("--checkpoint-interval: needs a run to checkpoint"));
  CHECK_THAT(error(std::string(kSimulate) + " --train-tokens 1T --checkpoint-interval often"),
             Catch::Contains("--checkpoint-interval: unknown checkpoint interval 'often'"));
  CHECK_THAT(error("plan --model llama3.2-1b --cluster dgx-h100-4 --objective time-to-train"),
             Catch::Contains("--objective: time-to-train ranks plans by the wall days of a whole "
                             "run: give --train-tokens N"));
  CHECK_THAT(error("plan --model llama3.2-1b --cluster dgx-h100-4 --objective time-to-trian"),
             Catch::Contains("did you mean 'time-to-train'"));
  CHECK_THAT(error("plan --model llama3.2-1b --cluster dgx-h100-4 --train-tokens 1.5"),
             Catch::Contains("--train-tokens: '1.5' is not a token count"));
}

}  // namespace
}  // namespace ppsim
