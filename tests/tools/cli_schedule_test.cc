// `ppsim schedule` end to end: the JSON fields, the text report, the SVG and trace files, the
// memory-limit warning, and exit status 2 with a clear message for bad input.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using Catch::Matchers::Contains;
using testing::run_ppsim;

nlohmann::json run_json(const std::string& arguments) {
  testing::CommandResult result = run_ppsim("schedule " + arguments + " --json");
  INFO(arguments << "\n" << result.err);
  REQUIRE(result.exit_code == 0);
  return nlohmann::json::parse(result.out);
}

TEST_CASE("CLI schedule: --microbatch-group keeps the makespan and raises the peak") {
  const std::string base =
      "--stages 4 --microbatches 8 --schedule interleaved-1f1b --vpp 2 --tf 1 --tb 2 --tw 0 "
      "--comm 0.1";
  nlohmann::json plain = run_json(base);
  nlohmann::json grouped = run_json(base + " --microbatch-group 8");
  CHECK(plain["microbatch_group"] == 4);
  CHECK(grouped["microbatch_group"] == 8);
  CHECK(grouped["makespan"].get<double>() == Approx(plain["makespan"].get<double>()));
  // Stage 0 warms up (p-1)*2 + (v-1)*g forwards: 10 against 6 chunk-microbatches, one more
  // before its first backward; whole-rank units are halves (v = 2): 5.5 and 7.5.
  CHECK(plain["stages"][0]["peak_microbatches"] == 5.5);
  CHECK(grouped["stages"][0]["peak_microbatches"] == 7.5);
  CHECK(run_json(
            "--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1")["microbatch_group"]
            .is_null());
  testing::CommandResult short_group = run_ppsim("schedule " + base + " --microbatch-group 6");
  CHECK(short_group.exit_code == 2);
  CHECK_THAT(short_group.err, Catch::Contains("leave a last group of 2, fewer than pp=4"));
  testing::CommandResult not_interleaved = run_ppsim(
      "schedule --stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1 "
      "--microbatch-group 4");
  CHECK(not_interleaved.exit_code == 2);
  CHECK_THAT(not_interleaved.err, Catch::Contains("--microbatch-group"));
}

TEST_CASE("CLI schedule: --json fields for 1F1B, p = 4, m = 8") {
  nlohmann::json json =
      run_json("--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1");
  CHECK(json["schedule"] == "1f1b");
  CHECK(json["stages_count"] == 4);
  CHECK(json["microbatches"] == 8);
  CHECK(json["vpp"] == 1);
  CHECK(json["split_backward"] == false);
  CHECK(json["makespan"] == 33.0);  // (m + p - 1)(tf + tb + tw).
  CHECK(json["bubble_ratio"].get<double>() == Approx(3.0 / 11.0).epsilon(1e-12));
  CHECK(json["mem_limit"].is_null());
  CHECK(json["mem_limit_exceeded"] == false);
  CHECK(json["warnings"].empty());
  REQUIRE(json["stages"].size() == 4);
  const char* orders[] = {"FFFFBFBFBFBFBBBB", "FFFBFBFBFBFBFBBB", "FFBFBFBFBFBFBFBB",
                          "FBFBFBFBFBFBFBFB"};
  for (int r = 0; r < 4; ++r) {
    const nlohmann::json& stage = json["stages"][r];
    CHECK(stage["stage"] == r);
    CHECK(stage["busy"] == 24.0);
    CHECK(stage["bubble"] == 9.0);
    CHECK(stage["peak_microbatches"] == 4.0 - r);
    CHECK(stage["order"] == orders[r]);
    for (const char* key : {"tf", "tb", "tw", "span_bubble", "first_start", "last_end",
                            "peak_memory", "over_limit"}) {
      CHECK(stage.contains(key));
    }
  }
}

TEST_CASE("CLI schedule: zero-bubble schedules and interleaving") {
  nlohmann::json h1 = run_json("--stages 4 --microbatches 8 --schedule zb-h1 --tf 1 --tb 1 --tw 1");
  CHECK(h1["makespan"] == 27.0);
  CHECK(h1["split_backward"] == true);
  for (const nlohmann::json& stage : h1["stages"]) CHECK(stage["bubble"] == 3.0);
  nlohmann::json h2 = run_json("--stages 4 --microbatches 8 --schedule zb-h2 --tf 1 --tb 1 --tw 1");
  for (const nlohmann::json& stage : h2["stages"]) {
    CHECK(stage["span_bubble"] == 0.0);
    CHECK(stage["peak_microbatches"] == 7.0);
  }
  nlohmann::json v2 = run_json(
      "--stages 4 --microbatches 8 --schedule interleaved-1f1b --vpp 2 --tf 1 --tb 2 --tw 0");
  CHECK(v2["vpp"] == 2);
  CHECK(v2["makespan"] == 28.5);
  CHECK(v2["stages"][0]["bubble"] == 4.5);  // 1F1B's 9, halved.
}

