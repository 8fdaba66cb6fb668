#include "simulator/spec/hf_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {
namespace {

// Model types whose MLP is gated (SwiGLU) and whose norm is RMSNorm.
const std::vector<std::string> kLlamaLike = {"llama", "mistral", "qwen2", "mixtral"};
const std::vector<std::string> kSupported = {
    "llama",   "mistral",   "qwen2",     "mixtral",  "gpt2",        "gpt_neox", "deepseek_v2",
    "deepseek_v3", "kimi_k2", "qwen3",   "qwen3_moe", "qwen2_moe", "glm4_moe", "olmoe",
    "llama4",  "llama4_text", "gpt_oss", "gemma2",   "gemma3",      "gemma3_text", "phi3",
    "nemotron_h"};

// The sequence length a config without a recorded pre-training length defaults to: 4,096, the
// pre-training context of Llama 2 (Touvron et al. 2023, section 2.2) and the common short
// pre-training stage before a long-context extension (Qwen2.5 technical report, section 4:
// 4,096 then 32,768; Gemma 3 technical report, section 2.3: 32K then 128K). A config's
// max_position_embeddings is its longest supported context, which is often the extended one.
constexpr int64_t kDefaultPretrainingContext = 4096;

// Largest integer a config field may hold: model_spec.cc's bound on widths, sequences and
// counts (docs/limits.md), so products of fields cannot overflow downstream.
constexpr int64_t kMaxField = int64_t{1} << 24;

// Reads an integer field that must be present and positive.
int64_t positive(const nlohmann::json& json, const std::string& key, const std::string& source) {
  if (!json.contains(key) || json[key].is_null()) {
    throw InputError(source, "/" + key,
                     "required HuggingFace field is missing (expected a positive integer)");
  }
  return json_element_int(json[key], source, "/" + key, 1, kMaxField);
}

int64_t positive_or(const nlohmann::json& json, const std::string& key, int64_t fallback,
                    const std::string& source) {
  if (!json.contains(key) || json[key].is_null()) return fallback;
  return json_element_int(json[key], source, "/" + key, 1, kMaxField);
}

// Reads an integer field that may be absent or null (fallback) and may be zero.
int64_t nonnegative_or(const nlohmann::json& json, const std::string& key, int64_t fallback,
                       const std::string& source) {
  if (!json.contains(key) || json[key].is_null()) return fallback;
  return json_element_int(json[key], source, "/" + key, 0, kMaxField);
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
    if (arch == "Llama4ForConditionalGeneration") return "llama4";
    if (arch.rfind("Llama4For", 0) == 0) return "llama4_text";
    if (arch.rfind("Llama", 0) == 0) return "llama";
    if (arch.rfind("Mistral", 0) == 0) return "mistral";
    if (arch.rfind("Mixtral", 0) == 0) return "mixtral";
    if (arch.rfind("Qwen2Moe", 0) == 0) return "qwen2_moe";
    if (arch.rfind("Qwen2", 0) == 0) return "qwen2";
    if (arch.rfind("GPT2", 0) == 0) return "gpt2";
    if (arch.rfind("GPTNeoX", 0) == 0) return "gpt_neox";
    if (arch.rfind("DeepseekV2", 0) == 0) return "deepseek_v2";
    if (arch.rfind("DeepseekV3", 0) == 0) return "deepseek_v3";
    if (arch.rfind("KimiK2For", 0) == 0) return "kimi_k2";
    if (arch.rfind("Qwen3Moe", 0) == 0) return "qwen3_moe";
    if (arch.rfind("Qwen3", 0) == 0) return "qwen3";
    if (arch.rfind("GptOss", 0) == 0) return "gpt_oss";
    if (arch.rfind("Glm4Moe", 0) == 0) return "glm4_moe";
    if (arch.rfind("Olmoe", 0) == 0) return "olmoe";
    if (arch.rfind("Gemma2For", 0) == 0) return "gemma2";
    if (arch == "Gemma3ForConditionalGeneration") return "gemma3";
    if (arch.rfind("Gemma3For", 0) == 0) return "gemma3_text";
    if (arch.rfind("Phi3For", 0) == 0) return "phi3";
    if (arch.rfind("NemotronHFor", 0) == 0) return "nemotron_h";
    throw InputError(source, "/architectures/0",
                     fmt::format("unsupported architecture '{}'; ppsim reads {} configs", arch,
                                 join_names(kSupported)));
  }
  throw InputError(source, "/model_type", "expected a string naming the model type");
}

