// Small formatting helpers shared by the text reports (nccl-tests layout: '#' header lines,
// a units row, a '#' footer).
#pragma once

#include <string>

#include "simulator/spec/cluster_spec.h"

namespace ppsim {

// Bytes as GiB with two decimals: "71.30".
std::string gib(double bytes);
// A count in engineering units: 70.55e9 -> "70.55 B", 8.03e6 -> "8.03 M".
std::string human_count(double value);
// "4 x dgx-h100 (8x H100-SXM-80GB)" or "4x8 A100-SXM-80GB + 4x8 H100-SXM-80GB".
std::string describe_cluster(const ClusterSpec& cluster);

}  // namespace ppsim
