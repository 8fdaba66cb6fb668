#include "simulator/spec/reliability_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"
#include "simulator/spec/units.h"

namespace ppsim {
namespace {

// A failure rate (per second) from an "mtbf_hours" entry: a number > 0, or "never" (rate 0).
void read_mtbf(JsonReader& reader, const nlohmann::json& object, const std::string& key,
               double& rate) {
  if (!object.contains(key)) return;
  reader.allow(key);
  const nlohmann::json& value = object[key];
  if (value.is_string() && value.get<std::string>() == "never") {
    rate = 0;
    return;
  }
  if (!value.is_number() || value.get<double>() <= 0 || !std::isfinite(value.get<double>())) {
    reader.fail(key, fmt::format("expected a mean time between failures in hours (a number "
                                 "above 0) or \"never\", got {}",
                                 value.dump()));
  }
  rate = 1 / (value.get<double>() * kHour);
}

void read_mtbf_object(JsonReader& parent, const nlohmann::json& value, NodeReliability& node) {
  if (!value.contains("mtbf_hours")) return;
  JsonReader reader = parent.required_object("mtbf_hours");
  const nlohmann::json& object = value["mtbf_hours"];
  read_mtbf(reader, object, "gpu", node.gpu_failure_rate);
  read_mtbf(reader, object, "node", node.node_failure_rate);
  read_mtbf(reader, object, "nic", node.nic_failure_rate);
  reader.finish();
}

void read_bandwidth(JsonReader& reader, const char* key, double& field) {
  if (std::optional<double> value = reader.optional_number(key, 1e-9)) field = *value * kGiga;
}

}  // namespace

ReliabilitySpec parse_reliability_spec(const nlohmann::json& value, const std::string& source,
                                       const std::string& path) {
  JsonReader reader(value, source, path);
  ReliabilitySpec spec;
  read_mtbf_object(reader, value, spec.node);
  if (std::optional<JsonReader> restart = reader.optional_object("restart")) {
    auto read = [&](const char* key, double& field) {
      if (std::optional<double> seconds = restart->optional_number(key, 0)) field = *seconds;
    };
    read("detection_s", spec.restart.detection_s);
    read("reschedule_s", spec.restart.reschedule_s);
    read("init_s", spec.restart.init_s);
    restart->finish();
  }
  if (std::optional<JsonReader> storage = reader.optional_object("storage")) {
    read_bandwidth(*storage, "write_GBps_per_node", spec.node.write_bandwidth);
    read_bandwidth(*storage, "read_GBps_per_node", spec.node.read_bandwidth);
    read_bandwidth(*storage, "write_GBps_aggregate", spec.write_bandwidth_aggregate);
    read_bandwidth(*storage, "read_GBps_aggregate", spec.read_bandwidth_aggregate);
    storage->finish();
  }
  spec.async_checkpoint = reader.optional_bool("async_checkpoint").value_or(false);
  reader.finish();
  return spec;
}

NodeReliability parse_node_reliability(const nlohmann::json& value, const std::string& source,
                                       const std::string& path, const NodeReliability& base) {
  JsonReader reader(value, source, path);
  NodeReliability node = base;
  for (const char* key : {"restart", "async_checkpoint"}) {
    if (reader.has(key)) {
      reader.fail(key, fmt::format("'{}' is a property of the whole job; set it in the "
                                   "cluster's \"reliability\", not a node group's",
                                   key));
    }
  }
  read_mtbf_object(reader, value, node);
  if (std::optional<JsonReader> storage = reader.optional_object("storage")) {
    for (const char* key : {"write_GBps_aggregate", "read_GBps_aggregate"}) {
      if (storage->has(key)) {
        storage->fail(key, fmt::format("'{}' is the storage's total; set it in the cluster's "
                                       "\"reliability\", not a node group's",
                                       key));
      }
    }
    read_bandwidth(*storage, "write_GBps_per_node", node.write_bandwidth);
    read_bandwidth(*storage, "read_GBps_per_node", node.read_bandwidth);
    storage->finish();
  }
  reader.finish();
  return node;
}

}  // namespace ppsim
