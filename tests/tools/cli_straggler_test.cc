// Stragglers from the command line: simulate's Monte-Carlo and sensitivity fields, plan's p90
// objective with --straggler, and bad specs (exit status 2 naming the flag or JSON path).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

constexpr const char* kSimulate =
    "simulate --model llama3.2-1b --cluster dgx-h100-4 --plan tp=8,pp=4,dp=1,mbs=1,gbs=16";

TEST_CASE("CLI stragglers: simulate --iterations adds percentiles and fault costs") {
  std::string arguments = std::string(kSimulate) +
                          " --straggler node=2:0.8 --straggler link=0-1:0.5:+20 "
                          "--jitter lognormal:0.05 --iterations 30 --json";
  testing::CommandResult result = run_ppsim(arguments);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  const nlohmann::json& percentiles = json["step_time_percentiles_s"];
  for (const char* key : {"p50", "p90", "p99", "mean"}) {
    INFO(key);
    CHECK(percentiles.contains(key));
  }
  CHECK(percentiles["p50"].get<double>() <= percentiles["p90"].get<double>());
  CHECK(percentiles["p90"].get<double>() <= percentiles["p99"].get<double>());
  CHECK(json["iterations"] == 30);
  const nlohmann::json& costs = json["straggler_cost_s"];
  REQUIRE(costs.size() == 3);
  CHECK(costs[0]["fault"] == "node=2:0.8");
  CHECK(costs[1]["fault"] == "link=0-1:0.5:+20");
  CHECK(costs[2]["fault"] == "jitter=lognormal:0.05");
  for (const nlohmann::json& cost : costs) CHECK(cost["cost_s"].get<double>() > 0);
  // Deterministic: the same command prints the same bytes; another seed other numbers.
  CHECK(run_ppsim(arguments).out == result.out);
  testing::CommandResult other = run_ppsim(arguments + " --seed 9");
  CHECK(nlohmann::json::parse(other.out)["step_time_percentiles_s"] != percentiles);
  // The text report prints them too, before the footer.
  testing::CommandResult text =
      run_ppsim(std::string(kSimulate) + " --straggler node=2:0.8 --iterations 5");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("step_time_p90_s") != std::string::npos);
  CHECK(text.out.find("node=2:0.8") != std::string::npos);
  CHECK(text.out.rfind("# OK") > text.out.find("step_time_p90_s"));
}

TEST_CASE("CLI stragglers: without stragglers the report is unchanged") {
  testing::CommandResult plain = run_ppsim(std::string(kSimulate) + " --json");
  REQUIRE(plain.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(plain.out);
  CHECK_FALSE(json.contains("step_time_percentiles_s"));
  CHECK_FALSE(json.contains("sensitivity"));
}

TEST_CASE("CLI stragglers: --sensitivity lists components worst first") {
  testing::CommandResult result = run_ppsim(std::string(kSimulate) + " --sensitivity --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  const nlohmann::json& entries = json["sensitivity"];
  REQUIRE(entries.size() >= 6);
  for (size_t i = 1; i < entries.size(); ++i) {
    CHECK(entries[i - 1]["step_time_increase_pct"].get<double>() >=
          entries[i]["step_time_increase_pct"].get<double>());
  }
  CHECK(entries[0].contains("component"));
  testing::CommandResult text = run_ppsim(std::string(kSimulate) + " --sensitivity");
  CHECK(text.out.find("# sensitivity") != std::string::npos);
}

TEST_CASE("CLI stragglers: a cluster spec's stragglers are used, its zoo example included") {
  testing::CommandResult result = run_ppsim(
      "simulate --model llama3.2-1b --cluster dgx-h100-4-stragglers "
      "--plan tp=8,pp=4,dp=1,mbs=1,gbs=16 --iterations 20 --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["stragglers"].size() == 3);
  CHECK(json["straggler_cost_s"].size() == 3);
}

TEST_CASE("CLI stragglers: plan --objective p90 with a slow node") {
  testing::CommandResult result = run_ppsim(
      "plan --model llama3.2-1b --cluster dgx-h100-1 --global-batch 16 --seq-len 2048 --top 3 "
      "--objective p90 --straggler gpu=7:0.5 --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["objective"] == "p90");
  CHECK(json["objective_note"].get<std::string>().find("gpu=7:0.5") != std::string::npos);
}

TEST_CASE("CLI stragglers: bad specs exit 2 naming the flag or JSON path and the form") {
  struct Bad {
    std::string arguments;
    std::string expected;
  };
  std::string base = kSimulate;
  std::vector<Bad> cases = {
      {base + " --straggler gpu=99:0.5", "--straggler: 'gpu=99:0.5': GPU rank 99 does not exist"},
      {base + " --straggler gpu=1:2", "expected gpu=RANK:FACTOR"},
      {base + " --straggler link=0-1", "expected gpu=RANK:FACTOR"},
      {base + " --straggler node=9:0.5", "nodes 0-3"},
      {base + " --jitter gaussian:0.1", "expected lognormal:SIGMA"},
      {base + " --iterations 0", "--iterations"},
      {"simulate --model llama3.2-1b --cluster " +
           testing::test_data("bad/cluster_bad_straggler.json") +
           " --plan tp=8,pp=2,dp=1,mbs=1,gbs=16",
       "/stragglers/0/factr: unknown key 'factr' (did you mean 'factor'?)"},
      {"plan --model llama3.2-1b --cluster dgx-h100-1 --objective p90 --straggler gpu=1",
       "--straggler"},
  };
  for (const Bad& bad : cases) {
    INFO(bad.arguments);
    testing::CommandResult result = run_ppsim(bad.arguments);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find(bad.expected) != std::string::npos);
    CHECK(result.err.find("ppsim: error: ") == 0);
  }
}

}  // namespace
}  // namespace ppsim
