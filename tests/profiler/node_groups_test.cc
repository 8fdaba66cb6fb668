// node_groups: ranks -> nodes from the shared-memory split's keys, and the profiled groups.
#include "profiler/node_groups.h"

#include <catch2/catch.hpp>

namespace ppsim {
namespace {

using Members = std::vector<std::vector<int>>;

TEST_CASE("NodeGroups: keys from the shared-memory split group ranks into nodes") {
  // Ranks 0, 2 on host b; 1, 3 on host a: nodes are numbered by their lowest rank.
  NodeLayout layout = node_layout({"b", "a", "b", "a"});
  CHECK(layout.ranks == 4);
  CHECK(layout.nodes == Members{{0, 2}, {1, 3}});
  CHECK(layout.node_of_rank == std::vector<int>{0, 1, 0, 1});
  CHECK(layout.local_rank == std::vector<int>{0, 0, 1, 1});
  CHECK(layout.uniform());
  CHECK(layout.smallest_node() == 2);
}

TEST_CASE("NodeGroups: one node of two ranks measures one intra_node pair and nothing else") {
  auto groups = profile_groups(node_layout({"h", "h"}));
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].kind == "intra_node");
  CHECK(groups[0].ranks == 2);
  CHECK(groups[0].ranks_per_node == 2);
  CHECK(groups[0].members == Members{{0, 1}});
}

TEST_CASE("NodeGroups: two nodes of four give intra_node 2 and 4, four rails and all") {
  auto groups = profile_groups(blocked_node_layout(8, 4));
  REQUIRE(groups.size() == 4);
  CHECK(groups[0].kind == "intra_node");
  CHECK(groups[0].members == Members{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(groups[1].kind == "intra_node");
  CHECK(groups[1].ranks == 4);
  CHECK(groups[1].members == Members{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(groups[2].kind == "rail");
  CHECK(groups[2].ranks == 2);
  CHECK(groups[2].ranks_per_node == 1);
  CHECK(groups[2].members == Members{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(groups[3].kind == "all");
  CHECK(groups[3].ranks == 8);
  CHECK(groups[3].ranks_per_node == 4);
  CHECK(groups[3].members == Members{{0, 1, 2, 3, 4, 5, 6, 7}});
}

TEST_CASE("NodeGroups: one rank per node is a rail; all would repeat it and is left out") {
  auto groups = profile_groups(blocked_node_layout(3, 1));
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].kind == "rail");
  CHECK(groups[0].ranks == 3);
  CHECK(groups[0].members == Members{{0, 1, 2}});
}

TEST_CASE("NodeGroups: unequal nodes keep rails of the smallest node and drop all") {
  // Node 0 has ranks 0-2, node 1 has rank 3 and 4.
  auto groups = profile_groups(node_layout({"a", "a", "a", "b", "b"}));
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].kind == "intra_node");
  CHECK(groups[0].members == Members{{0, 1}, {3, 4}});  // Rank 2 sits the pairs out.
  CHECK(groups[1].kind == "rail");
  CHECK(groups[1].members == Members{{0, 3}, {1, 4}});
}

TEST_CASE("NodeGroups: a single node of three ranks adds all (3 ranks) after the pair") {
  auto groups = profile_groups(node_layout({"h", "h", "h"}));
  REQUIRE(groups.size() == 2);
  CHECK(groups[1].kind == "all");
  CHECK(groups[1].ranks == 3);
  CHECK(groups[1].ranks_per_node == 3);
  CHECK(profile_groups(node_layout({"h"})).empty());
}

TEST_CASE("NodeGroups: rank lists for messages stay short") {
  CHECK(rank_list({0, 4}) == "ranks 0,4");
  std::vector<int> many(20);
  for (int i = 0; i < 20; ++i) many[i] = i;
  CHECK(rank_list(many) == "ranks 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,... (20 ranks)");
}

}  // namespace
}  // namespace ppsim
