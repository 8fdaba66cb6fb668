// `ppsim accuracy` end to end: the report's fields on three public rows, the JSON, the
// filters, and exit status 2 with a clear message for bad files and flags.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

const char* kThreeRuns = "accuracy --runs tests/data/accuracy/three_runs.csv";

// A temporary CSV file holding `text`, removed at scope exit.
class TempCsv {
 public:
  explicit TempCsv(const std::string& text) {
    char name[] = "/tmp/ppsim_accuracy_XXXXXX";
    int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempCsv() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The header and first data line of the three-row file.
std::string three_runs_text() {
  std::ifstream in(testing::test_data("accuracy/three_runs.csv"));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_CASE("ppsim accuracy: text report of three rows") {
  testing::CommandResult result = run_ppsim(kThreeRuns);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const std::string& out = result.out;
  CHECK_THAT(out, Catch::StartsWith("# ppsim accuracy"));
  CHECK_THAT(out, Catch::Contains("three_runs.csv: 3 rows"));
  CHECK_THAT(out, Catch::Contains("(tok/s/GPU)"));
  CHECK_THAT(out, Catch::Contains("mem_pub"));
  // One table row per run: source, model and plan.
  CHECK_THAT(out, Catch::Contains("GPT 39B: tp=8,pp=2,dp=32"));
  CHECK_THAT(out, Catch::Contains("Llama 3 8B: tp=1,pp=1,dp=64"));
  CHECK_THAT(out, Catch::Contains("GPT-style 1.5B: tp=1,pp=8,dp=1,mbs=6,gbs=144,schedule=zb-2p"));
  // Published memory (59 GB) beside the prediction, for the Zero Bubble row only.
  CHECK_THAT(out, Catch::Contains("59.0"));
  // Defaults stated, summary, worst rows, closing line.
  CHECK_THAT(out, Catch::Contains("# defaults applied"));
  CHECK_THAT(out, Catch::Contains("vocab not stated: 50257"));
  CHECK_THAT(out, Catch::Contains("# summary"));
  CHECK_THAT(out, Catch::Contains("# S01"));
  CHECK_THAT(out, Catch::Contains("# S10"));
  CHECK_THAT(out, Catch::Contains("# S11"));
  CHECK_THAT(out, Catch::Contains("# worst 3 rows"));
  CHECK_THAT(out, Catch::Contains("# OK: MAPE"));
  // Every line is a '#' line or a data row starting with a space.
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    std::string line = out.substr(start, end - start);
    CHECK((line.rfind("#", 0) == 0 || line.rfind(" ", 0) == 0));
    start = end + 1;
  }
}

TEST_CASE("ppsim accuracy --json: every row's fields and the summary") {
  testing::CommandResult result = run_ppsim(std::string(kThreeRuns) + " --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["file_rows"] == 3);
  CHECK(json["split"] == "all");
  CHECK(json["memory_unit"] == "GB = 1e9 bytes");
  REQUIRE(json["rows"].size() == 3);
  for (const auto& row : json["rows"]) {
    CHECK(row["status"] == "compared");
    CHECK(row["reason"].is_null());
    CHECK(row["predicted_tokens_per_s_per_gpu"].get<double>() > 0);
    CHECK(row["target_tokens_per_s_per_gpu"].get<double>() > 0);
    double predicted = row["predicted_tokens_per_s_per_gpu"];
    double target = row["target_tokens_per_s_per_gpu"];
    CHECK(row["error_pct"].get<double>() == Approx(100 * (predicted - target) / target));
    CHECK(row["plan"].is_string());
    CHECK(row["defaults"].is_array());
    CHECK(row["predicted_memory_gb"].get<double>() > 0);
  }
  CHECK(json["rows"][0]["row_id"] == "5");
  CHECK(json["rows"][0]["gpu"] == "A100-SXM-80GB");
  CHECK(json["rows"][0]["framework"] == "megatron-lm");
  CHECK(json["rows"][0]["published_memory_gb"].is_null());
  CHECK(json["rows"][1]["framework"] == "torchtitan");
  CHECK(json["rows"][1]["split"] == "test");
  CHECK(json["rows"][2]["published_memory_gb"] == 59.0);
  CHECK(json["rows"][2]["memory_error_pct"].is_number());
  CHECK(json["summary"]["all"]["rows"] == 3);
  CHECK(json["summary"]["all"]["mape_pct"].get<double>() > 0);
  CHECK(json["summary"]["train"]["rows"].get<int>() + json["summary"]["test"]["rows"].get<int>() == 3);
  CHECK(json["summary"]["memory"]["rows"] == 1);
  CHECK(json["sources"].size() == 3);
  CHECK(json["worst"].size() == 3);
  CHECK(json["not_predicted"].empty());
  CHECK(json["constants"]["efficiency"]["kernel_scale"].is_number());
  CHECK(json["constants"]["runtimes"]["megatron-lm"]["kernel_gap_s"].is_number());
  CHECK(json["constants"]["collective"]["intra_bandwidth"].is_number());
}

TEST_CASE("ppsim accuracy: --only and --split select rows") {
  testing::CommandResult only = run_ppsim(std::string(kThreeRuns) + " --only S11 --json");
  REQUIRE(only.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(only.out);
  REQUIRE(json["rows"].size() == 1);
  CHECK(json["rows"][0]["source_id"] == "S11");
  CHECK(json["only_source"] == "S11");

  testing::CommandResult train = run_ppsim(std::string(kThreeRuns) + " --split train --json");
  REQUIRE(train.exit_code == 0);
  nlohmann::json train_json = nlohmann::json::parse(train.out);
  CHECK(train_json["rows"].size() == 2);
  for (const auto& row : train_json["rows"]) CHECK(row["split"] == "train");
}

TEST_CASE("ppsim accuracy: bad files and flags exit 2 with a clear message") {
  SECTION("a quoted field that never closes") {
    std::string text = three_runs_text();
    text += "9,S99,\"unterminated,row\n";
    TempCsv file(text);
    testing::CommandResult result = run_ppsim("accuracy --runs " + file.path());
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::StartsWith("ppsim: error: " + file.path() + ": line 5:"));
    CHECK_THAT(result.err, Catch::Contains("never closed"));
  }
  SECTION("a row with too few fields") {
    TempCsv file(three_runs_text() + "9,S99,x\n");
    testing::CommandResult result = run_ppsim("accuracy --runs " + file.path());
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("line 5: 3 fields, but the header has 47 columns"));
  }
  SECTION("a missing column") {
    std::string text = three_runs_text();
    text.replace(text.find(",target_tokens_per_s_per_gpu,"), 29, ",target_tok_per_s,");
    TempCsv file(text);
    testing::CommandResult result = run_ppsim("accuracy --runs " + file.path());
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("missing column target_tokens_per_s_per_gpu"));
  }
  SECTION("a file that does not exist") {
    testing::CommandResult result = run_ppsim("accuracy --runs tests/data/accuracy/nope.csv");
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("nope.csv: cannot open"));
  }
  SECTION("no --runs") {
    testing::CommandResult result = run_ppsim("accuracy");
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("--runs is required"));
  }
  SECTION("an unknown source") {
    testing::CommandResult result = run_ppsim(std::string(kThreeRuns) + " --only S12");
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("no rows of source 'S12'"));
    CHECK_THAT(result.err, Catch::Contains("S01, S10, S11"));
  }
  SECTION("an unknown split") {
    testing::CommandResult result = run_ppsim(std::string(kThreeRuns) + " --split tset");
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("unknown value 'tset'"));
    CHECK_THAT(result.err, Catch::Contains("did you mean 'test'"));
  }
}

