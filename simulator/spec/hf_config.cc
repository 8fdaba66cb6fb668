#include "simulator/spec/hf_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {
namespace {

// Model types whose MLP is gated (SwiGLU) and whose norm is RMSNorm.
const std::vector<std::string> kLlamaLike = {"llama", "mistral", "qwen2", "mixtral"};
const std::vector<std::string> kSupported = {"llama", "mistral", "qwen2", "mixtral", "gpt2",
                                             "gpt_neox"};

// Reads an integer field that must be present and positive.
int64_t positive(const nlohmann::json& json, const std::string& key, const std::string& source) {
  if (!json.contains(key) || json[key].is_null()) {
    throw InputError(source, "/" + key,
                     "required HuggingFace field is missing (expected a positive integer)");
  }
  return json_element_int(json[key], source, "/" + key, 1);
}

int64_t positive_or(const nlohmann::json& json, const std::string& key, int64_t fallback,
                    const std::string& source) {
  if (!json.contains(key) || json[key].is_null()) return fallback;
  return json_element_int(json[key], source, "/" + key, 1);
}

bool bool_or(const nlohmann::json& json, const std::string& key, bool fallback,
             const std::string& source) {
  if (!json.contains(key)) return fallback;
  if (!json[key].is_boolean()) {
    throw InputError(source, "/" + key,
                     "expected true or false, got " + describe_json_type(json[key]));
  }
  return json[key].get<bool>();
}

// The architecture family: model_type, or derived from "architectures" ("LlamaForCausalLM").
std::string model_type(const nlohmann::json& json, const std::string& source) {
  if (json.contains("model_type") && json["model_type"].is_string()) {
    return json["model_type"].get<std::string>();
  }
  if (json.contains("architectures") && json["architectures"].is_array() &&
      !json["architectures"].empty() && json["architectures"][0].is_string()) {
    std::string arch = json["architectures"][0].get<std::string>();
    if (arch.rfind("Llama", 0) == 0) return "llama";
    if (arch.rfind("Mistral", 0) == 0) return "mistral";
    if (arch.rfind("Mixtral", 0) == 0) return "mixtral";
    if (arch.rfind("Qwen2", 0) == 0) return "qwen2";
    if (arch.rfind("GPT2", 0) == 0) return "gpt2";
    if (arch.rfind("GPTNeoX", 0) == 0) return "gpt_neox";
    throw InputError(source, "/architectures/0",
                     fmt::format("unsupported architecture '{}'; ppsim reads {} configs", arch,
                                 join_names(kSupported)));
  }
  throw InputError(source, "/model_type", "expected a string naming the model type");
}

int64_t pretraining_context(const nlohmann::json& json, const std::string& source) {
  if (json.contains("rope_scaling") && json["rope_scaling"].is_object() &&
      json["rope_scaling"].contains("original_max_position_embeddings")) {
    return json_element_int(json["rope_scaling"]["original_max_position_embeddings"], source,
                            "/rope_scaling/original_max_position_embeddings", 1);
  }
  return positive(json, "max_position_embeddings", source);
}

}  // namespace

bool is_hf_config(const nlohmann::json& json) {
  return json.is_object() && (json.contains("model_type") || json.contains("architectures"));
}

ModelSpec parse_hf_config(const nlohmann::json& json, const std::string& source,
                          const std::string& default_name) {
  std::string type = model_type(json, source);
  ModelSpec model;
  model.name = default_name;
  model.source = "HuggingFace config (" + type + "): " + source;
  if (std::find(kLlamaLike.begin(), kLlamaLike.end(), type) != kLlamaLike.end()) {
    model.num_layers = positive(json, "num_hidden_layers", source);
    model.hidden_size = positive(json, "hidden_size", source);
    model.ffn_hidden_size = positive(json, "intermediate_size", source);
    model.num_attention_heads = positive(json, "num_attention_heads", source);
    model.num_kv_heads =
        positive_or(json, "num_key_value_heads", model.num_attention_heads, source);
    model.vocab_size = positive(json, "vocab_size", source);
    model.seq_length = pretraining_context(json, source);
    model.head_dim =
        positive_or(json, "head_dim", model.hidden_size / model.num_attention_heads, source);
    model.tied_embeddings = bool_or(json, "tie_word_embeddings", false, source);
    model.activation = Activation::kSwiglu;
    model.norm = Norm::kRmsNorm;
    model.position_embedding = PositionEmbedding::kRope;
    if (type == "mixtral") {
      MoeSpec moe;
      moe.num_experts = positive(json, "num_local_experts", source);
      moe.top_k = positive(json, "num_experts_per_tok", source);
      moe.expert_ffn_hidden_size = model.ffn_hidden_size;
      model.moe = moe;
    }
  } else if (type == "gpt2") {
    model.num_layers = positive(json, "n_layer", source);
    model.hidden_size = positive(json, "n_embd", source);
    model.ffn_hidden_size = positive_or(json, "n_inner", 4 * model.hidden_size, source);
    model.num_attention_heads = positive(json, "n_head", source);
    model.num_kv_heads = model.num_attention_heads;
    model.vocab_size = positive(json, "vocab_size", source);
    model.seq_length = positive(json, "n_positions", source);
    model.head_dim = model.hidden_size / model.num_attention_heads;
    model.tied_embeddings = true;
    model.linear_bias = true;
    model.activation = Activation::kGelu;
    model.norm = Norm::kLayerNorm;
    model.position_embedding = PositionEmbedding::kLearned;
  } else if (type == "gpt_neox") {
    model.num_layers = positive(json, "num_hidden_layers", source);
    model.hidden_size = positive(json, "hidden_size", source);
    model.ffn_hidden_size = positive(json, "intermediate_size", source);
    model.num_attention_heads = positive(json, "num_attention_heads", source);
    model.num_kv_heads = model.num_attention_heads;
    model.vocab_size = positive(json, "vocab_size", source);
    model.seq_length = positive(json, "max_position_embeddings", source);
    model.head_dim = model.hidden_size / model.num_attention_heads;
    model.tied_embeddings = bool_or(json, "tie_word_embeddings", false, source);
    model.linear_bias = true;
    model.activation = Activation::kGelu;
    model.norm = Norm::kLayerNorm;
    model.position_embedding = PositionEmbedding::kRope;
  } else {
    throw InputError(source, "/model_type",
                     fmt::format("unsupported model_type '{}'; ppsim reads {}{}", type,
                                 join_names(kSupported), did_you_mean(type, kSupported)));
  }
  model.max_position_embeddings = model.seq_length;
  return model;
}

}  // namespace ppsim
