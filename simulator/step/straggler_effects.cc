#include "simulator/step/straggler_effects.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "simulator/spec/error.h"
#include "simulator/spec/seeded_random.h"

namespace ppsim {
namespace {

// Whether `route`'s hop (task_graph.h Route::hop_links) leaves node `from`'s NIC and enters
// node `to`'s.
bool route_between(const TaskGraph& graph, const Route& route, int64_t from, int64_t to) {
  bool leaves = false, enters = false;
  for (LinkId id : route.hop_links.empty() ? route.links : route.hop_links) {
    const Link& link = graph.links()[id];
    leaves = leaves || (link.role == LinkRole::kNicOut && link.node == from);
    enters = enters || (link.role == LinkRole::kNicIn && link.node == to);
  }
  return leaves && enters;
}

// The rate one flow gets on `route` alone: its narrowest link (per the flow's weight there)
// or its cap.
double lone_rate(const TaskGraph& graph, const Route& route) {
  double rate = route.rate_cap > 0 ? route.rate_cap : std::numeric_limits<double>::infinity();
  // A hop counted on other links (replica classes) is one real flow on its own links.
  for (LinkId id : route.hop_links) rate = std::min(rate, graph.links()[id].capacity);
  if (!route.hop_links.empty()) return rate;
  for (size_t j = 0; j < route.links.size(); ++j) {
    double weight = route.weights.empty() ? 1.0 : route.weights[j];
    rate = std::min(rate, graph.links()[route.links[j]].capacity / weight);
  }
  return rate;
}

void apply_link_fault(TaskGraph& graph, const Straggler& straggler) {
  std::vector<char> slowed(graph.num_routes(), 0);
  for (RouteId id = 0; id < graph.num_routes(); ++id) {
    Route& route = graph.mutable_route(id);
    if (!route_between(graph, route, straggler.node, straggler.other_node) &&
        !route_between(graph, route, straggler.other_node, straggler.node)) {
      continue;
    }
    slowed[id] = 1;
    if (straggler.factor < 1) route.rate_cap = straggler.factor * lone_rate(graph, route);
  }
  if (straggler.extra_latency <= 0) return;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    Task& task = graph.mutable_task(id);
    if (task.kind == TaskKind::kTransfer && task.route >= 0 && slowed[task.route]) {
      task.latency += straggler.extra_latency;
    }
  }
}

}  // namespace

std::vector<double> straggler_gpu_speed(const StragglerModel& model, const ClusterSpec& cluster) {
  if (!model.has_slow_gpus()) return {};
  std::vector<double> speed(cluster.num_gpus(), 1.0);
  // Global node -> its first GPU and GPU count (nodes are numbered group by group).
  std::vector<int64_t> node_first, node_gpus;
  int64_t first = 0;
  for (const NodeGroup& group : cluster.nodes) {
    for (int64_t n = 0; n < group.count; ++n) {
      node_first.push_back(first);
      node_gpus.push_back(group.gpus_per_node);
      first += group.gpus_per_node;
    }
  }
  for (const Straggler& straggler : model.stragglers) {
    if (straggler.kind == StragglerKind::kGpu) {
      speed[straggler.gpu] *= straggler.factor;
    } else if (straggler.kind == StragglerKind::kNode) {
      for (int64_t g = 0; g < node_gpus[straggler.node]; ++g) {
        speed[node_first[straggler.node] + g] *= straggler.factor;
      }
    }
  }
  return speed;
}

std::vector<double> stage_straggler_speed(const ClusterSpec& cluster, const Plan& plan) {
  std::vector<double> stage_speed(plan.pp, 1.0);
  std::vector<double> speed = straggler_gpu_speed(cluster.stragglers, cluster);
  if (speed.empty()) return stage_speed;
  WorkerLayout layout = build_worker_layout(plan, cluster);
  for (const WorkerSlot& slot : layout.workers) {
    for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
      stage_speed[slot.stage] = std::min(stage_speed[slot.stage], speed[g]);
    }
  }
  return stage_speed;
}

StepOptions straggler_step_options(const StepOptions& base, const StragglerModel& model,
                                   const ClusterSpec& cluster) {
  StepOptions options = base;
  std::vector<double> speed = straggler_gpu_speed(model, cluster);
  if (!speed.empty()) {
    if (options.gpu_speed.empty()) {
      options.gpu_speed = speed;
    } else {
      PPSIM_CHECK(options.gpu_speed.size() == speed.size());
      for (size_t g = 0; g < speed.size(); ++g) options.gpu_speed[g] *= speed[g];
    }
  }
  // A link fault slows its two nodes' routes after the build: their replicas stand alone.
  for (const Straggler& straggler : model.stragglers) {
    if (straggler.kind != StragglerKind::kLink) continue;
    options.singled_out_nodes.push_back(straggler.node);
    options.singled_out_nodes.push_back(straggler.other_node);
  }
  // Jitter draws per task: every replica its own.
  if (model.jitter) options.deduplicate_replicas = false;
  return options;
}

bool link_fault_active(const Straggler& straggler, double start_s) {
  if (!straggler.flapping) return true;
  double phase = std::fmod(start_s, straggler.flapping->period);
  return phase < straggler.flapping->duty * straggler.flapping->period;
}

double jitter_slowdown(const JitterSpec& jitter, SeededRandom& random) {
  switch (jitter.kind) {
    case JitterKind::kLognormal:
      return std::max(1.0, std::exp(jitter.parameter * random.normal()));
    case JitterKind::kUniform:
      return 1.0 + jitter.parameter * random.uniform();
    case JitterKind::kExponential:
      return 1.0 + random.exponential(jitter.parameter);
  }
  return 1.0;
}

bool has_iteration_faults(const StragglerModel& model) {
  if (model.jitter) return true;
  for (const Straggler& straggler : model.stragglers) {
    if (straggler.kind == StragglerKind::kLink) return true;
  }
  return false;
}

void apply_iteration_faults(TaskGraph& graph, const Step& step, const StragglerModel& model,
                            uint64_t seed, int64_t iteration, double start_s) {
  for (const Straggler& straggler : model.stragglers) {
    if (straggler.kind == StragglerKind::kLink && link_fault_active(straggler, start_s)) {
      apply_link_fault(graph, straggler);
    }
  }
  if (!model.jitter) return;
  PPSIM_CHECK(step.classes.count() == step.plan.dp || step.plan.dp == 1,
              "jitter needs every replica simulated (straggler_step_options)");
  SeededRandom random = SeededRandom::stream(seed, static_cast<uint64_t>(iteration));
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    if (!is_compute_action(step.lowered.info[id])) continue;
    Task& task = graph.mutable_task(id);
    double comm = step.embedded_comm_seconds[id];
    task.work = (task.work - comm) * jitter_slowdown(*model.jitter, random) + comm;
  }
}

}  // namespace ppsim
