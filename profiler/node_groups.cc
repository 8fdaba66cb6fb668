#include "profiler/node_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

NodeLayout layout_from_node_index(const std::vector<int>& node_of_rank) {
  NodeLayout layout;
  layout.ranks = static_cast<int>(node_of_rank.size());
  layout.node_of_rank = node_of_rank;
  layout.local_rank.resize(node_of_rank.size());
  for (int r = 0; r < layout.ranks; ++r) {
    int node = node_of_rank[r];
    if (node >= static_cast<int>(layout.nodes.size())) layout.nodes.resize(node + 1);
    layout.local_rank[r] = static_cast<int>(layout.nodes[node].size());
    layout.nodes[node].push_back(r);
  }
  return layout;
}

}  // namespace

int NodeLayout::smallest_node() const {
  int smallest = ranks;
  for (const auto& node : nodes) smallest = std::min(smallest, static_cast<int>(node.size()));
  return smallest;
}

bool NodeLayout::uniform() const {
  for (const auto& node : nodes) {
    if (node.size() != nodes.front().size()) return false;
  }
  return true;
}

NodeLayout node_layout(const std::vector<std::string>& node_key) {
  PPSIM_CHECK(!node_key.empty(), "node_layout of no ranks");
  // Nodes are numbered in order of their lowest rank, so rank 0 is always on node 0.
  std::map<std::string, int> index;
  std::vector<int> node_of_rank;
  for (const std::string& key : node_key) {
    auto [it, added] = index.emplace(key, static_cast<int>(index.size()));
    node_of_rank.push_back(it->second);
  }
  return layout_from_node_index(node_of_rank);
}

NodeLayout blocked_node_layout(int ranks, int ranks_per_node) {
  PPSIM_CHECK(ranks >= 1 && ranks_per_node >= 1, "bad blocked layout");
  std::vector<int> node_of_rank(ranks);
  for (int r = 0; r < ranks; ++r) node_of_rank[r] = r / ranks_per_node;
  return layout_from_node_index(node_of_rank);
}

std::vector<ProfileGroup> profile_groups(const NodeLayout& layout) {
  std::vector<ProfileGroup> groups;
  if (layout.ranks < 2) return groups;
  const int smallest = layout.smallest_node();
  const int node_count = static_cast<int>(layout.nodes.size());
  for (int n : {2, 4, 8}) {
    if (n > smallest) break;
    ProfileGroup group{"intra_node", n, n, {}};
    for (const auto& node : layout.nodes) {
      for (size_t first = 0; first + n <= node.size(); first += n) {
        group.members.emplace_back(node.begin() + first, node.begin() + first + n);
      }
    }
    groups.push_back(std::move(group));
  }
  if (node_count >= 2) {
    ProfileGroup rail{"rail", node_count, 1, {}};
    for (int local = 0; local < smallest; ++local) {
      std::vector<int> members;
      for (const auto& node : layout.nodes) members.push_back(node[local]);
      rail.members.push_back(std::move(members));
    }
    groups.push_back(std::move(rail));
  }
  if (layout.uniform()) {
    int g = static_cast<int>(layout.nodes.front().size());
    bool listed = std::any_of(groups.begin(), groups.end(), [&](const ProfileGroup& group) {
      return group.ranks == layout.ranks && group.ranks_per_node == g;
    });
    if (!listed) {
      std::vector<int> everyone(layout.ranks);
      for (int r = 0; r < layout.ranks; ++r) everyone[r] = r;
      groups.push_back({"all", layout.ranks, g, {std::move(everyone)}});
    }
  }
  return groups;
}

std::string rank_list(const std::vector<int>& ranks) {
  constexpr size_t kShown = 16;
  std::string text = "ranks ";
  for (size_t i = 0; i < ranks.size() && i < kShown; ++i) {
    text += (i ? "," : "") + std::to_string(ranks[i]);
  }
  if (ranks.size() > kShown) text += fmt::format(",... ({} ranks)", ranks.size());
  return text;
}

}  // namespace ppsim
