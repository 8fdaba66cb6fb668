#include "simulator/spec/model_spec.h"

#include <fmt/format.h>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {
namespace {

constexpr int64_t kMaxDimension = int64_t{1} << 40;  // Guards products against overflow.

ModelSpec parse_ppsim_model(const nlohmann::json& json, const std::string& source) {
  JsonReader reader(json, source);
  ModelSpec model;
  model.name = reader.required_string("name");
  model.num_layers = reader.required_int("num_layers", 1, kMaxDimension);
  model.hidden_size = reader.required_int("hidden_size", 1, kMaxDimension);
  model.ffn_hidden_size = reader.required_int("ffn_hidden_size", 1, kMaxDimension);
  model.num_attention_heads = reader.required_int("num_attention_heads", 1, kMaxDimension);
  model.num_kv_heads = reader.required_int("num_kv_heads", 1, kMaxDimension);
  model.vocab_size = reader.required_int("vocab_size", 1, kMaxDimension);
  model.seq_length = reader.required_int("seq_length", 1, kMaxDimension);
  model.activation = reader.required_choice("activation", {"swiglu", "gelu"}) == "swiglu"
                         ? Activation::kSwiglu
                         : Activation::kGelu;
  model.norm = reader.required_choice("norm", {"rmsnorm", "layernorm"}) == "rmsnorm"
                   ? Norm::kRmsNorm
                   : Norm::kLayerNorm;
  model.tied_embeddings = reader.required_bool("tied_embeddings");
  std::optional<int64_t> head_dim = reader.optional_int("head_dim", 1, kMaxDimension);
  model.linear_bias = reader.optional_bool("linear_bias").value_or(false);
  model.position_embedding =
      reader.optional_choice("position_embedding", {"rope", "learned"}).value_or("rope") ==
              "learned"
          ? PositionEmbedding::kLearned
          : PositionEmbedding::kRope;
  model.max_position_embeddings =
      reader.optional_int("max_position_embeddings", 1, kMaxDimension).value_or(model.seq_length);
  model.source = reader.optional_string("source").value_or("");
  if (std::optional<JsonReader> moe_reader = reader.optional_object("moe")) {
    MoeSpec moe;
    moe.num_experts = moe_reader->required_int("num_experts", 1, kMaxDimension);
    moe.top_k = moe_reader->required_int("top_k", 1, kMaxDimension);
    moe.expert_ffn_hidden_size =
        moe_reader->required_int("expert_ffn_hidden_size", 1, kMaxDimension);
    moe.every_n_layers = moe_reader->optional_int("every_n_layers", 1, kMaxDimension).value_or(1);
    moe_reader->finish();
    if (moe.top_k > moe.num_experts) {
      moe_reader->fail("top_k", fmt::format("top_k={} exceeds num_experts={}", moe.top_k,
                                            moe.num_experts));
    }
    model.moe = moe;
  }
  reader.finish();
  if (head_dim) {
    model.head_dim = *head_dim;
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

ModelSpec parse_ppsim_model_json(const nlohmann::json& json, const std::string& source) {
  return parse_ppsim_model(json, source);
}

int64_t ModelSpec::num_moe_layers() const {
  if (!moe) return 0;
  return (num_layers + moe->every_n_layers - 1) / moe->every_n_layers;
}

void validate_model_spec(const ModelSpec& model, const std::string& source) {
  if (model.num_kv_heads > model.num_attention_heads ||
      model.num_attention_heads % model.num_kv_heads != 0) {
    throw InputError(source, "/num_kv_heads",
                     fmt::format("{} key/value heads must divide the {} attention heads",
                                 model.num_kv_heads, model.num_attention_heads));
  }
  if (model.head_dim <= 0) {
    throw InputError(source, "/head_dim", "expected a positive head size");
  }
}

}  // namespace ppsim
