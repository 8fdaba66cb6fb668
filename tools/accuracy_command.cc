// `ppsim accuracy`: ppsim's predictions against a file of published training runs.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "simulator/accuracy/accuracy.h"
#include "simulator/accuracy/accuracy_report.h"
#include "simulator/accuracy/calibration.h"
#include "simulator/spec/csv_reader.h"
#include "simulator/spec/error.h"
#include "simulator/engine/thread_pool.h"
#include "tools/commands.h"

namespace ppsim {
namespace {

struct Options {
  std::string runs;
  std::string only;
  std::string split = "all";
  bool json = false;
  bool fit = false;
  bool no_loso = false;
  double max_mape = -1;  // < 0: no bar.
  int threads = 0;
  std::string svg;  // Residual plot file; "" none.
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
  if (options.fit) {
    // The calibration driver: the constants cost_model.h and runtime.cc ship, from the file.
    LeaveOneSourceOut loso = leave_one_source_out(runs, accuracy, options.threads);
    fmt::print("{}", options.json ? fit_report_json(loso.full_fit, &loso)
                                  : fit_report_text(loso.full_fit, &loso));
    return options.max_mape >= 0 && loso.mape_pct > options.max_mape ? 1 : 0;
  }
  std::optional<LeaveOneSourceOut> loso;
  if (!options.no_loso) loso = leave_one_source_out(runs, accuracy, options.threads);
  AccuracyResult result = run_accuracy(runs, options.runs, accuracy);
  const LeaveOneSourceOut* headline = loso ? &*loso : nullptr;
  if (!options.svg.empty()) {
    std::ofstream file(options.svg);
    if (!file) {
      throw InputError("--svg", "",
                       fmt::format("cannot write '{}' (check that the folder exists)", options.svg));
    }
    file << accuracy_residual_svg(result);
  }
  fmt::print("{}", options.json ? accuracy_report_json(result, accuracy, headline)
                                : accuracy_report_text(result, accuracy, headline));
  if (options.max_mape >= 0) {
    // The bar applies to the headline: leave-one-source-out, or the plain MAPE without it.
    double mape = loso ? loso->mape_pct : result.all.mape;
    if (mape > options.max_mape) {
      fmt::print(stderr, "ppsim accuracy: {} MAPE {:.2f}% is above --max-mape {:g}%\n",
                 loso ? "leave-one-source-out" : "in-sample", mape, options.max_mape);
      return 1;
    }
  }
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
  command->add_flag("--fit", options->fit,
                    "Fit the global constants on every source (sources weighted equally) and "
                    "print them with the leave-one-source-out error: the calibration driver of "
                    "the shipped constants (simulator/accuracy/calibration.h)");
  command->add_flag("--no-loso", options->no_loso,
                    "Skip the leave-one-source-out fits (faster; the report then has no headline)");
  command->add_option("--max-mape", options->max_mape,
                      "Exit 1 when the headline MAPE (leave-one-source-out; in-sample with "
                      "--no-loso) is above PCT percent")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--svg", options->svg,
                      "Also write a residual plot (predicted vs published, SVG) to this file");
  command->add_option("--threads", options->threads,
                      "Threads for the calibration fits (0 = one per hardware thread; the output "
                      "does not depend on it)")
      ->check(CLI::Range(0, kMaxThreads));
  command->footer(
      "The headline is leave-one-source-out: each source predicted with constants fitted on the\n"
      "others. Rows are in the test split when the FNV-1a hash of their row_id is odd.\n"
      "Examples, from the repository root (both tables ship with ppsim;\n"
      "configs/accuracy/public-runs.csv is the one the constants were fitted on):\n"
      "  ppsim accuracy --runs tests/data/accuracy/three_runs.csv --max-mape 20\n"
      "  ppsim accuracy --runs tests/data/accuracy/three_runs.csv --fit\n"
      "  ppsim accuracy --runs configs/accuracy/public-runs.csv --svg residuals.svg");
  command->callback([options, &exit_code] { exit_code = run_accuracy_command(*options); });
}

}  // namespace ppsim
