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
  classes.members_.resize(replicas);
  for (int32_t d = 0; d < replicas; ++d) classes.members_[d] = {d};
  return classes;
}

}  // namespace

int32_t ReplicaClasses::simulated_of(int32_t replica) const {
  int32_t stands_for = all_simulated() ? replica : representative[replica];
  auto it = std::lower_bound(simulated.begin(), simulated.end(), stands_for);
  return static_cast<int32_t>(it - simulated.begin());
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
  std::vector<int32_t> class_index(replicas, -1);  // Per representative: its simulated index.
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
      class_index[d] = classes.count();
      classes.simulated.push_back(d);
      classes.weight.push_back(0);
      classes.members_.emplace_back();
    }
    ++classes.weight[class_index[it->second]];
    classes.members_[class_index[it->second]].push_back(d);
  }
  if (classes.count() == replicas ||
      !NetworkModel::replicas_symmetric(layout, classes.representative)) {
    return every_replica(replicas);
  }
  return classes;
}

}  // namespace ppsim