// The default training sequence length: the pre-training context the config records
// (original_max_position_embeddings, top level as Phi-3 writes it or inside rope_scaling as
// Llama 3.1 does), else the longest context capped at kDefaultPretrainingContext with a note.
// `fallback_positions` is the family's default max_position_embeddings (0: the key is required).
int64_t pretraining_context(const nlohmann::json& json, const std::string& source,
                            ModelSpec& model, int64_t fallback_positions = 0) {
  if (json.contains("original_max_position_embeddings") &&
      !json["original_max_position_embeddings"].is_null()) {
    return json_element_int(json["original_max_position_embeddings"], source,
                            "/original_max_position_embeddings", 1);
  }
  if (json.contains("rope_scaling") && json["rope_scaling"].is_object() &&
      json["rope_scaling"].contains("original_max_position_embeddings")) {
    return json_element_int(json["rope_scaling"]["original_max_position_embeddings"], source,
                            "/rope_scaling/original_max_position_embeddings", 1);
  }
  int64_t longest = fallback_positions > 0
                        ? positive_or(json, "max_position_embeddings", fallback_positions, source)
                        : positive(json, "max_position_embeddings", source);
  if (longest <= kDefaultPretrainingContext) return longest;
  model.notes.push_back(fmt::format(
      "{}: the config records no pre-training length (original_max_position_embeddings), so "
      "the default sequence length is {}, not max_position_embeddings = {}; give seq=N in "
      "--plan to train longer",
      source, kDefaultPretrainingContext, longest));
  return kDefaultPretrainingContext;
}

// The fields every rope, RMSNorm, SwiGLU decoder shares (Llama and its descendants).
void read_llama_like(const nlohmann::json& json, const std::string& source, ModelSpec& model,
                     int64_t fallback_positions = 0) {
  model.num_layers = positive(json, "num_hidden_layers", source);
  model.hidden_size = positive(json, "hidden_size", source);
  model.ffn_hidden_size = positive(json, "intermediate_size", source);
  model.num_attention_heads = positive(json, "num_attention_heads", source);
  model.num_kv_heads = positive_or(json, "num_key_value_heads", model.num_attention_heads, source);
  model.vocab_size = positive(json, "vocab_size", source);
  model.seq_length = pretraining_context(json, source, model, fallback_positions);
  model.head_dim =
      positive_or(json, "head_dim", model.hidden_size / model.num_attention_heads, source);
  model.tied_embeddings = bool_or(json, "tie_word_embeddings", false, source);
  model.activation = Activation::kSwiglu;
  model.norm = Norm::kRmsNorm;
  model.position_embedding = PositionEmbedding::kRope;
  if (json.contains("rope_theta") && json["rope_theta"].is_number() &&
      json["rope_theta"].get<double>() > 0) {
    model.rope_theta = json["rope_theta"].get<double>();  // HF default (absent): 10000.
  }
}

// top_k must not exceed the experts; `key` is the config's name for top_k.
void check_top_k(const MoeSpec& moe, const std::string& key, const std::string& source) {
  if (moe.top_k > moe.num_experts) {
    throw InputError(
        source, "/" + key,
        fmt::format("{}={} exceeds the {} routed experts", key, moe.top_k, moe.num_experts));
  }
}

// Attention biases without MLP biases: ppsim's linear_bias covers both, so refuse.
void refuse_attention_bias(const nlohmann::json& json, const std::string& source) {
  if (bool_or(json, "attention_bias", false, source)) {
    throw InputError(source, "/attention_bias",
                     "attention-only biases cannot be expressed (ppsim's linear_bias also adds "
                     "MLP biases); write a ppsim model file instead");
  }
}

// The period of a per-layer full-attention mask (key names the array in errors): ppsim keeps
// every n-th layer (index % n == n - 1) full and windows the rest; 0 when none is full; nullopt
// when every layer is. Any other mix is an InputError naming the first layer that breaks it.
std::optional<int64_t> periodic_full_layers(const std::vector<bool>& full,
                                            const std::string& source, const std::string& key) {
  const int64_t layers = static_cast<int64_t>(full.size());
  if (std::count(full.begin(), full.end(), true) == layers) return std::nullopt;
  // The period n: the first full layer is n - 1; with none, every layer is windowed (n = 0).
  auto first_full = std::find(full.begin(), full.end(), true);
  int64_t pattern = first_full == full.end() ? 0 : (first_full - full.begin()) + 1;
  for (int64_t i = 0; i < layers; ++i) {
    bool expected = pattern > 0 && i % pattern == pattern - 1;
    if (full[i] != expected) {
      throw InputError(source, fmt::format("/{}/{}", key, i),
                       fmt::format("this layer mix cannot be expressed: ppsim windows every "
                                   "layer or keeps every n-th layer full (here n = {}), and "
                                   "layer {} breaks that",
                                   pattern, i));
    }
  }
  return pattern;
}

