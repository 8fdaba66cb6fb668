#include "simulator/export/launcher_config.h"

#include <fmt/format.h>

#include "simulator/spec/error.h"
#include "simulator/spec/runtime_support.h"

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

Runtime launcher_runtime(LauncherFormat format) {
  switch (format) {
    case LauncherFormat::kMegatron:
      return Runtime::kMegatronCore;
    case LauncherFormat::kDeepSpeed:
      return Runtime::kDeepSpeed;
    case LauncherFormat::kTorchTitan:
      return Runtime::kTorchtitan;
  }
  return Runtime::kMegatronCore;
}

std::optional<std::string> launcher_runtime_problem(LauncherFormat format, Runtime runtime) {
  const std::string name = launcher_format_name(format);
  const RuntimeTraits& traits = runtime_traits(runtime);
  if (traits.exporter == name) return std::nullopt;
  return fmt::format(
      "the plan runs on runtime {} (its kernels and overheads are what ppsim simulated), but "
      "--format {} writes a {} launcher, which runs {}'s; set runtime={} in the plan and "
      "simulate it again, or export in {}",
      runtime_name(runtime), name, name, runtime_name(launcher_runtime(format)),
      runtime_name(launcher_runtime(format)),
      *traits.exporter ? fmt::format("--format {}", traits.exporter)
                       : std::string("none: ppsim writes no launcher file for ") + traits.name);
}

LauncherOutput export_launcher(LauncherFormat format, const ModelSpec& model,
                               const ClusterSpec& cluster, const Plan& plan) {
  if (std::optional<std::string> problem = launcher_runtime_problem(format, plan.runtime)) {
    throw InputError("--plan", "/runtime", *problem);
  }
  if (std::optional<std::string> problem = runtime_plan_problem(plan, model)) {
    throw InputError("--plan", "", *problem + "; the launcher file would not run this plan");
  }
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
