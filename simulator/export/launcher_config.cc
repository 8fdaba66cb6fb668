#include "simulator/export/launcher_config.h"

#include <fmt/format.h>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

const std::vector<std::string> kFormatNames = {"megatron", "deepspeed", "torchtitan"};

}  // namespace

const std::vector<std::string>& launcher_format_names() { return kFormatNames; }

std::string launcher_format_name(LauncherFormat format) {
  return kFormatNames[static_cast<size_t>(format)];
}

LauncherFormat parse_launcher_format(const std::string& name, const std::string& source) {
  for (size_t i = 0; i < kFormatNames.size(); ++i) {
    if (name == kFormatNames[i]) return static_cast<LauncherFormat>(i);
  }
  throw InputError(source, "",
                   fmt::format("unknown launcher format '{}'; expected one of {}{}", name,
                               join_names(kFormatNames), did_you_mean(name, kFormatNames)));
}

LauncherOutput export_launcher(LauncherFormat format, const ModelSpec& model,
                               const ClusterSpec& cluster, const Plan& plan) {
  switch (format) {
    case LauncherFormat::kMegatron:
      return export_megatron(model, cluster, plan);
    case LauncherFormat::kDeepSpeed:
      return export_deepspeed(model, cluster, plan);
    case LauncherFormat::kTorchTitan:
      return export_torchtitan(model, cluster, plan);
  }
  PPSIM_CHECK(false, "unknown launcher format");
}

}  // namespace ppsim
