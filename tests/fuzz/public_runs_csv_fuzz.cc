// libFuzzer target: the public-runs CSV (ppsim accuracy): the CSV reader, the column check and
// every row read into a PublicRun.
#include "simulator/accuracy/public_run.h"
#include "simulator/spec/csv_reader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ppsim::fuzz_parser([&] {
    ppsim::CsvTable table = ppsim::parse_csv(ppsim::fuzz_text(data, size), "runs.csv");
    ppsim::check_public_run_columns(table);
    (void)ppsim::read_public_runs(table);
  });
}
