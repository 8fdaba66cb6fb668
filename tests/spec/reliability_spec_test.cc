// ReliabilitySpec: the Llama 3 defaults give back its interruption count, the cluster and node
// group keys parse with their units, and misplaced or bad keys are errors naming the path.
#include "simulator/spec/reliability_spec.h"

#include <catch2/catch.hpp>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/error.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

const char* kCluster = R"({
  "name": "rel",
  "price_per_gpu_hour": 2,
  "reliability": {
    "mtbf_hours": {"gpu": 50000, "node": "never", "nic": 100000},
    "restart": {"detection_s": 30, "reschedule_s": 120, "init_s": 90},
    "storage": {"write_GBps_per_node": 10, "read_GBps_per_node": 20,
                "write_GBps_aggregate": 500, "read_GBps_aggregate": 800},
    "async_checkpoint": true
  },
  "nodes": [
    {"count": 2, "gpus_per_node": 8, "gpu": "A100-SXM-80GB",
     "intra_node": {"bandwidth_GBps": 300, "latency_us": 3},
     "nic": {"bandwidth_Gbps": 200, "per_gpu": true, "latency_us": 5}},
    {"count": 1, "gpus_per_node": 8, "gpu": "H100-SXM-80GB", "price_per_gpu_hour": 3,
     "intra_node": {"bandwidth_GBps": 450, "latency_us": 3},
     "nic": {"bandwidth_Gbps": 400, "per_gpu": true, "latency_us": 5},
     "reliability": {"mtbf_hours": {"gpu": 20000}, "storage": {"write_GBps_per_node": 40}}}
  ]
})";

std::string error_of(const std::string& text) {
  try {
    parse_cluster_spec(text, "c.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("Reliability defaults: the Llama 3 table's 419 interruptions in 54 days at 16K GPUs") {
  NodeReliability node;
  // 268 GPU, 109 node and 42 NIC interruptions over 16,384 GPUs, 2,048 hosts, 16,384 NICs.
  CHECK(kDefaultGpuMtbfHours == Approx(16384.0 * 1296 / 268));  // 79,230 h.
  CHECK(kDefaultNodeMtbfHours == Approx(2048.0 * 1296 / 109));  // 24,351 h.
  CHECK(kDefaultNicMtbfHours == Approx(16384.0 * 1296 / 42));   // 505,563 h.
  double per_second =
      16384 * node.gpu_failure_rate + 2048 * node.node_failure_rate + 16384 * node.nic_failure_rate;
  CHECK(per_second * 54 * 86400 == Approx(419).epsilon(1e-12));
  RestartTime restart;
  CHECK(restart.total() == 600);
  ReliabilitySpec spec;
  CHECK(spec.write_bandwidth_aggregate == 2000e9);
  CHECK_FALSE(spec.async_checkpoint);
}

TEST_CASE("Reliability: cluster keys, node group overrides, cluster price") {
  ClusterSpec cluster = parse_cluster_spec(kCluster, "c.json");
  const ReliabilitySpec& spec = cluster.reliability;
  CHECK(spec.restart.detection_s == 30);
  CHECK(spec.restart.total() == 240);
  CHECK(spec.write_bandwidth_aggregate == 500e9);
  CHECK(spec.read_bandwidth_aggregate == 800e9);
  CHECK(spec.async_checkpoint);
  const NodeReliability& a100 = cluster.nodes[0].reliability;
  CHECK(a100.gpu_failure_rate == Approx(1 / (50000 * 3600.0)));
  CHECK(a100.node_failure_rate == 0);  // "never".
  CHECK(a100.nic_failure_rate == Approx(1 / (100000 * 3600.0)));
  CHECK(a100.write_bandwidth == 10e9);
  CHECK(a100.read_bandwidth == 20e9);
  // The H100 group overrides its GPU MTBF and write bandwidth, keeps the rest of the cluster's.
  const NodeReliability& h100 = cluster.nodes[1].reliability;
  CHECK(h100.gpu_failure_rate == Approx(1 / (20000 * 3600.0)));
  CHECK(h100.node_failure_rate == 0);
  CHECK(h100.write_bandwidth == 40e9);
  CHECK(h100.read_bandwidth == 20e9);
  // The cluster's price for groups without their own.
  CHECK(cluster.nodes[0].price_per_gpu_hour == 2);
  CHECK(cluster.nodes[1].price_per_gpu_hour == 3);
  // Without "reliability", the defaults.
  ClusterSpec plain = load_cluster_spec("dgx-h100-4");
  CHECK(plain.nodes[0].reliability.gpu_failure_rate == NodeReliability{}.gpu_failure_rate);
  CHECK(plain.reliability.restart.total() == 600);
}

TEST_CASE("Reliability: bad and misplaced keys name the JSON path") {
  CHECK_THAT(error_of(testing::replace_once(kCluster, R"("gpu": 50000)", R"("gpu": 0)")),
             Catch::Contains("c.json: /reliability/mtbf_hours/gpu: expected a mean time between "
                             "failures in hours (a number above 0) or \"never\", got 0"));
  CHECK_THAT(error_of(testing::replace_once(kCluster, R"("nic": 100000)", R"("nics": 100000)")),
             Catch::Contains("/reliability/mtbf_hours/nics"));
  CHECK_THAT(error_of(testing::replace_once(kCluster, R"("init_s": 90)", R"("init_s": -1)")),
             Catch::Contains("/reliability/restart/init_s"));
  CHECK_THAT(error_of(testing::replace_once(kCluster, R"("write_GBps_per_node": 40)",
                                            R"("write_GBps_aggregate": 40)")),
             Catch::Contains("/nodes/1/reliability/storage/write_GBps_aggregate: "
                             "'write_GBps_aggregate' is the storage's total; set it in the "
                             "cluster's \"reliability\""));
  CHECK_THAT(error_of(testing::replace_once(kCluster, R"("mtbf_hours": {"gpu": 20000})",
                                            R"("async_checkpoint": true)")),
             Catch::Contains("/nodes/1/reliability/async_checkpoint: 'async_checkpoint' is a "
                             "property of the whole job"));
  CHECK_THAT(
      error_of(testing::replace_once(kCluster, R"("async_checkpoint": true)", R"("async": true)")),
      Catch::Contains("/reliability/async"));
}

}  // namespace
}  // namespace ppsim
