#include "simulator/step/step_prices.h"

#include "simulator/cost/profile_table.h"
#include "simulator/spec/error.h"

namespace ppsim {

StepPrices::StepPrices(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
                       const StepOptions& options, const Step& step)
    : cluster_(cluster),
      options_(options),
      step_(step),
      pricer_(model, plan, options.efficiency, options.collective, options.profile,
              options.ideal_links),
      layout_(chunk_layout(plan, model)) {
  PPSIM_CHECK(layout_.num_chunks() == step.schedule.num_chunks());
}

const ChunkPrice& StepPrices::of(int32_t worker, int32_t chunk) {
  int32_t group = step_.layout.workers[step_.layout_worker[worker]].node_group;
  auto key = std::make_pair(group, chunk);
  auto it = prices_.find(key);
  if (it != prices_.end()) return it->second;
  return prices_.emplace(key, price(group, chunk)).first->second;
}

ParameterSplit StepPrices::worker_parameters(int32_t worker) {
  const int64_t stage = step_.layout.workers[step_.layout_worker[worker]].stage;
  ParameterSplit parameters;
  for (int32_t c = 0; c < layout_.num_chunks(); ++c) {
    if (layout_.chunk_rank[c] == stage) parameters += of(worker, c).parameters;
  }
  return parameters;
}

void StepPrices::count_comm(const PassCost& cost) {
  CommCounts comm;
  ppsim::count_comm(cost, comm);
  add_comm(comm);
}

void StepPrices::add_comm(const CommCounts& comm) {
  provenance_.modelled_comm += comm.modelled;
  provenance_.profile_comm += comm.profile;
  provenance_.extrapolated_comm += comm.extrapolated;
}

ChunkPrice StepPrices::price(int32_t group_index, int32_t chunk) {
  const NodeGroup& group = cluster_.nodes[group_index];
  auto model_it = cost_models_.find(group.gpu.name);
  if (model_it == cost_models_.end()) {
    model_it = cost_models_
                   .emplace(group.gpu.name, CostModel(group.gpu, options_.efficiency,
                                                      profile_for_gpu(options_.profile, group.gpu),
                                                      step_.plan.runtime, step_.plan.attention,
                                                      options_.profile_attention_stand_in))
                   .first;
    if (model_it->second.attention_unprofiled()) {
      provenance_.unprofiled_attention =
          attention_kernel_name(model_it->second.attention_kernel());
    }
  }
  ChunkPrice price =
      pricer_.chunk(model_it->second, group, layout_.chunk_first_layer[chunk],
                    layout_.chunk_layers[chunk], chunk == 0, chunk == layout_.loss_chunk(),
                    &layer_prices_[group_index]);
  add_comm(price.comm);
  // Op passes once per (GPU type, chunk).
  if (counted_.insert({group.gpu.name, chunk}).second) {
    provenance_.roofline_passes += price.roofline_passes;
    provenance_.profile_passes += price.profile_passes;
    provenance_.extrapolated_passes += price.extrapolated_passes;
  }
  return price;
}

}  // namespace ppsim
