// The shipped constants against configs/accuracy/public-runs.csv (shipped in the repository, so
// this runs on a clean clone): they are what `ppsim accuracy --fit` produces from it, and the
// leave-one-source-out error stays under its bar. One fit per source: about a minute on two
// cores, so CTest labels it "calibration" and the sanitizer stage leaves it out
// (calibration_test exercises the same fitting code on a small table under the sanitizers).
#include <catch2/catch.hpp>
#include <set>

#include "simulator/accuracy/calibration.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

TEST_CASE("Public runs: shipped constants are the fit's; leave-one-source-out under its bar") {
  std::vector<PublicRun> runs = testing::shipped_public_runs();
  AccuracyOptions options;
  LeaveOneSourceOut loso = leave_one_source_out(runs, options, 0);
  const FitResult& fit = loso.full_fit;
  EfficiencyTable shipped;
  EfficiencyTable fitted = fit.efficiency;
  for (const FitParameter& parameter : fit_parameters()) {
    INFO(parameter.name);
    // Shipped values are the fit's printed to 4 significant digits.
    CHECK(parameter.field(shipped) == Approx(parameter.field(fitted)).epsilon(1e-3).margin(1e-12));
  }
  // Bars just above the figures docs/accuracy.md reports (7.02% overall, issue 17's bar 8%;
  // the dense sources 4.7-8.6%): a change that makes a held-out source worse fails here. The
  // MoE source waits on issue 18.
  INFO("leave-one-source-out " << loso.mape_pct << "% over " << loso.rows << " rows");
  CHECK(loso.mape_pct <= 8.0);
  CHECK(loso.rows == 210);  // Every public row with a target, none skipped.
  // Sources with a dense row; the mixture-of-experts rows wait on issue 18.
  std::set<std::string> dense_sources;
  for (const PublicRun& run : runs) {
    if (run.predictable() && !run.model.is_moe()) dense_sources.insert(run.source_id);
  }
  for (const HeldOutSource& source : loso.per_source) {
    INFO(source.source_id << " " << source.mape_pct << "%");
    if (!dense_sources.count(source.source_id)) continue;
    CHECK(source.mape_pct <= 9.0);
  }
}

}  // namespace
}  // namespace ppsim
