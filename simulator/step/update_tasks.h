// UpdateTasks: the tasks of a step after the compute: each chunk's data-parallel gradient
// reduction in buckets (overlapped with the backward), optimizer offload's PCIe copies and host
// Adam, the optimizer step and the distributed optimizer's parameter all-gather. The step
// builder (step_builder.h has the model) calls it for the schedule's kGradientSync and
// kOptimizerStep actions; prices come from StepPrices.
//
// Bucket k of K of a chunk is ready (k+1)/K of the way through the chunk's last weight-gradient
// task (dense and routed-expert gradients bucketed apart, as Megatron-Core's separate buffers);
// its reduction is a flow on the worker's dp stream over the ring neighbour's route (NVLink
// inside a node, the NICs across), over dp*cp ranks, or for expert buckets over the expert
// data-parallel group (Plan::expert_dp: one rank per node when ep*etp fills the node, so every
// byte crosses the NIC); with offload each bucket's share of the gradients
// goes to the host once reduced, the host runs Adam once all are there, and the parameters come
// back before the gather.
//
// Not thread-safe: one per build_step. Tasks are added in call order, so the same calls give the
// same task ids.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "simulator/step/network_model.h"
#include "simulator/step/step.h"
#include "simulator/step/step_prices.h"

namespace ppsim {

class UpdateTasks {
 public:
  // REQUIRES: step's layout, layout_worker and schedule are set; the references outlive this.
  UpdateTasks(const ClusterSpec& cluster, const Plan& plan, const StepOptions& options, Step& step,
              NetworkModel* network, StepPrices& prices);

  // kGradientSync of `chunk` on `worker` after its last weight gradient: the bucketed
  // reduction, and with offload the gradients' copies to the host.
  void after_backward(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker, int32_t chunk,
                      TaskId last_weight_gradient);
  // kOptimizerStep on `worker`'s compute stream after `after`; returns the task the step ends
  // with on that worker (the parameter gather, or the update).
  TaskId optimizer_step(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                        StreamId compute_stream, TaskId after);

  // Step::task_bytes of the tasks added, (task, bytes) in the order added: a collective's
  // nccl-tests size, the Adam bytes.
  const std::vector<std::pair<TaskId, double>>& task_bytes() const { return task_bytes_; }

 private:
  std::vector<TaskId> bucket_ready_delays(TaskGraph& graph, std::vector<TaskInfo>& info,
                                          int32_t worker, int32_t chunk,
                                          TaskId last_weight_gradient,
                                          const std::vector<double>& ready_fractions);
  void gradient_sync(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker, int32_t chunk,
                     TaskId last_weight_gradient);
  void offload_gradients(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker,
                         int32_t chunk, TaskId last_weight_gradient);
  TaskId host_update(TaskGraph& graph, std::vector<TaskInfo>& info, int32_t worker, TaskId after,
                     TaskId gpu_update);
  StreamId offload_stream(TaskGraph& graph, int32_t worker, std::vector<StreamId>& streams,
                          const char* name);
  WorkerOffload& worker_offload(int32_t worker);
  StreamId timer_stream(TaskGraph& graph, int32_t worker);
  StreamId dp_stream(TaskGraph& graph, int32_t worker);
  Task collective_task(TaskGraph& graph, int32_t worker, Collective kind, double bytes,
                       bool expert, const NodeGroup& group);
  // Ranks of the group that reduces gradients and gathers parameters: dp*cp, or for routed
  // experts the expert data-parallel group (Plan::expert_dp).
  int64_t sync_group_size(bool expert) const;
  RouteId inter_node_route(TaskGraph& graph, int32_t worker);
  RouteId intra_node_route(TaskGraph& graph, int32_t worker);
  int32_t group_id(TaskGraph& graph, const std::string& key);
  // The worker's last gradient reduction task, or -1 when it has none.
  TaskId last_sync(int32_t worker) const { return last_sync_[worker]; }

  const ClusterSpec& cluster_;
  const Plan& plan_;
  const StepOptions& options_;
  Step& step_;
  NetworkModel* network_;
  StepPrices& prices_;
  // Per layout worker: its collectives' routes (every bucket of a worker crosses the same links).
  std::map<int32_t, RouteId> inter_routes_;
  std::map<int32_t, RouteId> intra_routes_;
  // Per stage (built on first use): the ring's next node after each node of the stage's
  // replicas (distinct nodes in replica order, the last wrapping to the first), as (node, next)
  // pairs sorted by node.
  std::map<int32_t, std::vector<std::pair<int32_t, int32_t>>> ring_next_;
  std::map<std::string, int32_t> groups_;
  std::map<std::tuple<int32_t, int32_t, int64_t>, int32_t> sync_groups_;  // (stage, chunk, bucket)
  std::vector<TaskId> last_sync_;  // Per worker: its last gradient reduction task, or -1.
  std::vector<std::pair<TaskId, double>> task_bytes_;
  std::vector<StreamId> dp_streams_;
  std::vector<StreamId> timer_streams_;
  // Per (worker, chunk), kept only with optimizer offload (its gradient copies wait on them).
  std::map<std::pair<int32_t, int32_t>, std::vector<TaskId>> reduced_buckets_;
  std::vector<StreamId> d2h_streams_, h2d_streams_, host_streams_;
  std::vector<int64_t> gpus_per_node_;
};

}  // namespace ppsim
