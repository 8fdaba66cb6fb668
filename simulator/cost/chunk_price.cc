#include "simulator/cost/chunk_price.h"

#include <algorithm>
#include <optional>

#include "simulator/cost/collective_timing.h"
#include "simulator/cost/profile_table.h"
#include "simulator/model/activation_offload.h"
#include "simulator/model/model_stats.h"
#include "simulator/model/moe_dispatch.h"
#include "simulator/model/optimizer_offload.h"
#include "simulator/model/parameter_bytes.h"

namespace ppsim {

void count_comm(const PassCost& cost, CommCounts& comm) {
  if (cost.seconds <= 0) return;
  if (cost.source == CostSource::kProfile) {
    ++comm.profile;
    if (cost.extrapolated) ++comm.extrapolated;
  } else {
    ++comm.modelled;
  }
}

HostLaunches host_launches(const Op& op, bool router_graphed, bool preprocess_graphed) {
  int cast = op.op_class == OpClass::kGemm ? quantize_kernels(op.precision) : 0;
  // A grouped GEMM under a recipe that quantizes each expert's rows on their own casts one
  // split per local expert, each its own call on the host (header).
  if (cast > 0 && quantize_cost(op.precision, op.fp8_recipe, false).per_expert) {
    cast *= static_cast<int>(op.gemm.batch);
  }
  int forward = op.kernels_fwd + cast;
  int backward = op.kernels_b + op.kernels_w + cast;
  if (router_graphed && op.name == "moe_router") forward = backward = 1;
  if (preprocess_graphed && op.name == "moe_permute") forward -= kMoePreprocessKernels - 1;
  return {forward, backward + (op.recomputed ? forward : 0)};
}

ChunkPricer::ChunkPricer(const ModelSpec& model, const Plan& plan,
                         const EfficiencyTable& efficiency, const CollectiveEfficiency& collective,
                         const ProfileTable* profile, bool ideal_links)
    : model_(model),
      plan_(plan),
      efficiency_(efficiency),
      collective_(collective),
      profile_(profile),
      ideal_links_(ideal_links),
      tp_comm_overlap_(tp_comm_overlap_in_force(plan)),
      shape_(op_shape(plan, model)),
      activations_(activation_config(plan, model)),
      microbatches_(static_cast<int32_t>(num_microbatches(plan))) {
  double seq = static_cast<double>(effective_seq_length(plan, model));
  tokens_ = plan.micro_batch_size * seq / plan.cp;
  ParameterCounts counts = count_parameters(model);
  embedding_parameters_ = counts.embedding + counts.position_embedding;
  head_parameters_ = counts.output_layer > 0 ? counts.output_layer : counts.embedding;
  mtp_parameters_ = counts.mtp;
  final_norm_parameters_ = counts.final_norm;
  if (plan.recompute == Recompute::kFull && plan.recompute_num_layers > 0) {
    plain_plan_ = std::make_shared<const Plan>(without_recompute(plan));
    plain_ = std::make_shared<const ChunkPricer>(model, *plain_plan_, efficiency, collective,
                                                 profile, ideal_links);
  }
}

int64_t ChunkPricer::dp_ranks_per_node(const NodeGroup& group) const {
  return std::max<int64_t>(1, group.gpus_per_node / plan_.tp);
}

int64_t ChunkPricer::expert_dp_ranks_per_node(const NodeGroup& group) const {
  return std::max<int64_t>(1, group.gpus_per_node / (plan_.ep * plan_.expert_tp()));
}

double ChunkPricer::collective_seconds(Collective kind, double bytes, int64_t size,
                                       int64_t per_node, const NodeGroup& group, CommCounts& comm,
                                       double cross_node_share, double intra_node_share) const {
  CollectiveGroup members = collective_group(size, per_node, group);
  members.cross_node_share = cross_node_share;
  members.intra_node_share = intra_node_share;
  PassCost cost = collective_time(kind, bytes, members, collective_,
                                  profile_for_gpu(profile_, group.gpu), ideal_links_);
  count_comm(cost, comm);
  return cost.seconds;
}

TensorParallelPrice ChunkPricer::tensor_parallel(const NodeGroup& group, CommCounts& comm) const {
  TensorParallelPrice tp;
  if (plan_.tp > 1) {
    const double elements = tokens_ * model_.hidden_size;
    const double tensor = elements * kActivationElementBytes;
    const bool overlap = runtime_traits(plan_.runtime).overlaps_tp_backward;
    if (plan_.sequence_parallel) {
      // Under fp8 or nvfp4 Transformer Engine gathers the quantized operand (header).
      const double gathered = runtime_traits(plan_.runtime).quantized_gemm_inputs
                                  ? elements * gemm_operand_bytes(plan_.precision)
                                  : tensor;
      const double gather =
          collective_seconds(Collective::kAllGather, gathered, plan_.tp, plan_.tp, group, comm);
      const double scatter =
          collective_seconds(Collective::kReduceScatter, tensor, plan_.tp, plan_.tp, group, comm);
      tp.forward = 2 * gather + 2 * scatter;
      tp.overlap_fill = 2 * scatter / static_cast<double>(plan_.tp);
      tp.backward_blocking = 2 * gather;
      if (overlap) {
        tp.backward_overlapped = 2 * gather + 2 * scatter;  // Re-gathers and input gradients.
      } else {
        tp.backward_blocking += 2 * scatter;  // The gathered input was kept.
      }
    } else {
      const double reduce =
          collective_seconds(Collective::kAllReduce, tensor, plan_.tp, plan_.tp, group, comm);
      tp.forward = 2 * reduce;
      (overlap ? tp.backward_overlapped : tp.backward_blocking) = 2 * reduce;
    }
  }
  tp.recompute = plan_.recompute == Recompute::kFull ? tp.forward : 0;
  return tp;
}

namespace {

// The largest divisor of n that is at most cap (>= 1): ranks of an n-rank group that share a
// node when the node holds cap of them, rounded so the group tiles whole nodes.
int64_t divisor_at_most(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, std::max<int64_t>(1, cap)); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

// What of an overlapped transfer shows over `under` seconds of compute (collective_cost.h).
double overlapped_excess(double comm, double under, double slowdown) {
  return std::max(0.0, comm - under) + slowdown * std::min(comm, under);
}

// The GEMMs split over the tensor-parallel group, which userbuffers pair with its collectives:
// every GEMM but the replicated router and latent projections, the routed experts (split over
// ep x etp instead) and the Mamba scan's chunk products (no weights).
bool tensor_parallel_gemm(const Op& op) {
  return op.op_class == OpClass::kGemm && op.name != "moe_router" &&
         !op.name.starts_with("moe_expert") && !op.name.starts_with("moe_latent") &&
         op.name != "mamba_scan";
}

}  // namespace

LayerPrice ChunkPricer::layer(const CostModel& costs, const NodeGroup& group,
                              const TensorParallelPrice& tp_all, int64_t layer) const {
  LayerPrice price;
  price.compute = costs.layer_cost(model_, shape_, layer);
  const LayerCost& compute = price.compute;
  const bool moe_layer = model_.is_moe_layer(layer);
  // tp_all prices a transformer layer's two column-then-row GEMM blocks; an MoE layer without
  // shared experts has no tp collectives in its MLP half, a hybrid layer one block or none
  // (ModelSpec::tensor_parallel_blocks, header).
  TensorParallelPrice tp = tp_all;
  const double blocks = model_.tensor_parallel_blocks(layer) / 2.0;
  if (blocks != 1.0) {
    tp.forward *= blocks;
    tp.backward_blocking *= blocks;
    tp.backward_overlapped *= blocks;
    tp.recompute *= blocks;
    tp.overlap_fill *= blocks;
  }
  const RecomputeModules modules = recomputed_modules(plan_);
  auto recomputes = [modules](RecomputeModule module) {
    return (modules & recompute_module_bit(module)) != 0;
  };
  if (plan_.recompute == Recompute::kSelective) {
    // A recomputed dense MLP, or MoE block or shared experts with tp collectives, re-runs the
    // MLP half of the forward's collectives inside the backward.
    const bool mlp_half = model_.has_feed_forward(layer) &&
                          (moe_layer ? model_.moe->num_shared_experts > 0 &&
                                           (recomputes(RecomputeModule::kMoe) ||
                                            recomputes(RecomputeModule::kSharedExperts))
                                     : recomputes(RecomputeModule::kMlp));
    tp.recompute = mlp_half ? tp_all.forward / 2 : 0;
  }
  const bool splits_backward = schedule_traits(plan_.schedule).splits_backward;
  const double under_bwd = compute.b + (splits_backward ? 0 : compute.w);
  OpList ops = layer_ops(model_, shape_, layer);
  double comm_fwd = 0, comm_bwd = 0;
  double tp_bound_fwd = tp.forward, tp_bound_bwd = tp.backward_blocking + tp.recompute;
  if (tp_comm_overlap_ && plan_.tp > 1) {
    // Userbuffers (header): every collective runs in tp steps under the GEMM it feeds or
    // drains; what outlasts those GEMMs shows, plus the contention share and, in the forward,
    // each reduce-scatter's last step after its GEMM.
    double gemm_fwd = 0, gemm_bwd = 0;
    for (const Op& op : ops) {
      if (!tensor_parallel_gemm(op)) continue;
      const OpCost cost = costs.op_cost(op);
      gemm_fwd += cost.fwd.seconds;
      gemm_bwd += cost.b.seconds + (splits_backward ? 0 : cost.w.seconds);
    }
    const double slowdown = collective_.overlap_slowdown;
    const double backward = tp.backward_blocking + tp.backward_overlapped;
    comm_fwd = overlapped_excess(tp.forward, gemm_fwd, slowdown) + tp.overlap_fill;
    comm_bwd = overlapped_excess(backward, gemm_bwd, slowdown);
    if (tp.recompute > 0) {
      comm_bwd += overlapped_excess(tp.recompute, gemm_fwd, slowdown) + tp.overlap_fill;
    }
    tp_bound_fwd = std::max(0.0, tp.forward - gemm_fwd);
    tp_bound_bwd = std::max(0.0, backward - gemm_bwd) + std::max(0.0, tp.recompute - gemm_fwd);
  } else {
    comm_fwd = tp.forward;
    comm_bwd = tp.backward_blocking + tp.recompute;
    if (tp.backward_overlapped > 0) {
      // Under the input-gradient GEMMs, and the weight-gradient ones unless the schedule
      // defers them to a separate W pass; contention as for ZeRO-3's overlap
      // (collective_cost.h).
      comm_bwd +=
          overlapped_excess(tp.backward_overlapped, under_bwd, collective_.overlap_slowdown);
    }
  }
  double expert_fwd = 0, expert_bwd = 0;  // The EP collectives' share of comm_fwd, comm_bwd.
  if (moe_layer) {
    const int64_t etp = plan_.expert_tp();
    double expert_comm = 0;  // One direction (the backward mirrors the forward).
    if (plan_.ep > 1) {
      // Expert ranks stride etp: a domain of g GPUs holds g/etp of the ep group.
      const int64_t per_domain = divisor_at_most(plan_.ep, group.gpus_per_node / etp);
      const double share =
          cross_domain_share(*model_.moe, plan_.ep, per_domain, plan_.moe_dispatcher);
      const double gpu_share = destination_gpu_share(*model_.moe, plan_.ep, plan_.moe_dispatcher);
      for (const Op& op : ops) {
        if (op.all_to_all_bytes <= 0) continue;
        expert_comm += collective_seconds(Collective::kAllToAll, op.all_to_all_bytes, plan_.ep,
                                          per_domain, group, price.comm, share, gpu_share);
      }
    }
    if (etp > 1) {
      const int64_t per_domain = divisor_at_most(etp, group.gpus_per_node);
      for (const Op& op : ops) {
        if (op.expert_gather_bytes <= 0) continue;
        expert_comm += collective_seconds(
            op.name == "moe_permute" ? Collective::kAllGather : Collective::kReduceScatter,
            op.expert_gather_bytes, etp, per_domain, group, price.comm);
      }
    }
    // A recomputed MoE block (full recompute, or the moe module) dispatches and combines
    // again inside the backward.
    const double recomputed_comm = recomputes(RecomputeModule::kMoe) ? expert_comm : 0.0;
    if (plan_.moe_a2a_overlap) {
      expert_fwd = overlapped_excess(expert_comm, compute.fwd, collective_.overlap_slowdown);
      expert_bwd =
          overlapped_excess(expert_comm + recomputed_comm, under_bwd, collective_.overlap_slowdown);
    } else {
      expert_fwd = expert_comm;
      expert_bwd = expert_comm + recomputed_comm;
    }
    comm_fwd += expert_fwd;
    comm_bwd += expert_bwd;
  }
  // Context parallelism: the KV ring hides under attention; the excess shows, plus the
  // contention share of what it hides (its send/recv kernels take SMs and HBM from the
  // attention kernels, as every overlapped collective here does). A layer without attention has
  // no ring; a Mamba mixer's all-to-alls over the cp group (whose ranks stride tp) block its
  // forward and, mirrored, its backward, and run again there under full recompute: certain
  // time, so the bound keeps them too.
  double context_fwd = 0, context_bwd = 0;
  if (plan_.cp > 1 && !ideal_links_) {
    if (const Op* core = ops.find("attention_core")) {
      double kv = tokens_ * 2.0 * model_.kv_width() / std::min(plan_.tp, model_.num_kv_heads) *
                  kActivationElementBytes;
      double ring = (plan_.cp - 1) * collective_seconds(Collective::kSendRecv, kv, 2,
                                                        plan_.tp >= group.gpus_per_node ? 1 : 2,
                                                        group, price.comm);
      OpCost core_cost = costs.op_cost(*core);
      comm_fwd += overlapped_excess(ring, core_cost.fwd.seconds, collective_.overlap_slowdown);
      comm_bwd +=
          overlapped_excess(2 * ring, core_cost.b.seconds, collective_.overlap_slowdown);
    }
    double context_all_to_all = 0;
    for (const Op& op : ops) {
      if (op.context_all_to_alls == 0) continue;
      context_all_to_all +=
          op.context_all_to_alls *
          collective_seconds(Collective::kAllToAll,
                             op.context_all_to_all_bytes / op.context_all_to_alls, plan_.cp,
                             divisor_at_most(plan_.cp, group.gpus_per_node / plan_.tp), group,
                             price.comm);
    }
    context_fwd = context_all_to_all;
    context_bwd = context_all_to_all * (plan_.recompute == Recompute::kFull ? 2 : 1);
    comm_fwd += context_fwd;
    comm_bwd += context_bwd;
  }
  price.forward_comm = comm_fwd;
  price.backward_comm = comm_bwd;
  const bool host_sync = moe_layer && runtime_traits(plan_.runtime).moe_host_sync;
  // A layer inside a CUDA graph is one replay: the host issues none of its kernels.
  const bool graphed =
      plan_.cuda_graphs == CudaGraphs::kFullIteration || plan_.cuda_graphs == CudaGraphs::kLayers;
  if ((host_sync || (moe_layer && model_.moe->dropless())) && !graphed) {
    // The layer's token counts go to the host every forward, so the host cannot run ahead of
    // it (header): its kernels' issue time adds to the device time under a runtime that reads
    // them in every MoE layer, else (a dropless layer elsewhere) each pass takes at least it.
    // Under a moe-router graph the router and (moe_preprocess_graphed) the preprocess are one
    // replay each: a launch.
    const bool router_graphed = plan_.cuda_graphs == CudaGraphs::kMoeRouter;
    const bool preprocess_graphed = moe_preprocess_graphed(plan_, model_);
    double launches_fwd = 0, launches_bwd = 0;
    for (const Op& op : ops) {
      const HostLaunches launches = host_launches(op, router_graphed, preprocess_graphed);
      launches_fwd += launches.forward;
      launches_bwd += launches.backward;
    }
    const double issue_fwd = launches_fwd * kHostSecondsPerKernel;
    const double issue_bwd = launches_bwd * kHostSecondsPerKernel;
    if (host_sync) {
      price.host_wait_fwd = issue_fwd;
      price.host_wait_bwd = issue_bwd;
    } else {
      price.host_wait_fwd = std::max(0.0, issue_fwd - (compute.fwd + comm_fwd));
      price.host_wait_bwd =
          std::max(0.0, issue_bwd - (compute.recompute + compute.b + compute.w + comm_bwd));
    }
  }
  price.bound = {
      compute.fwd + tp_bound_fwd + context_fwd + expert_fwd + price.host_wait_fwd,
      compute.recompute + compute.b + tp_bound_bwd + context_bwd + expert_bwd + price.host_wait_bwd,
      compute.w};
  LayerActivationBytes saved = layer_activation_bytes(model_, activations_, layer);
  price.activation_bytes = saved.total();
  price.weight_stash_bytes = saved.norm_and_gemm_inputs;
  return price;
}

namespace {

PassSeconds embedding_seconds(const LayerCost& embedding) {
  return {embedding.fwd, embedding.b, embedding.w};
}

PassSeconds head_seconds(const LayerCost& head) {
  return {head.fwd, head.recompute + head.b, head.w};
}

void add_pass_counts(const LayerCost& cost, ChunkPrice& price) {
  price.roofline_passes += cost.roofline_passes;
  price.profile_passes += cost.profile_passes;
  price.extrapolated_passes += cost.extrapolated_passes;
}

// One layer's passes (with its exposed communication and host waits), saved bytes, bound and
// collectives, added to a chunk's price.
void add_layer_price(const LayerPrice& layer, ChunkPrice& price) {
  const LayerCost& compute = layer.compute;
  add_pass_counts(compute, price);
  price.forward += compute.fwd + layer.forward_comm + layer.host_wait_fwd;
  price.backward_input += compute.recompute + compute.b + layer.backward_comm + layer.host_wait_bwd;
  price.backward_weight += compute.w;
  price.forward_comm += layer.forward_comm;
  price.backward_comm += layer.backward_comm;
  price.activation_bytes += layer.activation_bytes;
  price.weight_stash_bytes += layer.weight_stash_bytes;
  price.bound.forward += layer.bound.forward;
  price.bound.backward_input += layer.bound.backward_input;
  price.bound.backward_weight += layer.bound.backward_weight;
  price.comm.modelled += layer.comm.modelled;
  price.comm.profile += layer.comm.profile;
  price.comm.extrapolated += layer.comm.extrapolated;
}

}  // namespace

PassSeconds ChunkPricer::embedding_passes(const CostModel& costs) const {
  return embedding_seconds(costs.embedding_cost(model_, shape_));
}

PassSeconds ChunkPricer::head_passes(const CostModel& costs) const {
  return head_seconds(costs.head_cost(model_, shape_));
}

ParameterSplit ChunkPricer::parameters(int64_t first_layer, int64_t layers, bool first_chunk,
                                       bool last_chunk) const {
  const double expert_split = static_cast<double>(plan_.ep * plan_.expert_tp());
  ParameterSplit parameters;
  // `copies` of a layer's parameters on this GPU: routed experts split over ep x etp, latent
  // projections whole on every tp rank, the rest over tp (layer_ops.h). Returns the layer's
  // total.
  auto add_layer = [&](int64_t layer, double copies) {
    const LayerParameters counted = layer_parameters(model_, layer);
    const double routed = model_.is_moe_layer(layer) ? counted.mlp - counted.shared_experts : 0.0;
    const double replicated = counted.latent_projections;
    parameters.dense += copies * ((counted.total() - routed - replicated) / plan_.tp + replicated);
    parameters.expert += copies * routed / expert_split;
    return counted.total();
  };
  for (int64_t layer = first_layer; layer < first_layer + layers; ++layer) add_layer(layer, 1);
  if (first_chunk) parameters.dense += embedding_parameters_ / plan_.tp;
  if (last_chunk) {
    parameters.dense += head_parameters_ / plan_.tp + final_norm_parameters_;
    if (model_.mtp_layers > 0) {
      // MTP depths live on the last stage: their block's layers split like the others, their
      // projection and norms over tp.
      const double depths = static_cast<double>(model_.mtp_layers);
      double block = 0;
      for (int64_t layer : model_.mtp_block_layers()) block += add_layer(layer, depths);
      parameters.dense += (mtp_parameters_ - depths * block) / plan_.tp;
    }
  }
  return parameters;
}

LayerPrice ChunkPricer::layer(const CostModel& costs, const NodeGroup& group,
                              const TensorParallelPrice& tp, int64_t index,
                              LayerPriceMemo& memo) const {
  const LayerPriceKey key{model_.layer_kind(index), plan_.recompute != Recompute::kNone};
  for (const auto& [known, price] : memo) {
    if (known == key) return price;
  }
  memo.emplace_back(key, layer(costs, group, tp, index));
  return memo.back().second;
}

ChunkPrice ChunkPricer::chunk(const CostModel& costs, const NodeGroup& group, int64_t first_layer,
                              int64_t layers, bool first_chunk, bool last_chunk,
                              LayerPriceMemo* memo) const {
  CommCounts tp_comm;
  const TensorParallelPrice tp = tensor_parallel(group, tp_comm);
  LayerPriceMemo own;
  LayerPriceMemo& prices_made = memo != nullptr ? *memo : own;
  // The plain pricer's (no recompute) TP price; its collectives are tp_comm's, not counted again.
  std::optional<TensorParallelPrice> plain_tp;
  CommCounts plain_tp_comm;
  std::vector<LayerPrice> prices;
  prices.reserve(layers);
  for (int64_t index = first_layer; index < first_layer + layers; ++index) {
    if (plain_ && !layer_recomputed(plan_, index - first_layer)) {
      if (!plain_tp) plain_tp = plain_->tensor_parallel(group, plain_tp_comm);
      prices.push_back(plain_->layer(costs, group, *plain_tp, index, prices_made));
    } else {
      prices.push_back(layer(costs, group, tp, index, prices_made));
    }
  }
  ChunkPrice price =
      chunk_from_layers(costs, group, prices.data(), first_layer, layers, first_chunk, last_chunk);
  price.comm.modelled += tp_comm.modelled;
  price.comm.profile += tp_comm.profile;
  price.comm.extrapolated += tp_comm.extrapolated;
  return price;
}

// ZeRO-3 / FSDP: each FSDP unit (a transformer layer; the embedding and head as one more) has
// its parameters all-gathered before its forward, gathered again before its backward (the
// default resharding after forward) and its gradients reduce-scattered after it, one collective
// each (two with routed experts: theirs run over the expert data-parallel group), so each pays its
// own latency, which grows with the ring (collective_cost.h). The runtime prefetches the next
// unit's gather during this one's compute, so per unit only the excess of communication over
// compute shows, plus the contention of what overlap hides.
void ChunkPricer::zero3_exposure(const NodeGroup& group, const LayerPrice* layer_prices,
                                 int64_t first_layer, int64_t layers, bool first_chunk,
                                 bool last_chunk, const PassSeconds& ends,
                                 ChunkPrice& price) const {
  const int64_t n = plan_.dp * plan_.cp;
  const int64_t per_node = dp_ranks_per_node(group);
  const int64_t expert_n = plan_.expert_dp();
  const int64_t expert_per_node = expert_dp_ranks_per_node(group);
  auto exposed = [this](double comm, double compute) {
    return std::max(0.0, comm - compute) + collective_.overlap_slowdown * std::min(comm, compute);
  };
  double exposed_fwd = 0, exposed_bwd = 0, bound_fwd = 0, bound_bwd = 0;
  // Identical layers repeat: price a unit's collectives once per parameter count. Its dense
  // parameters are sharded over dp*cp, its routed experts over the expert data-parallel group.
  ParameterSplit last_parameters{-1, -1};
  double gather = 0, scatter = 0;
  auto unit = [&](const ParameterSplit& parameters, const PassSeconds& compute,
                  const PassSeconds& bound) {
    if (parameters.total() <= 0) return;
    if (parameters.dense != last_parameters.dense || parameters.expert != last_parameters.expert) {
      last_parameters = parameters;
      const double gradient = gradient_bytes_per_param(plan_);
      gather = collective_seconds(Collective::kAllGather, parameters.dense * kStepParameterBytes, n,
                                  per_node, group, price.comm) +
               collective_seconds(Collective::kAllGather, parameters.expert * kStepParameterBytes,
                                  expert_n, expert_per_node, group, price.comm);
      scatter = collective_seconds(Collective::kReduceScatter, parameters.dense * gradient, n,
                                   per_node, group, price.comm) +
                collective_seconds(Collective::kReduceScatter, parameters.expert * gradient,
                                   expert_n, expert_per_node, group, price.comm);
    }
    exposed_fwd += exposed(gather, compute.forward);
    exposed_bwd += exposed(gather + scatter, compute.backward_input + compute.backward_weight);
    bound_fwd += std::max(0.0, gather - bound.forward);
    bound_bwd += std::max(0.0, gather + scatter - bound.backward_input - bound.backward_weight);
  };
  for (int64_t i = 0; i < layers; ++i) {
    const LayerPrice& layer = layer_prices[i];
    PassSeconds compute{layer.compute.fwd + layer.forward_comm,
                        layer.compute.recompute + layer.compute.b + layer.backward_comm,
                        layer.compute.w};
    unit(parameters(first_layer + i, 1, false, false), compute, layer.bound);
  }
  if (first_chunk || last_chunk) {
    unit(parameters(first_layer, 0, first_chunk, last_chunk), ends, ends);
  }
  price.forward += exposed_fwd;
  price.forward_comm += exposed_fwd;
  price.backward_input += exposed_bwd;
  price.backward_comm += exposed_bwd;
  price.bound.forward += bound_fwd;
  price.bound.backward_input += bound_bwd;
}

// DeepSeek-V3's multi-token prediction (section 2.2), as Megatron runs it on the last stage:
// per MTP layer, norms of the hidden state and the next token's embedding, their 2h x h
// projection, one transformer layer of the last layer's kind (a hybrid model: the layers of
// its mtp_layer_pattern), and another output layer and loss (shared weights, a second pass).
void ChunkPricer::add_mtp_layers(const CostModel& costs, const NodeGroup& group,
                                 const LayerCost& head, ChunkPrice& price) const {
  CommCounts tp_comm;
  const TensorParallelPrice tp = tensor_parallel(group, tp_comm);
  // One depth's block: the last layer's kind, or a hybrid model's MTP pattern.
  std::vector<LayerPrice> block;
  for (int64_t block_layer : model_.mtp_block_layers()) {
    block.push_back(layer(costs, group, tp, block_layer));
  }
  const LayerCost extra = costs.cost(mtp_projection_ops(model_, shape_));
  for (int64_t i = 0; i < model_.mtp_layers; ++i) {
    for (const LayerPrice& part : block) add_layer_price(part, price);
    price.forward += extra.fwd + head.fwd;
    price.backward_input += extra.b + head.recompute + head.b;
    price.backward_weight += extra.w + head.w;
    price.activation_bytes += loss_activation_bytes(model_, activations_);
    price.bound.forward += extra.fwd + head.fwd;
    price.bound.backward_input += extra.b + head.b;
    price.bound.backward_weight += extra.w + head.w;
  }
}

ChunkPrice ChunkPricer::chunk_from_layers(const CostModel& costs, const NodeGroup& group,
                                          const LayerPrice* layer_prices, int64_t first_layer,
                                          int64_t layers, bool first_chunk, bool last_chunk) const {
  ChunkPrice price;
  price.first_layer = first_layer;
  price.layers = layers;
  auto count_passes = [&price](const LayerCost& cost) { add_pass_counts(cost, price); };
  for (int64_t i = 0; i < layers; ++i) add_layer_price(layer_prices[i], price);
  if (plan_.activation_offload_layers > first_layer) {
    // The chunk's first offloaded layers (model/activation_offload.h): their saved bytes leave
    // the GPU but for one layer's; the copies not hidden under the next layer show.
    std::vector<OffloadLayer> offload_layers;
    for (int64_t i = 0; i < layers; ++i) {
      const LayerPrice& layer = layer_prices[i];
      offload_layers.push_back({layer.activation_bytes,
                                layer.compute.fwd + layer.forward_comm + layer.host_wait_fwd,
                                layer.compute.recompute + layer.compute.b + layer.compute.w +
                                    layer.backward_comm + layer.host_wait_bwd});
    }
    const ActivationOffload offload = activation_offload(
        offload_layers, std::min(layers, plan_.activation_offload_layers - first_layer),
        pcie_bytes_per_s(group));
    price.activation_bytes -= offload.gpu_saving_bytes;
    price.forward += offload.forward_seconds;
    price.backward_input += offload.backward_seconds;
  }
  PassSeconds ends;  // The embedding's and head's passes, for ZeRO-3's overlap below.
  auto add_end = [&price, &ends](const PassSeconds& end) {
    price.forward += end.forward;
    price.backward_input += end.backward_input;
    price.backward_weight += end.backward_weight;
    price.bound.forward += end.forward;
    price.bound.backward_input += end.backward_input;
    price.bound.backward_weight += end.backward_weight;
    ends.forward += end.forward;
    ends.backward_input += end.backward_input;
    ends.backward_weight += end.backward_weight;
  };
  if (first_chunk) {
    LayerCost embedding = costs.embedding_cost(model_, shape_);
    count_passes(embedding);
    add_end(embedding_seconds(embedding));
    price.activation_bytes += embedding_activation_bytes(model_, activations_);
  }
  if (last_chunk) {
    LayerCost head = costs.head_cost(model_, shape_);
    count_passes(head);
    add_end(head_seconds(head));
    price.activation_bytes += loss_activation_bytes(model_, activations_);
    if (model_.mtp_layers > 0) add_mtp_layers(costs, group, head, price);
  }
  price.parameters = parameters(first_layer, layers, first_chunk, last_chunk);
  if (zero_stage_in_force(plan_) == 3 && plan_.dp * plan_.cp > 1) {
    zero3_exposure(group, layer_prices, first_layer, layers, first_chunk, last_chunk, ends, price);
  }
  // Framework per-microbatch dispatch (cost_model.h), once per forward and per backward.
  // Under a full-iteration graph the schedule itself is replayed: no host dispatch per task.
  const double dispatch = plan_.cuda_graphs == CudaGraphs::kFullIteration
                              ? 0.0
                              : efficiency_.overheads(plan_.runtime).microbatch_overhead_s;
  price.forward += dispatch;
  price.backward_input += dispatch;
  return price;
}

}  // namespace ppsim
