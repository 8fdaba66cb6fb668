#include "simulator/spec/cluster_spec.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include "simulator/spec/data_root.h"
#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"
#include "simulator/spec/units.h"

namespace ppsim {
namespace {

constexpr const char* kClusterDir = "configs/clusters";
constexpr const char* kNodeTypeDir = "configs/clusters/nodes";

// Applies an override object ("bf16_tflops", "memory_GiB", ...) to a catalog GPU.
void apply_gpu_overrides(JsonReader reader, GpuSpec& gpu) {
  auto set = [&reader](const char* key, double& field, double unit) {
    if (std::optional<double> value = reader.optional_number(key, 0)) field = *value * unit;
  };
  set("bf16_tflops", gpu.peak_bf16_flops, kTera);
  set("fp16_tflops", gpu.peak_fp16_flops, kTera);
  set("fp8_tflops", gpu.peak_fp8_flops, kTera);
  set("fp4_tflops", gpu.peak_fp4_flops, kTera);
  set("fp32_tflops", gpu.peak_fp32_flops, kTera);
  set("memory_GiB", gpu.memory_bytes, kGiB);
  set("memory_bandwidth_GBps", gpu.memory_bandwidth, kGiga);
  set("nvlink_bandwidth_GBps", gpu.nvlink_bandwidth, kGiga);
  set("pcie_bandwidth_GBps", gpu.pcie_bandwidth, kGiga);
  // Kernel datasheet fractions (gpu_catalog.h KernelDatasheet), of the datasheet peaks.
  auto fraction = [&reader](const char* key, double& field) {
    if (std::optional<double> value = reader.optional_number(key, 1e-3, 1)) field = *value;
  };
  fraction("gemm_bf16_efficiency", gpu.kernels.gemm_bf16);
  // A gemm_fp8_efficiency override moves the blockwise rate with it, at the catalog's ratio,
  // unless gemm_fp8_blockwise_efficiency sets that too.
  const double blockwise_ratio =
      gpu.kernels.gemm_fp8 > 0 ? gpu.kernels.gemm_fp8_blockwise / gpu.kernels.gemm_fp8 : 1.0;
  fraction("gemm_fp8_efficiency", gpu.kernels.gemm_fp8);
  gpu.kernels.gemm_fp8_blockwise = gpu.kernels.gemm_fp8 * blockwise_ratio;
  fraction("gemm_fp8_blockwise_efficiency", gpu.kernels.gemm_fp8_blockwise);
  fraction("gemm_fp4_efficiency", gpu.kernels.gemm_fp4);
  fraction("flash2_fwd_efficiency", gpu.kernels.flash2_fwd);
  fraction("flash2_bwd_efficiency", gpu.kernels.flash2_bwd);
  fraction("fused_attention_fwd_efficiency", gpu.kernels.fused_fwd);
  fraction("fused_attention_bwd_efficiency", gpu.kernels.fused_bwd);
  reader.finish();
  gpu.source += " (with cluster overrides)";
}

LinkSpec parse_intra_node(JsonReader reader) {
  LinkSpec link;
  link.bandwidth = reader.required_number("bandwidth_GBps", kMinLinkGBps, kMaxLinkGBps) * kGiga;
  link.latency = reader.required_number("latency_us", 0, kMaxLatencyUs) * kMicrosecond;
  reader.finish();
  return link;
}

NicSpec parse_nic(JsonReader reader) {
  NicSpec nic;
  nic.link.bandwidth = gbps_to_bytes_per_s(reader.required_number(
      "bandwidth_Gbps", kMinLinkGBps * kBitsPerByte, kMaxLinkGBps * kBitsPerByte));
  nic.per_gpu = reader.required_bool("per_gpu");
  nic.link.latency = reader.required_number("latency_us", 0, kMaxLatencyUs) * kMicrosecond;
  reader.finish();
  return nic;
}

// Folds the trays of an NVLink domain into one network "node" of `domain` GPUs: every GPU of it
// reaches every other over NVLink, so collectives, placement and the planner see one node,
// while host_gpus keeps the GPUs of one host (launchers' processes per node) and the node's
// host memory, CPU Adam and shared NICs scale with the trays it now holds.
void apply_nvlink_domain(int64_t domain, NodeGroup& group) {
  const int64_t trays = domain / group.gpus_per_node;
  group.count = group.count * group.gpus_per_node / domain;
  group.gpus_per_node = domain;
  group.host_memory_bytes *= static_cast<double>(trays);
  group.cpu_adam_parameters_per_s *= static_cast<double>(trays);
  if (!group.nic.per_gpu) group.nic.link.bandwidth *= static_cast<double>(trays);
}

// One node group; `with_count` is false for node-type files (the count comes from NAME:N).
NodeGroup parse_node_group(JsonReader& reader, const nlohmann::json& json, bool with_count,
                           const std::map<std::string, nlohmann::json>& cluster_gpu_overrides,
                           const NodeReliability& reliability, double price_per_gpu_hour) {
  NodeGroup group;
  group.reliability = reliability;
  if (reader.has("reliability")) {
    reader.allow("reliability");
    group.reliability = parse_node_reliability(json["reliability"], reader.source(),
                                               reader.path_of("reliability"), reliability);
  }
  if (with_count) group.count = reader.required_int("count", 1, int64_t{1} << 24);
  group.gpus_per_node = reader.required_int("gpus_per_node", 1, 1024);
  std::string gpu_name = reader.required_string("gpu");
  std::optional<GpuSpec> gpu = find_gpu(gpu_name);
  if (!gpu) {
    reader.fail("gpu", fmt::format("unknown GPU '{}'{}; known GPUs: {}", gpu_name,
                                   did_you_mean(gpu_name, gpu_names()), join_names(gpu_names())));
  }
  group.gpu = *gpu;
  if (auto it = cluster_gpu_overrides.find(gpu_name); it != cluster_gpu_overrides.end()) {
    apply_gpu_overrides(JsonReader(it->second, reader.source(), "/gpus/" + gpu_name), group.gpu);
  }
  if (std::optional<JsonReader> overrides = reader.optional_object("gpu_overrides")) {
    apply_gpu_overrides(*overrides, group.gpu);
  }
  group.intra_node = parse_intra_node(reader.required_object("intra_node"));
  group.nic = parse_nic(reader.required_object("nic"));
  group.price_per_gpu_hour =
      reader.optional_number("price_per_gpu_hour", 0).value_or(price_per_gpu_hour);
  group.node_type = reader.optional_string("node_type").value_or("");
  if (std::optional<double> gib = reader.optional_number("host_memory_GiB", 1e-9)) {
    group.host_memory_bytes = *gib * kGiB;
  }
  if (std::optional<double> rate = reader.optional_number("cpu_adam_Gparams_per_s", 1e-9)) {
    group.cpu_adam_parameters_per_s = *rate * kGiga;
  }
  std::optional<int64_t> domain = reader.optional_int("nvlink_domain_gpus", 1, 1 << 20);
  reader.allow("description");
  reader.finish();
  group.host_gpus = group.gpus_per_node;
  if (domain && *domain != group.gpus_per_node) {
    if (*domain < group.gpus_per_node || *domain % group.gpus_per_node != 0) {
      reader.fail("nvlink_domain_gpus",
                  fmt::format("an NVLink domain of {} GPUs must be a whole number of {}-GPU "
                              "nodes (GB200/GB300 NVL72: 72 GPUs in 18 trays of 4)",
                              *domain, group.gpus_per_node));
    }
    if (with_count && (group.count * group.gpus_per_node) % *domain != 0) {
      reader.fail("count", fmt::format("{} nodes of {} GPUs do not fill whole NVLink domains of "
                                       "{} GPUs; give a multiple of {} nodes",
                                       group.count, group.gpus_per_node, *domain,
                                       *domain / group.gpus_per_node));
    }
    apply_nvlink_domain(*domain, group);
  }
  return group;
}

ClusterSpec inline_cluster(const std::string& node_type, int64_t node_count,
                           const std::string& text) {
  std::string path = zoo_file(kNodeTypeDir, node_type);
  if (path.empty()) {
    std::vector<std::string> types = zoo_names(kNodeTypeDir);
    throw InputError("--cluster", "",
                     fmt::format("unknown node type '{}' in '{}'{}; node types: {}", node_type,
                                 text, did_you_mean(node_type, types), join_names(types)));
  }
  nlohmann::json json = parse_json_text(read_text_file(path), path);
  JsonReader reader(json, path);
  NodeGroup group = parse_node_group(reader, json, /*with_count=*/false, {}, NodeReliability{}, 0);
  // A rack-scale type counts NVLink domains (racks): gb200-nvl72:4 is 4 racks of 72.
  const bool rack_scale = group.gpus_per_node > group.host_gpus;
  group.count = node_count;
  group.node_type = node_type;
  ClusterSpec cluster;
  cluster.name = text;
  cluster.description = rack_scale ? fmt::format("{} NVLink domains of {} GPUs, type {}",
                                                 node_count, group.gpus_per_node, node_type)
                                   : fmt::format("{} nodes of type {}", node_count, node_type);
  cluster.nodes.push_back(group);
  return cluster;
}

}  // namespace

std::string node_group_summary(const NodeGroup& group) {
  if (group.gpus_per_node > group.gpus_per_host()) {
    return fmt::format("{} NVLink domain{} x {} {} ({} hosts of {} each)", group.count,
                       group.count == 1 ? "" : "s", group.gpus_per_node, group.gpu.name,
                       group.gpus_per_node / group.gpus_per_host(), group.gpus_per_host());
  }
  return fmt::format("{} node{} x {} {}", group.count, group.count == 1 ? "" : "s",
                     group.gpus_per_node, group.gpu.name);
}

int64_t ClusterSpec::num_gpus() const {
  int64_t total = 0;
  for (const NodeGroup& group : nodes) total += group.num_gpus();
  return total;
}

int64_t ClusterSpec::num_nodes() const {
  int64_t total = 0;
  for (const NodeGroup& group : nodes) total += group.count;
  return total;
}

bool ClusterSpec::is_heterogeneous() const {
  for (const NodeGroup& group : nodes) {
    if (group.gpu.name != nodes.front().gpu.name) return true;
  }
  return false;
}

ClusterSpec parse_cluster_spec(const std::string& text, const std::string& source) {
  nlohmann::json json = parse_json_text(text, source);
  JsonReader reader(json, source);
  ClusterSpec cluster;
  cluster.name = reader.required_string("name");
  cluster.description = reader.optional_string("description").value_or("");
  cluster.profile_path = reader.optional_string("profile");
  cluster.ideal_links = reader.optional_bool("ideal_links").value_or(false);
  // Cluster-wide GPU overrides, keyed by catalog name.
  std::map<std::string, nlohmann::json> gpu_overrides;
  if (std::optional<JsonReader> gpus = reader.optional_object("gpus")) {
    for (const auto& [name, value] : json["gpus"].items()) {
      if (!find_gpu(name)) {
        gpus->fail(name, fmt::format("unknown GPU '{}'{}; known GPUs: {}", name,
                                     did_you_mean(name, gpu_names()), join_names(gpu_names())));
      }
      gpus->allow(name);
      gpu_overrides[name] = value;
    }
  }
  // Cluster-level reliability and price first: the node groups start from them.
  if (reader.has("reliability")) {
    reader.allow("reliability");
    cluster.reliability =
        parse_reliability_spec(json["reliability"], source, reader.path_of("reliability"));
  }
  double price = reader.optional_number("price_per_gpu_hour", 0).value_or(0);
  const nlohmann::json& nodes = reader.required_array("nodes");
  if (nodes.empty()) reader.fail("nodes", "expected at least one node group");
  for (size_t i = 0; i < nodes.size(); ++i) {
    JsonReader group_reader(nodes[i], source, "/nodes/" + std::to_string(i));
    cluster.nodes.push_back(parse_node_group(group_reader, nodes[i], /*with_count=*/true,
                                             gpu_overrides, cluster.reliability.node, price));
  }
  if (std::optional<JsonReader> inter = reader.optional_object("inter_node")) {
    cluster.oversubscription =
        inter->optional_number("oversubscription", 1.0, kMaxOversubscription).value_or(1.0);
    inter->finish();
  }
  if (const nlohmann::json* stragglers = reader.optional_array("stragglers")) {
    cluster.stragglers = parse_straggler_json(*stragglers, source, reader.path_of("stragglers"));
    validate_straggler_model(cluster.stragglers, cluster);
  }
  reader.finish();
  check_cluster_size(cluster, source, "/nodes");
  return cluster;
}

void check_cluster_size(const ClusterSpec& cluster, const std::string& source,
                        const std::string& json_path) {
  if (cluster.num_gpus() > kMaxClusterGpus) {
    throw InputError(
        source, json_path,
        fmt::format("the cluster has {} GPUs; ppsim models at most {} (docs/limits.md)",
                    cluster.num_gpus(), kMaxClusterGpus));
  }
}

namespace {

// A cluster read from `path`, its profile path made relative to the file's folder (so a cluster
// and its profile can move together).
ClusterSpec load_cluster_file(const std::string& path) {
  namespace fs = std::filesystem;
  ClusterSpec cluster = parse_cluster_spec(read_text_file(path), path);
  cluster.source = path;
  if (cluster.profile_path && fs::path(*cluster.profile_path).is_relative()) {
    cluster.profile_path = (fs::path(path).parent_path() / *cluster.profile_path).string();
  }
  return cluster;
}

}  // namespace

ClusterSpec load_cluster_spec(const std::string& path_or_name) {
  namespace fs = std::filesystem;
  if (is_existing_file(path_or_name)) return load_cluster_file(path_or_name);
  std::string zoo_path = zoo_file(kClusterDir, path_or_name);
  if (!zoo_path.empty()) return load_cluster_file(zoo_path);
  size_t colon = path_or_name.rfind(':');
  if (colon != std::string::npos) {
    std::string count_text = path_or_name.substr(colon + 1);
    int64_t count = 0;
    auto [end, error] =
        std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (error != std::errc() || end != count_text.data() + count_text.size() || count < 1) {
      throw InputError("--cluster", "",
                       fmt::format("'{}': expected NODE_TYPE:NODES with a positive node count "
                                   "(e.g. dgx-h100:512)",
                                   path_or_name));
    }
    if (count > kMaxClusterGpus) {
      throw InputError("--cluster", "",
                       fmt::format("'{}': {} nodes is more than ppsim models (at most {} GPUs in "
                                   "all; docs/limits.md)",
                                   path_or_name, count, kMaxClusterGpus));
    }
    ClusterSpec cluster = inline_cluster(path_or_name.substr(0, colon), count, path_or_name);
    check_cluster_size(cluster, "--cluster", "");
    return cluster;
  }
  std::vector<std::string> names = zoo_names(kClusterDir);
  throw InputError("--cluster", "",
                   fmt::format("'{}' is neither a file, a zoo cluster{} nor NODE_TYPE:NODES; zoo "
                               "clusters: {}; node types: {}",
                               path_or_name, did_you_mean(path_or_name, names), join_names(names),
                               join_names(zoo_names(kNodeTypeDir))));
}

void validate_straggler_model(const StragglerModel& model, const ClusterSpec& cluster) {
  int64_t gpus = cluster.num_gpus();
  int64_t nodes = cluster.num_nodes();
  for (const Straggler& straggler : model.stragglers) {
    auto fail = [&](const std::string& message) {
      throw InputError(straggler.source, straggler.json_path,
                       fmt::format("'{}': {}", straggler_text(straggler), message));
    };
    switch (straggler.kind) {
      case StragglerKind::kGpu:
        if (straggler.gpu >= gpus) {
          fail(fmt::format("GPU rank {} does not exist; cluster '{}' has GPUs 0-{}", straggler.gpu,
                           cluster.name, gpus - 1));
        }
        break;
      case StragglerKind::kNode:
      case StragglerKind::kLink:
        for (int64_t node : {straggler.node, straggler.other_node}) {
          if (node >= nodes) {
            fail(fmt::format("node {} does not exist; cluster '{}' has nodes 0-{}", node,
                             cluster.name, nodes - 1));
          }
        }
        break;
    }
  }
}

}  // namespace ppsim