TEST_CASE("CLI schedule: V-shaped schedules run") {
  // ZBV with tf = tb = tw: every rank busy from its first to its last action.
  nlohmann::json zbv = run_json("--stages 4 --microbatches 8 --schedule zbv --tf 1 --tb 1 --tw 1");
  CHECK(zbv["vpp"] == 2);
  for (const nlohmann::json& stage : zbv["stages"]) {
    CHECK(stage["busy"] == 24.0);
    CHECK(stage["span_bubble"] == 0.0);
  }
  nlohmann::json dualpipev =
      run_json("--stages 4 --microbatches 8 --schedule dualpipev --tf 1 --tb 1 --tw 1");
  CHECK(dualpipev["stages"][0]["busy"] == 24.0);
}

TEST_CASE("CLI schedule: --stage-costs with a slow last stage") {
  nlohmann::json json = run_json(
      "--stages 3 --microbatches 4 --schedule 1f1b --stage-costs "
      "tests/data/schedule/slow_last_stage.json");
  CHECK(json["makespan"] == 42.0);  // 1 + 1 + 4 * (3 + 6) + 2 + 2.
  CHECK(json["stages"][2]["tf"] == 3.0);
  CHECK(json["stages"][2]["busy"] == 36.0);
}

TEST_CASE("CLI schedule: --mem-limit is reported, the schedule unchanged") {
  testing::CommandResult text = run_ppsim(
      "schedule --stages 4 --microbatches 8 --schedule zb-h2 --tf 1 --tb 1 --tw 1 "
      "--mem-per-microbatch 2 --mem-limit 10");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("# warning: stage 0 peaks at 14 > limit 10 (schedule zb-h2 keeps 7 "
                                "microbatches in flight on it); the schedule is not changed"));
  CHECK_THAT(text.out, Contains("# FAILED: memory limit exceeded"));
  nlohmann::json json = run_json(
      "--stages 4 --microbatches 8 --schedule zb-h2 --tf 1 --tb 1 --tw 1 --mem-per-microbatch 2 "
      "--mem-limit 10");
  CHECK(json["mem_limit_exceeded"] == true);
  CHECK(json["mem_limit"] == 10.0);
  CHECK(json["stages"][0]["over_limit"] == true);
  CHECK(json["stages"][0]["peak_memory"] == 14.0);
  CHECK(json["warnings"].size() == 4);
  CHECK(json["makespan"] == 27.0);  // Same schedule as without the limit.
  nlohmann::json fits =
      run_json("--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1 --mem-limit 4");
  CHECK(fits["mem_limit_exceeded"] == false);
}

TEST_CASE("CLI schedule: text report layout") {
  testing::CommandResult result = run_ppsim(
      "schedule --stages 2 --microbatches 2 --schedule 1f1b --tf 1 --tb 2 --tw 0 --comm 0.5");
  REQUIRE(result.exit_code == 0);
  std::istringstream lines(result.out);
  std::string line;
  int data_rows = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '#') ++data_rows;
  }
  CHECK(data_rows == 2);
  CHECK_THAT(result.out, Contains("# makespan 10.5 "));
  CHECK_THAT(result.out, Contains("FFBB"));
  CHECK_THAT(result.out, Contains("# OK"));
  CHECK(result.out == run_ppsim("schedule --stages 2 --microbatches 2 --schedule 1f1b --tf 1 "
                                "--tb 2 --tw 0 --comm 0.5")
                          .out);
}

TEST_CASE("CLI schedule: --svg and --trace files") {
  const std::string svg = "/tmp/ppsim_cli_schedule_test.svg";
  const std::string trace = "/tmp/ppsim_cli_schedule_test.json";
  testing::CommandResult result = run_ppsim(
      "schedule --stages 4 --microbatches 8 --schedule interleaved-1f1b --vpp 2 --tf 1 --tb 1 "
      "--tw 1 --svg " +
      svg + " --trace " + trace);
  REQUIRE(result.exit_code == 0);
  std::string image = testing::read_file(svg);
  CHECK(image.rfind("<?xml", 0) == 0);
  CHECK_THAT(image, Contains("stage 0 (chunks 0,4)"));
  size_t boxes = 0;
  for (size_t at = image.find("class=\"task\""); at != std::string::npos;
       at = image.find("class=\"task\"", at + 1)) {
    ++boxes;
  }
  CHECK(boxes == 4 * 2 * 8 * 2);  // Ranks x chunks x microbatches x (F, B).
  nlohmann::json events = nlohmann::json::parse(testing::read_file(trace))["traceEvents"];
  int slices = 0;
  for (const nlohmann::json& event : events) {
    if (event["ph"] == "X") ++slices;
    if (event["ph"] == "M" && event["name"] == "process_name" && event["pid"] == 1) {
      CHECK(event["args"]["name"] == "stage 1 (chunks 1,5)");
    }
  }
  CHECK(slices > 4 * 2 * 8 * 2);  // Compute and transfers.
  std::remove(svg.c_str());
  std::remove(trace.c_str());
}