// Rotary on part of each head (partial_rotary_factor, Phi-3 and GLM-4.5) is priced as rotary on
// the whole head, an elementwise cost; a note says so.
void note_partial_rotary(const nlohmann::json& json, const std::string& source,
                         ModelSpec& model) {
  if (json.contains("partial_rotary_factor") && json["partial_rotary_factor"].is_number() &&
      json["partial_rotary_factor"].get<double>() != 1.0) {
    model.notes.push_back(fmt::format(
        "{}: partial_rotary_factor {} is priced as rotary on the whole head (an elementwise "
        "cost)",
        source, json["partial_rotary_factor"].get<double>()));
  }
}

// Sliding-window attention from "sliding_window" and the per-layer "layer_types"
// ("sliding_attention" / "full_attention"). ppsim expresses every layer sliding, or every n-th
// layer (index % n == n - 1) full and the rest sliding; `default_pattern` applies when the
// config has no layer_types.
void read_sliding_window(const nlohmann::json& json, const std::string& source,
                         int64_t default_pattern, ModelSpec& model) {
  int64_t window = nonnegative_or(json, "sliding_window", 0, source);
  if (window == 0) return;
  if (!json.contains("layer_types") || json["layer_types"].is_null()) {
    model.sliding_window = window;
    model.sliding_window_pattern = default_pattern;
    return;
  }
  const nlohmann::json& types = json["layer_types"];
  if (!types.is_array() || static_cast<int64_t>(types.size()) != model.num_layers) {
    throw InputError(
        source, "/layer_types",
        fmt::format("expected an array of {} layer types (num_hidden_layers)", model.num_layers));
  }
  std::vector<bool> full;
  for (size_t i = 0; i < types.size(); ++i) {
    std::string type = types[i].is_string() ? types[i].get<std::string>() : "";
    if (type != "sliding_attention" && type != "full_attention") {
      throw InputError(source, fmt::format("/layer_types/{}", i),
                       "expected \"sliding_attention\" or \"full_attention\"");
    }
    full.push_back(type == "full_attention");
  }
  std::optional<int64_t> pattern = periodic_full_layers(full, source, "layer_types");
  if (!pattern) return;
  model.sliding_window = window;
  model.sliding_window_pattern = *pattern;
}

// Mistral and Phi-3: one window on every layer ("sliding_window", null or absent = none).
void read_uniform_sliding_window(const nlohmann::json& json, const std::string& source,
                                 ModelSpec& model) {
  model.sliding_window = nonnegative_or(json, "sliding_window", 0, source);
  model.sliding_window_pattern = 0;
}

// Qwen2 and Qwen3: with use_sliding_window, layers from max_window_layers on slide; expressible
// only as all layers or none.
void read_qwen_sliding_window(const nlohmann::json& json, const std::string& source,
                              ModelSpec& model) {
  if (!bool_or(json, "use_sliding_window", false, source)) return;
  int64_t from = nonnegative_or(json, "max_window_layers", model.num_layers, source);
  if (from == 0) {
    model.sliding_window = positive(json, "sliding_window", source);
  } else if (from < model.num_layers) {
    throw InputError(source, "/max_window_layers",
                     fmt::format("sliding windows on layers {}..{} only cannot be expressed "
                                 "(ppsim slides every layer or a periodic pattern)",
                                 from, model.num_layers - 1));
  }
}

// Gemma 2 and Gemma 3 (text): GeGLU MLP, tied embeddings, head_dim 256 by default, a sandwich of
// four RMSNorms per layer, local (sliding) and global attention layers. `defaults` are the
// transformers config class's defaults for keys a config may leave out.
struct GemmaDefaults {
  int64_t vocab_size = 0;               // 0: required.
  int64_t max_position_embeddings = 0;  // 0: required.
  int64_t sliding_window = 0;
  int64_t sliding_window_pattern = 0;   // Every n-th layer global.
};
void read_gemma(const nlohmann::json& json, const std::string& source, bool gemma3,
                const GemmaDefaults& defaults, ModelSpec& model) {
  model.num_layers = positive(json, "num_hidden_layers", source);
  model.hidden_size = positive(json, "hidden_size", source);
  model.ffn_hidden_size = positive(json, "intermediate_size", source);
  model.num_attention_heads = positive(json, "num_attention_heads", source);
  model.num_kv_heads = positive_or(json, "num_key_value_heads", model.num_attention_heads, source);
  model.vocab_size = defaults.vocab_size > 0
                         ? positive_or(json, "vocab_size", defaults.vocab_size, source)
                         : positive(json, "vocab_size", source);
  model.seq_length = pretraining_context(json, source, model, defaults.max_position_embeddings);
  model.head_dim = positive_or(json, "head_dim", 256, source);  // Gemma2Config/Gemma3TextConfig.
  model.tied_embeddings = bool_or(json, "tie_word_embeddings", true, source);
  model.activation = Activation::kGeglu;  // hidden_activation gelu_pytorch_tanh, gated.
  model.norm = Norm::kRmsNorm;
  model.position_embedding = PositionEmbedding::kRope;
  model.qk_norm = gemma3;
  refuse_attention_bias(json, source);
  // Gemma 3 names its period sliding_window_pattern; Gemma 2 alternates (even layers local).
  int64_t pattern = gemma3 ? positive_or(json, "sliding_window_pattern",
                                         defaults.sliding_window_pattern, source)
                           : 2;
  nlohmann::json windowed = json;
  if (!windowed.contains("sliding_window") || windowed["sliding_window"].is_null()) {
    windowed["sliding_window"] = defaults.sliding_window;
  }
  read_sliding_window(windowed, source, pattern, model);
  model.notes.push_back(fmt::format(
      "{}: Gemma's post-attention and post-MLP RMSNorms (2 x {} parameters a layer), the "
      "attention and final logit soft-capping are not counted",
      source, model.hidden_size));
}

