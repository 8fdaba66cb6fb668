#include "simulator/cost/cost_provenance.h"

#include <fmt/format.h>

#include "simulator/spec/error.h"

namespace ppsim {

std::string unprofiled_gpus_warning(const CostProvenance& provenance) {
  if (provenance.unprofiled_gpus.empty()) return "";
  return fmt::format("profile '{}' was measured on {}; {} GPUs keep the roofline",
                     provenance.profile_path, provenance.profile_gpu,
                     join_names(provenance.unprofiled_gpus));
}

void add_provenance_json(nlohmann::ordered_json& json, const CostProvenance& provenance) {
  json["cost_source"] = cost_source_name(provenance.source());
  bool profiled = !provenance.profile_path.empty();
  json["profile"] = profiled ? nlohmann::ordered_json(provenance.profile_path) : nullptr;
  json["profile_device"] = profiled ? nlohmann::ordered_json(provenance.profile_device) : nullptr;
  json["cost_passes"] = {{"roofline", provenance.roofline_passes},
                         {"profile", provenance.profile_passes},
                         {"extrapolated", provenance.extrapolated_passes}};
  json["comm_costs"] = {{"modelled", provenance.modelled_comm},
                        {"profile", provenance.profile_comm},
                        {"extrapolated", provenance.extrapolated_comm}};
  json["unprofiled_gpus"] = provenance.unprofiled_gpus;
  json["unprofiled_attention"] =
      provenance.unprofiled_attention.empty()
          ? nlohmann::ordered_json(nullptr)
          : nlohmann::ordered_json(provenance.unprofiled_attention);
}

std::string provenance_text(const CostProvenance& provenance) {
  std::string out = fmt::format("# costs    {}", cost_source_name(provenance.source()));
  if (!provenance.profile_path.empty()) {
    out += fmt::format(" (profile {}, device {})", provenance.profile_path,
                       provenance.profile_device);
  }
  out += fmt::format(": op passes {} profile ({} extrapolated), {} roofline; collectives {} "
                     "profile ({} extrapolated), {} modelled\n",
                     provenance.profile_passes, provenance.extrapolated_passes,
                     provenance.roofline_passes, provenance.profile_comm,
                     provenance.extrapolated_comm, provenance.modelled_comm);
  std::string warning = unprofiled_gpus_warning(provenance);
  if (!warning.empty()) out += "# warning: " + warning + "\n";
  if (!provenance.unprofiled_attention.empty()) {
    out += fmt::format("# warning: the profile did not measure this plan's attention kernel "
                       "({}); its attention passes keep the datasheet roofline "
                       "(docs/profile.md)\n",
                       provenance.unprofiled_attention);
  }
  if (provenance.extrapolated_passes > 0) {
    out += fmt::format("# warning: {} op passes lie outside the profile's measured range "
                       "(extrapolated; profile more shapes to cover them)\n",
                       provenance.extrapolated_passes);
  }
  return out;
}

}  // namespace ppsim
