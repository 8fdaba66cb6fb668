// `ppsim validate`: the CPU backend end to end on a 2-stage 1f1b plan of a tiny model (executed
// order = the schedule builder's, every action timed, report and JSON complete), the exit
// statuses (4 over tolerance, 2 bad input, 5 no GPU for --backend cuda), and --fold.
// Timings here are not asserted: CI machines are shared; benchmarks/validate_benchmark.cc
// measures the prediction error.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "simulator/schedule/pipeline_schedule.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

// The committed CPU profile is from one machine: enough for the path, not for accuracy.
const std::string kCpuRun =
    "validate --backend cpu --profile tests/data/validate/cpu_profile.json "
    "--model tests/data/validate/tiny_llama.json --cluster dgx-h100-1 ";

TEST_CASE("CLI validate: the CPU backend runs the schedule's own action lists and times each") {
  auto result = run_ppsim(kCpuRun + "--plan pp=2,mbs=1,gbs=4,schedule=1f1b --iterations 2 "
                                    "--tolerance 1e9 --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  auto json = nlohmann::json::parse(result.out);
  CHECK(json["backend"] == "cpu");
  CHECK(json["iterations"] == 2);
  CHECK(json["folded"] == false);
  CHECK(json["predicted_step_s"].get<double>() > 0);
  CHECK(json["measured_step_s"].get<double>() > 0);
  CHECK(json.contains("error_pct"));
  CHECK(json["predicted_peak_memory_bytes"].get<double>() > 0);
  CHECK(json["measured_peak_memory_bytes"].get<double>() > 0);
  for (const char* type : {"F", "B", "send", "optimizer"}) {
    INFO(type);
    REQUIRE(json["actions"].contains(type));
    CHECK(json["actions"][type]["predicted_s"].get<double>() > 0);
    CHECK(json["actions"][type]["measured_s"].get<double>() > 0);
    CHECK(json["actions"][type].contains("error_pct"));
  }
  PipelineSchedule schedule = build_pipeline_schedule(ScheduleKind::kOneFOneB, 2, 4, 1);
  REQUIRE(json["executed"].size() == 2);
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> expected;
    for (const Action& action : schedule.rank_actions[rank]) expected.push_back(action_label(action));
    CHECK(json["executed"][rank].get<std::vector<std::string>>() == expected);
  }
}

TEST_CASE("CLI validate: the text report states prediction, measurement and error") {
  auto result = run_ppsim(kCpuRun + "--plan pp=2,mbs=1,gbs=4,schedule=zb-h1 --iterations 1 "
                                    "--warmup 0 --tolerance 1e9");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::StartsWith("# ppsim validate: model tiny-llama"));
  CHECK_THAT(result.out, Catch::Contains("# backend cpu: 2 CPU threads"));
  CHECK_THAT(result.out, Catch::Contains("# step: predicted "));
  CHECK_THAT(result.out, Catch::Contains(", measured "));
  CHECK_THAT(result.out, Catch::Contains("# peak memory per worker: predicted "));
  for (const char* row : {"\n  F ", "\n  I ", "\n  W ", "\n  send "}) {
    CHECK_THAT(result.out, Catch::Contains(row));
  }
  CHECK_THAT(result.out, Catch::Contains("# OK"));
  // The committed profile has the quick ladder only: of tiny-llama's shapes, 128^3 alone.
  CHECK_THAT(result.out, Catch::Contains("# note: the profile measured 1 of the 10 GEMM shapes"));
  CHECK_THAT(result.out, Catch::Contains("ppsim profile --model M --plan P"));
}