// Phi-3 (Phi3ForCausalLM): the llama fields with fused qkv and gate/up projections (the same
// parameters), no biases, one sliding window on every layer.
void read_phi3(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  read_llama_like(json, source, model);
  refuse_attention_bias(json, source);
  read_uniform_sliding_window(json, source, model);
  note_partial_rotary(json, source, model);
}

// DeepSeek's MoE keys (DeepSeek-V2/V3, Kimi K2, GLM-4.5, Nemotron-H): routed experts past the
// first first_k_dense_replace dense layers, shared experts of the routed width, node-limited
// routing.
// Absent or zero n_routed_experts is a dense model.
void read_deepseek_moe(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  if (nonnegative_or(json, "n_routed_experts", 0, source) == 0) return;  // Dense.
  MoeSpec moe;
  moe.num_experts = positive(json, "n_routed_experts", source);
  moe.top_k = positive(json, "num_experts_per_tok", source);
  moe.expert_ffn_hidden_size = positive(json, "moe_intermediate_size", source);
  moe.every_n_layers = positive_or(json, "moe_layer_freq", 1, source);
  moe.num_shared_experts = nonnegative_or(json, "n_shared_experts", 0, source);
  moe.first_k_dense = nonnegative_or(json, "first_k_dense_replace", 0, source);
  check_top_k(moe, "num_experts_per_tok", source);
  // Node-limited routing: n_group groups of experts, each token within its topk_group best
  // (n_group 1 is one group, no limit).
  if (nonnegative_or(json, "n_group", 0, source) > 1) {
    moe.num_groups = positive(json, "n_group", source);
    moe.group_topk = positive(json, "topk_group", source);
    if (std::optional<std::string> problem = moe_group_problem(moe)) {
      throw InputError(source, "/topk_group", *problem);
    }
  }
  if (moe.first_k_dense > model.num_layers) {
    throw InputError(source, "/first_k_dense_replace",
                     fmt::format("first_k_dense_replace={} exceeds num_hidden_layers={}",
                                 moe.first_k_dense, model.num_layers));
  }
  model.moe = moe;
}

