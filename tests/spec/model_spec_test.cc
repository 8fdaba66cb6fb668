#include "simulator/spec/model_file.h"
#include "simulator/spec/model_spec.h"

#include <catch2/catch.hpp>

#include "simulator/model/model_stats.h"
#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

const char* kTinyModel = R"({
  "name": "tiny", "num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 1024,
  "num_attention_heads": 8, "num_kv_heads": 2, "vocab_size": 1000, "seq_length": 512,
  "activation": "swiglu", "norm": "rmsnorm", "tied_embeddings": false
})";

std::string error_of(const std::string& text) {
  try {
    parse_model_spec(text, "m.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("ModelSpec: parses ppsim's model format") {
  ModelSpec model = parse_model_spec(kTinyModel, "tiny.json");
  CHECK(model.name == "tiny");
  CHECK(model.num_layers == 4);
  CHECK(model.head_dim == 32);
  CHECK(model.kv_width() == 64);
  CHECK(model.activation == Activation::kSwiglu);
  CHECK_FALSE(model.is_moe());
}

TEST_CASE("ModelSpec: geglu is gated like swiglu: the same three MLP matrices") {
  ModelSpec swiglu = parse_model_spec(kTinyModel, "tiny.json");
  ModelSpec geglu =
      parse_model_spec(testing::replace_once(kTinyModel, "\"swiglu\"", "\"geglu\""), "tiny.json");
  ModelSpec gelu =
      parse_model_spec(testing::replace_once(kTinyModel, "\"swiglu\"", "\"gelu\""), "tiny.json");
  CHECK(geglu.activation == Activation::kGeglu);
  CHECK(std::string(activation_name(geglu.activation)) == "geglu");
  CHECK(is_gated(geglu.activation));
  CHECK_FALSE(is_gated(gelu.activation));
  // Per layer: 3 x 256 x 1024 MLP weights gated, 2 x 256 x 1024 not.
  CHECK(count_parameters(geglu).total == count_parameters(swiglu).total);
  CHECK(count_parameters(swiglu).total - count_parameters(gelu).total == 4.0 * 256 * 1024);
}

TEST_CASE("ModelSpec: errors name the file, the JSON path and what was expected") {
  CHECK(error_of(testing::replace_once(kTinyModel, "\"num_layers\": 4", "\"num_layers\": -3")) ==
        "m.json: /num_layers: expected an integer in [1, 65536], got -3");
  CHECK(error_of(testing::replace_once(kTinyModel, "\"hidden_size\": 256",
                                       "\"hidden_size\": \"256\"")) ==
        "m.json: /hidden_size: expected an integer, got a string \"256\"");
  CHECK(error_of(testing::replace_once(kTinyModel, "\"activation\": \"swiglu\"",
                                       "\"activation\": \"swiglo\"")) ==
        "m.json: /activation: unknown value 'swiglo'; expected one of swiglu, geglu, gelu, "
        "squared_relu (did you mean "
        "'swiglu'?)");
  std::string unknown = error_of(
      testing::replace_once(kTinyModel, "\"seq_length\"", "\"seq_len\": 1, \"seq_length\""));
  CHECK(unknown.rfind("m.json: /seq_len: unknown key 'seq_len' (did you mean 'seq_length'?)", 0) ==
        0);
  CHECK(error_of(testing::replace_once(kTinyModel, "\"num_layers\": 4,", "")) ==
        "m.json: /num_layers: required key is missing (expected an integer)");
  CHECK(error_of("{\"name\": ") .rfind("m.json: invalid JSON at line 1", 0) == 0);
  CHECK(error_of(testing::replace_once(kTinyModel, "\"num_kv_heads\": 2", "\"num_kv_heads\": 3")) ==
        "m.json: /num_kv_heads: 3 key/value heads must divide the 8 attention heads");
}

TEST_CASE("ModelSpec: MoE block with every_n_layers") {
  std::string text = testing::replace_once(kTinyModel, "\"tied_embeddings\": false",
                             "\"tied_embeddings\": false, \"moe\": {\"num_experts\": 8, \"top_k\": "
                             "2, \"expert_ffn_hidden_size\": 512, \"every_n_layers\": 2}");
  ModelSpec model = parse_model_spec(text, "moe.json");
  REQUIRE(model.is_moe());
  CHECK(model.num_moe_layers() == 2);
  CHECK(model.is_moe_layer(0));
  CHECK_FALSE(model.is_moe_layer(1));
  CHECK(error_of(testing::replace_once(text, "\"top_k\": 2", "\"top_k\": 9")) ==
        "m.json: /moe/top_k: top_k=9 exceeds num_experts=8");
  // layer_offset picks which layer of each group is MoE (the last, as HuggingFace's Qwen and
  // Llama 4 configs place them); first_k_dense still comes first.
  std::string offset = testing::replace_once(text, "\"every_n_layers\": 2",
                                             "\"every_n_layers\": 2, \"layer_offset\": 1");
  ModelSpec odd = parse_model_spec(offset, "moe.json");
  CHECK_FALSE(odd.is_moe_layer(0));
  CHECK(odd.is_moe_layer(1));
  CHECK(odd.is_moe_layer(3));
  CHECK(odd.num_moe_layers() == 2);
  CHECK(error_of(testing::replace_once(offset, "\"layer_offset\": 1", "\"layer_offset\": 2")) ==
        "m.json: /moe/layer_offset: layer_offset=2 must be below every_n_layers=2 (which layer "
        "of each group of 2 is MoE, from 0)");
  // num_moe_layers counts the dense prefix out.
  std::string prefixed = testing::replace_once(text, "\"every_n_layers\": 2",
                                               "\"every_n_layers\": 1, \"first_k_dense\": 1");
  CHECK(parse_model_spec(prefixed, "moe.json").num_moe_layers() == 3);
  // Group-limited routing: both keys, groups dividing the experts and holding top_k of them.
  std::string grouped = testing::replace_once(text, "\"every_n_layers\": 2",
                                              "\"every_n_layers\": 2, \"num_groups\": 4, "
                                              "\"group_topk\": 2");
  CHECK(parse_model_spec(grouped, "moe.json").moe->num_groups == 4);
  CHECK(error_of(testing::replace_once(grouped, ", \"group_topk\": 2", "")) ==
        "m.json: /moe/group_topk: num_groups and group_topk come together (group-limited routing: "
        "the experts' groups and how many of them each token may use)");
  CHECK(error_of(testing::replace_once(grouped, "\"num_groups\": 4", "\"num_groups\": 3")) ==
        "m.json: /moe/group_topk: num_groups=3 does not divide num_experts=8");
  CHECK(error_of(testing::replace_once(grouped, "\"num_groups\": 4, \"group_topk\": 2",
                                       "\"num_groups\": 8, \"group_topk\": 1")) ==
        "m.json: /moe/group_topk: group_topk=1 groups of 1 experts hold fewer than top_k=2");
}

TEST_CASE("ModelSpec: HuggingFace configs give the published parameter counts") {
  std::string dir = std::string(PPSIM_TEST_DATA) + "/hf/";
  // Llama-3-8B: 8,030,261,248 parameters (model card).
  ModelSpec llama = load_model_spec(dir + "Meta-Llama-3-8B.json");
  CHECK(llama.num_kv_heads == 8);
  CHECK(count_parameters(llama).total == 8030261248.0);
  // Mixtral-8x7B: 46.7B total, 12.9B active (Mistral AI's release notes).
  ModelSpec mixtral = load_model_spec(dir + "Mixtral-8x7B-v0.1.json");
  REQUIRE(mixtral.is_moe());
  CHECK(count_parameters(mixtral).total == Approx(46.7e9).epsilon(0.005));
  CHECK(count_parameters(mixtral).active == Approx(12.9e9).epsilon(0.005));
  // Llama-3.1-405B trained at 8192 before the context extension.
  ModelSpec big = load_model_spec(dir + "Llama-3.1-405B.json");
  CHECK(big.seq_length == 8192);
  CHECK(count_parameters(big).total == Approx(405.9e9).epsilon(0.005));
  // GPT-2 small: 124,439,808 (HF model card); tied, learned positions, biases.
  ModelSpec gpt2 = load_model_spec(dir + "gpt2.json");
  CHECK(count_parameters(gpt2).total == 124439808.0);
  // Pythia-1B (GPT-NeoX): 1,011,781,632 (Pythia paper, Table 1 of the model card).
  ModelSpec pythia = load_model_spec(dir + "pythia-1b.json");
  CHECK(count_parameters(pythia).total == 1011781632.0);
}

TEST_CASE("ModelSpec: a HuggingFace config with an unsupported type is a clear error") {
  CHECK(error_of(R"({"model_type": "llamma", "hidden_size": 1})") ==
        "m.json: /model_type: unsupported model_type 'llamma'; ppsim reads llama, mistral, qwen2, "
        "mixtral, gpt2, gpt_neox, deepseek_v2, deepseek_v3, kimi_k2, qwen3, qwen3_moe, "
        "qwen2_moe, glm4_moe, olmoe, llama4, llama4_text, gpt_oss, gemma2, gemma3, gemma3_text, "
        "phi3, nemotron_h (did you mean 'llama'?)");
  CHECK(error_of(R"({"model_type": "llama", "hidden_size": 1})") ==
        "m.json: /num_hidden_layers: required HuggingFace field is missing (expected a positive "
        "integer)");
}

TEST_CASE("ModelSpec: unknown zoo names list the zoo with a suggestion") {
  try {
    load_model_spec("llama3-70");
    FAIL("expected an InputError");
  } catch (const InputError& error) {
    std::string what = error.what();
    CHECK(what.find("'llama3-70' is neither a file nor a zoo model (did you mean 'llama3-70b'?)") !=
          std::string::npos);
  }
}

}  // namespace
}  // namespace ppsim
