// HuggingFace config.json import of the dense families besides Llama: Gemma 2, Gemma 3 (text and
// multimodal), Phi-3, Qwen2.5 and Mistral. Each fixture under tests/data/hf/<name>/config.json
// is the public config.json's keys (huggingface.co/<org>/<name>); the parameter counts are
// checked exactly against a hand count and within 0.1% of the published figure named beside it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/model/model_stats.h"
#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"
#include "simulator/spec/model_file.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

// Transformer layers and the final norm: the "non-embedding" figure the model cards publish.
double non_embedding(const ParameterCounts& counts) {
  return counts.transformer_layers + counts.final_norm;
}

TEST_CASE("HfDense: Gemma 2 9B, alternating local and global attention") {
  ModelSpec model = load_model_spec(testing::hf_fixture("gemma-2-9b"));
  CHECK(model.name == "gemma-2-9b");
  CHECK(model.head_dim == 256);
  CHECK(model.num_kv_heads == 8);
  CHECK(model.tied_embeddings);
  CHECK(model.activation == Activation::kGeglu);
  CHECK_FALSE(model.qk_norm);
  CHECK(model.sliding_window == 4096);
  CHECK(model.sliding_window_pattern == 2);
  CHECK(model.attention_window(0) == 4096);  // Even layers local.
  CHECK(model.attention_window(1) == 0);     // Odd layers global.
  // max_position_embeddings 8192 and no original length: 4,096 with a note.
  CHECK(model.seq_length == 4096);
  CHECK(testing::has_note(
      model, "the default sequence length is 4096, not max_position_embeddings = 8192"));
  ParameterCounts counts = count_parameters(model);
  // Hand count per layer: q, o 3584 x 4096 each, k and v 3584 x 2048 each (44,040,192), MLP
  // 3 x 3584 x 14336 (154,140,672), two RMSNorms (7,168): 198,188,032 x 42 + final norm 3,584.
  CHECK(non_embedding(counts) == 8323900928.0);
  CHECK(counts.embedding == 917504000.0);  // 256000 x 3584, tied.
  CHECK(counts.total == 9241404928.0);
  // Gemma 2 report (arXiv 2408.00118), Table 2: 917,504,000 embedding and 8,324,201,984
  // non-embedding parameters; the difference is the uncounted post-norms, 2 x 3584 x 42.
  CHECK(8324201984.0 - non_embedding(counts) == 2.0 * 3584 * 42);
  CHECK(counts.total == Approx(917504000.0 + 8324201984.0).epsilon(0.001));
}

TEST_CASE("HfDense: Gemma 3 12B multimodal reads text_config and the 5:1 pattern") {
  ModelSpec model = load_model_spec(testing::hf_fixture("gemma-3-12b-pt"));
  // Gemma3TextConfig defaults fill what text_config leaves out.
  CHECK(model.vocab_size == 262208);
  CHECK(model.head_dim == 256);
  CHECK(model.qk_norm);
  CHECK(model.tied_embeddings);
  CHECK(model.sliding_window == 1024);
  CHECK(model.sliding_window_pattern == 6);
  for (int64_t layer : {0, 1, 4, 6, 10}) CHECK(model.attention_window(layer) == 1024);
  for (int64_t layer : {5, 11, 47}) CHECK(model.attention_window(layer) == 0);
  CHECK(model.seq_length == 4096);  // Default 131072 positions, no original length.
  CHECK(testing::has_note(model, "vision tower"));
  ParameterCounts counts = count_parameters(model);
  // Per layer: q, o 3840 x 4096, k, v 3840 x 2048 (47,185,920), q/k norms 512, MLP
  // 3 x 3840 x 15360 (176,947,200), two norms 7,680: 224,141,312 x 48 + 3,840.
  CHECK(non_embedding(counts) == 10758786816.0);
  CHECK(counts.embedding == 262208.0 * 3840);
  // Gemma 3 report (arXiv 2503.19786), Table 1: 12B has 10,759M non-embedding parameters.
  CHECK(non_embedding(counts) == Approx(10759e6).epsilon(0.001));
}

