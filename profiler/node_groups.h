// Where the ranks of a several-process profile sit, and the communicator groups `ppsim profile`
// measures collectives on. Pure functions: mpi_world.cc feeds them what
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) found, and tests feed them by hand.
//
// Groups (profile.h's group names; n ranks per communicator, g of them on each node):
//   intra_node  n = 2, 4, 8 (those that fit on the smallest node), g = n: every node's local
//               ranks cut into consecutive blocks of n, as tensor-parallel groups sit;
//   rail        one rank per node with the same local rank (the GPUs behind one NIC rail),
//               n = nodes, g = 1, for every local rank the smallest node has; needs 2+ nodes;
//   all         every rank, n = world size, g = ranks per node; needs equal node sizes.
// The disjoint communicators of one group run at the same time, as a plan's concurrent tensor-
// or data-parallel groups do. A shape (n, g) already listed is not listed again: on one node of
// 2, 4 or 8 ranks "all" is the intra_node group, and with one rank per node it is the rail.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppsim {

// Ranks grouped into nodes. Invariant: `nodes` partitions 0..ranks-1; node_of_rank and
// local_rank agree with it.
struct NodeLayout {
  int ranks = 0;                        // World size.
  std::vector<std::vector<int>> nodes;  // World ranks of each node, ascending; nodes ordered
                                        // by their lowest rank.
  std::vector<int> node_of_rank;        // Index into `nodes`, per world rank.
  std::vector<int> local_rank;          // Position within its node, per world rank.

  int smallest_node() const;  // Fewest ranks on any node.
  bool uniform() const;       // Every node has the same number of ranks.
};

// The layout from one key per world rank, equal exactly for ranks on the same node (the world
// rank of the node's first process, or a host name). REQUIRES: node_key non-empty.
NodeLayout node_layout(const std::vector<std::string>& node_key);

// `ranks` ranks as if every `ranks_per_node` consecutive ranks were one node (the last node
// may be smaller): lets one host stand for several nodes (`ppsim profile --ranks-per-node`).
// REQUIRES: ranks >= 1, ranks_per_node >= 1.
NodeLayout blocked_node_layout(int ranks, int ranks_per_node);

// One group shape and the communicators that realise it.
struct ProfileGroup {
  std::string kind;                       // "intra_node", "rail" or "all".
  int ranks = 0;                          // n: ranks per communicator.
  int ranks_per_node = 0;                 // g: ranks of one communicator on one node.
  std::vector<std::vector<int>> members;  // Disjoint communicators, world ranks ascending;
                                          // ranks in none of them sit this group out.
};

// The groups the header lists, in that order (intra_node by ascending n). Empty for one rank.
std::vector<ProfileGroup> profile_groups(const NodeLayout& layout);

// "ranks 0,1,2" (up to 16 ranks, then "... (N ranks)"), for messages.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace ppsim
