#include "simulator/report/inspect_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "simulator/model/model_stats.h"
#include "simulator/report/report_format.h"

namespace ppsim {
namespace {

struct Part {
  const char* name;
  OpList ops;
};

// The op lists worth showing: the embedding, the first layer of each kind the model has, the
// head. A transformer's kinds are "layer" (dense) and "moe_layer"; a hybrid model's
// "mamba_layer" ('M'), "attention_layer" ('*'), "layer" ('-', a dense MLP) and "moe_layer"
// ('E').
std::vector<Part> parts_of(const ModelSpec& model, const OpShape& shape) {
  std::vector<Part> parts;
  parts.push_back({"embedding", embedding_ops(model, shape)});
  auto first_where = [&model](auto predicate) {
    for (int64_t i = 0; i < model.num_layers; ++i) {
      if (predicate(i)) return i;
    }
    return int64_t{-1};
  };
  auto add = [&](const char* name, int64_t layer) {
    if (layer >= 0) parts.push_back({name, layer_ops(model, shape, layer)});
  };
  if (model.is_hybrid()) {
    add("mamba_layer", first_where([&](int64_t i) { return model.is_mamba_layer(i); }));
    add("attention_layer", first_where([&](int64_t i) { return model.has_attention(i); }));
  }
  add("layer", first_where([&](int64_t i) {
        return model.has_feed_forward(i) && !model.is_moe_layer(i);
      }));
  add("moe_layer", first_where([&](int64_t i) { return model.is_moe_layer(i); }));
  parts.push_back({"head", head_ops(model, shape)});
  return parts;
}

std::string gemm_text(const Op& op) {
  if (op.op_class != OpClass::kGemm) return "-";
  std::string text = fmt::format("{:.0f}x{:.0f}x{:.0f}", op.gemm.m, op.gemm.n, op.gemm.k);
  if (op.gemm.batch > 1) text += fmt::format(" x{:.0f}", op.gemm.batch);
  return text;
}

}  // namespace

std::string inspect_report_text(const ModelSpec& model, const OpShape& shape) {
  ParameterCounts counts = count_parameters(model);
  std::string out;
  out += fmt::format("# ppsim inspect {}\n", model.name);
  if (!model.source.empty()) out += fmt::format("# source: {}\n", model.source);
  out += fmt::format("# layers {}, hidden {}, ffn {}, heads {} (kv {}, head_dim {}), vocab {}, "
                     "seq {}, {}, {}{}\n",
                     model.num_layers, model.hidden_size, model.ffn_hidden_size,
                     model.num_attention_heads, model.num_kv_heads, model.head_dim,
                     model.vocab_size, model.seq_length,
                     activation_name(model.activation),
                     model.norm == Norm::kRmsNorm ? "rmsnorm" : "layernorm",
                     model.tied_embeddings ? ", tied embeddings" : "");
  if (model.moe) {
    out += fmt::format("# moe: {} experts, top {}, expert ffn {}, every {} layer(s), {} MoE "
                       "layers\n",
                       model.moe->num_experts, model.moe->top_k,
                       model.moe->expert_ffn_hidden_size, model.moe->every_n_layers,
                       model.num_moe_layers());
  }
  if (model.is_hybrid()) {
    out += fmt::format("# hybrid: {}\n", model.hybrid_layer_pattern);
  }
  if (model.mamba) {
    out += fmt::format("# mamba: {} heads x {}, state {}, {} groups, conv {}, chunk {}\n",
                       model.mamba->num_heads, model.mamba->head_dim, model.mamba->state_size,
                       model.mamba->num_groups, model.mamba->conv_kernel, model.mamba->chunk_size);
  }
  out += fmt::format("parameters          {:>14.0f}  ({})\n", counts.total,
                     human_count(counts.total));
  out += fmt::format("active_parameters   {:>14.0f}  ({})\n", counts.active,
                     human_count(counts.active));
  out += fmt::format("  transformer layers {:>13.0f}\n", counts.transformer_layers);
  out += fmt::format("  embedding          {:>13.0f}\n", counts.embedding + counts.position_embedding);
  out += fmt::format("  output layer       {:>13.0f}\n", counts.output_layer);
  double flops = training_flops_per_token(model, shape.seq_length);
  out += fmt::format("flops_per_token     {:>14.4g}  (training, Megatron-LM formula at seq {}; "
                     "6N = {:.4g})\n",
                     flops, shape.seq_length, 6 * counts.active);
  out += fmt::format("#\n# ops of one microbatch on one GPU: mbs {}, seq {}, tp {}, cp {}, ep {}\n",
                     shape.micro_batch_size, shape.seq_length, shape.tp, shape.cp, shape.ep);
  out += fmt::format("# {:<15} {:<20} {:<12} {:<22} {:>10} {:>10} {:>10} {:>9} {:>9} {:>12}\n",
                     "part", "op", "class", "gemm m x n x k", "fwd", "B", "W", "bytes fwd",
                     "a2a fwd", "parameters");
  out += fmt::format("# {:<15} {:<20} {:<12} {:<22} {:>10} {:>10} {:>10} {:>9} {:>9} {:>12}\n",
                     "", "", "", "", "(GFLOP)", "(GFLOP)", "(GFLOP)", "(MiB)", "(MiB)", "");
  for (const Part& part : parts_of(model, shape)) {
    for (const Op& op : part.ops) {
      out += fmt::format("  {:<15} {:<20} {:<12} {:<22} {:>10.3f} {:>10.3f} {:>10.3f} {:>9.1f} "
                         "{:>9.1f} {:>12.0f}\n",
                         part.name, op.name, op_class_name(op.op_class), gemm_text(op),
                         op.flops_fwd / 1e9, op.flops_b / 1e9, op.flops_w / 1e9,
                         op.bytes_fwd / (1024.0 * 1024.0),
                         (op.all_to_all_bytes + op.context_all_to_all_bytes) / (1024.0 * 1024.0),
                         op.parameters);
    }
  }
  return out;
}

std::string inspect_report_json(const ModelSpec& model, const OpShape& shape) {
  ParameterCounts counts = count_parameters(model);
  nlohmann::ordered_json json;
  json["name"] = model.name;
  json["source"] = model.source;
  nlohmann::ordered_json model_shape;
  model_shape["num_layers"] = model.num_layers;
  model_shape["hidden_size"] = model.hidden_size;
  model_shape["ffn_hidden_size"] = model.ffn_hidden_size;
  model_shape["num_attention_heads"] = model.num_attention_heads;
  model_shape["num_kv_heads"] = model.num_kv_heads;
  model_shape["head_dim"] = model.head_dim;
  model_shape["vocab_size"] = model.vocab_size;
  model_shape["seq_length"] = model.seq_length;
  model_shape["activation"] = activation_name(model.activation);
  model_shape["norm"] = model.norm == Norm::kRmsNorm ? "rmsnorm" : "layernorm";
  model_shape["tied_embeddings"] = model.tied_embeddings;
  if (model.moe) {
    model_shape["moe"] = {{"num_experts", model.moe->num_experts},
                          {"top_k", model.moe->top_k},
                          {"expert_ffn_hidden_size", model.moe->expert_ffn_hidden_size},
                          {"every_n_layers", model.moe->every_n_layers},
                          {"layer_offset", model.moe->layer_offset},
                          {"moe_layers", model.num_moe_layers()}};
  }
  if (model.is_hybrid()) model_shape["hybrid_layer_pattern"] = model.hybrid_layer_pattern;
  if (model.mamba) {
    model_shape["mamba"] = {{"num_heads", model.mamba->num_heads},
                            {"head_dim", model.mamba->head_dim},
                            {"state_size", model.mamba->state_size},
                            {"num_groups", model.mamba->num_groups},
                            {"conv_kernel", model.mamba->conv_kernel},
                            {"chunk_size", model.mamba->chunk_size}};
  }
  json["shape"] = model_shape;
  json["parameters"] = counts.total;
  json["active_parameters"] = counts.active;
  json["parameter_breakdown"] = {{"transformer_layers", counts.transformer_layers},
                                 {"embedding", counts.embedding},
                                 {"position_embedding", counts.position_embedding},
                                 {"output_layer", counts.output_layer},
                                 {"final_norm", counts.final_norm}};
  json["flops_per_token"] = training_flops_per_token(model, shape.seq_length);
  json["flops_per_token_6n"] = 6 * counts.active;
  json["op_shape"] = {{"micro_batch_size", shape.micro_batch_size},
                      {"seq_length", shape.seq_length},
                      {"tp", shape.tp},
                      {"cp", shape.cp},
                      {"ep", shape.ep}};
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const Part& part : parts_of(model, shape)) {
    for (const Op& op : part.ops) {
      nlohmann::ordered_json entry;
      entry["part"] = part.name;
      entry["name"] = std::string(op.name);
      entry["class"] = std::string(op_class_name(op.op_class));
      if (op.op_class == OpClass::kGemm) {
        entry["gemm_m"] = op.gemm.m;
        entry["gemm_n"] = op.gemm.n;
        entry["gemm_k"] = op.gemm.k;
        entry["gemm_batch"] = op.gemm.batch;
      }
      entry["flops_fwd"] = op.flops_fwd;
      entry["flops_b"] = op.flops_b;
      entry["flops_w"] = op.flops_w;
      entry["bytes_fwd"] = op.bytes_fwd;
      entry["all_to_all_bytes"] = op.all_to_all_bytes;
      entry["context_all_to_alls"] = op.context_all_to_alls;
      entry["context_all_to_all_bytes"] = op.context_all_to_all_bytes;
      entry["parameters"] = op.parameters;
      ops.push_back(entry);
    }
  }
  json["ops"] = ops;
  return json.dump(2) + "\n";
}

}  // namespace ppsim
