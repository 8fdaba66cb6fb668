#include "simulator/spec/cluster_spec.h"

#include <catch2/catch.hpp>

#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/units.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

const char* kCluster = R"({
  "name": "two-groups",
  "nodes": [
    {"count": 2, "gpus_per_node": 8, "gpu": "A100-SXM-80GB",
     "intra_node": {"bandwidth_GBps": 300, "latency_us": 3},
     "nic": {"bandwidth_Gbps": 200, "per_gpu": true, "latency_us": 5}},
    {"count": 1, "gpus_per_node": 8, "gpu": "H100-SXM-80GB",
     "intra_node": {"bandwidth_GBps": 450, "latency_us": 3},
     "nic": {"bandwidth_Gbps": 400, "per_gpu": true, "latency_us": 5},
     "gpu_overrides": {"bf16_tflops": 700}, "price_per_gpu_hour": 2.5}
  ],
  "inter_node": {"oversubscription": 2}
})";

std::string error_of(const std::string& text) {
  try {
    parse_cluster_spec(text, "c.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("ClusterSpec: parses node groups with units converted once") {
  ClusterSpec cluster = parse_cluster_spec(kCluster, "c.json");
  REQUIRE(cluster.nodes.size() == 2);
  CHECK(cluster.num_gpus() == 24);
  CHECK(cluster.num_nodes() == 3);
  CHECK(cluster.is_heterogeneous());
  CHECK(cluster.oversubscription == 2.0);
  CHECK(cluster.nodes[0].intra_node.bandwidth == 300e9);
  CHECK(cluster.nodes[0].intra_node.latency == Approx(3e-6));
  CHECK(cluster.nodes[0].nic.link.bandwidth == 25e9);  // 200 Gb/s = 25 GB/s.
  CHECK(cluster.nodes[1].gpu.peak_bf16_flops == Approx(700e12));
  CHECK(cluster.nodes[1].price_per_gpu_hour == 2.5);
}

TEST_CASE("ClusterSpec: gpu_overrides set the fp4 peak and its GEMM fraction") {
  ClusterSpec cluster = parse_cluster_spec(
      testing::replace_once(kCluster, R"("gpu_overrides": {"bf16_tflops": 700})",
                            R"("gpu_overrides": {"fp4_tflops": 8000, "gemm_fp4_efficiency": 0.5})"),
      "c.json");
  CHECK(cluster.nodes[1].gpu.peak_fp4_flops == Approx(8000e12));
  CHECK(cluster.nodes[1].gpu.kernels.gemm_fp4 == 0.5);
  CHECK(cluster.nodes[0].gpu.peak_fp4_flops == 0);
}

TEST_CASE("ClusterSpec: a gemm_fp8_efficiency override keeps the blockwise ratio unless set") {
  const std::string h100 =
      testing::replace_once(kCluster, R"("gpu_overrides": {"bf16_tflops": 700})",
                            R"("gpu_overrides": {"gemm_fp8_efficiency": 0.6})");
  ClusterSpec moved = parse_cluster_spec(h100, "c.json");
  const GpuSpec catalog = *find_gpu("H100-SXM-80GB");
  CHECK(moved.nodes[1].gpu.kernels.gemm_fp8 == 0.6);
  CHECK(moved.nodes[1].gpu.kernels.gemm_fp8_blockwise ==
        Approx(0.6 * catalog.kernels.gemm_fp8_blockwise / catalog.kernels.gemm_fp8));
  ClusterSpec set =
      parse_cluster_spec(testing::replace_once(kCluster, R"("gpu_overrides": {"bf16_tflops": 700})",
                                               R"("gpu_overrides": {"gemm_fp8_efficiency": 0.6, )"
                                               R"("gemm_fp8_blockwise_efficiency": 0.55})"),
                         "c.json");
  CHECK(set.nodes[1].gpu.kernels.gemm_fp8_blockwise == 0.55);
}

TEST_CASE("ClusterSpec: host memory and CPU Adam per node group, with documented defaults") {
  ClusterSpec defaults = parse_cluster_spec(kCluster, "c.json");
  CHECK(defaults.nodes[0].host_memory_bytes == 2048 * kGiB);  // DGX H100 / A100 640GB: 2 TiB.
  CHECK(defaults.nodes[0].cpu_adam_parameters_per_s == 1e9);
  ClusterSpec set =
      parse_cluster_spec(testing::replace_once(kCluster, "\"price_per_gpu_hour\": 2.5",
                                               "\"price_per_gpu_hour\": 2.5, \"host_memory_GiB\": "
                                               "1024, \"cpu_adam_Gparams_per_s\": 2.5"),
                         "c.json");
  CHECK(set.nodes[1].host_memory_bytes == 1024 * kGiB);
  CHECK(set.nodes[1].cpu_adam_parameters_per_s == 2.5e9);
  CHECK(set.nodes[0].host_memory_bytes == 2048 * kGiB);
  CHECK(error_of(testing::replace_once(kCluster, "\"price_per_gpu_hour\": 2.5",
                                       "\"host_memory_GiB\": 0"))
            .rfind("c.json: /nodes/1/host_memory_GiB: expected a number in [1e-09", 0) == 0);
}

TEST_CASE("ClusterSpec: errors carry the JSON path of the node group") {
  CHECK(error_of(testing::replace_once(kCluster, "\"gpu\": \"H100-SXM-80GB\"",
                                       "\"gpu\": \"H100-SXM-80G\""))
            .rfind("c.json: /nodes/1/gpu: unknown GPU 'H100-SXM-80G' (did you mean "
                   "'H100-SXM-80GB'?)",
                   0) == 0);
  CHECK(error_of(testing::replace_once(kCluster, "\"count\": 2", "\"count\": 0")) ==
        "c.json: /nodes/0/count: expected an integer in [1, 16777216], got 0");
  CHECK(error_of(
            testing::replace_once(kCluster, "\"bandwidth_Gbps\": 200", "\"bandwidth_Gbps\": -1")) ==
        "c.json: /nodes/0/nic/bandwidth_Gbps: expected a number in [0.008, 8000000], got -1");
  CHECK(error_of(testing::replace_once(kCluster, "\"per_gpu\": true", "\"per_gpu\": \"yes\"")) ==
        "c.json: /nodes/0/nic/per_gpu: expected true or false, got a string \"yes\"");
  CHECK(error_of(testing::replace_once(kCluster, "\"oversubscription\": 2",
                                       "\"oversubscription\": 0.5")) ==
        "c.json: /inter_node/oversubscription: expected a number in [1, 1000], got 0.5");
  CHECK(error_of(R"({"name": "x", "nodes": []})") ==
        "c.json: /nodes: expected at least one node group");
}

TEST_CASE("ClusterSpec: zoo names and the NODE_TYPE:NODES form") {
  ClusterSpec inline_cluster = load_cluster_spec("dgx-h100:512");
  CHECK(inline_cluster.num_gpus() == 4096);
  CHECK(inline_cluster.nodes[0].gpu.name == "H100-SXM-80GB");
  CHECK(load_cluster_spec("dgx-h100-4").num_gpus() == 32);
  ClusterSpec mixed = load_cluster_spec("mixed-a100-h100");
  CHECK(mixed.is_heterogeneous());
  CHECK(mixed.num_gpus() == 64);
  auto error_of_name = [](const std::string& name) {
    try {
      load_cluster_spec(name);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  CHECK(error_of_name("dgx-h10:4")
            .rfind("--cluster: unknown node type 'dgx-h10' in 'dgx-h10:4' "
                   "(did you mean 'dgx-h100'?)",
                   0) == 0);
  CHECK(error_of_name("dgx-h100:zero") ==
        "--cluster: 'dgx-h100:zero': expected NODE_TYPE:NODES with a positive node count (e.g. "
        "dgx-h100:512)");
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("ClusterSpec: an NVLink domain spans trays; rack-scale inline counts racks") {
  const std::string rack = R"({"name": "r", "nodes": [{"count": 36, "gpus_per_node": 4,
      "nvlink_domain_gpus": 72, "gpu": "GB200",
      "intra_node": {"bandwidth_GBps": 900, "latency_us": 2.5},
      "nic": {"bandwidth_Gbps": 400, "per_gpu": true, "latency_us": 5}}],
      "inter_node": {"oversubscription": 1}})";
  ClusterSpec cluster = parse_cluster_spec(rack, "rack.json");
  REQUIRE(cluster.nodes.size() == 1);
  CHECK(cluster.nodes[0].gpus_per_node == 72);  // One network node per NVLink domain.
  CHECK(cluster.nodes[0].count == 2);
  CHECK(cluster.nodes[0].gpus_per_host() == 4);  // Launchers still start 4 per host.
  CHECK(cluster.num_gpus() == 144);
  CHECK(node_group_summary(cluster.nodes[0]) == "2 NVLink domains x 72 GB200 (18 hosts of 4 each)");
  std::string partial = rack;
  partial.replace(partial.find("36"), 2, "20");
  CHECK_THROWS_WITH(parse_cluster_spec(partial, "rack.json"),
                    Catch::Contains("rack.json") && Catch::Contains("/nodes/0/count") &&
                        Catch::Contains("multiple of 18 nodes"));
  std::string odd = rack;
  odd.replace(odd.find("72"), 2, "70");
  CHECK_THROWS_WITH(parse_cluster_spec(odd, "rack.json"),
                    Catch::Contains("/nodes/0/nvlink_domain_gpus"));
  ClusterSpec racks = load_cluster_spec("gb200-nvl72:4");
  CHECK(racks.num_gpus() == 288);
  CHECK(racks.nodes[0].gpus_per_node == 72);
  CHECK(load_cluster_spec("gb300-nvl72").num_gpus() == 72);
  CHECK(load_cluster_spec("gb300-nvl72").nodes[0].gpu.name == "GB300");
  for (const char* name : {"B300", "GB200", "GB300"}) {
    INFO(name);
    REQUIRE(find_gpu(name).has_value());
    CHECK(find_gpu(name)->peak_fp8_flops >= 4.5e15);
    CHECK(find_gpu(name)->peak_fp4_flops > find_gpu(name)->peak_fp8_flops);
  }
}

}  // namespace
}  // namespace ppsim
