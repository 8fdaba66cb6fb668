#include "simulator/report/report_format.h"

#include <fmt/format.h>

#include "simulator/spec/units.h"

namespace ppsim {

std::string gib(double bytes) { return fmt::format("{:.2f}", bytes / kGiB); }

std::string human_count(double value) {
  if (value >= 1e12) return fmt::format("{:.2f} T", value / 1e12);
  if (value >= 1e9) return fmt::format("{:.2f} B", value / 1e9);
  if (value >= 1e6) return fmt::format("{:.2f} M", value / 1e6);
  if (value >= 1e3) return fmt::format("{:.2f} K", value / 1e3);
  return fmt::format("{:.0f}", value);
}

std::string describe_cluster(const ClusterSpec& cluster) {
  std::string text;
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    const NodeGroup& group = cluster.nodes[i];
    if (i > 0) text += " + ";
    text += node_group_summary(group);
  }
  return fmt::format("{} ({}, {} GPUs)", cluster.name, text, cluster.num_gpus());
}

}  // namespace ppsim
