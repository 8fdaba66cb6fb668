// Replica classes (simulator/step/replica_classes.h): a step whose stragglers leave most
// replicas identical simulates one replica per class, and gives what simulating every replica
// gives, byte for byte, in every output field but the work counters.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

// `simulate --json` of the arguments, with or without --all-replicas.
nlohmann::json simulate(const std::string& arguments, bool all_replicas) {
  testing::CommandResult result =
      run_ppsim("simulate " + arguments + " --json" + (all_replicas ? " --all-replicas" : ""));
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return nlohmann::json::parse(result.out);
}

// The fields that count the work done, not what was simulated.
nlohmann::json without_counters(nlohmann::json json) {
  for (const char* key :
       {"events", "tasks", "simulated_replicas", "replica_classes", "comm_costs"}) {
    json.erase(key);
  }
  return json;
}

struct Case {
  std::string arguments;
  std::vector<int> classes;  // Expected replica_classes with classes; empty: every replica.
};

TEST_CASE("Replica classes: the same bytes as every replica simulated") {
  const std::string cluster = "--model llama3-70b --cluster dgx-h100:64 ";
  const std::vector<Case> cases = {
      // A slow GPU: its replica, and the other seven.
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128,schedule=1f1b --straggler gpu=20:0.7",
       {7, 1}},
      // A slow node: the replica whose worker it holds, and the other seven.
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128,schedule=1f1b --straggler node=9:0.8",
       {7, 1}},
      // Two slow GPUs in two replicas, interleaved, the distributed optimizer's gathers.
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128,schedule=interleaved-1f1b,vpp=2,"
                 "zero_stage=1 --straggler gpu=20:0.7 --straggler gpu=100:0.9",
       {6, 1, 1}},
      // A split backward (zero bubble) and a node at half speed.
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128,schedule=zb-h1 --straggler node=3:0.5",
       {7, 1}},
      // Optimizer offload: its PCIe and host tasks per class, the traffic totals over all.
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128,zero_stage=1,offload=0.5 "
                 "--straggler gpu=30:0.6",
       {7, 1}},
      // A slow link between two replicas' stage-0 nodes (a data-parallel ring hop): each of
      // the two replicas stands alone, as the fault slows their routes after the build.
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128 --straggler link=0-1:0.5", {1, 1, 6}},
      // A flapping one, and a slow pipeline link inside one replica with extra latency.
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128 "
                 "--straggler link=8-9:0.3:period=1000:duty=0.5",
       {1, 1, 6}},
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128 --straggler link=1-9:0.5:+50", {7, 1}},
      // Replicas on two GPU types, no fault: a class per type (one class used to stand for
      // both, and the H100s' compute showed as 0 in gpu_types).
      {"--model llama3-8b --cluster mixed-a100-h100 --plan tp=8,pp=1,dp=8,mbs=1,gbs=64", {4, 4}},
      // Jitter draws per task: every replica simulated.
      {cluster + "--plan tp=8,pp=8,dp=8,mbs=1,gbs=128 --straggler gpu=20:0.7 "
                 "--jitter lognormal:0.05 --iterations 3",
       {}},
      // A node holding workers of a slow and a fast replica breaks the link symmetry: every
      // replica simulated.
      {"--model llama3-8b --cluster dgx-h100:16 --plan tp=2,pp=4,dp=16,mbs=1,gbs=64 "
       "--straggler gpu=5:0.8",
       {}},
  };
  for (const Case& c : cases) {
    INFO(c.arguments);
    nlohmann::json classes = simulate(c.arguments, false);
    nlohmann::json every = simulate(c.arguments, true);
    const int dp = every["plan"]["dp"].get<int>();
    CHECK(every["simulated_replicas"] == dp);
    if (c.classes.empty()) {
      CHECK(classes["simulated_replicas"] == dp);
    } else {
      CHECK(classes["replica_classes"] == nlohmann::json(c.classes));
      CHECK(classes["simulated_replicas"] == c.classes.size());
      CHECK(classes["events"].get<int64_t>() < every["events"].get<int64_t>());
    }
    CHECK(without_counters(classes).dump() == without_counters(every).dump());
  }
}

TEST_CASE("Replica classes: the text report names the classes") {
  testing::CommandResult result = run_ppsim(
      "simulate --model llama3-70b --cluster dgx-h100:64 --plan tp=8,pp=8,dp=8,mbs=1,gbs=128 "
      "--straggler gpu=20:0.7");
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out,
             Catch::Contains("2 of 8 replicas simulated (2 classes of identical replicas: 7 + 1)"));
}

}  // namespace
}  // namespace ppsim