// Nemotron-H and Nemotron 3 (NemotronHForCausalLM; Megatron-Bridge's NemotronHBridge maps the
// same keys): a hybrid of Mamba-2, attention, MLP and MoE layers (hf_config.h).
void read_nemotron_h(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  model.num_layers = positive(json, "num_hidden_layers", source);
  model.hidden_size = positive(json, "hidden_size", source);
  model.ffn_hidden_size = positive(json, "intermediate_size", source);
  model.num_attention_heads = positive(json, "num_attention_heads", source);
  model.num_kv_heads = positive_or(json, "num_key_value_heads", model.num_attention_heads, source);
  model.vocab_size = positive(json, "vocab_size", source);
  model.seq_length = pretraining_context(json, source, model);
  model.head_dim = positive_or(
      json, "head_dim",
      positive_or(json, "attention_head_dim", model.hidden_size / model.num_attention_heads,
                  source),
      source);
  model.tied_embeddings = bool_or(json, "tie_word_embeddings", false, source);
  model.norm = Norm::kRmsNorm;
  // Nemotron-H's attention layers carry no positional encoding (NemotronHBridge:
  // position_embedding_type "none"); the Mamba layers order the tokens.
  model.position_embedding = PositionEmbedding::kNone;
  const std::string act = json.contains("mlp_hidden_act") && json["mlp_hidden_act"].is_string()
                              ? json["mlp_hidden_act"].get<std::string>()
                              : "relu2";
  if (act != "relu2") {
    throw InputError(source, "/mlp_hidden_act",
                     fmt::format("'{}' is not modelled for Nemotron-H; ppsim reads relu2 (squared "
                                 "ReLU, Megatron's squared_relu)",
                                 act));
  }
  model.activation = Activation::kSquaredRelu;
  refuse_attention_bias(json, source);
  for (const char* key : {"mlp_bias", "use_bias", "mamba_proj_bias"}) {
    if (bool_or(json, key, false, source)) {
      throw InputError(source, std::string("/") + key,
                       "biases on the MLP or Mamba projections are not modelled; ppsim reads "
                       "Nemotron-H configs without them (false)");
    }
  }
  // MTP depths, each the layers of mtp_hybrid_override_pattern (Nemotron 3 Super: "*E").
  model.mtp_layers = nonnegative_or(json, "num_nextn_predict_layers", 0, source);
  if (model.mtp_layers > 0) {
    if (!json.contains("mtp_hybrid_override_pattern") ||
        !json["mtp_hybrid_override_pattern"].is_string()) {
      throw InputError(source, "/mtp_hybrid_override_pattern",
                       "num_nextn_predict_layers > 0 needs the MTP block's layers (a string of "
                       "M, *, - and E)");
    }
    model.mtp_layer_pattern = json["mtp_hybrid_override_pattern"].get<std::string>();
  }
  if (!json.contains("hybrid_override_pattern") || !json["hybrid_override_pattern"].is_string()) {
    throw InputError(source, "/hybrid_override_pattern",
                     "required HuggingFace field is missing (expected a string of M, *, - and E, "
                     "one per layer)");
  }
  model.hybrid_layer_pattern = json["hybrid_override_pattern"].get<std::string>();
  const std::string layers = model.hybrid_layer_pattern + model.mtp_layer_pattern;
  if (layers.find('M') != std::string::npos) {
    MambaSpec mamba;
    mamba.num_heads = positive(json, "mamba_num_heads", source);
    mamba.head_dim = positive(json, "mamba_head_dim", source);
    mamba.state_size = positive(json, "ssm_state_size", source);
    // NemotronHConfig's defaults: n_groups 8, conv_kernel 4, chunk_size 128.
    mamba.num_groups = positive_or(json, "n_groups", 8, source);
    mamba.conv_kernel = positive_or(json, "conv_kernel", 4, source);
    mamba.chunk_size = positive_or(json, "chunk_size", 128, source);
    if (std::optional<std::string> problem = mamba_group_problem(mamba)) {
      throw InputError(source, "/n_groups", *problem);
    }
    model.mamba = mamba;
  }
  if (layers.find('E') != std::string::npos) {
    // DeepSeek's MoE keys; the shared expert's width is moe_shared_expert_intermediate_size
    // (Megatron's total shared width: one expert of it), and LatentMoE's moe_latent_size.
    positive(json, "n_routed_experts", source);  // Required by the 'E' layers.
    read_deepseek_moe(json, source, model);
    const int64_t shared = nonnegative_or(json, "moe_shared_expert_intermediate_size", 0, source);
    model.moe->num_shared_experts = shared > 0 ? 1 : 0;
    model.moe->shared_expert_ffn_hidden_size = shared;
    model.moe->latent_size = positive_or(json, "moe_latent_size", 0, source);
  }
  if (std::optional<std::string> problem = hybrid_pattern_problem(model)) {
    throw InputError(source,
                     hybrid_problem_key(*problem) == "mtp_layer_pattern"
                         ? "/mtp_hybrid_override_pattern"
                         : "/hybrid_override_pattern",
                     *problem);
  }
}

// DeepSeek-V3 and V2 (and Kimi K2): MLA attention, DeepSeek's MoE, MTP (V3's
// num_nextn_predict_layers; V2 has none).
void read_deepseek_v3(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  read_llama_like(json, source, model);
  refuse_attention_bias(json, source);
  MlaSpec mla;
  mla.q_lora_rank = nonnegative_or(json, "q_lora_rank", 0, source);  // null: a full q projection
  mla.kv_lora_rank = positive(json, "kv_lora_rank", source);
  mla.qk_nope_head_dim = positive(json, "qk_nope_head_dim", source);
  mla.qk_rope_head_dim = positive(json, "qk_rope_head_dim", source);
  mla.v_head_dim = positive(json, "v_head_dim", source);
  model.mla = mla;
  model.head_dim = mla.qk_head_dim();
  if (model.num_kv_heads != model.num_attention_heads) {
    throw InputError(source, "/num_key_value_heads",
                     fmt::format("MLA attention has a key and value per head: expected {} "
                                 "(num_attention_heads), got {}",
                                 model.num_attention_heads, model.num_kv_heads));
  }
  model.mtp_layers = nonnegative_or(json, "num_nextn_predict_layers", 0, source);
  read_deepseek_moe(json, source, model);
}

// GLM-4.5 (Glm4MoeForCausalLM): grouped-query attention with explicit head_dim, biases on q, k
// and v when attention_bias (Glm4MoeAttention's o_proj has none), per-head q/k RMSNorm when
// use_qk_norm, DeepSeek's MoE keys and MTP layers.
void read_glm4_moe(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  read_llama_like(json, source, model);
  model.qkv_bias = bool_or(json, "attention_bias", false, source);
  model.qk_norm = bool_or(json, "use_qk_norm", false, source);
  model.mtp_layers = nonnegative_or(json, "num_nextn_predict_layers", 0, source);
  read_deepseek_moe(json, source, model);
  note_partial_rotary(json, source, model);
}

