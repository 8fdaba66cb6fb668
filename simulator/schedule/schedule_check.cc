// check_schedule (declared in pipeline_schedule.h): the actions as a Boost.Graph dependency
// graph, searched depth-first for a cycle.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <optional>
#include <utility>

#include "simulator/schedule/pipeline_schedule.h"

namespace ppsim {
namespace {

constexpr int kNumActionKinds = static_cast<int>(ActionKind::kOptimizerStep) + 1;

using DependencyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<DependencyGraph>::vertex_descriptor;
using Edge = boost::graph_traits<DependencyGraph>::edge_descriptor;

// Records the depth-first tree and the first back edge, which closes a cycle.
class CycleFinder : public boost::default_dfs_visitor {
 public:
  CycleFinder(std::vector<Vertex>* parent, std::optional<std::pair<Vertex, Vertex>>* back_edge)
      : parent_(parent), back_edge_(back_edge) {}
  void tree_edge(Edge edge, const DependencyGraph& graph) {
    (*parent_)[boost::target(edge, graph)] = boost::source(edge, graph);
  }
  void back_edge(Edge edge, const DependencyGraph& graph) {
    if (!*back_edge_) *back_edge_ = {boost::source(edge, graph), boost::target(edge, graph)};
  }

 private:
  std::vector<Vertex>* parent_;
  std::optional<std::pair<Vertex, Vertex>>* back_edge_;
};

// The schedule's actions as graph vertices, found by (kind, chunk, microbatch).
class ActionIndex {
 public:
  explicit ActionIndex(const PipelineSchedule& schedule)
      : chunks_(schedule.num_chunks()), microbatches_(schedule.microbatches) {
    for (auto& table : by_kind_) table.assign(static_cast<size_t>(chunks_) * microbatches_, -1);
    sync_.assign(chunks_, -1);
  }
  // The slot of a keyed action; nullptr when its chunk or microbatch is out of range.
  int64_t* slot(const Action& action) {
    if (action.kind == ActionKind::kOptimizerStep) return nullptr;
    if (action.chunk < 0 || action.chunk >= chunks_) return nullptr;
    if (action.kind == ActionKind::kGradientSync) return &sync_[action.chunk];
    if (action.microbatch < 0 || action.microbatch >= microbatches_) return nullptr;
    return &by_kind_[static_cast<size_t>(action.kind)]
                    [static_cast<size_t>(action.chunk) * microbatches_ + action.microbatch];
  }
  int64_t find(ActionKind kind, int32_t chunk, int32_t microbatch) {
    int64_t* found = slot({kind, chunk, microbatch});
    return found ? *found : -1;
  }

