#include "simulator/spec/model_spec.h"

#include <fmt/format.h>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::kSwiglu:
      return "swiglu";
    case Activation::kGeglu:
      return "geglu";
    case Activation::kGelu:
      return "gelu";
    case Activation::kSquaredRelu:
      return "squared_relu";
  }
  return "gelu";
}

namespace {

// Upper bounds (docs/limits.md) so that products of dimensions (hidden * ffn * layers *
// sequence * batch) stay inside 64-bit integers and doubles' exact range: 2^24 = 16,777,216
// for widths, vocabularies, sequences and expert counts (the largest real ones: 10M-token
// contexts, 262k vocabularies, 53k FFN widths), and 2^16 layers (real models: under 200).
constexpr int64_t kMaxDimension = int64_t{1} << 24;
constexpr int64_t kMaxLayers = int64_t{1} << 16;

ModelSpec parse_ppsim_model(const nlohmann::json& json, const std::string& source) {
  JsonReader reader(json, source);
  ModelSpec model;
  model.name = reader.required_string("name");
  model.num_layers = reader.required_int("num_layers", 1, kMaxLayers);
  model.hidden_size = reader.required_int("hidden_size", 1, kMaxDimension);
  model.ffn_hidden_size = reader.required_int("ffn_hidden_size", 1, kMaxDimension);
  model.num_attention_heads = reader.required_int("num_attention_heads", 1, kMaxDimension);
  model.num_kv_heads = reader.required_int("num_kv_heads", 1, kMaxDimension);
  model.vocab_size = reader.required_int("vocab_size", 1, kMaxDimension);
  model.seq_length = reader.required_int("seq_length", 1, kMaxDimension);
  const std::string activation =
      reader.required_choice("activation", {"swiglu", "geglu", "gelu", "squared_relu"});
  model.activation = activation == "swiglu"         ? Activation::kSwiglu
                     : activation == "geglu"        ? Activation::kGeglu
                     : activation == "squared_relu" ? Activation::kSquaredRelu
                                                    : Activation::kGelu;
  model.norm = reader.required_choice("norm", {"rmsnorm", "layernorm"}) == "rmsnorm"
                   ? Norm::kRmsNorm
                   : Norm::kLayerNorm;
  model.tied_embeddings = reader.required_bool("tied_embeddings");
  std::optional<int64_t> head_dim = reader.optional_int("head_dim", 1, kMaxDimension);
  model.linear_bias = reader.optional_bool("linear_bias").value_or(false);
  const std::string position =
      reader.optional_choice("position_embedding", {"rope", "learned", "none"}).value_or("rope");
  model.position_embedding = position == "learned" ? PositionEmbedding::kLearned
                             : position == "none"  ? PositionEmbedding::kNone
                                                   : PositionEmbedding::kRope;
  model.max_position_embeddings =
      reader.optional_int("max_position_embeddings", 1, kMaxDimension).value_or(model.seq_length);
  model.rope_theta = reader.optional_number("rope_theta", 1.0, 1e12).value_or(10000.0);
  model.source = reader.optional_string("source").value_or("");
  if (std::optional<JsonReader> moe_reader = reader.optional_object("moe")) {
    MoeSpec moe;
    moe.num_experts = moe_reader->required_int("num_experts", 1, kMaxDimension);
    moe.top_k = moe_reader->required_int("top_k", 1, kMaxDimension);
    moe.expert_ffn_hidden_size =
        moe_reader->required_int("expert_ffn_hidden_size", 1, kMaxDimension);
    moe.every_n_layers = moe_reader->optional_int("every_n_layers", 1, kMaxDimension).value_or(1);
    moe.layer_offset = moe_reader->optional_int("layer_offset", 0, kMaxDimension).value_or(0);
    moe.num_shared_experts =
        moe_reader->optional_int("num_shared_experts", 0, kMaxDimension).value_or(0);
    moe.shared_expert_ffn_hidden_size =
        moe_reader->optional_int("shared_expert_ffn_hidden_size", 1, kMaxDimension).value_or(0);
    moe.first_k_dense = moe_reader->optional_int("first_k_dense", 0, kMaxDimension).value_or(0);
    moe.imbalance =
        moe_reader->optional_number("imbalance", 1.0, 1e6).value_or(kDefaultMoeImbalance);
    moe.capacity_factor = moe_reader->optional_number("capacity_factor", 0.0, 1e6).value_or(0.0);
    moe.num_groups = moe_reader->optional_int("num_groups", 1, kMaxDimension).value_or(0);
    moe.group_topk = moe_reader->optional_int("group_topk", 1, kMaxDimension).value_or(0);
    moe.latent_size = moe_reader->optional_int("latent_size", 1, kMaxDimension).value_or(0);
    moe_reader->finish();
    if (std::optional<std::string> problem = moe_group_problem(moe)) {
      moe_reader->fail(moe.num_groups > 0 ? "group_topk" : "num_groups", *problem);
    }
    if (moe.imbalance > static_cast<double>(moe.num_experts)) {
      moe_reader->fail("imbalance",
                       fmt::format("imbalance {} exceeds num_experts={} (the busiest expert cannot "
                                   "take more than every token)",
                                   moe.imbalance, moe.num_experts));
    }
    if (moe.layer_offset >= moe.every_n_layers) {
      moe_reader->fail("layer_offset",
                       fmt::format("layer_offset={} must be below every_n_layers={} (which layer "
                                   "of each group of {} is MoE, from 0)",
                                   moe.layer_offset, moe.every_n_layers, moe.every_n_layers));
    }
    if (moe.first_k_dense > model.num_layers) {
      moe_reader->fail("first_k_dense", fmt::format("first_k_dense={} exceeds num_layers={}",
                                                    moe.first_k_dense, model.num_layers));
    }
    if (moe.top_k > moe.num_experts) {
      moe_reader->fail("top_k",
                       fmt::format("top_k={} exceeds num_experts={}", moe.top_k, moe.num_experts));
    }
    model.moe = moe;
  }
  if (std::optional<JsonReader> mla_reader = reader.optional_object("mla")) {
    MlaSpec mla;
    mla.q_lora_rank = mla_reader->optional_int("q_lora_rank", 0, kMaxDimension).value_or(0);
    mla.kv_lora_rank = mla_reader->required_int("kv_lora_rank", 1, kMaxDimension);
    mla.qk_nope_head_dim = mla_reader->required_int("qk_nope_head_dim", 1, kMaxDimension);
    mla.qk_rope_head_dim = mla_reader->required_int("qk_rope_head_dim", 1, kMaxDimension);
    mla.v_head_dim = mla_reader->required_int("v_head_dim", 1, kMaxDimension);
    mla_reader->finish();
    model.mla = mla;
  }
  if (std::optional<JsonReader> mamba_reader = reader.optional_object("mamba")) {
    MambaSpec mamba;
    mamba.num_heads = mamba_reader->required_int("num_heads", 1, kMaxDimension);
    mamba.head_dim = mamba_reader->required_int("head_dim", 1, kMaxDimension);
    mamba.state_size = mamba_reader->required_int("state_size", 1, kMaxDimension);
    mamba.num_groups = mamba_reader->required_int("num_groups", 1, kMaxDimension);
    mamba.conv_kernel = mamba_reader->optional_int("conv_kernel", 1, 1024).value_or(4);
    mamba.chunk_size = mamba_reader->optional_int("chunk_size", 1, kMaxDimension).value_or(128);
    mamba_reader->finish();
    if (std::optional<std::string> problem = mamba_group_problem(mamba)) {
      mamba_reader->fail("num_groups", *problem);
    }
    model.mamba = mamba;
  }
  model.hybrid_layer_pattern = reader.optional_string("hybrid_layer_pattern").value_or("");
  model.mtp_layer_pattern = reader.optional_string("mtp_layer_pattern").value_or("");
  model.mtp_layers = reader.optional_int("mtp_layers", 0, 1024).value_or(0);
  model.qk_norm = reader.optional_bool("qk_norm").value_or(false);
  model.qkv_bias = reader.optional_bool("qkv_bias").value_or(false);
  model.sliding_window = reader.optional_int("sliding_window", 0, kMaxDimension).value_or(0);
  model.sliding_window_pattern =
      reader.optional_int("sliding_window_pattern", 0, kMaxDimension).value_or(0);
  reader.finish();
  if (std::optional<std::string> problem = hybrid_pattern_problem(model)) {
    reader.fail(hybrid_problem_key(*problem), *problem);
  }
  if (model.mla && model.num_kv_heads != model.num_attention_heads) {
    reader.fail("num_kv_heads", fmt::format("MLA attention has a key and value per head: "
                                            "num_kv_heads must equal num_attention_heads ({})",
                                            model.num_attention_heads));
  }
  if (head_dim) {
    model.head_dim = *head_dim;
  } else if (model.mla) {
    model.head_dim = model.mla->qk_head_dim();
  } else if (model.hidden_size % model.num_attention_heads != 0) {
    reader.fail("num_attention_heads",
                fmt::format("{} heads do not divide hidden_size {}; give \"head_dim\" explicitly",
                            model.num_attention_heads, model.hidden_size));
  } else {
    model.head_dim = model.hidden_size / model.num_attention_heads;
  }
  return model;
}

}  // namespace

