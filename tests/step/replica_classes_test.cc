// Replica classes: which replicas a step simulates and whom each stands for.
#include "simulator/step/replica_classes.h"

#include <catch2/catch.hpp>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

struct Setup {
  Plan plan;
  WorkerLayout layout;
};

Setup setup(const char* cluster_name, const char* plan_text) {
  ClusterSpec cluster = load_cluster_spec(cluster_name);
  Plan plan = parse_plan(plan_text, "test");
  return Setup{plan, build_worker_layout(plan, cluster)};
}

TEST_CASE("Replica classes: one slow GPU makes two classes, its replica and the rest") {
  // tp 8: one worker per node, eight replicas of two stages on 16 nodes.
  Setup s = setup("dgx-h100:16", "tp=8,pp=2,dp=8,mbs=1,gbs=16");
  std::vector<double> speed(128, 1.0);
  const WorkerSlot& slow = s.layout.at(3, 1);
  speed[slow.first_gpu + 2] = 0.5;
  ReplicaClasses classes = replica_classes(s.plan, s.layout, speed, {}, true);
  CHECK(classes.simulated == std::vector<int32_t>{0, 3});
  CHECK(classes.weight == std::vector<int32_t>{7, 1});
  CHECK(classes.members(1) == std::vector<int32_t>{3});
  CHECK(classes.members(0) == std::vector<int32_t>{0, 1, 2, 4, 5, 6, 7});
  CHECK(classes.simulated_of(3) == 1);
  CHECK(classes.simulated_of(6) == 0);
  CHECK(classes.sizes_text() == "7 + 1");
  // Equal speeds: one class; not deduplicating: every replica, weight 1.
  CHECK(replica_classes(s.plan, s.layout, {}, {}, true).weight == std::vector<int32_t>{8});
  ReplicaClasses every = replica_classes(s.plan, s.layout, speed, {}, false);
  CHECK(every.all_simulated());
  CHECK(every.count() == 8);
  CHECK(every.weight == std::vector<int32_t>(8, 1));
  CHECK(every.simulated_of(5) == 5);
}

TEST_CASE("Replica classes: a link fault's two nodes single out their replicas") {
  Setup s = setup("dgx-h100:16", "tp=8,pp=2,dp=8,mbs=1,gbs=16");
  const int64_t a = s.layout.at(2, 0).node, b = s.layout.at(5, 1).node;
  ReplicaClasses classes = replica_classes(s.plan, s.layout, {}, {a, b}, true);
  CHECK(classes.simulated == std::vector<int32_t>{0, 2, 5});
  CHECK(classes.weight == std::vector<int32_t>{6, 1, 1});
}

TEST_CASE("Replica classes: unequal microbatch shares are classes too") {
  Setup s = setup("dgx-h100:16",
                  "tp=8,pp=2,dp=8,mbs=1,gbs=17,replica_microbatches=3:2:2:2:2:2:2:2");
  ReplicaClasses classes = replica_classes(s.plan, s.layout, {}, {}, true);
  CHECK(classes.simulated == std::vector<int32_t>{0, 1});
  CHECK(classes.weight == std::vector<int32_t>{1, 7});
}

TEST_CASE("Replica classes: a node shared by two classes means every replica is simulated") {
  // tp 2, pp 4: a node holds one stage of four replicas; slowing one of them breaks the
  // symmetry of that node's links.
  Setup s = setup("dgx-h100:16", "tp=2,pp=4,dp=16,mbs=1,gbs=64");
  std::vector<double> speed(128, 1.0);
  speed[s.layout.at(2, 0).first_gpu] = 0.8;
  CHECK(replica_classes(s.plan, s.layout, speed, {}, true).all_simulated());
  // A whole node slow keeps its replicas together: its four replicas form a class.
  for (int32_t d = 0; d < 4; ++d) {
    const WorkerSlot& slot = s.layout.at(d, 0);
    REQUIRE(slot.node == s.layout.at(0, 0).node);
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) speed[g] = 0.8;
  }
  ReplicaClasses node = replica_classes(s.plan, s.layout, speed, {}, true);
  CHECK(node.weight == std::vector<int32_t>{4, 12});
}

}  // namespace
}  // namespace ppsim
