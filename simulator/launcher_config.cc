#include "simulator/launcher_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "simulator/error.h"
#include "simulator/gpu_catalog.h"

namespace ppsim {
namespace {

constexpr size_t kCommentWidth = 100;

const std::vector<std::string> kFormatNames = {"megatron", "deepspeed", "torchtitan"};

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
    text += fmt::format("{}{} node{} x {} {}", i ? " + " : "", group.count,
                        group.count == 1 ? "" : "s", group.gpus_per_node, group.gpu.name);
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
  return text;
}

// How many processes torchrun starts on how many nodes.
struct Launch {
  int64_t world = 0;          // GPUs the plan uses: tp * pp * dp * cp.
  int64_t gpus_per_node = 0;  // --nproc_per_node.
  int64_t nodes = 0;          // --nnodes.
};

// The launch shape, plus warnings for what no launcher states: unequal nodes, a partial last
// node, stages pinned to node groups or GPU types. Every launcher here orders ranks with the
// pipeline stage outermost (Megatron "tp-cp-ep-dp-pp", torchtitan mesh ["pp", ...], DeepSpeed
// axes ["pipe", "data", "model"]), so node order decides which stage runs where.
Launch launch_shape(const ClusterSpec& cluster, const Plan& plan, const std::string& launcher,
                    std::vector<std::string>& warnings) {
  Launch launch;
  launch.world = plan.num_gpus();
  int64_t per_node = cluster.nodes.front().gpus_per_node;
  bool same_per_node = std::all_of(cluster.nodes.begin(), cluster.nodes.end(),
                                   [&](const NodeGroup& g) { return g.gpus_per_node == per_node; });
  if (!same_per_node) {
    std::vector<int64_t> counts;
    for (const NodeGroup& group : cluster.nodes) counts.push_back(group.gpus_per_node);
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

bool is_v_shaped(ScheduleKind kind) {
  return kind == ScheduleKind::kZbv || kind == ScheduleKind::kDualPipeV;
}

// Model chunks per pipeline rank in the plan's own schedule.
int64_t plan_chunks(const Plan& plan) {
  return (plan.schedule == ScheduleKind::kInterleaved1F1B || is_v_shaped(plan.schedule)) ? plan.vpp
                                                                                         : 1;
}

// Layers of each of the pp * chunks virtual stages, in model order. Loop placement puts
// virtual stage i on rank i % pp; V placement on rank i (i < pp) or 2pp-1-i. A rank's layers
// are split evenly over its chunks (plan validation guarantees they divide).
std::vector<int64_t> virtual_stage_layers(const Plan& plan, const ModelSpec& model, int64_t chunks,
                                          bool v_placement) {
  std::vector<int64_t> per_rank = stage_layer_counts(plan, model);
  std::vector<int64_t> layers;
  for (int64_t index = 0; index < plan.pp * chunks; ++index) {
    int64_t rank =
        v_placement ? (index < plan.pp ? index : 2 * plan.pp - 1 - index) : index % plan.pp;
    layers.push_back(per_rank[rank] / chunks);
  }
  return layers;
}

// ---------------------------------------------------------------------------------------------
// Megatron-LM

// One command-line argument: a flag and its value ("" for a store_true flag).
struct Arg {
  std::string flag;
  std::string value;
};

std::string bash_array(const std::string& name, const std::vector<Arg>& args) {
  std::string text = name + "=(\n";
  for (const Arg& arg : args) {
    text += "  " + arg.flag + (arg.value.empty() ? "" : " " + arg.value) + "\n";
  }
  return text + ")\n";
}

// --pipeline-model-parallel-layout: "E" embedding, "t" decoder layer, "L" loss; stages
// separated by "|"; "t*n" repeats; commas are cosmetic (pipeline_parallel_layer_layout.py).
std::string megatron_layout(const std::vector<int64_t>& stage_layers) {
  std::string layout;
  for (size_t i = 0; i < stage_layers.size(); ++i) {
    if (i) layout += "|";
    if (i == 0) layout += "E";
    int64_t n = stage_layers[i];
    if (n == 1) layout += "t";
    if (n > 1) layout += fmt::format("t*{}", n);
    if (i + 1 == stage_layers.size()) layout += ",L";
  }
  return layout;
}

// Pipeline schedule and layer split flags; `chunks` becomes the plan's vpp when Megatron has
// the schedule, else 1 (1F1B) with a warning.
void megatron_pipeline_args(const ModelSpec& model, const Plan& plan, std::vector<Arg>& args,
                            std::vector<std::string>& warnings) {
  if (plan.pp == 1) return;
  const std::string name = schedule_name(plan.schedule);
  int64_t chunks = 1;
  switch (plan.schedule) {
    case ScheduleKind::kOneFOneB:
      break;
    case ScheduleKind::kInterleaved1F1B:
      chunks = plan.vpp;
      break;
    case ScheduleKind::kGpipe:
      warnings.push_back(fmt::format(
          "Megatron-LM has no GPipe schedule (all forwards, then all backwards); the script runs "
          "its 1F1B schedule, which has the same bubble but keeps at most pp = {} microbatches of "
          "activations alive instead of all {}",
          plan.pp, launcher_microbatches(plan)));
      break;
    case ScheduleKind::kZbH1:
    case ScheduleKind::kZbH2:
    case ScheduleKind::kZb1p:
    case ScheduleKind::kZb2p:
      warnings.push_back(fmt::format(
          "Megatron-LM has no zero-bubble schedule ({}: backward split into input-gradient and "
          "delayed weight-gradient passes); the script runs its 1F1B schedule, whose bubble is "
          "larger",
          name));
      break;
    case ScheduleKind::kZbv:
    case ScheduleKind::kDualPipeV:
      warnings.push_back(fmt::format(
          "Megatron-LM has no V-shaped schedule ({}: two chunks per rank, rank r holding stages r "
          "and 2pp-1-r); the script runs its non-interleaved 1F1B schedule with the same layers "
          "per rank, whose bubble is larger",
          name));
      break;
  }
  std::vector<int64_t> layers = stage_layer_counts(plan, model);
  if (all_equal(layers)) {
    if (chunks > 1) {
      args.push_back(
          {"--num-layers-per-virtual-pipeline-stage", std::to_string(layers.front() / chunks)});
    }
    return;
  }
  // Uneven: first/last flags when the middle stages are even, else an explicit layout.
  const int64_t first = layers.front(), last = layers.back();
  std::vector<int64_t> middle(layers.begin() + 1, layers.end() - 1);
  bool middle_even = middle.empty() || all_equal(middle);
  if (middle_even && first > 0 && last > 0) {
    args.push_back({"--decoder-first-pipeline-num-layers", std::to_string(first)});
    args.push_back({"--decoder-last-pipeline-num-layers", std::to_string(last)});
    if (chunks > 1)
      args.push_back({"--num-virtual-stages-per-pipeline-rank", std::to_string(chunks)});
    return;
  }
  std::vector<int64_t> virtual_layers = virtual_stage_layers(plan, model, chunks, false);
  args.push_back(
      {"--pipeline-model-parallel-layout", "\"" + megatron_layout(virtual_layers) + "\""});
}

}  // namespace

LauncherOutput export_megatron(const ModelSpec& model, const ClusterSpec& cluster,
                               const Plan& plan) {
  LauncherOutput out;
  std::vector<std::string>& warnings = out.warnings;
  const Launch launch = launch_shape(cluster, plan, "Megatron-LM", warnings);
  const int64_t seq = effective_seq_length(plan, model);
  const int64_t microbatches = launcher_microbatches(plan);

  std::vector<Arg> model_args = {
      {"--num-layers", std::to_string(model.num_layers)},
      {"--hidden-size", std::to_string(model.hidden_size)},
      {"--ffn-hidden-size", std::to_string(model.ffn_hidden_size)},
      {"--num-attention-heads", std::to_string(model.num_attention_heads)},
  };
  if (model.num_kv_heads != model.num_attention_heads) {
    model_args.push_back({"--group-query-attention", ""});
    model_args.push_back({"--num-query-groups", std::to_string(model.num_kv_heads)});
  }
  if (model.head_dim * model.num_attention_heads != model.hidden_size) {
    model_args.push_back({"--kv-channels", std::to_string(model.head_dim)});
  }
  const bool learned = model.position_embedding == PositionEmbedding::kLearned;
  const int64_t positions = std::max(model.max_position_embeddings, seq);
  if (learned && seq > model.max_position_embeddings) {
    warnings.push_back(fmt::format(
        "{} has a learned position table of {} rows but the plan trains at sequence length {}; "
        "Megatron-LM needs --max-position-embeddings >= --seq-length, so the script sets {} (a "
        "larger table than the model's)",
        model.name, model.max_position_embeddings, seq, positions));
  }
  model_args.push_back({"--seq-length", std::to_string(seq)});
  model_args.push_back({"--max-position-embeddings", std::to_string(positions)});
  model_args.push_back({"--position-embedding-type", learned ? "learned_absolute" : "rope"});
  if (model.activation == Activation::kSwiglu) model_args.push_back({"--swiglu", ""});
  model_args.push_back({"--normalization", model.norm == Norm::kRmsNorm ? "RMSNorm" : "LayerNorm"});
  if (!model.tied_embeddings) model_args.push_back({"--untie-embeddings-and-output-weights", ""});
  if (!model.linear_bias) model_args.push_back({"--disable-bias-linear", ""});
  if (model.moe) {
    model_args.push_back({"--num-experts", std::to_string(model.moe->num_experts)});
    model_args.push_back({"--moe-router-topk", std::to_string(model.moe->top_k)});
    model_args.push_back(
        {"--moe-ffn-hidden-size", std::to_string(model.moe->expert_ffn_hidden_size)});
    if (model.moe->every_n_layers != 1) {
      model_args.push_back({"--moe-layer-freq", std::to_string(model.moe->every_n_layers)});
    }
  }

  std::vector<Arg> parallel_args = {
      {"--tensor-model-parallel-size", std::to_string(plan.tp)},
      {"--pipeline-model-parallel-size", std::to_string(plan.pp)},
      {"--context-parallel-size", std::to_string(plan.cp)},
  };
  if (model.moe) {
    parallel_args.push_back({"--expert-model-parallel-size", std::to_string(plan.ep)});
    if (plan.ep > 1) parallel_args.push_back({"--moe-token-dispatcher-type", "alltoall"});
  }
  if (plan.sequence_parallel) parallel_args.push_back({"--sequence-parallel", ""});
  if (plan.ep > 1 && plan.tp > 1 && !plan.sequence_parallel) {
    warnings.push_back(
        "Megatron-LM requires sequence parallelism when expert and tensor parallelism are both "
        "on (model_parallel_config.py); the plan has sequence_parallel=false, which the script "
        "keeps: add --sequence-parallel, or set it in the plan and re-run ppsim");
  }
  megatron_pipeline_args(model, plan, parallel_args, warnings);

  std::vector<Arg> training_args = {
      {"--micro-batch-size", std::to_string(plan.micro_batch_size)},
      {"--global-batch-size", std::to_string(plan.global_batch_size)},
  };
  if (plan.recompute == Recompute::kSelective) {
    training_args.push_back({"--recompute-granularity", "selective"});
  } else if (plan.recompute == Recompute::kFull) {
    training_args.push_back({"--recompute-granularity", "full"});
    training_args.push_back({"--recompute-method", "uniform"});
    training_args.push_back({"--recompute-num-layers", "1"});
  }
  if (plan.precision == Precision::kFp16) {
    training_args.push_back({"--fp16", ""});
  } else {
    training_args.push_back({"--bf16", ""});
    if (plan.precision == Precision::kFp8) training_args.push_back({"--fp8-format", "hybrid"});
  }
  const bool megatron_fsdp = plan.zero_stage >= 2;
  if (plan.zero_stage >= 1) training_args.push_back({"--use-distributed-optimizer", ""});
  if (megatron_fsdp) {
    training_args.push_back({"--use-megatron-fsdp", ""});
    training_args.push_back({"--data-parallel-sharding-strategy",
                             plan.zero_stage == 2 ? "optim_grads" : "optim_grads_params"});
    training_args.push_back({"--ckpt-format", "fsdp_dtensor"});
  }
  if (plan.offload_optimizer) {
    training_args.push_back({"--optimizer-cpu-offload", ""});
    // REFERENCE.md 1.1: --optimizer-offload-fraction, default 1.0.
    if (plan.offload_fraction < 1.0) {
      training_args.push_back(
          {"--optimizer-offload-fraction", fmt::format("{}", plan.offload_fraction)});
    }
    training_args.push_back({"--use-precision-aware-optimizer", ""});
  }
  if (plan.dp * plan.cp > 1) {
    training_args.push_back({"--overlap-grad-reduce", ""});
    if (plan.zero_stage >= 1) training_args.push_back({"--overlap-param-gather", ""});
  }

  std::vector<Arg> run_args = {
      {"--mock-data", ""},
      {"--tokenizer-type", "NullTokenizer"},
      {"--vocab-size", std::to_string(model.vocab_size)},
      {"--train-iters", "\"${TRAIN_ITERS:-100}\""},
      {"--lr", "1.0e-4"},
      {"--log-throughput", ""},
  };

  std::string& text = out.text;
  text += "#!/bin/bash\n";
  text += "# Megatron-LM launch script written by `ppsim export --format megatron`.\n";
  text += fmt::format("#   model:   {} ({})\n", model.name, model_summary(model));
  text += fmt::format("#   cluster: {} ({})\n", cluster.name, cluster_summary(cluster));
  text += fmt::format("#   plan:    {}\n", plan_to_inline(plan));
  text += fmt::format("#   step:    {} microbatches of {} x {} tokens per replica, {} GPUs\n",
                      microbatches, plan.micro_batch_size, seq, launch.world);
  text += wrap_comment(
      (launch.nodes == 1
           ? std::string("Run it from the root of a Megatron-LM checkout.")
           : fmt::format("Run it from the root of a Megatron-LM checkout on each of the {} nodes, "
                         "with NODE_RANK set to the node's index (0..{}) and MASTER_ADDR to node "
                         "0's address.",
                         launch.nodes, launch.nodes - 1)) +
          " Flags as megatron/training/arguments.py (NVIDIA/Megatron-LM) defines them.",
      "# ", "# ");
  for (const std::string& warning : warnings) {
    text += wrap_comment(warning, "# WARNING: ", "#   ");
  }
  text += "\nset -euo pipefail\n\n";
  if (megatron_fsdp) {
    text += "# Megatron-FSDP (ZeRO-2/3) asserts CUDA_DEVICE_MAX_CONNECTIONS != 1 (arguments.py).\n";
    text += "unset CUDA_DEVICE_MAX_CONNECTIONS\n\n";
  } else {
    text += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n\n";
  }
  text += fmt::format("GPUS_PER_NODE={}\n", launch.gpus_per_node);
  text += fmt::format("NUM_NODES={}\n", launch.nodes);
  if (launch.nodes == 1) {
    text += "NODE_RANK=${NODE_RANK:-0}\n";
    text += "MASTER_ADDR=${MASTER_ADDR:-localhost}\n";
  } else {
    // No apostrophes: inside ${VAR:?word} bash would read one as an opening quote.
    text +=
        fmt::format("NODE_RANK=${{NODE_RANK:?set NODE_RANK to the index of this node, 0..{}}}\n",
                    launch.nodes - 1);
    text += "MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}\n";
  }
  text += "MASTER_PORT=${MASTER_PORT:-29500}\n\n";
  text += bash_array("DISTRIBUTED_ARGS", {{"--nproc_per_node", "\"$GPUS_PER_NODE\""},
                                          {"--nnodes", "\"$NUM_NODES\""},
                                          {"--node_rank", "\"$NODE_RANK\""},
                                          {"--master_addr", "\"$MASTER_ADDR\""},
                                          {"--master_port", "\"$MASTER_PORT\""}});
  text += fmt::format("\n# Model shape ({}).\n", model.name);
  text += bash_array("MODEL_ARGS", model_args);
  text += fmt::format(
      "\n# Parallelism: tp {} x pp {} x cp {} x dp {} = {} GPUs; Megatron derives dp from the "
      "world size.\n",
      plan.tp, plan.pp, plan.cp, plan.dp, launch.world);
  text += bash_array("PARALLEL_ARGS", parallel_args);
  text += "\n# Batch, recompute, precision, optimizer sharding and overlap.\n";
  text += bash_array("TRAINING_ARGS", training_args);
  text += "\n# Not part of the plan: mock data and a short run; replace for real training.\n";
  text += bash_array("RUN_ARGS", run_args);
  text += "\ntorchrun \"${DISTRIBUTED_ARGS[@]}\" pretrain_gpt.py \\\n";
  text +=
      "  \"${MODEL_ARGS[@]}\" \"${PARALLEL_ARGS[@]}\" \"${TRAINING_ARGS[@]}\" "
      "\"${RUN_ARGS[@]}\"\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// DeepSpeed

LauncherOutput export_deepspeed(const ModelSpec& model, const ClusterSpec& cluster,
                                const Plan& plan) {
  LauncherOutput out;
  std::vector<std::string>& warnings = out.warnings;
  const Launch launch = launch_shape(cluster, plan, "DeepSpeed", warnings);
  const int64_t microbatches = launcher_microbatches(plan);
  std::vector<std::string> notes;  // What the training script sets, in DeepSpeed's own API.

  // ZeRO stage: DeepSpeed's pipeline engine asserts stage < 2 (runtime/pipe/engine.py), and
  // optimizer offload needs ZeRO.
  int zero_stage = plan.zero_stage;
  if (plan.pp > 1 && zero_stage >= 2) {
    warnings.push_back(fmt::format(
        "DeepSpeed's pipeline engine rejects ZeRO-2 and ZeRO-3 (runtime/pipe/engine.py asserts "
        "stage < 2); the config uses stage 1 instead of the plan's {}, so gradients{} stay "
        "replicated",
        zero_stage, zero_stage == 3 ? " and parameters" : ""));
    zero_stage = 1;
  }
  if (plan.offload_optimizer && zero_stage == 0) {
    warnings.push_back(
        "DeepSpeed offloads the optimizer only under ZeRO (offload_optimizer is a "
        "zero_optimization key); the config uses stage 1 instead of the plan's 0, which also "
        "shards optimizer states over dp");
    zero_stage = 1;
  }
  if (plan.pp > 1) {
    if (plan.schedule != ScheduleKind::kOneFOneB) {
      warnings.push_back(fmt::format(
          "DeepSpeed's pipeline engine has one schedule, its 1F1B TrainSchedule with one stage "
          "per rank; the plan's {}{} cannot be selected",
          schedule_name(plan.schedule),
          plan_chunks(plan) > 1 ? fmt::format(" ({} chunks per rank)", plan_chunks(plan)) : ""));
    }
    std::vector<int64_t> layers = stage_layer_counts(plan, model);
    if (!all_equal(layers)) {
      warnings.push_back(fmt::format(
          "PipelineModule cannot take per-stage layer counts (partition_method is 'parameters', "
          "'uniform' or 'type:REGEX'); the plan's split {} must come from a custom partition in "
          "the model code",
          join_ints(layers, ":")));
    }
    notes.push_back(
        fmt::format("pipeline parallel {}: deepspeed.pipe.PipelineModule(layers, "
                    "topology=PipeModelDataParallelTopology(num_pp={}, num_mp={}, num_dp={}), "
                    "partition_method='type:<transformer layer class>'); engine.train_batch() runs "
                    "gradient_accumulation_steps = {} microbatches through the pipeline",
                    plan.pp, plan.pp, plan.tp, plan.dp, microbatches));
  } else if (plan.tp > 1) {
    notes.push_back(
        fmt::format("tensor parallel {}: from the model code (a Megatron-style mpu passed to "
                    "deepspeed.initialize) or, for Hugging Face models, DeepSpeed AutoTP "
                    "(\"tensor_parallel\": {{\"autotp_size\": {}}})",
                    plan.tp, plan.tp));
  }
  if (plan.sequence_parallel) {
    notes.push_back(
        "sequence parallelism (Megatron-style, inside the tp group): in the model code "
        "(Megatron-DeepSpeed --sequence-parallel); DeepSpeed's config has no key for it");
  }
  if (plan.ep > 1) {
    notes.push_back(fmt::format(
        "expert parallel {}: deepspeed.moe.layer.MoE(hidden_size={}, expert=..., num_experts={}, "
        "ep_size={}, k={})",
        plan.ep, model.hidden_size, model.moe->num_experts, plan.ep, model.moe->top_k));
  }
  if (plan.cp > 1) {
    warnings.push_back(fmt::format(
        "DeepSpeed has no ring context parallelism; cp={} must come from the model code, or use "
        "DeepSpeed-Ulysses (all-to-all over attention heads, set up through the mpu), which "
        "communicates differently from what ppsim simulated",
        plan.cp));
  }
  if (plan.recompute == Recompute::kSelective) {
    warnings.push_back(
        "DeepSpeed has no selective (attention-only) recompute setting; it must come from the "
        "model code (Megatron-DeepSpeed --recompute-granularity selective)");
  } else if (plan.recompute == Recompute::kFull && plan.pp == 1) {
    // With a PipelineModule, "pipeline": {"activation_checkpoint_interval": 1} below does it.
    notes.push_back(
        "full recompute: wrap each transformer layer in deepspeed.checkpointing.checkpoint (the "
        "config has no switch for it without a PipelineModule)");
  }
  if (plan.precision == Precision::kFp8) {
    warnings.push_back(
        "DeepSpeed's config has no FP8 training setting; the config enables bf16, and FP8 GEMMs "
        "must come from Transformer Engine layers in the model code");
  }

  nlohmann::ordered_json comment = nlohmann::ordered_json::array();
  comment.push_back(
      "DeepSpeed config written by `ppsim export --format deepspeed`; DeepSpeed "
      "ignores this key.");
  comment.push_back(fmt::format("model: {} ({})", model.name, model_summary(model)));
  comment.push_back(fmt::format("cluster: {} ({})", cluster.name, cluster_summary(cluster)));
  comment.push_back("plan: " + plan_to_inline(plan));
  comment.push_back(
      launch.nodes == 1
          ? fmt::format("launch: deepspeed --num_gpus {} train.py --deepspeed --deepspeed_config "
                        "{}",
                        launch.gpus_per_node, launcher_file_name(LauncherFormat::kDeepSpeed))
          : fmt::format("launch: deepspeed --hostfile=hostfile --num_nodes {} --num_gpus {} "
                        "train.py --deepspeed --deepspeed_config {} (hostfile lines: "
                        "'<host> slots={}')",
                        launch.nodes, launch.gpus_per_node,
                        launcher_file_name(LauncherFormat::kDeepSpeed), launch.gpus_per_node));
  comment.push_back(fmt::format(
      "train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
      "data-parallel size = {} x {} x {}",
      plan.micro_batch_size, microbatches, plan.dp));
  for (const std::string& note : notes) comment.push_back("set in the training script: " + note);
  for (const std::string& warning : warnings) comment.push_back("WARNING: " + warning);

  nlohmann::ordered_json json;
  json["_ppsim_comment"] = comment;
  json["train_batch_size"] = plan.global_batch_size;
  json["train_micro_batch_size_per_gpu"] = plan.micro_batch_size;
  json["gradient_accumulation_steps"] = microbatches;
  if (plan.precision == Precision::kFp16) {
    json["fp16"] = {{"enabled", true}, {"loss_scale", 0}};
  } else {
    json["bf16"] = {{"enabled", true}};
  }
  nlohmann::ordered_json zero;
  zero["stage"] = zero_stage;
  if (zero_stage >= 1 && plan.dp > 1) zero["overlap_comm"] = true;
  if (plan.offload_optimizer) {
    zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
    // REFERENCE.md 2: "ratio", the share of the optimizer step run on the CPU.
    if (plan.offload_fraction < 1.0) zero["offload_optimizer"]["ratio"] = plan.offload_fraction;
  }
  json["zero_optimization"] = zero;
  if (plan.pp > 1 && plan.recompute == Recompute::kFull) {
    json["pipeline"] = {{"activation_checkpoint_interval", 1}};
  }
  out.text = json.dump(2) + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// torchtitan

namespace {

std::string toml_string(const std::string& value) {
  std::string text = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') text += '\\';
    text += c;
  }
  return text + "\"";
}

// A string array over as many lines as it takes to stay within kCommentWidth columns, the
// first starting with `indent`, the others one space further in.
std::string toml_wrapped_array(const std::vector<std::string>& values, const std::string& indent) {
  std::string text = indent + "[";
  size_t line_start = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string item = toml_string(values[i]) + (i + 1 < values.size() ? "," : "]");
    if (i > 0 && text.size() - line_start + 1 + item.size() > kCommentWidth) {
      text += "\n";
      line_start = text.size();
      text += indent + " " + item;
    } else {
      text += (i > 0 ? " " : "") + item;
    }
  }
  if (values.empty()) text += "]";
  return text;
}

std::string toml_string_array(const std::vector<std::string>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + toml_string(values[i]);
  return text + "]";
}

// A torchtitan model and flavor with exactly this shape, from torchtitan/models/*/__init__.py
// at e347b1e5e (llama3 flavors: dim, n_layers, n_heads, n_kv_heads; FFN width from
// ffn_dim_multiplier and multiple_of; the Llama 3 tokenizer's 128256 tokens).
struct Flavor {
  const char* model;
  const char* flavor;
  const char* config_function;  // Its config_registry function after the Python-config move.
  const char* hf_assets_path;   // Tokenizer folder, as torchtitan's own TOMLs give it.
  int64_t layers, hidden, heads, kv_heads, ffn, vocab;
};
constexpr Flavor kFlavors[] = {
    {"llama3", "8B", "llama3_8b", "./assets/hf/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256},
    {"llama3", "70B", "llama3_70b", "./assets/hf/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256},
    {"llama3", "405B", "llama3_405b", "./assets/hf/Llama-3.1-405B", 126, 16384, 128, 8, 53248,
     128256},
};

const Flavor* find_flavor(const ModelSpec& model) {
  if (model.moe || model.activation != Activation::kSwiglu || model.norm != Norm::kRmsNorm ||
      model.tied_embeddings || model.linear_bias ||
      model.position_embedding != PositionEmbedding::kRope) {
    return nullptr;
  }
  for (const Flavor& flavor : kFlavors) {
    if (flavor.layers == model.num_layers && flavor.hidden == model.hidden_size &&
        flavor.heads == model.num_attention_heads && flavor.kv_heads == model.num_kv_heads &&
        flavor.ffn == model.ffn_hidden_size && flavor.vocab == model.vocab_size) {
      return &flavor;
    }
  }
  return nullptr;
}

// torch.distributed.pipelining schedule names (get_schedule_class).
std::string torch_schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGpipe:
      return "GPipe";
    case ScheduleKind::kOneFOneB:
      return "1F1B";
    case ScheduleKind::kInterleaved1F1B:
      return "Interleaved1F1B";
    case ScheduleKind::kZbH1:
    case ScheduleKind::kZbH2:
    case ScheduleKind::kZb1p:
    case ScheduleKind::kZb2p:
      return "InterleavedZeroBubble";
    case ScheduleKind::kZbv:
      return "ZBVZeroBubble";
    case ScheduleKind::kDualPipeV:
      return "DualPipeV";
  }
  PPSIM_CHECK(false, "schedule without a torch name");
}

// Data-parallel degrees: plain DDP only for pure data parallelism (torchtitan raises "DDP has
// not supported > 1D parallelism" otherwise); else FSDP over dp.
struct TitanDataParallel {
  int64_t replicate = 1;
  int64_t shard = 1;
  std::string reshard = "default";  // fsdp_reshard_after_forward.
};

TitanDataParallel titan_data_parallel(const Plan& plan, std::vector<std::string>& warnings) {
  TitanDataParallel dp;
  const bool pure_dp = plan.tp == 1 && plan.pp == 1 && plan.cp == 1 && plan.ep == 1;
  if (plan.dp == 1) return dp;
  if (plan.zero_stage == 0 && !plan.offload_optimizer && pure_dp) {
    dp.replicate = plan.dp;
    return dp;
  }
  dp.shard = plan.dp;
  dp.reshard = plan.zero_stage == 3 ? "always" : "never";
  if (plan.zero_stage == 0) {
    warnings.push_back(fmt::format(
        "torchtitan runs plain DDP only without other parallelism{}; the plan's replicated "
        "optimizer (zero_stage 0) becomes FSDP over dp = {} with fsdp_reshard_after_forward = "
        "\"never\", which also shards optimizer states and gradients",
        plan.offload_optimizer ? " and offloads only through FSDP" : "", plan.dp));
  } else if (plan.zero_stage == 1) {
    warnings.push_back(
        "torchtitan has no optimizer-only sharding (ZeRO-1); FSDP with "
        "fsdp_reshard_after_forward = \"never\" shards gradients as well (ZeRO-2)");
  }
  return dp;
}

}  // namespace

LauncherOutput export_torchtitan(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Plan& plan) {
  LauncherOutput out;
  std::vector<std::string>& warnings = out.warnings;
  std::vector<std::string> notes;
  const Launch launch = launch_shape(cluster, plan, "torchtitan", warnings);
  const int64_t seq = effective_seq_length(plan, model);
  const int64_t microbatches = launcher_microbatches(plan);

  const Flavor* flavor = find_flavor(model);
  // Without a matching flavor, the closest family: Llama 3 for dense models, Qwen3 (GQA,
  // SwiGLU experts, no shared expert) for MoE.
  const std::string titan_model = flavor ? flavor->model : model.moe ? "qwen3" : "llama3";
  const std::string titan_flavor = flavor ? flavor->flavor : "ppsim-" + model.name;
  if (!flavor) {
    warnings.push_back(fmt::format(
        "torchtitan takes the model shape from a registered flavor, not from the config, and "
        "none matches {} ({}); [model] names the flavor \"{}\", which torchtitan rejects until "
        "one with this shape is registered",
        model.name, model_summary(model), titan_flavor));
  }
  const TitanDataParallel dp = titan_data_parallel(plan, warnings);
  if (plan.cp > 1 && plan.zero_stage < 3) {
    warnings.push_back(fmt::format(
        "torchtitan always applies FSDP over the context-parallel ranks (parallel_dims.py: the "
        "fsdp mesh is dp_shard x cp), so parameters and optimizer states are sharded over cp = {} "
        "as well, unlike the plan's zero_stage {}",
        plan.cp, plan.zero_stage));
  }
  if (plan.tp > 1 && !plan.sequence_parallel) {
    warnings.push_back(
        "torchtitan's TOML-era tensor parallelism always shards norms and activations along the "
        "sequence (sequence parallelism); the plan has sequence_parallel=false");
  }
  if (seq % (plan.tp * 2 * plan.cp) != 0) {
    warnings.push_back(fmt::format(
        "torchtitan needs seq_len divisible by tp x 2cp = {} (parallel_dims.seq_len_divisor); "
        "{} is not",
        plan.tp * 2 * plan.cp, seq));
  }
  if (plan.precision == Precision::kFp16) {
    warnings.push_back(
        "torchtitan's mixed precision takes bfloat16 or float32 parameters only; the config uses "
        "bfloat16 instead of the plan's fp16");
  }
  if (plan.offload_optimizer) {
    warnings.push_back(
        "torchtitan's training.enable_cpu_offload offloads parameters and gradients as well as "
        "optimizer states (FSDP CPUOffloadPolicy), more than the plan's optimizer-only offload");
  }
  if (plan.pp > 1 &&
      (plan.schedule == ScheduleKind::kZbH2 || plan.schedule == ScheduleKind::kZb2p)) {
    warnings.push_back(fmt::format(
        "torch.distributed.pipelining has no {} schedule; the config runs "
        "InterleavedZeroBubble (the paper's ZB1P, ZB-H1's memory) with one stage per rank, whose "
        "bubble is larger",
        plan.schedule == ScheduleKind::kZbH2 ? "ZB-H2" : "searched ZB-2p"));
  } else if (plan.pp > 1 && plan.schedule == ScheduleKind::kZbH1) {
    notes.push_back("zb-h1 runs as InterleavedZeroBubble (torch's ZB1P) with one stage per rank.");
  } else if (plan.pp > 1 && plan.schedule == ScheduleKind::kZb1p) {
    notes.push_back("zb-1p runs as InterleavedZeroBubble (torch's ZB1P, a handcrafted order under "
                    "the same p-microbatch memory limit) with one stage per rank.");
  }
  const bool ep_overlap_off = plan.pp > 1 && plan.schedule == ScheduleKind::kDualPipeV &&
                              plan.ep > 1 && plan.recompute != Recompute::kNone;
  if (ep_overlap_off) {
    warnings.push_back(
        "torchtitan's DualPipeV expert-parallel overlap does not support activation "
        "checkpointing; the config turns it off (pipeline_parallel_expert_parallel_overlap = "
        "false)");
  }

  // Pipeline stages: one model part per virtual stage, listed in model order.
  const int64_t chunks = plan_chunks(plan);
  std::vector<std::vector<std::string>> parts;
  if (plan.pp > 1) {
    int64_t next = 0;
    std::vector<int64_t> layers =
        virtual_stage_layers(plan, model, chunks, is_v_shaped(plan.schedule));
    for (size_t i = 0; i < layers.size(); ++i) {
      std::vector<std::string> part;
      if (i == 0) part.push_back("tok_embeddings");
      for (int64_t j = 0; j < layers[i]; ++j) part.push_back(fmt::format("layers.{}", next++));
      if (i + 1 == layers.size()) {
        part.push_back("norm");
        part.push_back("output");
      }
      parts.push_back(part);
    }
  }
  const int64_t local_batch =
      plan.pp > 1 ? plan.global_batch_size / plan.dp : plan.micro_batch_size;
  const std::string mode = plan.recompute == Recompute::kFull        ? "full"
                           : plan.recompute == Recompute::kSelective ? "selective"
                                                                     : "none";
  const std::string file = launcher_file_name(LauncherFormat::kTorchTitan);

  std::string& text = out.text;
  text += "# torchtitan job config written by `ppsim export --format torchtitan`.\n";
  text += fmt::format("#   model:   {} ({})\n", model.name, model_summary(model));
  text += fmt::format("#   cluster: {} ({})\n", cluster.name, cluster_summary(cluster));
  text += fmt::format("#   plan:    {}\n", plan_to_inline(plan));
  text += wrap_comment(
      "TOML format of torchtitan before its move to Python configs (2026-02-23); keys as "
      "torchtitan/config/job_config.py defines them (torchtitan rejects unknown keys).",
      "# ", "# ");
  text += "# Launch:\n";
  if (launch.nodes == 1) {
    text += fmt::format("#   CONFIG_FILE={} NGPU={} ./run_train.sh\n", file, launch.gpus_per_node);
  } else {
    text += fmt::format(
        "#   torchrun --nproc_per_node={} --nnodes={} --node_rank=$NODE_RANK "
        "--master_addr=$MASTER_ADDR \\\n"
        "#     --master_port=29500 -m torchtitan.train --job.config_file {}\n",
        launch.gpus_per_node, launch.nodes, file);
  }
  for (const std::string& note : notes) text += wrap_comment(note, "# ", "# ");
  for (const std::string& warning : warnings) text += wrap_comment(warning, "# WARNING: ", "#   ");

  // The same settings for the Python-config releases (REFERENCE.md 3.2).
  text += "#\n";
  text += wrap_comment(
      "Newer torchtitan (Python configs, --module/--config): the same settings as command-line "
      "overrides, which those releases still accept:",
      "# ", "# ");
  text += fmt::format("#   torchrun ... -m torchtitan.train --module {} --config {} \\\n",
                      flavor ? flavor->model : "<module>",
                      flavor ? flavor->config_function : "<config>");
  std::vector<std::string> overrides = {
      fmt::format("--parallelism.data_parallel_replicate_degree {}", dp.replicate),
      fmt::format("--parallelism.data_parallel_shard_degree {}", dp.shard),
      fmt::format("--parallelism.fsdp_reshard_after_forward {}", dp.reshard),
      fmt::format("--parallelism.tensor_parallel_degree {}", plan.tp),
      fmt::format("--parallelism.pipeline_parallel_degree {}", plan.pp),
  };
  if (plan.pp > 1) {
    overrides.push_back("--parallelism.pipeline_parallel_schedule " +
                        torch_schedule_name(plan.schedule));
    overrides.push_back(fmt::format("--parallelism.num_pp_microbatches {}", microbatches));
  }
  overrides.push_back(fmt::format("--parallelism.context_parallel_degree {}", plan.cp));
  overrides.push_back(fmt::format("--parallelism.expert_parallel_degree {}", plan.ep));
  overrides.push_back(fmt::format("--training.num_tokens_per_microbatch_per_dp_rank {}",
                                  plan.micro_batch_size * seq));
  overrides.push_back(
      fmt::format("--training.num_tokens_per_train_step {}", plan.global_batch_size * seq));
  overrides.push_back(fmt::format("--training.max_context_length {}", seq));
  if (plan.offload_optimizer) overrides.push_back("--training.enable_cpu_offload");
  overrides.push_back("activation-checkpoint:" + mode);
  for (size_t i = 0; i < overrides.size(); ++i) {
    text += "#     " + overrides[i] + (i + 1 < overrides.size() ? " \\\n" : "\n");
  }
  std::string in_code;
  if (plan.pp > 1)
    in_code +=
        " the pipeline split (module_fqns_per_model_part, with that release's module names),";
  if (plan.tp > 1 && !plan.sequence_parallel)
    in_code += " parallelism.enable_sequence_parallel = False,";
  if (plan.precision == Precision::kFp8) in_code += " the float8 converters,";
  if (!in_code.empty()) {
    in_code.pop_back();
    text += wrap_comment("Set in the config function (no command-line option):" + in_code + ".",
                         "# ", "# ");
  }

  text += "\n[job]\n";
  text += "description = " +
          toml_string(fmt::format("ppsim plan {} for {} on {}", plan_to_inline(plan), model.name,
                                  cluster.name)) +
          "\n";

  text += "\n[model]\n";
  text += "name = " + toml_string(titan_model) +
          (flavor ? "\n" : "  # closest torchtitan model family; see the warning above\n");
  text += "flavor = " + toml_string(titan_flavor) + "\n";
  if (flavor) {
    text += "hf_assets_path = " + toml_string(flavor->hf_assets_path) +
            "  # tokenizer; fetch it with scripts/download_hf_assets.py\n";
  }
  if (plan.precision == Precision::kFp8) {
    std::vector<std::string> converters = {"quantize.linear.float8"};
    if (model.moe) converters.push_back("quantize.grouped_mm.float8");
    text += "converters = " + toml_string_array(converters) + "\n";
  }

  text += "\n[training]\n";
  text += fmt::format("local_batch_size = {}  # per data-parallel rank{}\n", local_batch,
                      plan.pp > 1 ? ", split into pipeline microbatches" : "");
  text += fmt::format("global_batch_size = {}  # gradient accumulation = global / (local x dp)\n",
                      plan.global_batch_size);
  text += fmt::format("seq_len = {}\n", seq);
  text += "mixed_precision_param = \"bfloat16\"\n";
  if (plan.offload_optimizer) text += "enable_cpu_offload = true\n";

  text += "\n[parallelism]\n";
  text += fmt::format("data_parallel_replicate_degree = {}\n", dp.replicate);
  text += fmt::format("data_parallel_shard_degree = {}\n", dp.shard);
  text += "fsdp_reshard_after_forward = " + toml_string(dp.reshard) + "\n";
  text += fmt::format("tensor_parallel_degree = {}\n", plan.tp);
  text += "enable_async_tensor_parallel = false\n";
  text += fmt::format("pipeline_parallel_degree = {}\n", plan.pp);
  if (plan.pp > 1) {
    text +=
        "pipeline_parallel_schedule = " + toml_string(torch_schedule_name(plan.schedule)) + "\n";
    text += fmt::format("pipeline_parallel_microbatch_size = {}  # {} microbatches per step\n",
                        plan.micro_batch_size, microbatches);
    text += fmt::format("# {} stages ({} per rank), in model order:\n", parts.size(),
                        parts.size() / plan.pp);
    text += "module_fqns_per_model_part = [\n";
    for (const std::vector<std::string>& part : parts)
      text += toml_wrapped_array(part, "  ") + ",\n";
    text += "]\n";
    if (ep_overlap_off) text += "pipeline_parallel_expert_parallel_overlap = false\n";
  }
  text += fmt::format("context_parallel_degree = {}\n", plan.cp);
  text += fmt::format("expert_parallel_degree = {}\n", plan.ep);
  if (plan.ep > 1) text += fmt::format("expert_tensor_parallel_degree = {}\n", plan.tp);

  text += "\n[activation_checkpoint]\n";
  text += "mode = " + toml_string(mode) + "\n";
  if (plan.recompute == Recompute::kSelective) text += "selective_ac_option = \"op\"\n";

  if (plan.precision == Precision::kFp8) {
    text += "\n[quantize.linear.float8]\n";
    text += "filter_fqns = [\"output\"]\n";
    if (model.moe) {
      text += "\n[quantize.grouped_mm.float8]\n";
      text += "fqns = [\"experts\"]\n";
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Formats

const std::vector<std::string>& launcher_format_names() { return kFormatNames; }

std::string launcher_format_name(LauncherFormat format) {
  return kFormatNames[static_cast<size_t>(format)];
}

LauncherFormat parse_launcher_format(const std::string& name, const std::string& source) {
  for (size_t i = 0; i < kFormatNames.size(); ++i) {
    if (name == kFormatNames[i]) return static_cast<LauncherFormat>(i);
  }
  throw InputError(source, "",
                   fmt::format("unknown launcher format '{}'; expected one of {}{}", name,
                               join_names(kFormatNames), did_you_mean(name, kFormatNames)));
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

LauncherOutput export_launcher(LauncherFormat format, const ModelSpec& model,
                               const ClusterSpec& cluster, const Plan& plan) {
  switch (format) {
    case LauncherFormat::kMegatron:
      return export_megatron(model, cluster, plan);
    case LauncherFormat::kDeepSpeed:
      return export_deepspeed(model, cluster, plan);
    case LauncherFormat::kTorchTitan:
      return export_torchtitan(model, cluster, plan);
  }
  PPSIM_CHECK(false, "unknown launcher format");
}

}  // namespace ppsim