TEST_CASE("HfDense: Gemma 3 1B text-only config") {
  ModelSpec model = load_model_spec(testing::hf_fixture("gemma-3-1b-pt"));
  CHECK(model.num_kv_heads == 1);
  CHECK(model.sliding_window == 512);
  CHECK(model.sliding_window_pattern == 6);
  CHECK(model.seq_length == 4096);
  CHECK_FALSE(testing::has_note(model, "vision tower"));
  ParameterCounts counts = count_parameters(model);
  // Per layer: 2,949,120 attention + 512 q/k norms + 23,887,872 MLP + 2,304 norms.
  CHECK(non_embedding(counts) == 26.0 * 26839808 + 1152);
  // Gemma 3 report, Table 1: 1B has 302M embedding and 698M non-embedding parameters.
  CHECK(counts.embedding == Approx(302e6).epsilon(0.001));
  CHECK(non_embedding(counts) == Approx(698e6).epsilon(0.001));
}

TEST_CASE("HfDense: Phi-3-mini reads its pre-training length and window") {
  ModelSpec model = load_model_spec(testing::hf_fixture("Phi-3-mini-4k-instruct"));
  CHECK(model.seq_length == 4096);  // original_max_position_embeddings.
  CHECK(model.notes.empty());
  CHECK(model.sliding_window == 2047);
  CHECK(model.sliding_window_pattern == 0);
  CHECK(model.attention_window(31) == 2047);
  CHECK_FALSE(model.tied_embeddings);
  // 3,821,079,552: keras-hub's phi3_mini_4k_instruct_en preset metadata (params), the same as
  // the 3.82B of the Hugging Face model page.
  CHECK(count_parameters(model).total == 3821079552.0);
  nlohmann::json json = testing::hf_fixture_json("Phi-3-mini-4k-instruct");
  json["original_max_position_embeddings"] = 2048;
  CHECK(parse_model_spec(json.dump(), "a/config.json").seq_length == 2048);
  json.erase("model_type");
  json["architectures"] = {"Phi3SmallForCausalLM"};  // A different architecture.
  CHECK(testing::model_import_error(json).rfind(
            "bad/config.json: /architectures/0: unsupported architecture "
            "'Phi3SmallForCausalLM'",
            0) == 0);
}

TEST_CASE("HfDense: Qwen2.5-7B counts its Q/K/V biases") {
  ModelSpec model = load_model_spec(testing::hf_fixture("Qwen2.5-7B"));
  CHECK(model.qkv_bias);
  CHECK_FALSE(model.linear_bias);
  CHECK(model.sliding_window == 0);  // use_sliding_window false.
  // max_position_embeddings 131,072 is the extended context: the default is 4,096.
  CHECK(model.seq_length == 4096);
  CHECK(testing::has_note(model, "not max_position_embeddings = 131072"));
  ParameterCounts counts = count_parameters(model);
  CHECK(counts.total == 7615616512.0);
  CHECK(non_embedding(counts) == 6525621760.0);
  // Qwen2.5-7B model card: 7.61B parameters, 6.53B non-embedding.
  CHECK(counts.total == Approx(7.61e9).epsilon(0.001));
  CHECK(non_embedding(counts) == Approx(6.53e9).epsilon(0.001));
  // The biases: 28 layers x (3584 query + 2 x 512 key/value).
  ModelSpec unbiased = model;
  unbiased.qkv_bias = false;
  CHECK(counts.total - count_parameters(unbiased).total == 28.0 * (3584 + 2 * 512));
  // use_sliding_window with max_window_layers 0 slides every layer.
  nlohmann::json json = testing::hf_fixture_json("Qwen2.5-7B");
  json["use_sliding_window"] = true;
  json["sliding_window"] = 4096;
  json["max_window_layers"] = 0;
  CHECK(parse_model_spec(json.dump(), "a/config.json").sliding_window == 4096);
  json["max_window_layers"] = 14;
  CHECK(testing::model_import_error(json).rfind(
            "bad/config.json: /max_window_layers: sliding windows on layers "
            "14..27 only cannot be expressed",
            0) == 0);
}