TEST_CASE("CLI schedule: --svg-window draws only the boxes inside the window") {
  const std::string svg = testing::temp_path("schedule_window.svg");
  auto boxes_in = [&svg](const std::string& window) {
    testing::CommandResult result = run_ppsim(
        "schedule --stages 2 --microbatches 4 --schedule gpipe --tf 1 --tb 1 --tw 0 "
        "--svg " +
        svg + window);
    REQUIRE(result.exit_code == 0);
    std::string image = testing::read_file(svg);
    size_t boxes = 0;
    for (size_t at = image.find("class=\"task\""); at != std::string::npos;
         at = image.find("class=\"task\"", at + 1)) {
      ++boxes;
    }
    return boxes;
  };
  // GPipe, 2 stages, 4 microbatches, unit costs: stage 0 runs F0..F3 in [0, 4], stage 1
  // F0..F3 in [1, 5]; backwards follow from 5. Over [0, 2]: F0 and F1 of stage 0, F0 of stage 1.
  CHECK(boxes_in("") == 2 * 4 * 2);
  CHECK(boxes_in(" --svg-window 0:2") == 3);
  CHECK_THAT(testing::read_file(svg), Contains("window"));
  std::remove(svg.c_str());
}

struct BadInput {
  const char* arguments;
  const char* expected;  // A part of stderr.
};

const BadInput kBadInputs[] = {
    {"--stages 4 --microbatches 8 --schedule onefoneb --tf 1 --tb 1 --tw 1",
     "--schedule: unknown schedule 'onefoneb'; expected one of gpipe, 1f1b"},
    {"--stages 4 --microbatches 8 --schedule zb-h3 --tf 1 --tb 1 --tw 1",
     "(did you mean 'zb-h1'?)"},
    {"--stages 4 --microbatches 6 --schedule dualpipev --tf 1 --tb 1 --tw 1", "dualpipev"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf abc --tb 1 --tw 1", "--tf"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf -1 --tb 1 --tw 1",
     "--tf: stage 0: expected a positive number, got -1"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1", "--tw: required"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --vpp 2 --tf 1 --tb 1 --tw 1", "--vpp"},
    {"--stages 0 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1", "--stages"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1 --comm -2", "--comm"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1 --mem-limit 0",
     "--mem-limit"},
    {"--stages 2 --microbatches 4 --schedule 1f1b --stage-costs "
     "tests/data/bad/stage_costs_unknown_key.json",
     "tests/data/bad/stage_costs_unknown_key.json: /1/t_w: unknown key 't_w' (did you mean "
     "'tw'?)"},
    {"--stages 2 --microbatches 4 --schedule 1f1b --stage-costs "
     "tests/data/bad/stage_costs_syntax.json",
     "tests/data/bad/stage_costs_syntax.json: invalid JSON at line 3"},
    {"--stages 4 --microbatches 4 --schedule 1f1b --stage-costs "
     "tests/data/schedule/slow_last_stage.json",
     "slow_last_stage.json: 3 stage entries but --stages is 4"},
    {"--stages 3 --microbatches 4 --schedule 1f1b --tf 1 --stage-costs "
     "tests/data/schedule/slow_last_stage.json",
     "give either --stage-costs or --tf/--tb/--tw"},
    {"--stages 3 --microbatches 4 --schedule 1f1b --stage-costs tests/data/no_such.json",
     "tests/data/no_such.json: cannot open file"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1 --svg /no/such/dir/a.svg",
     "--svg: cannot write '/no/such/dir/a.svg'"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1 --svg-window 0:1",
     "--svg-window: draws a part of --svg; give it"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1 --svg /tmp/w.svg "
     "--svg-window 3:1",
     "--svg-window: '3:1': expected START:END in input time units, 0 <= START < END (e.g. 10:20)"},
    {"--stages 4 --microbatches 8 --schedule 1f1b --tf 1 --tb 1 --tw 1 --svg /tmp/w.svg "
     "--svg-window 1000:2000",
     "--svg-window: '1000:2000' starts after the schedule ends"},
};

TEST_CASE("CLI schedule: bad input exits 2 with the reason") {
  for (const BadInput& bad : kBadInputs) {
    testing::CommandResult result = run_ppsim(std::string("schedule ") + bad.arguments);
    INFO(bad.arguments << "\nstderr: " << result.err);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains(bad.expected));
    CHECK_THAT(result.err, Contains("ppsim: error: "));
  }
}

}  // namespace
}  // namespace ppsim
