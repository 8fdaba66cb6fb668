#include "simulator/schedule/schedule_lowering.h"

#include <fmt/format.h>

#include <map>
#include <tuple>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// Task ids of one replica's compute actions, by (chunk, microbatch).
struct ReplicaTasks {
  std::vector<TaskId> forward;          // F
  std::vector<TaskId> input_gradient;   // B (fused) or I: produces the gradient sent upstream.
  std::vector<TaskId> weight_gradient;  // W (split) or B (fused): frees the activations.
};

}  // namespace

Lowered lower_schedule(const PipelineSchedule& schedule, int32_t replicas,
                       const std::vector<double>& worker_speed, LoweringCosts& costs,
                       TaskGraph graph) {
  return lower_schedule(std::vector<PipelineSchedule>(replicas, schedule), worker_speed, costs,
                        std::move(graph));
}

Lowered lower_schedule(const std::vector<PipelineSchedule>& replica_schedules,
                       const std::vector<double>& worker_speed, LoweringCosts& costs,
                       TaskGraph graph) {
  PPSIM_CHECK(!replica_schedules.empty());
  const int32_t replicas = static_cast<int32_t>(replica_schedules.size());
  const int32_t p = replica_schedules.front().ranks;
  const int32_t chunks = replica_schedules.front().num_chunks();
  for (const PipelineSchedule& schedule : replica_schedules) {
    PPSIM_CHECK(schedule.ranks == p && schedule.num_chunks() == chunks,
                "replica schedules differ in more than their microbatch counts");
  }
  const int32_t workers = replicas * p;
  PPSIM_CHECK(static_cast<int32_t>(worker_speed.size()) == workers);
  Lowered lowered;
  lowered.graph = std::move(graph);
  TaskGraph& g = lowered.graph;
  std::vector<TaskInfo>& info = lowered.info;
  info.reserve(static_cast<size_t>(g.reserved_tasks()));
  info.resize(g.num_tasks());
  for (int32_t w = 0; w < workers; ++w) {
    lowered.compute_stream.push_back(g.add_stream(w, fmt::format("w{}/compute", w), worker_speed[w]));
    lowered.send_forward_stream.push_back(g.add_stream(w, fmt::format("w{}/send_fwd", w)));
    lowered.send_backward_stream.push_back(g.add_stream(w, fmt::format("w{}/send_bwd", w)));
  }
  // Slots of (chunk, microbatch) within one replica of m microbatches.
  auto slot_in = [](int32_t m, int32_t chunk, int32_t microbatch) { return chunk * m + microbatch; };
  std::vector<ReplicaTasks> tasks(replicas);
  // For each (replica, receiving chunk, microbatch, direction): the receiver's compute task just
  // before its RECV (the rendezvous point), or -1.
  std::vector<std::vector<TaskId>> recv_point_forward(replicas), recv_point_backward(replicas);
  // With blocking sends: for each (replica, sending chunk, microbatch, direction) the sender's
  // next compute task after the SEND, which waits for it; -1 when none follows.
  const bool blocking = costs.blocking_sends();
  std::vector<std::vector<TaskId>> send_next_forward(replicas), send_next_backward(replicas);

  // Pass 1: every compute action on its worker's stream, in schedule order.
  for (int32_t d = 0; d < replicas; ++d) {
    const PipelineSchedule& schedule = replica_schedules[d];
    const int32_t m = schedule.microbatches;
    auto slot = [m, &slot_in](int32_t chunk, int32_t microbatch) {
      return slot_in(m, chunk, microbatch);
    };
    ReplicaTasks& t = tasks[d];
    t.forward.assign(chunks * m, -1);
    t.input_gradient.assign(chunks * m, -1);
    t.weight_gradient.assign(chunks * m, -1);
    recv_point_forward[d].assign(chunks * m, -1);
    recv_point_backward[d].assign(chunks * m, -1);
    send_next_forward[d].assign(chunks * m, -1);
    send_next_backward[d].assign(chunks * m, -1);
    for (int32_t r = 0; r < p; ++r) {
      int32_t w = d * p + r;
      TaskId last = -1;  // The worker's last task on its compute stream (or a barrier).
      std::vector<TaskId*> pending_sends;  // SENDs whose next compute task is not made yet.
      for (const Action& action : schedule.rank_actions[r]) {
        if (action.kind == ActionKind::kRecvForward) {
          recv_point_forward[d][slot(action.chunk, action.microbatch)] = last;
          continue;
        }
        if (action.kind == ActionKind::kRecvBackward) {
          recv_point_backward[d][slot(action.chunk, action.microbatch)] = last;
          continue;
        }
        if (action.kind == ActionKind::kSendForward || action.kind == ActionKind::kSendBackward) {
          if (blocking) {
            auto& next = action.kind == ActionKind::kSendForward ? send_next_forward[d]
                                                                  : send_next_backward[d];
            pending_sends.push_back(&next[slot(action.chunk, action.microbatch)]);
          }
          continue;
        }
        if (!is_compute(action.kind)) {
          TaskId after = last;
          if (action.kind == ActionKind::kGradientSync) {
            // The chunk's gradients are complete once its last weight gradient has run.
            after = -1;
            for (int32_t mb = 0; mb < m; ++mb) {
              TaskId wgrad = t.weight_gradient[slot(action.chunk, mb)];
              if (wgrad > after) after = wgrad;
            }
          }
          TaskId barrier = costs.step_action(g, info, w, lowered.compute_stream[w], action, after);
          info.resize(g.num_tasks());
          if (barrier >= 0) last = barrier;
          continue;
        }
        ComputeSpec spec = costs.compute(w, action);
        Task task;
        task.kind = TaskKind::kCompute;
        task.stream = lowered.compute_stream[w];
        task.work = spec.seconds;
        task.alloc_bytes = spec.alloc_bytes;
        task.free_bytes = spec.free_bytes;
        TaskId id = g.add_task(task);
        info.push_back(TaskInfo{w, action.kind, action.chunk, action.microbatch});
        if (last >= 0 && g.stream_predecessor(id) != last) g.add_dependency(last, id);
        last = id;
        for (TaskId* next : pending_sends) *next = id;
        pending_sends.clear();
        int32_t s = slot(action.chunk, action.microbatch);
        switch (action.kind) {
          case ActionKind::kForward: t.forward[s] = id; break;
          case ActionKind::kBackward:
            t.input_gradient[s] = id;
            t.weight_gradient[s] = id;
            break;
          case ActionKind::kBackwardInput: t.input_gradient[s] = id; break;
          case ActionKind::kBackwardWeight: t.weight_gradient[s] = id; break;
          default: break;
        }
      }
    }
  }

  // One send stream per (sender, receiver, direction): sends to different peers do not queue
  // behind each other (with the rendezvous rule, a shared queue can deadlock the V schedules).
  // The first peer of a (sender, direction) gets its primary send stream, later peers their own.
  std::map<std::tuple<int32_t, int32_t, bool>, StreamId> peer_stream;
  std::vector<uint8_t> primary_taken(2 * static_cast<size_t>(workers), 0);  // [2 * from + forward]
  auto send_stream = [&](int32_t from, int32_t to, bool forward) {
    auto key = std::make_tuple(from, to, forward);
    auto found = peer_stream.find(key);
    if (found != peer_stream.end()) return found->second;
    uint8_t& taken = primary_taken[2 * static_cast<size_t>(from) + (forward ? 1 : 0)];
    StreamId id = forward ? lowered.send_forward_stream[from] : lowered.send_backward_stream[from];
    if (taken) {
      id = g.add_stream(from,
                        fmt::format("w{}/send_{}_to_w{}", from, forward ? "fwd" : "bwd", to));
    }
    taken = 1;
    peer_stream.emplace(key, id);
    return id;
  };
  // Pass 2: data dependencies, and a transfer wherever consecutive chunks sit on two ranks.
  for (int32_t d = 0; d < replicas; ++d) {
    const PipelineSchedule& schedule = replica_schedules[d];
    const int32_t m = schedule.microbatches;
    auto slot = [m, &slot_in](int32_t chunk, int32_t microbatch) {
      return slot_in(m, chunk, microbatch);
    };
    const ReplicaTasks& t = tasks[d];
    for (int32_t c = 0; c < chunks; ++c) {
      for (int32_t mb = 0; mb < m; ++mb) {
        int32_t s = slot(c, mb);
        PPSIM_CHECK(t.forward[s] >= 0 && t.input_gradient[s] >= 0 && t.weight_gradient[s] >= 0,
                    fmt::format("chunk {} microbatch {} lacks a compute action", c, mb));
        // Backward of a chunk needs its own forward; W needs I.
        g.add_dependency(t.forward[s], t.input_gradient[s]);
        if (t.weight_gradient[s] != t.input_gradient[s]) {
          g.add_dependency(t.input_gradient[s], t.weight_gradient[s]);
        }
      }
    }
    // Sends in each sender's order, so its send streams keep that order.
    for (int32_t r = 0; r < p; ++r) {
      int32_t w = d * p + r;
      for (const Action& action : schedule.rank_actions[r]) {
        bool forward = action.kind == ActionKind::kSendForward;
        if (!forward && action.kind != ActionKind::kSendBackward) continue;
        int32_t to_chunk = forward ? action.chunk + 1 : action.chunk - 1;
        int32_t to_rank = schedule.chunk_rank[to_chunk];
        int32_t to_worker = d * p + to_rank;
        TransferSpec spec = costs.transfer(g, w, to_worker, action);
        Task task;
        task.kind = TaskKind::kTransfer;
        task.stream = send_stream(w, to_worker, forward);
        task.work = spec.bytes;
        task.latency = spec.latency;
        task.route = spec.route;
        TaskId id = g.add_task(task);
        info.push_back(TaskInfo{w, action.kind, action.chunk, action.microbatch});
        int32_t from_slot = slot(action.chunk, action.microbatch);
        int32_t to_slot = slot(to_chunk, action.microbatch);
        g.add_dependency(forward ? t.forward[from_slot] : t.input_gradient[from_slot], id);
        TaskId rendezvous = forward ? recv_point_forward[d][to_slot] : recv_point_backward[d][to_slot];
        if (rendezvous >= 0) g.add_dependency(rendezvous, id);
        g.add_dependency(id, forward ? t.forward[to_slot] : t.input_gradient[to_slot]);
        TaskId waits = forward ? send_next_forward[d][from_slot] : send_next_backward[d][from_slot];
        if (waits >= 0) g.add_dependency(id, waits);
      }
    }
    // Consecutive chunks on the same rank hand over directly.
    for (int32_t c = 0; c + 1 < chunks; ++c) {
      if (schedule.chunk_rank[c] != schedule.chunk_rank[c + 1]) continue;
      for (int32_t mb = 0; mb < m; ++mb) {
        g.add_dependency(t.forward[slot(c, mb)], t.forward[slot(c + 1, mb)]);
        g.add_dependency(t.input_gradient[slot(c + 1, mb)], t.input_gradient[slot(c, mb)]);
      }
    }
    // The last chunk turns around: its backward follows its forward (added above).
  }
  return lowered;
}

}  // namespace ppsim
