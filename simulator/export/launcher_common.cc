#include "simulator/export/launcher_common.h"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {

// `text` as comment lines of at most kCommentWidth characters: the first line starts with
// `first`, the others with `next`. Words longer than a line stay whole.
std::string wrap_comment(const std::string& text, const std::string& first,
                         const std::string& next) {
  std::string out;
  std::string line = first;
  bool line_has_word = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (line_has_word && line.size() + 1 + word.size() > kCommentWidth) {
      out += line + "\n";
      line = next;
      line_has_word = false;
    }
    line += (line_has_word ? " " : "") + word;
    line_has_word = true;
  }
  return out + line + "\n";
}

// Microbatches per data-parallel rank as the launchers compute them: the global batch split
// equally over dp (none of them takes per-replica shares; launch_shape warns when the plan has).
int64_t launcher_microbatches(const Plan& plan) {
  return plan.global_batch_size / (plan.micro_batch_size * plan.dp);
}

std::string join_ints(const std::vector<int64_t>& values, const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? separator : "") + std::to_string(values[i]);
  return text;
}

// "4 nodes x 8 H100-SXM-80GB" (groups joined with " + ").
std::string cluster_summary(const ClusterSpec& cluster) {
  std::string text;
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    const NodeGroup& group = cluster.nodes[i];
    text += (i ? " + " : "") + node_group_summary(group);
  }
  return text;
}

std::string model_summary(const ModelSpec& model) {
  std::string text = fmt::format("{} layers, hidden {}, {} heads", model.num_layers,
                                 model.hidden_size, model.num_attention_heads);
  if (model.num_kv_heads != model.num_attention_heads) {
    text += fmt::format(", {} kv heads", model.num_kv_heads);
  }
  if (model.moe)
    text += fmt::format(", {} experts top-{}", model.moe->num_experts, model.moe->top_k);
  if (model.is_hybrid()) {
    const auto count = [&model](char kind) {
      return std::count(model.hybrid_layer_pattern.begin(), model.hybrid_layer_pattern.end(), kind);
    };
    text += fmt::format("; hybrid: {} Mamba, {} attention, {} MLP, {} MoE layers", count('M'),
                        count('*'), count('-'), count('E'));
  }
  return text;
}

// The launch shape, plus warnings for what no launcher states: unequal nodes, a partial last
// node, stages pinned to node groups or GPU types. Every launcher here orders ranks with the
// pipeline stage outermost (Megatron "tp-cp-ep-dp-pp", torchtitan mesh ["pp", ...], DeepSpeed
// axes ["pipe", "data", "model"]), so node order decides which stage runs where.
Launch launch_shape(const ClusterSpec& cluster, const Plan& plan, const std::string& launcher,
                    std::vector<std::string>& warnings) {
  Launch launch;
  launch.world = plan.num_gpus();
  int64_t per_node = cluster.nodes.front().gpus_per_host();
  bool same_per_node = std::all_of(cluster.nodes.begin(), cluster.nodes.end(),
                                   [&](const NodeGroup& g) { return g.gpus_per_host() == per_node; });
  if (!same_per_node) {
    std::vector<int64_t> counts;
    for (const NodeGroup& group : cluster.nodes) counts.push_back(group.gpus_per_host());
    warnings.push_back(fmt::format(
        "cluster '{}' has nodes with different GPU counts ({}); torchrun starts the same number "
        "of processes on every node, so the launch line assumes {} per node",
        cluster.name, join_ints(counts, ", "), per_node));
  }
  launch.gpus_per_node = std::min(per_node, launch.world);
  launch.nodes = (launch.world + launch.gpus_per_node - 1) / launch.gpus_per_node;
  if (launch.world % launch.gpus_per_node != 0) {
    warnings.push_back(fmt::format(
        "the plan uses {} GPUs, not a whole number of {}-GPU nodes; torchrun starts "
        "--nproc_per_node processes on every node, so start the last node with {} or change dp",
        launch.world, launch.gpus_per_node, launch.world % launch.gpus_per_node));
  }
  if (has_unequal_shares(plan)) {
    warnings.push_back(fmt::format(
        "the plan gives data-parallel replicas unequal shares of the global batch "
        "(replica_microbatches {}), but {} splits the global batch equally over the dp ranks "
        "(gbs / (dp * mbs) = {:g} microbatches each); this file runs equal shares, so the "
        "simulated step time does not apply (use equal shares, or a data sampler that gives "
        "each replica its share{})",
        join_ints(plan.replica_microbatches, ":"), launcher,
        static_cast<double>(plan.global_batch_size) / (plan.micro_batch_size * plan.dp),
        plan.global_batch_size % (plan.micro_batch_size * plan.dp) == 0
            ? ""
            : "; gbs is not divisible by dp * mbs, so also choose a global batch that is"));
  }
  if (!plan.placement.empty() || cluster.is_heterogeneous()) {
    const int64_t ranks_per_stage = launch.world / plan.pp;
    std::string order;
    if (plan.placement.empty()) {
      order = "start the nodes group by group, in the order the cluster lists them";
    } else if (ranks_per_stage % launch.gpus_per_node != 0) {
      order =
          fmt::format("a stage's {} ranks do not fill whole {}-GPU nodes, so stages share nodes",
                      ranks_per_stage, launch.gpus_per_node);
    } else {
      const int64_t nodes_per_stage = ranks_per_stage / launch.gpus_per_node;
      order = "start";
      for (int64_t stage = 0; stage < plan.pp; ++stage) {
        int64_t first = stage * nodes_per_stage, last = first + nodes_per_stage - 1;
        const NodeGroup& group = cluster.nodes[plan.placement[stage]];
        order += fmt::format(
            "{} node rank{} {} on group {} ({})", stage ? ";" : "", first == last ? "" : "s",
            first == last ? std::to_string(first) : fmt::format("{}-{}", first, last),
            plan.placement[stage], group.gpu.name);
      }
    }
    warnings.push_back(fmt::format(
        "the plan {} ({}), but {} has no setting that pins a pipeline stage to a node group or GPU "
        "type: ranks fill nodes in node-rank order, pipeline stage outermost, {} ranks per stage; "
        "{}",
        plan.placement.empty()
            ? "fills the cluster's node groups in order"
            : "places pipeline stages on node groups " + join_ints(plan.placement, ", "),
        cluster_summary(cluster), launcher, ranks_per_stage, order));
  }
  return launch;
}

bool all_equal(const std::vector<int64_t>& values) {
  return std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values.front(); });
}

std::string launcher_file_name(LauncherFormat format) {
  switch (format) {
    case LauncherFormat::kMegatron:
      return "megatron_launch.sh";
    case LauncherFormat::kDeepSpeed:
      return "ds_config.json";
    case LauncherFormat::kTorchTitan:
      return "torchtitan_job.toml";
  }
  PPSIM_CHECK(false, "launcher format without a file name");
}

}  // namespace ppsim