 private:
  int32_t chunks_;
  int32_t microbatches_;
  std::array<std::vector<int64_t>, kNumActionKinds> by_kind_;
  std::vector<int64_t> sync_;
};

}  // namespace

std::optional<std::string> check_schedule(const PipelineSchedule& schedule) {
  const int32_t chunks = schedule.num_chunks();
  const int32_t m = schedule.microbatches;
  if (schedule.ranks < 1 || m < 1 || schedule.chunks_per_rank < 1) {
    return "schedule needs ranks, microbatches and chunks per rank >= 1";
  }
  if (static_cast<int32_t>(schedule.chunk_rank.size()) != chunks ||
      static_cast<int32_t>(schedule.rank_actions.size()) != schedule.ranks) {
    return "schedule's chunk placement or rank lists do not match its sizes";
  }
  for (int32_t c = 0; c < chunks; ++c) {
    if (schedule.chunk_rank[c] < 0 || schedule.chunk_rank[c] >= schedule.ranks) {
      return fmt::format("chunk {} is placed on rank {}, outside 0..{}", c, schedule.chunk_rank[c],
                         schedule.ranks - 1);
    }
  }

  // Vertices: every action, numbered rank by rank in execution order.
  std::vector<Action> actions;
  std::vector<int32_t> action_rank;
  ActionIndex index(schedule);
  for (int32_t r = 0; r < schedule.ranks; ++r) {
    const std::vector<Action>& list = schedule.rank_actions[r];
    for (size_t i = 0; i < list.size(); ++i) {
      const Action& action = list[i];
      const std::string where = fmt::format("rank {}: {}", r, action_label(action));
      if (action.kind == ActionKind::kOptimizerStep) {
        if (i + 1 != list.size()) return where + " is not the rank's last action";
      } else {
        int64_t* slot = index.slot(action);
        if (slot == nullptr) {
          return fmt::format("{} is outside chunks 0..{} or microbatches 0..{}", where, chunks - 1,
                             m - 1);
        }
        if (schedule.chunk_rank[action.chunk] != r) {
          return fmt::format("{} belongs to rank {}", where, schedule.chunk_rank[action.chunk]);
        }
        if (*slot >= 0) return where + " appears twice";
        *slot = static_cast<int64_t>(actions.size());
      }
      if (!schedule.split_backward && (action.kind == ActionKind::kBackwardInput ||
                                       action.kind == ActionKind::kBackwardWeight)) {
        return where + " splits the backward, but the schedule runs it fused";
      }
      actions.push_back(action);
      action_rank.push_back(r);
    }
    if (list.empty() || list.back().kind != ActionKind::kOptimizerStep) {
      return fmt::format("rank {} does not end with its optimizer step", r);
    }
  }

  // Every (chunk, microbatch) once forward and once backward (B, or I and W); every transfer
  // between ranks sent and received; every chunk's gradients synced.
  auto missing = [](const Action& action) { return "missing " + action_label(action); };
  for (int32_t c = 0; c < chunks; ++c) {
    if (index.find(ActionKind::kGradientSync, c, -1) < 0) {
      return missing({ActionKind::kGradientSync, c, -1});
    }
    const bool sends_on = c + 1 < chunks && schedule.chunk_rank[c + 1] != schedule.chunk_rank[c];
    for (int32_t mb = 0; mb < m; ++mb) {
      if (index.find(ActionKind::kForward, c, mb) < 0) {
        return missing({ActionKind::kForward, c, mb});
      }
      const bool fused = index.find(ActionKind::kBackward, c, mb) >= 0;
      const bool input = index.find(ActionKind::kBackwardInput, c, mb) >= 0;
      const bool weight = index.find(ActionKind::kBackwardWeight, c, mb) >= 0;
      if (fused && (input || weight)) {
        return fmt::format("B[c{},mb{}] runs both fused and split", c, mb);
      }
      if (!fused && !input) return missing({ActionKind::kBackward, c, mb});
      if (input != weight) {
        return missing({input ? ActionKind::kBackwardWeight : ActionKind::kBackwardInput, c, mb});
      }
      const std::pair<Action, Action> transfers[] = {
          {{ActionKind::kSendForward, c, mb}, {ActionKind::kRecvForward, c + 1, mb}},
          {{ActionKind::kSendBackward, c + 1, mb}, {ActionKind::kRecvBackward, c, mb}}};
      for (const auto& [send, receive] : transfers) {
        const bool sent = index.find(send.kind, send.chunk, send.microbatch) >= 0;
        const bool received = index.find(receive.kind, receive.chunk, receive.microbatch) >= 0;
        if (sent && !received) {
          return action_label(send) + " has no matching " + action_label(receive);
        }
        if (received && !sent) {
          return action_label(receive) + " has no matching " + action_label(send);
        }
        if (sends_on && !sent) return missing(send) + " between ranks";
        if (!sends_on && sent) return action_label(send) + " between chunks of one rank";
      }
    }
  }
  for (int32_t mb = 0; mb < m; ++mb) {  // Nothing flows into chunk 0 or out of it backwards.
    for (ActionKind kind : {ActionKind::kRecvForward, ActionKind::kSendBackward}) {
      if (index.find(kind, 0, mb) >= 0) {
        return action_label({kind, 0, mb}) + " has no partner before the first chunk";
      }
    }
  }

  DependencyGraph graph(actions.size());
  for (size_t v = 0; v + 1 < actions.size(); ++v) {
    if (action_rank[v] == action_rank[v + 1]) boost::add_edge(v, v + 1, graph);
  }
  auto depend = [&](int64_t from, int64_t to) {
    if (from >= 0 && to >= 0) boost::add_edge(from, to, graph);
  };
  std::vector<int64_t> optimizer(schedule.ranks, -1);
  for (size_t v = 0; v < actions.size(); ++v) {
    if (actions[v].kind == ActionKind::kOptimizerStep) optimizer[action_rank[v]] = v;
  }
  for (int32_t c = 0; c < chunks; ++c) {
    const int64_t sync = index.find(ActionKind::kGradientSync, c, -1);
    depend(sync, optimizer[schedule.chunk_rank[c]]);
    for (int32_t mb = 0; mb < m; ++mb) {
      const int64_t forward = index.find(ActionKind::kForward, c, mb);
      const int64_t fused = index.find(ActionKind::kBackward, c, mb);
      const int64_t input_grad = fused >= 0 ? fused : index.find(ActionKind::kBackwardInput, c, mb);
      const int64_t weight_grad = index.find(ActionKind::kBackwardWeight, c, mb);
      depend(forward, input_grad);
      depend(input_grad, weight_grad);
      depend(fused >= 0 ? fused : weight_grad, sync);
      if (c + 1 < chunks) {
        const int64_t next_forward = index.find(ActionKind::kForward, c + 1, mb);
        const int64_t next_fused = index.find(ActionKind::kBackward, c + 1, mb);
        const int64_t next_input_grad =
            next_fused >= 0 ? next_fused : index.find(ActionKind::kBackwardInput, c + 1, mb);
        depend(forward, next_forward);
        depend(next_input_grad, input_grad);
        const int64_t send_f = index.find(ActionKind::kSendForward, c, mb);
        const int64_t recv_f = index.find(ActionKind::kRecvForward, c + 1, mb);
        depend(forward, send_f);
        depend(send_f, recv_f);
        depend(recv_f, next_forward);
        const int64_t send_b = index.find(ActionKind::kSendBackward, c + 1, mb);
        const int64_t recv_b = index.find(ActionKind::kRecvBackward, c, mb);
        depend(next_input_grad, send_b);
        depend(send_b, recv_b);
        depend(recv_b, input_grad);
      }
    }
  }

  std::vector<Vertex> parent(actions.size());
  std::optional<std::pair<Vertex, Vertex>> back_edge;
  boost::depth_first_search(graph, boost::visitor(CycleFinder(&parent, &back_edge)));
  if (!back_edge) return std::nullopt;
  // The tree path from the back edge's target down to its source, closed by the back edge.
  auto [from, to] = *back_edge;
  std::vector<Vertex> path = {from};
  while (path.back() != to) path.push_back(parent[path.back()]);
  std::reverse(path.begin(), path.end());
  path.push_back(to);
  std::string text = "schedule has a dependency cycle: ";
  for (size_t i = 0; i < path.size(); ++i) {
    if (i > 0) text += " -> ";
    text += action_label(actions[path[i]]);
  }
  return text;
}

}  // namespace ppsim