TEST_CASE("ppsim accuracy: the leave-one-source-out headline, --fit and --max-mape") {
  testing::CommandResult text = run_ppsim(kThreeRuns);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("# leave-one-source-out: MAPE"));
  CHECK_THAT(text.out, Catch::Contains("# leave-one-source-out MAPE"));

  testing::CommandResult json_run = run_ppsim(std::string(kThreeRuns) + " --json");
  REQUIRE(json_run.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(json_run.out);
  const nlohmann::json& loso = json["leave_one_source_out"];
  REQUIRE(loso.is_object());
  CHECK(loso["mape_pct"].is_number());
  CHECK(loso["worst_source"].is_string());
  CHECK(loso["worst_source_mape_pct"].is_number());
  REQUIRE(loso["per_source"].size() == 3);
  CHECK(loso["per_source"][0]["source_id"] == "S01");
  CHECK(json["rows"][1]["runtime"] == "torchtitan");
  // One row per source here: each row's held-out |error| is its source's held-out MAPE.
  for (size_t i = 0; i < 3; ++i) {
    const nlohmann::json& row = json["rows"][i];
    for (const nlohmann::json& source : loso["per_source"]) {
      if (source["source_id"] != row["source_id"]) continue;
      CHECK(std::abs(row["held_out_error_pct"].get<double>()) ==
            Approx(source["mape_pct"].get<double>()));
    }
  }
  CHECK(json["rows"][1]["attention"] == "flash2");

  testing::CommandResult fit = run_ppsim(std::string(kThreeRuns) + " --fit --json");
  REQUIRE(fit.exit_code == 0);
  nlohmann::json fitted = nlohmann::json::parse(fit.out);
  CHECK(fitted["constants"]["kernel_scale"]["fitted"] == true);
  CHECK(fitted["constants"]["deepspeed.kernel_gap_s"]["fitted"] == false);  // No rows.
  CHECK(fitted["objective_pct"].get<double>() <= fitted["prior_objective_pct"].get<double>());

  // --max-mape: exit 1 above the bar, 0 below it; the bar applies to the headline.
  double mape = loso["mape_pct"].get<double>();
  testing::CommandResult above =
      run_ppsim(std::string(kThreeRuns) + " --max-mape " + std::to_string(mape * 0.5));
  CHECK(above.exit_code == 1);
  CHECK_THAT(above.err, Catch::Contains("leave-one-source-out MAPE"));
  testing::CommandResult below =
      run_ppsim(std::string(kThreeRuns) + " --max-mape " + std::to_string(mape + 1));
  CHECK(below.exit_code == 0);
  testing::CommandResult bad = run_ppsim(std::string(kThreeRuns) + " --max-mape -3");
  CHECK(bad.exit_code == 2);
}

TEST_CASE("ppsim accuracy --svg: one point per compared row, the y = x line and a legend") {
  std::string path = testing::temp_path("accuracy_residuals.svg");
  testing::CommandResult result =
      run_ppsim(std::string(kThreeRuns) + " --no-loso --svg " + path);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::Contains("not computed (--no-loso)"));
  std::string svg = testing::read_file(path);
  CHECK(svg.rfind("<svg", 0) == 0);
  size_t points = 0;
  for (size_t at = svg.find("<circle cx"); at != std::string::npos; at = svg.find("<circle cx", at + 1)) {
    ++points;
  }
  CHECK(points == 3 + 3);  // Three rows and three legend entries (S01, S10, S11).
  CHECK_THAT(svg, Catch::Contains("row 93 (S10"));
  testing::CommandResult bad =
      run_ppsim(std::string(kThreeRuns) + " --no-loso --svg /nonexistent/dir/x.svg");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--svg"));
}

}  // namespace
}  // namespace ppsim