std::optional<std::string> mamba_group_problem(const MambaSpec& mamba) {
  if (mamba.num_heads % mamba.num_groups == 0) return std::nullopt;
  return fmt::format("num_groups={} does not divide num_heads={} (each group's B and C serve an "
                     "equal share of the heads)",
                     mamba.num_groups, mamba.num_heads);
}

std::optional<std::string> mamba_split_problem(const MambaSpec& mamba, int64_t tp, int64_t cp) {
  if (mamba.num_heads % tp != 0 || mamba.num_groups % tp != 0) {
    return fmt::format("tp={} must divide the {} Mamba heads and {} groups (Megatron splits both "
                       "over tp)",
                       tp, mamba.num_heads, mamba.num_groups);
  }
  const int64_t heads = mamba.num_heads / tp;
  const int64_t groups = mamba.num_groups / tp;
  if (heads % cp != 0) {
    return fmt::format("cp={} must divide the {} Mamba heads of each tp rank (Megatron-Core's "
                       "Mamba context parallelism gives each cp rank whole heads)",
                       cp, heads);
  }
  if (groups % cp != 0 && cp % groups != 0) {
    return fmt::format("cp={} and the {} Mamba groups of each tp rank must divide one another "
                       "(each cp rank scans whole groups, or a group is repeated to cp/groups "
                       "ranks)",
                       cp, groups);
  }
  return std::nullopt;
}