// Qwen's routed experts (Qwen2-MoE and Qwen3-MoE): num_experts, num_experts_per_tok and
// moe_intermediate_size, on the last layer of every decoder_sparse_step (transformers:
// (i + 1) % n == 0, ppsim's every_n_layers n with layer_offset n - 1), past a dense prefix
// (mlp_only_layers = [0, ..., k-1]).
MoeSpec read_qwen_moe(const nlohmann::json& json, const std::string& source,
                      const ModelSpec& model) {
  MoeSpec moe;
  moe.num_experts = positive(json, "num_experts", source);
  moe.top_k = positive(json, "num_experts_per_tok", source);
  moe.expert_ffn_hidden_size = positive(json, "moe_intermediate_size", source);
  check_top_k(moe, "num_experts_per_tok", source);
  moe.every_n_layers = positive_or(json, "decoder_sparse_step", 1, source);
  moe.layer_offset = moe.every_n_layers - 1;
  if (!json.contains("mlp_only_layers") || json["mlp_only_layers"].is_null()) return moe;
  const nlohmann::json& dense = json["mlp_only_layers"];
  if (!dense.is_array()) {
    throw InputError(source, "/mlp_only_layers",
                     "expected an array of layer indices, got " + describe_json_type(dense));
  }
  for (size_t i = 0; i < dense.size(); ++i) {
    int64_t layer = json_element_int(dense[i], source, fmt::format("/mlp_only_layers/{}", i), 0);
    if (layer != static_cast<int64_t>(i)) {
      throw InputError(source, fmt::format("/mlp_only_layers/{}", i),
                       "dense layers other than a prefix [0, 1, ..., k-1] cannot be expressed "
                       "(ppsim's first_k_dense); write a ppsim model file instead");
    }
  }
  moe.first_k_dense = static_cast<int64_t>(dense.size());
  if (moe.first_k_dense > model.num_layers) {
    throw InputError(source, "/mlp_only_layers",
                     fmt::format("{} dense layers exceed num_hidden_layers={}", moe.first_k_dense,
                                 model.num_layers));
  }
  return moe;
}

// Qwen3 (dense) and Qwen3-MoE: per-head query/key RMSNorm, explicit head_dim.
void read_qwen3(const nlohmann::json& json, const std::string& source, bool is_moe,
                ModelSpec& model) {
  read_llama_like(json, source, model);
  refuse_attention_bias(json, source);
  model.qk_norm = true;
  read_qwen_sliding_window(json, source, model);
  if (is_moe) model.moe = read_qwen_moe(json, source, model);
}

// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2's attention (q, k, v biases) and routed
// experts beside one shared expert of its own width (shared_expert_intermediate_size; 0 or
// absent: none). The shared expert's sigmoid gate (hidden_size parameters a layer) is not
// counted.
void read_qwen2_moe(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  read_llama_like(json, source, model);
  model.qkv_bias = true;
  read_qwen_sliding_window(json, source, model);
  MoeSpec moe = read_qwen_moe(json, source, model);
  int64_t shared = nonnegative_or(json, "shared_expert_intermediate_size", 0, source);
  if (shared > 0) {
    moe.num_shared_experts = 1;
    moe.shared_expert_ffn_hidden_size = shared;
    model.notes.push_back(fmt::format(
        "{}: the shared expert's sigmoid gate ({} parameters a layer) is not counted", source,
        model.hidden_size));
  }
  model.moe = moe;
}

// OLMoE (OlmoeForCausalLM): the llama fields (intermediate_size is the expert width), every
// layer MoE, and RMSNorms on the query and key projections. OLMoE normalizes each projection
// whole (hidden_size and the key width) where ppsim's qk_norm normalizes per head: the same
// elementwise pass, hidden_size + key width - 2 x head_dim more parameters a layer (not
// counted); clip_qkv clamps in place (not priced).
void read_olmoe(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  read_llama_like(json, source, model);
  refuse_attention_bias(json, source);
  model.qk_norm = true;
  MoeSpec moe;
  moe.num_experts = positive(json, "num_experts", source);
  moe.top_k = positive(json, "num_experts_per_tok", source);
  moe.expert_ffn_hidden_size = model.ffn_hidden_size;
  check_top_k(moe, "num_experts_per_tok", source);
  model.moe = moe;
  model.notes.push_back(fmt::format(
      "{}: OLMoE's whole-projection query/key norms are priced as per-head norms ({} "
      "parameters a layer not counted)",
      source, model.hidden_size + model.kv_width() - 2 * model.head_dim));
}

