// `ppsim accuracy`: ppsim's predictions against a file of published training runs.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>

#include "simulator/accuracy/accuracy.h"
#include "simulator/accuracy/accuracy_report.h"
#include "simulator/spec/csv_reader.h"
#include "simulator/spec/error.h"
#include "tools/commands.h"

namespace ppsim {
namespace {

struct Options {
  std::string runs;
  std::string only;
  std::string split = "all";
  bool json = false;
};

int run_accuracy_command(const Options& options) {
  AccuracyOptions accuracy;
  if (options.split == "train") {
    accuracy.split = Split::kTrain;
  } else if (options.split == "test") {
    accuracy.split = Split::kTest;
  } else if (options.split == "all") {
    accuracy.split = Split::kAll;
  } else {
    throw InputError("--split", "",
                     fmt::format("unknown value '{}'; expected one of train, test, all{}",
                                 options.split,
                                 did_you_mean(options.split, {"train", "test", "all"})));
  }
  CsvTable table = load_csv(options.runs);
  std::vector<PublicRun> runs = read_public_runs(table);
  if (!options.only.empty()) {
    std::set<std::string> sources;
    for (const PublicRun& run : runs) sources.insert(run.source_id);
    if (!sources.count(options.only)) {
      std::vector<std::string> names(sources.begin(), sources.end());
      throw InputError("--only", "",
                       fmt::format("no rows of source '{}' in {}; its sources are {}{}",
                                   options.only, options.runs, join_names(names),
                                   did_you_mean(options.only, names)));
    }
    accuracy.only_source = options.only;
  }
  AccuracyResult result = run_accuracy(runs, options.runs, accuracy);
  fmt::print("{}", options.json ? accuracy_report_json(result, accuracy)
                                : accuracy_report_text(result, accuracy));
  return 0;
}

}  // namespace

void add_accuracy_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "accuracy", "Compare predictions with published training runs (a CSV of public-runs.csv's "
                  "columns)");
  command->add_option("--runs", options->runs,
                      "CSV of published runs, with the columns of public-runs.csv")
      ->required();
  command->add_option("--only", options->only, "Run only the rows of this source_id (e.g. S11)");
  command->add_option("--split", options->split,
                      "Calibration split to run: train, test or all (default all; the summary "
                      "shows train and test MAPE separately)");
  command->add_flag("--json", options->json, "Print JSON (fields in simulator/accuracy/accuracy_report.h)");
  command->footer(
      "Rows are in the test split when the FNV-1a hash of their row_id is odd.\n"
      "Example:\n"
      "  ppsim accuracy --runs ../shared/data/public-runs.csv --only S11");
  command->callback([options, &exit_code] { exit_code = run_accuracy_command(*options); });
}

}  // namespace ppsim