std::string hybrid_problem_key(const std::string& problem) {
  if (problem.starts_with("mamba")) return "mamba";
  if (problem.starts_with("mtp_layer_pattern")) return "mtp_layer_pattern";
  return "hybrid_layer_pattern";
}

std::optional<std::string> hybrid_pattern_problem(const ModelSpec& model) {
  const std::string& pattern = model.hybrid_layer_pattern;
  if (pattern.empty()) {
    if (model.mamba) {
      return std::string("mamba layers need \"hybrid_layer_pattern\" to say where they sit "
                         "(one 'M' per Mamba layer; a pure Mamba model is all 'M')");
    }
    if (!model.mtp_layer_pattern.empty()) {
      return std::string("mtp_layer_pattern is for hybrid models (with hybrid_layer_pattern); a "
                         "transformer's MTP layer copies its last layer");
    }
    return std::nullopt;
  }
  if (static_cast<int64_t>(pattern.size()) != model.num_layers) {
    return fmt::format("hybrid_layer_pattern has {} layers but num_layers is {} (one character "
                       "per layer)",
                       pattern.size(), model.num_layers);
  }
  const size_t bad = pattern.find_first_not_of("M*-E");
  if (bad != std::string::npos) {
    return fmt::format("hybrid_layer_pattern character {} is '{}'; expected 'M' (Mamba), '*' "
                       "(attention), '-' (MLP) or 'E' (MoE)",
                       bad, pattern[bad]);
  }
  const std::string& mtp = model.mtp_layer_pattern;
  if ((model.mtp_layers > 0) != !mtp.empty()) {
    return model.mtp_layers > 0
               ? std::string("mtp_layer_pattern is missing: a hybrid model's mtp_layers need the "
                             "layers of each MTP depth, e.g. \"*E\" (attention, then MoE)")
               : std::string("mtp_layer_pattern is given but mtp_layers is 0");
  }
  const size_t bad_mtp = mtp.find_first_not_of("M*-E");
  if (bad_mtp != std::string::npos) {
    return fmt::format("mtp_layer_pattern character {} is '{}'; expected 'M', '*', '-' or 'E'",
                       bad_mtp, mtp[bad_mtp]);
  }
  const std::string layers = pattern + mtp;
  const bool has_mamba = layers.find('M') != std::string::npos;
  const bool has_moe = layers.find('E') != std::string::npos;
  if (has_mamba != model.mamba.has_value()) {
    return has_mamba ? std::string("hybrid_layer_pattern has 'M' layers: give the \"mamba\" "
                                   "object (num_heads, head_dim, state_size, num_groups)")
                     : std::string("mamba is given but hybrid_layer_pattern has no 'M' layer");
  }
  if (has_moe != model.moe.has_value()) {
    return has_moe ? std::string("hybrid_layer_pattern has 'E' layers: give the \"moe\" object")
                   : std::string("moe is given but hybrid_layer_pattern has no 'E' layer");
  }
  if (model.moe && (model.moe->every_n_layers != 1 || model.moe->layer_offset != 0 ||
                    model.moe->first_k_dense != 0)) {
    return std::string("with hybrid_layer_pattern the pattern's 'E' layers are the MoE layers: "
                       "leave moe.every_n_layers, moe.layer_offset and moe.first_k_dense out");
  }
  return std::nullopt;
}

