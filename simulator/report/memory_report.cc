#include "simulator/report/memory_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "simulator/model/model_stats.h"
#include "simulator/report/report_format.h"

namespace ppsim {

nlohmann::ordered_json host_memory_json(const HostMemoryReport& host) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const NodeHostMemory& node : host.nodes) {
    nodes.push_back({{"node", node.node},
                     {"node_group", node.node_group},
                     {"gpus", node.gpus},
                     {"bytes", node.bytes},
                     {"capacity_bytes", node.capacity_bytes},
                     {"fits", node.bytes <= node.capacity_bytes}});
  }
  return {{"nodes", nodes},
          {"peak_bytes", host.peak_bytes},
          {"fits", host.fits},
          {"worst_node", host.worst_node},
          {"over_bytes", host.over_bytes}};
}

std::string memory_report_text(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan, const MemoryReport& report) {
  std::string out;
  out += fmt::format("# ppsim memory\n");
  out += fmt::format("# model    {} ({} parameters)\n", model.name,
                     human_count(count_parameters(model).total));
  out += fmt::format("# cluster  {}\n", describe_cluster(cluster));
  out += fmt::format("# plan     {}\n", plan_to_inline(plan));
  out += fmt::format("# sequence {} tokens, {} microbatches of {} per step per replica\n",
                     effective_seq_length(plan, model), num_microbatches(plan),
                     plan.micro_batch_size);
  out += "#\n";
  const char* row = "{} {:>5} {:>6} {:<16} {:>8} {:>8} {:>9} {:>8} {:>9} {:>11} {:>7} {:>9} {:>9} "
                    "{:>8} {:>8} {:>5}\n";
  out += fmt::format(fmt::runtime(row), "#", "stage", "layers", "gpu", "weights", "grads",
                     "optimizer", "act/mb", "in-flight", "activations", "logits", "transient",
                     "workspace", "peak", "capacity", "fits");
  out += fmt::format(fmt::runtime(row), "#", "", "", "", "(GiB)", "(GiB)", "(GiB)", "(GiB)", "(mb)",
                     "(GiB)", "(GiB)", "(GiB)", "(GiB)", "(GiB)", "(GiB)", "");
  for (const StageMemory& stage : report.stages) {
    out += fmt::format(fmt::runtime(row), " ", stage.stage, stage.layers, stage.gpu,
                       gib(stage.weights_bytes), gib(stage.gradients_bytes),
                       gib(stage.optimizer_bytes), gib(stage.activations_per_microbatch_bytes),
                       fmt::format("{:.2f}", stage.microbatches_in_flight),
                       gib(stage.activations_bytes), gib(stage.logits_bytes),
                       gib(stage.transient_bytes), gib(stage.workspace_bytes),
                       gib(stage.peak_bytes), gib(stage.capacity_bytes),
                       stage.peak_bytes <= stage.capacity_bytes ? "yes" : "no");
  }
  const StageMemory& worst = report.stages.at(report.worst_stage);
  bool gpu_fits = true;
  for (const StageMemory& stage : report.stages)
    gpu_fits &= stage.peak_bytes <= stage.capacity_bytes;
  if (plan.offload_optimizer || plan.activation_offload_layers > 0) {
    std::string what;
    if (plan.offload_optimizer) {
      what = fmt::format("optimizer offload {:g} (fp32 master, m, v and gradient buffer)",
                         plan.offload_fraction);
    }
    if (plan.activation_offload_layers > 0) {
      what += fmt::format("{}activations of {} offloaded layers", what.empty() ? "" : ", ",
                          plan.activation_offload_layers);
    }
    out += fmt::format("# host memory per node ({}) of the plan's GPUs on it\n", what);
    for (const NodeHostMemory& node : report.host.nodes) {
      out += fmt::format("#   node {} ({} GPUs): {} GiB of {} GiB host memory{}\n", node.node,
                         node.gpus, gib(node.bytes), gib(node.capacity_bytes),
                         node.bytes <= node.capacity_bytes ? "" : ": does NOT fit");
    }
  }
  if (gpu_fits) {
    out += fmt::format("# peak {} GiB on stage {} of {} GiB: fits ({} GiB free)\n",
                       gib(report.peak_bytes), worst.stage, gib(worst.capacity_bytes),
                       gib(worst.capacity_bytes - worst.peak_bytes));
  } else {
    out += fmt::format("# peak {} GiB on stage {} of {} GiB: does NOT fit, {} GiB over (raise pp "
                       "or tp, lower micro_batch_size, recompute, or shard the optimizer)\n",
                       gib(report.peak_bytes), worst.stage, gib(worst.capacity_bytes),
                       gib(report.over_bytes));
  }
  if (!report.host.fits) {
    out += fmt::format(
        "# host memory of node {} does NOT fit: {} GiB over (lower the offload "
        "fraction or activation_offload_layers, shard the optimizer with zero_stage, or give "
        "the node group a larger host_memory_GiB)\n",
        report.host.worst_node, gib(report.host.over_bytes));
  }
  return out;
}

std::string memory_report_json(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan, const MemoryReport& report) {
  nlohmann::ordered_json json;
  json["model"] = model.name;
  json["cluster"] = cluster.name;
  json["plan"] = nlohmann::ordered_json::parse(plan_to_json(plan));
  json["microbatches"] = num_microbatches(plan);
  json["seq_length"] = effective_seq_length(plan, model);
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageMemory& stage : report.stages) {
    nlohmann::ordered_json entry;
    entry["index"] = stage.stage;
    entry["layers"] = stage.layers;
    entry["gpu"] = stage.gpu;
    entry["weights_bytes"] = stage.weights_bytes;
    entry["gradients_bytes"] = stage.gradients_bytes;
    entry["optimizer_bytes"] = stage.optimizer_bytes;
    entry["activations_bytes"] = stage.activations_bytes;
    entry["activations_per_microbatch_bytes"] = stage.activations_per_microbatch_bytes;
    entry["microbatches_in_flight"] = stage.microbatches_in_flight;
    entry["logits_bytes"] = stage.logits_bytes;
    entry["transient_bytes"] = stage.transient_bytes;
    entry["workspace_bytes"] = stage.workspace_bytes;
    entry["peak_bytes"] = stage.peak_bytes;
    entry["capacity_bytes"] = stage.capacity_bytes;
    entry["host_optimizer_bytes"] = stage.host_optimizer_bytes;
    if (plan.offload_optimizer) entry["host_gradient_bytes"] = stage.host_gradient_bytes;
    if (plan.activation_offload_layers > 0)
      entry["host_activation_bytes"] = stage.host_activation_bytes;
    entry["fits"] = stage.peak_bytes <= stage.capacity_bytes;
    stages.push_back(entry);
  }
  json["stages"] = stages;
  json["peak_bytes"] = report.peak_bytes;
  json["capacity_bytes"] = report.stages.at(report.worst_stage).capacity_bytes;
  json["worst_stage"] = report.worst_stage;
  json["fits"] = report.fits;
  json["over_bytes"] = report.over_bytes;
  if (plan.offload_optimizer || plan.activation_offload_layers > 0)
    json["host_memory"] = host_memory_json(report.host);
  return json.dump(2) + "\n";
}

}  // namespace ppsim
