// CostProvenance: where a simulated step's costs came from (roofline or a measured profile),
// and its report lines, shared by `ppsim simulate` and `ppsim plan`.
//
// Report fields (JSON; text prints the same under "# costs"):
//   cost_source          "profile" when any op pass or collective came from the profile, else
//                        "roofline" (also with a profile that applies to none of the plan's GPUs)
//   profile              the profile's path, or null without one
//   profile_device       the profile's device name, or null
//   cost_passes          {roofline, profile, extrapolated}: op passes by source; extrapolated
//                        counts the profile passes outside the measured range
//   comm_costs           {modelled, profile, extrapolated}: collectives and transfers by source
//   unprofiled_gpus      GPU types of the plan the profile does not apply to (roofline kept)
//   unprofiled_attention the plan's attention kernel when the profile measured attention but
//                        not that kernel (profile.h profile_attention_impls): its passes keep
//                        the roofline; null otherwise
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/cost/cost_model.h"

namespace ppsim {

// Where a step's costs came from, for reports (counts are of lookups the step builder made).
struct CostProvenance {
  std::string profile_path;  // StepOptions::profile_path; "" without a profile.
  std::string profile_device;  // The profile's device name; "" without a profile.
  std::string profile_gpu;     // Its catalog GPU; "" when it stands for any GPU (CPU profiles).
  // Op passes (forward, input gradient, weight gradient of each op of a chunk's layers,
  // embedding and head), counted once per (GPU type, chunk), by where their time came from.
  int64_t roofline_passes = 0;
  int64_t profile_passes = 0;
  int64_t extrapolated_passes = 0;  // Of the profile passes, outside the measured range.
  // Collectives and transfers costed (TP/EP/CP collectives once per (GPU type, chunk), each
  // gradient bucket, parameter gather and pipeline send), by where their time came from.
  int64_t modelled_comm = 0;       // Alpha-beta (collective_cost.h).
  int64_t profile_comm = 0;        // The profile's measured (or fitted) collectives.
  int64_t extrapolated_comm = 0;   // Of the profile ones, outside the measured sizes.
  // GPU types of the plan the profile does not apply to (they keep the roofline), sorted.
  std::vector<std::string> unprofiled_gpus;
  // The plan's attention kernel (runtime.h name) when the profile measured attention, but not
  // with that kernel, so its passes keep the roofline; "" otherwise.
  std::string unprofiled_attention;

  // "profile" when any pass or collective came from the profile, else "roofline".
  CostSource source() const {
    return profile_passes + profile_comm > 0 ? CostSource::kProfile : CostSource::kRoofline;
  }
};

// The warning for GPUs the profile does not stand for, or "" when there are none:
// "profile 'h200.json' was measured on H200-SXM-141GB; A100-SXM-80GB GPUs keep the roofline".
std::string unprofiled_gpus_warning(const CostProvenance& provenance);

// The report fields of the header, as JSON members added to `json` in that order.
void add_provenance_json(nlohmann::ordered_json& json, const CostProvenance& provenance);

// Text report lines, each starting with "# ".
std::string provenance_text(const CostProvenance& provenance);

}  // namespace ppsim
