// The text report of a profile, in nccl-tests' layout (STYLE rule 14): every non-data line
// starts with '#'; a header echoes the backend, device, versions and method; each table has a
// names row and a units row; a footer gives the counts and OK.
//
// Columns: GEMM  dtype m n k batch time(us) TFLOP/s; attention  dtype pass impl bh seq d
// time(us) TFLOP/s; memory and host transfers  kernel|direction size(B) time(us) GB/s;
// collectives  op ranks g group size(B) time(us) algbw(GB/s) busbw(GB/s) (nccl-tests
// definitions, collective_cost.h); fits  one line per model with its residuals.
#pragma once

#include <string>

#include "simulator/cost/profile_table.h"

namespace ppsim {

// REQUIRES: nothing; empty tables print their header and "(none)".
std::string profile_report_text(const Profile& profile);

}  // namespace ppsim
