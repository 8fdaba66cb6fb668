#include "simulator/step/replica_classes.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "simulator/step/network_model.h"

namespace ppsim {
namespace {

ReplicaClasses every_replica(int32_t replicas) {
  ReplicaClasses classes;
  classes.simulated.resize(replicas);
  std::iota(classes.simulated.begin(), classes.simulated.end(), 0);
  classes.weight.assign(replicas, 1);
  return classes;
}

}  // namespace

int32_t ReplicaClasses::simulated_of(int32_t replica) const {
  int32_t stands_for = all_simulated() ? replica : representative[replica];
  auto it = std::lower_bound(simulated.begin(), simulated.end(), stands_for);
  return static_cast<int32_t>(it - simulated.begin());
}

std::vector<int32_t> ReplicaClasses::members(int32_t simulated_index) const {
  int32_t replica = simulated[simulated_index];
  if (all_simulated()) return {replica};
  std::vector<int32_t> result;
  for (size_t d = 0; d < representative.size(); ++d) {
    if (representative[d] == replica) result.push_back(static_cast<int32_t>(d));
  }
  return result;
}

std::string ReplicaClasses::sizes_text() const {
  std::string text;
  for (size_t i = 0; i < weight.size(); ++i) text += fmt::format("{}{}", i ? " + " : "", weight[i]);
  return text;
}

ReplicaClasses replica_classes(const Plan& plan, const WorkerLayout& layout,
                               const std::vector<double>& gpu_speed,
                               const std::vector<int64_t>& singled_out_nodes, bool deduplicate) {
  const int32_t replicas = layout.replicas;
  if (!deduplicate || replicas <= 1) return every_replica(replicas);
  // A replica's signature: its microbatch share, then each stage's node group and worker speed.
  std::vector<int64_t> shares = replica_microbatch_counts(plan);
  std::map<std::vector<double>, int32_t> class_of;  // Signature -> representative.
  ReplicaClasses classes;
  classes.representative.resize(replicas);
  for (int32_t d = 0; d < replicas; ++d) {
    std::vector<double> signature{static_cast<double>(shares[d])};
    for (int32_t r = 0; r < layout.stages; ++r) {
      const WorkerSlot& slot = layout.at(d, r);
      double slowest = 1.0;
      if (!gpu_speed.empty()) {
        for (int64_t g = slot.first_gpu; g < slot.first_gpu + slot.num_gpus; ++g) {
          slowest = std::min(slowest, gpu_speed[g]);
        }
      }
      signature.push_back(static_cast<double>(slot.node_group));
      signature.push_back(slowest);
      if (std::find(singled_out_nodes.begin(), singled_out_nodes.end(), slot.node) !=
          singled_out_nodes.end()) {
        signature.push_back(-1.0 - d);  // Unique: a class of its own.
      }
    }
    auto [it, added] = class_of.emplace(std::move(signature), d);
    classes.representative[d] = it->second;
    if (added) {
      classes.simulated.push_back(d);
      classes.weight.push_back(0);
    }
    auto position = std::find(classes.simulated.begin(), classes.simulated.end(), it->second);
    ++classes.weight[position - classes.simulated.begin()];
  }
  if (classes.count() == replicas ||
      !NetworkModel::replicas_symmetric(layout, classes.representative)) {
    return every_replica(replicas);
  }
  return classes;
}

}  // namespace ppsim