TEST_CASE("HfDense: Mistral 7B slides every layer") {
  ModelSpec model = load_model_spec(testing::hf_fixture("Mistral-7B-v0.1"));
  CHECK(model.sliding_window == 4096);
  CHECK(model.sliding_window_pattern == 0);
  CHECK(model.attention_window(0) == 4096);
  CHECK(model.seq_length == 4096);
  // 7,241,732,096 by hand; the Hugging Face model page gives 7.24B.
  CHECK(count_parameters(model).total == 7241732096.0);
  CHECK(count_parameters(model).total == Approx(7.24e9).epsilon(0.001));
  nlohmann::json json = testing::hf_fixture_json("Mistral-7B-v0.1");
  json["sliding_window"] = nullptr;  // Mistral 7B v0.2 and later.
  CHECK(parse_model_spec(json.dump(), "a/config.json").sliding_window == 0);
  json["attention_bias"] = true;
  CHECK(testing::model_import_error(json).rfind(
            "bad/config.json: /attention_bias: attention-only biases", 0) == 0);
}

TEST_CASE("HfDense: the pre-training length rules") {
  nlohmann::json json = testing::hf_fixture_json("Mistral-7B-v0.1");
  json["max_position_embeddings"] = 2048;  // At or under 4,096: taken as it is, no note.
  ModelSpec model = parse_model_spec(json.dump(), "a/config.json");
  CHECK(model.seq_length == 2048);
  CHECK(model.notes.empty());
  json["rope_scaling"] = {{"original_max_position_embeddings", 8192}, {"rope_type", "llama3"}};
  json["max_position_embeddings"] = 131072;
  CHECK(parse_model_spec(json.dump(), "a/config.json").seq_length == 8192);
}

TEST_CASE("HfDense: bad Gemma configs name the nested key") {
  nlohmann::json json = testing::hf_fixture_json("gemma-3-12b-pt");
  json["text_config"].erase("num_hidden_layers");
  CHECK(testing::model_import_error(json) ==
        "bad/config.json: /text_config/num_hidden_layers: required HuggingFace field is missing "
        "(expected a positive integer)");
  json.erase("text_config");
  CHECK(testing::model_import_error(json) ==
        "bad/config.json: /text_config: expected the language model's config object (Gemma 3 "
        "multimodal)");
  nlohmann::json gemma2 = testing::hf_fixture_json("gemma-2-9b");
  gemma2["attention_bias"] = true;
  CHECK(testing::model_import_error(gemma2).rfind("bad/config.json: /attention_bias:", 0) == 0);
  // A model file may say qkv_bias, but not with MLA.
  nlohmann::json mla = {{"name", "m"},           {"num_layers", 2},
                        {"hidden_size", 64},     {"ffn_hidden_size", 128},
                        {"num_attention_heads", 4}, {"num_kv_heads", 4},
                        {"vocab_size", 100},     {"seq_length", 32},
                        {"activation", "swiglu"}, {"norm", "rmsnorm"},
                        {"tied_embeddings", false}, {"qkv_bias", true}};
  CHECK(testing::model_import_error(mla).empty());
  mla["mla"] = {{"kv_lora_rank", 8}, {"qk_nope_head_dim", 8}, {"qk_rope_head_dim", 8},
                {"v_head_dim", 8}};
  CHECK(testing::model_import_error(mla) ==
        "bad/config.json: /qkv_bias: MLA attention has no Q, K, V projections to bias (set "
        "qkv_bias false)");
}

}  // namespace
}  // namespace ppsim