TEST_CASE("CLI validate: a profile of the model's own shapes prices every GEMM from them") {
  std::string profile = testing::temp_path("tiny_profile.json");
  auto profiled = run_ppsim("profile --backend cpu --quick -w 0 -n 1 --model "
                            "tests/data/validate/tiny_llama.json --plan pp=2,mbs=1,gbs=4 --out " +
                            profile);
  INFO(profiled.err);
  REQUIRE(profiled.exit_code == 0);
  auto result = run_ppsim("validate --backend cpu --profile " + profile +
                          " --model tests/data/validate/tiny_llama.json --cluster dgx-h100-1 "
                          "--plan pp=2,mbs=1,gbs=4,schedule=1f1b --iterations 1 --warmup 0 "
                          "--tolerance 1e9");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, !Catch::Contains("GEMM shapes this plan runs"));
  std::remove(profile.c_str());
}

TEST_CASE("CLI validate: an error over --tolerance exits 4") {
  // No measurement matches a prediction to 0%: the run must fail the check.
  auto result = run_ppsim(kCpuRun + "--plan pp=2,mbs=1,gbs=2,schedule=1f1b --iterations 1 "
                                    "--warmup 0 --tolerance 0");
  INFO(result.err);
  CHECK(result.exit_code == 4);
  CHECK_THAT(result.out, Catch::Contains("# FAILED: |error| "));
}

TEST_CASE("CLI validate: --fold runs the stages on one thread and says what it did not measure") {
  auto result = run_ppsim(kCpuRun + "--plan pp=4,mbs=1,gbs=4,schedule=1f1b --iterations 1 "
                                    "--warmup 0 --tolerance 1e9 --fold --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  auto json = nlohmann::json::parse(result.out);
  CHECK(json["folded"] == true);
  CHECK_THAT(json["device"].get<std::string>(), Catch::Contains("4 workers folded"));
  CHECK(json["actions"]["F"]["measured_s"].get<double>() > 0);
  CHECK(json["actions"]["send"]["measured_s"].is_null());
  CHECK(json["measured_step_s"].get<double>() > 0);
  // The folding note (a busy machine adds one about waiting for cores).
  bool folding_note = false;
  for (const auto& note : json["notes"]) {
    folding_note = folding_note || note.get<std::string>().find("not measured") != std::string::npos;
  }
  CHECK(folding_note);
}

TEST_CASE("CLI validate: bad input exits 2 with the reason") {
  auto no_profile = run_ppsim("validate --backend cpu --model tests/data/validate/tiny_llama.json "
                              "--cluster dgx-h100-1 --plan pp=2,mbs=1,gbs=4");
  CHECK(no_profile.exit_code == 2);
  CHECK_THAT(no_profile.err, Catch::Contains("ppsim profile --backend cpu"));
  auto tensor_parallel = run_ppsim(kCpuRun + "--plan tp=2,pp=2,mbs=1,gbs=4");
  CHECK(tensor_parallel.exit_code == 2);
  CHECK_THAT(tensor_parallel.err, Catch::Contains("tp, cp and ep must be 1"));
  auto gpu_profile = run_ppsim(
      "validate --backend cpu --profile configs/no_such_profile.json "
      "--model tests/data/validate/tiny_llama.json --cluster dgx-h100-1 --plan pp=2,mbs=1,gbs=4");
  CHECK(gpu_profile.exit_code == 2);
}

TEST_CASE("CLI validate: --backend cuda runs on a GPU, or exits 5 without one") {
  auto result = run_ppsim("validate --backend cuda --model tests/data/validate/tiny_llama.json "
                          "--cluster dgx-h100-1 --plan pp=2,mbs=1,gbs=4 --fold --iterations 1 "
                          "--tolerance 1e9 --json");
  if (result.exit_code == 5) {
    CHECK_THAT(result.err, Catch::Contains("no CUDA device"));
    WARN("skipped: no CUDA device here (" << result.err << ")");
    return;
  }
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  auto json = nlohmann::json::parse(result.out);
  CHECK(json["backend"] == "cuda");
  CHECK(json["actions"]["F"]["measured_s"].get<double>() > 0);
}

}  // namespace
}  // namespace ppsim