// GPT-OSS: every layer MoE with biased experts and router, biased attention, alternating
// sliding-window and full attention. Attention sinks (one scalar per head) are not counted.
void read_gpt_oss(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  read_llama_like(json, source, model);
  // Expert and router biases are unconditional; attention biases follow attention_bias.
  if (!bool_or(json, "attention_bias", true, source)) {
    throw InputError(source, "/attention_bias",
                     "false cannot be expressed: GPT-OSS experts always carry biases and ppsim's "
                     "linear_bias covers attention and MLP together");
  }
  model.linear_bias = true;
  MoeSpec moe;
  moe.num_experts = positive(json, "num_local_experts", source);
  std::string top_k_key =
      json.contains("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token";
  moe.top_k = positive(json, top_k_key, source);
  if (json.contains("num_experts_per_tok") && json.contains("experts_per_token") &&
      positive(json, "experts_per_token", source) != moe.top_k) {
    throw InputError(source, "/experts_per_token",
                     fmt::format("{} disagrees with num_experts_per_tok={}",
                                 positive(json, "experts_per_token", source), moe.top_k));
  }
  moe.expert_ffn_hidden_size = model.ffn_hidden_size;
  check_top_k(moe, top_k_key, source);
  model.moe = moe;
  // transformers' default layer_types alternate sliding (even) and full (odd) layers.
  read_sliding_window(json, source, /*default_pattern=*/2, model);
}

// Llama 4 (Llama4ForCausalLM, or Llama4ForConditionalGeneration's text_config): grouped-query
// attention, dense layers of intermediate_size_mlp, MoE layers of num_local_experts routed
// experts of intermediate_size beside one shared expert of the same width (Llama4TextMoe), on
// the last layer of every interleave_moe_layer_step (transformers' moe_layers, checked when
// given). The RoPE layers attend within chunks of attention_chunk_size and every
// no_rope_layer_interval-th layer (no_rope_layers 0, NoPE) attends globally: the chunks are
// priced as a sliding window of the chunk size, exact up to one chunk of tokens (the
// pre-training length, 8,192) and 1.5x chunked attention's FLOPs at two chunks (a note).
// use_qk_norm's L2 norms carry no weights (ppsim counts 2 x head_dim a layer).
void read_llama4(const nlohmann::json& json, const std::string& source, ModelSpec& model) {
  read_llama_like(json, source, model);
  refuse_attention_bias(json, source);
  model.ffn_hidden_size = positive(json, "intermediate_size_mlp", source);
  model.qk_norm = bool_or(json, "use_qk_norm", false, source);
  MoeSpec moe;
  moe.num_experts = positive(json, "num_local_experts", source);
  moe.top_k = positive(json, "num_experts_per_tok", source);
  moe.expert_ffn_hidden_size = positive(json, "intermediate_size", source);
  moe.num_shared_experts = 1;
  moe.every_n_layers = positive_or(json, "interleave_moe_layer_step", 1, source);
  moe.layer_offset = moe.every_n_layers - 1;
  check_top_k(moe, "num_experts_per_tok", source);
  model.moe = moe;
  if (json.contains("moe_layers") && !json["moe_layers"].is_null()) {
    const nlohmann::json& layers = json["moe_layers"];
    if (!layers.is_array()) {
      throw InputError(source, "/moe_layers",
                       "expected an array of layer indices, got " + describe_json_type(layers));
    }
    std::vector<bool> listed(model.num_layers, false);
    for (size_t i = 0; i < layers.size(); ++i) {
      std::string path = fmt::format("/moe_layers/{}", i);
      listed[json_element_int(layers[i], source, path, 0, model.num_layers - 1)] = true;
    }
    for (int64_t i = 0; i < model.num_layers; ++i) {
      if (listed[i] != model.is_moe_layer(i)) {
        throw InputError(source, "/moe_layers",
                         fmt::format("layer {} is {}listed, but interleave_moe_layer_step {} "
                                     "makes the last layer of each group of {} MoE; ppsim "
                                     "expresses only that pattern",
                                     i, listed[i] ? "" : "not ", moe.every_n_layers,
                                     moe.every_n_layers));
      }
    }
  }
  const int64_t chunk = nonnegative_or(json, "attention_chunk_size", 0, source);
  if (chunk == 0) return;
  std::vector<bool> global(model.num_layers);
  if (json.contains("no_rope_layers") && !json["no_rope_layers"].is_null()) {
    const nlohmann::json& rope = json["no_rope_layers"];
    if (!rope.is_array() || static_cast<int64_t>(rope.size()) != model.num_layers) {
      throw InputError(source, "/no_rope_layers",
                       fmt::format("expected an array of {} flags (num_hidden_layers): 1 for a "
                                   "RoPE (chunked) layer, 0 for a NoPE (global) one",
                                   model.num_layers));
    }
    for (int64_t i = 0; i < model.num_layers; ++i) {
      global[i] =
          json_element_int(rope[i], source, fmt::format("/no_rope_layers/{}", i), 0, 1) == 0;
    }
  } else {
    const int64_t interval = positive_or(json, "no_rope_layer_interval", 4, source);
    for (int64_t i = 0; i < model.num_layers; ++i) global[i] = (i + 1) % interval == 0;
  }
  std::optional<int64_t> pattern = periodic_full_layers(global, source, "no_rope_layers");
  if (!pattern) return;
  model.sliding_window = chunk;
  model.sliding_window_pattern = *pattern;
  model.notes.push_back(fmt::format(
      "{}: chunked attention (chunks of {} tokens) is priced as a sliding window of {}: exact "
      "up to {} tokens, 1.5x chunked attention's FLOPs at twice that",
      source, chunk, chunk, chunk));
}

// A multimodal config's language model (text_config): `read` fills `model` from it, and errors
// name /text_config/... . The vision tower is not simulated (a note says so).
template <typename Reader>
void read_text_config(const nlohmann::json& json, const std::string& source,
                      const std::string& family, ModelSpec& model, Reader read) {
  if (!json.contains("text_config") || !json["text_config"].is_object()) {
    throw InputError(source, "/text_config",
                     fmt::format("expected the language model's config object ({} multimodal)",
                                 family));
  }
  try {
    read(json["text_config"]);
  } catch (const InputError& error) {
    throw InputError(error.source(), "/text_config" + error.json_path(), error.message());
  }
  model.notes.push_back(fmt::format(
      "{}: {} multimodal: the text model (text_config) is simulated; the vision tower "
      "(vision_config) and its projector are not",
      source, family));
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
    read_llama_like(json, source, model);
    if (type == "qwen2") {
      // Qwen2Attention: q_proj, k_proj and v_proj carry biases, o_proj and the MLP do not.
      model.qkv_bias = true;
      read_qwen_sliding_window(json, source, model);
    } else {
      // LlamaAttention's attention_bias puts biases on q, k, v and o: not expressible.
      refuse_attention_bias(json, source);
    }
    if (type == "mistral" || type == "mixtral") read_uniform_sliding_window(json, source, model);
    if (type == "mixtral") {
      MoeSpec moe;
      moe.num_experts = positive(json, "num_local_experts", source);
      moe.top_k = positive(json, "num_experts_per_tok", source);
      moe.expert_ffn_hidden_size = model.ffn_hidden_size;
      check_top_k(moe, "num_experts_per_tok", source);
      model.moe = moe;
    }
  } else if (type == "deepseek_v3" || type == "kimi_k2" || type == "deepseek_v2") {
    // Kimi K2 is DeepSeek-V3's architecture with its own sizes (Moonshot AI's config.json
    // keeps DeepseekV3ForCausalLM and the same keys under model_type kimi_k2); DeepSeek-V2
    // has the same keys without MTP.
    read_deepseek_v3(json, source, model);
  } else if (type == "glm4_moe") {
    read_glm4_moe(json, source, model);
  } else if (type == "qwen2_moe") {
    read_qwen2_moe(json, source, model);
  } else if (type == "olmoe") {
    read_olmoe(json, source, model);
  } else if (type == "qwen3" || type == "qwen3_moe") {
    read_qwen3(json, source, type == "qwen3_moe", model);
  } else if (type == "gpt_oss") {
    read_gpt_oss(json, source, model);
  } else if (type == "gemma2") {
    // Gemma2Config's defaults (transformers models/gemma2/configuration_gemma2.py).
    read_gemma(json, source, /*gemma3=*/false,
               GemmaDefaults{256000, 8192, /*sliding_window=*/4096, /*pattern=*/2}, model);
  } else if (type == "gemma3" || type == "gemma3_text") {
    // Gemma3TextConfig's defaults (transformers models/gemma3/configuration_gemma3.py): the
    // published config.json files leave vocab_size, head_dim, max_position_embeddings and
    // sliding_window_pattern to them.
    const GemmaDefaults defaults{262208, 131072, /*sliding_window=*/4096, /*pattern=*/6};
    if (type == "gemma3_text") {
      read_gemma(json, source, /*gemma3=*/true, defaults, model);
    } else {
      // Gemma3ForConditionalGeneration: the language model is text_config; the SigLIP vision
      // tower and the projector are not simulated.
      read_text_config(json, source, "Gemma 3", model, [&](const nlohmann::json& text) {
        read_gemma(text, source, /*gemma3=*/true, defaults, model);
      });
    }
  } else if (type == "llama4_text") {
    read_llama4(json, source, model);
  } else if (type == "llama4") {
    read_text_config(json, source, "Llama 4", model,
                     [&](const nlohmann::json& text) { read_llama4(text, source, model); });
  } else if (type == "phi3") {
    read_phi3(json, source, model);
  } else if (type == "nemotron_h") {
    read_nemotron_h(json, source, model);
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
    model.seq_length = pretraining_context(json, source, model);
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