std::optional<std::string> moe_group_problem(const MoeSpec& moe) {
  if (moe.num_groups == 0 && moe.group_topk == 0) return std::nullopt;
  if (moe.num_groups == 0 || moe.group_topk == 0) {
    return std::string("num_groups and group_topk come together (group-limited routing: the "
                       "experts' groups and how many of them each token may use)");
  }
  if (moe.num_experts % moe.num_groups != 0) {
    return fmt::format("num_groups={} does not divide num_experts={}", moe.num_groups,
                       moe.num_experts);
  }
  if (moe.group_topk > moe.num_groups) {
    return fmt::format("group_topk={} exceeds num_groups={}", moe.group_topk, moe.num_groups);
  }
  if (moe.group_topk * (moe.num_experts / moe.num_groups) < moe.top_k) {
    return fmt::format("group_topk={} groups of {} experts hold fewer than top_k={}", moe.group_topk,
                       moe.num_experts / moe.num_groups, moe.top_k);
  }
  return std::nullopt;
}

ModelSpec parse_ppsim_model_json(const nlohmann::json& json, const std::string& source) {
  return parse_ppsim_model(json, source);
}

int64_t ModelSpec::num_moe_layers() const {
  int64_t count = 0;
  for (int64_t i = 0; i < num_layers; ++i) count += is_moe_layer(i) ? 1 : 0;
  return count;
}

void validate_model_spec(const ModelSpec& model, const std::string& source) {
  if (std::optional<std::string> problem = hybrid_pattern_problem(model)) {
    throw InputError(source, "/" + hybrid_problem_key(*problem), *problem);
  }
  if (model.num_kv_heads > model.num_attention_heads ||
      model.num_attention_heads % model.num_kv_heads != 0) {
    throw InputError(source, "/num_kv_heads",
                     fmt::format("{} key/value heads must divide the {} attention heads",
                                 model.num_kv_heads, model.num_attention_heads));
  }
  if (model.head_dim <= 0) {
    throw InputError(source, "/head_dim", "expected a positive head size");
  }
  if (model.qkv_bias && model.mla) {
    throw InputError(source, "/qkv_bias",
                     "MLA attention has no Q, K, V projections to bias (set qkv_bias false)");
  }
}

}  // namespace ppsim
