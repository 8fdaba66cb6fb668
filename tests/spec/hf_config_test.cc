// HuggingFace config.json import of the MoE, MLA and Qwen3 architectures: each fixture under
// tests/data/hf/<name>/config.json (the public config reduced to the keys we read and a few
// others) must give the zoo model's shape, and shapes ppsim cannot express must be refused.
#include "simulator/spec/hf_config.h"

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

// Every field that shapes the parameters and FLOPs agrees (seq_length is checked apart).
void check_same_shape(const ModelSpec& imported, const ModelSpec& zoo) {
  CHECK(imported.num_layers == zoo.num_layers);
  CHECK(imported.hidden_size == zoo.hidden_size);
  CHECK(imported.ffn_hidden_size == zoo.ffn_hidden_size);
  CHECK(imported.num_attention_heads == zoo.num_attention_heads);
  CHECK(imported.num_kv_heads == zoo.num_kv_heads);
  CHECK(imported.head_dim == zoo.head_dim);
  CHECK(imported.vocab_size == zoo.vocab_size);
  CHECK(imported.activation == zoo.activation);
  CHECK(imported.norm == zoo.norm);
  CHECK(imported.tied_embeddings == zoo.tied_embeddings);
  CHECK(imported.linear_bias == zoo.linear_bias);
  CHECK(imported.position_embedding == zoo.position_embedding);
  CHECK(imported.qk_norm == zoo.qk_norm);
  CHECK(imported.mtp_layers == zoo.mtp_layers);
  CHECK(imported.sliding_window == zoo.sliding_window);
  CHECK(imported.sliding_window_pattern == zoo.sliding_window_pattern);
  REQUIRE(imported.moe.has_value() == zoo.moe.has_value());
  if (zoo.moe) {
    CHECK(imported.moe->num_experts == zoo.moe->num_experts);
    CHECK(imported.moe->top_k == zoo.moe->top_k);
    CHECK(imported.moe->expert_ffn_hidden_size == zoo.moe->expert_ffn_hidden_size);
    CHECK(imported.moe->every_n_layers == zoo.moe->every_n_layers);
    CHECK(imported.moe->num_shared_experts == zoo.moe->num_shared_experts);
    CHECK(imported.moe->shared_width() == zoo.moe->shared_width());
    CHECK(imported.moe->first_k_dense == zoo.moe->first_k_dense);
    CHECK(imported.moe->num_groups == zoo.moe->num_groups);
    CHECK(imported.moe->group_topk == zoo.moe->group_topk);
  }
  REQUIRE(imported.mla.has_value() == zoo.mla.has_value());
  if (zoo.mla) {
    CHECK(imported.mla->q_lora_rank == zoo.mla->q_lora_rank);
    CHECK(imported.mla->kv_lora_rank == zoo.mla->kv_lora_rank);
    CHECK(imported.mla->qk_nope_head_dim == zoo.mla->qk_nope_head_dim);
    CHECK(imported.mla->qk_rope_head_dim == zoo.mla->qk_rope_head_dim);
    CHECK(imported.mla->v_head_dim == zoo.mla->v_head_dim);
  }
  ParameterCounts a = count_parameters(imported);
  ParameterCounts b = count_parameters(zoo);
  CHECK(a.total == b.total);
  CHECK(a.active == b.active);
  CHECK(a.mtp == b.mtp);
}

TEST_CASE("HfConfig: MoE, MLA and Qwen3 configs import as their zoo models") {
  struct Case {
    const char* fixture;
    const char* zoo;
    int64_t seq_length;  // rope_scaling's original context, else 4,096 (with a note).
  };
  for (const Case& c :
       {Case{"DeepSeek-V3", "deepseek-v3", 4096}, Case{"Kimi-K2-Instruct", "kimi-k2", 4096},
        Case{"Qwen3-30B-A3B", "qwen3-30b-a3b", 4096},
        Case{"Qwen3-235B-A22B", "qwen3-235b-a22b", 4096}, Case{"Qwen3-8B", "qwen3-8b", 4096},
        Case{"gpt-oss-20b", "gpt-oss-20b", 4096}, Case{"gpt-oss-120b", "gpt-oss-120b", 4096}}) {
    INFO(c.fixture);
    ModelSpec imported = load_model_spec(testing::hf_fixture(c.fixture));
    CHECK(imported.name == c.fixture);  // The directory names the model.
    CHECK(imported.seq_length == c.seq_length);
    check_same_shape(imported, load_model_spec(c.zoo));
  }
}

TEST_CASE("HfConfig: the architectures list alone selects the importer") {
  for (const char* name :
       {"DeepSeek-V3", "Kimi-K2-Instruct", "Qwen3-30B-A3B", "Qwen3-8B", "gpt-oss-20b"}) {
    INFO(name);
    nlohmann::json json = testing::hf_fixture_json(name);
    ModelSpec with_type = parse_model_spec(json.dump(), "a/config.json");
    json.erase("model_type");
    ModelSpec from_architecture = parse_model_spec(json.dump(), "a/config.json");
    check_same_shape(from_architecture, with_type);
  }
  // Megatron-Bridge names Kimi K2's architecture KimiK2ForCausalLM.
  nlohmann::json kimi = testing::hf_fixture_json("Kimi-K2-Instruct");
  kimi.erase("model_type");
  kimi["architectures"] = {"KimiK2ForCausalLM"};
  check_same_shape(parse_model_spec(kimi.dump(), "a/config.json"), load_model_spec("kimi-k2"));
}

TEST_CASE("HfConfig: GPT-OSS reads experts_per_token and the sliding layer types") {
  nlohmann::json json = testing::hf_fixture_json("gpt-oss-20b");
  json.erase("num_experts_per_tok");
  json["experts_per_token"] = 2;
  ModelSpec model = parse_model_spec(json.dump(), "a/config.json");
  CHECK(model.moe->top_k == 2);
  CHECK(model.attention_window(0) == 128);
  CHECK(model.attention_window(1) == 0);
  // Without layer_types transformers alternates sliding and full, as the fixture does.
  json.erase("layer_types");
  CHECK(parse_model_spec(json.dump(), "a/config.json").sliding_window_pattern == 2);
  // Every layer sliding is pattern 0; every layer full is no window.
  json["layer_types"] = std::vector<std::string>(24, "sliding_attention");
  model = parse_model_spec(json.dump(), "a/config.json");
  CHECK(model.sliding_window == 128);
  CHECK(model.sliding_window_pattern == 0);
  json["layer_types"] = std::vector<std::string>(24, "full_attention");
  CHECK(parse_model_spec(json.dump(), "a/config.json").sliding_window == 0);
}

TEST_CASE("HfConfig: a Qwen3-MoE dense prefix in mlp_only_layers is first_k_dense") {
  nlohmann::json json = testing::hf_fixture_json("Qwen3-30B-A3B");
  json["mlp_only_layers"] = {0, 1};
  ModelSpec model = parse_model_spec(json.dump(), "a/config.json");
  CHECK(model.moe->first_k_dense == 2);
  CHECK_FALSE(model.is_moe_layer(1));
  CHECK(model.is_moe_layer(2));
}

TEST_CASE("HfConfig: shapes ppsim cannot express are clear errors naming file and key") {
  nlohmann::json deepseek = testing::hf_fixture_json("DeepSeek-V3");
  deepseek["num_experts_per_tok"] = 300;
  CHECK(testing::model_import_error(deepseek) ==
        "bad/config.json: /num_experts_per_tok: num_experts_per_tok=300 exceeds the 256 routed "
        "experts");
  deepseek = testing::hf_fixture_json("DeepSeek-V3");
  deepseek["num_key_value_heads"] = 8;
  CHECK(testing::model_import_error(deepseek) ==
        "bad/config.json: /num_key_value_heads: MLA attention has a key and value per head: "
        "expected 128 (num_attention_heads), got 8");
  deepseek = testing::hf_fixture_json("DeepSeek-V3");
  deepseek["topk_group"] = 9;
  CHECK(testing::model_import_error(deepseek) ==
        "bad/config.json: /topk_group: group_topk=9 exceeds num_groups=8");
  deepseek = testing::hf_fixture_json("DeepSeek-V3");
  deepseek["topk_group"] = 1;  // One group of 32 experts holds top_k=8: consistent.
  CHECK(parse_model_spec(deepseek.dump(), "a/config.json").moe->group_topk == 1);
  deepseek["n_group"] = 3;
  CHECK(testing::model_import_error(deepseek) ==
        "bad/config.json: /topk_group: num_groups=3 does not divide num_experts=256");
  deepseek = testing::hf_fixture_json("DeepSeek-V3");
  deepseek.erase("kv_lora_rank");
  CHECK(testing::model_import_error(deepseek) ==
        "bad/config.json: /kv_lora_rank: required HuggingFace field is missing (expected a "
        "positive integer)");

  nlohmann::json qwen = testing::hf_fixture_json("Qwen3-30B-A3B");
  qwen["num_experts_per_tok"] = 129;
  CHECK(testing::model_import_error(qwen) ==
        "bad/config.json: /num_experts_per_tok: num_experts_per_tok=129 exceeds the 128 routed "
        "experts");
  qwen = testing::hf_fixture_json("Qwen3-30B-A3B");
  qwen["mlp_only_layers"] = {0, 5};
  CHECK(testing::model_import_error(qwen) ==
        "bad/config.json: /mlp_only_layers/1: dense layers other than a prefix [0, 1, ..., k-1] "
        "cannot be expressed (ppsim's first_k_dense); write a ppsim model file instead");
  qwen = testing::hf_fixture_json("Qwen3-30B-A3B");
  qwen["decoder_sparse_step"] = 2;
  CHECK(testing::model_import_error(qwen).rfind("bad/config.json: /decoder_sparse_step: only 1",
                                                0) == 0);
  qwen = testing::hf_fixture_json("Qwen3-8B");
  qwen["attention_bias"] = true;
  CHECK(testing::model_import_error(qwen).rfind(
            "bad/config.json: /attention_bias: attention-only biases", 0) == 0);
  qwen["attention_bias"] = false;
  qwen["use_sliding_window"] = true;
  qwen["sliding_window"] = 4096;
  qwen["max_window_layers"] = 28;
  CHECK(testing::model_import_error(qwen).rfind(
            "bad/config.json: /max_window_layers: sliding windows on layers "
            "28..35 only cannot be expressed",
            0) == 0);

  nlohmann::json gpt = testing::hf_fixture_json("gpt-oss-20b");
  gpt["num_experts_per_tok"] = 33;
  gpt["experts_per_token"] = 33;
  CHECK(testing::model_import_error(gpt) ==
        "bad/config.json: /num_experts_per_tok: num_experts_per_tok=33 exceeds the 32 routed "
        "experts");
  gpt = testing::hf_fixture_json("gpt-oss-20b");
  gpt["experts_per_token"] = 2;
  CHECK(testing::model_import_error(gpt) ==
        "bad/config.json: /experts_per_token: 2 disagrees with num_experts_per_tok=4");
  gpt = testing::hf_fixture_json("gpt-oss-20b");
  gpt["layer_types"][4] = "full_attention";
  CHECK(testing::model_import_error(gpt).rfind(
            "bad/config.json: /layer_types/4: this layer mix cannot be "
            "expressed",
            0) == 0);
  gpt = testing::hf_fixture_json("gpt-oss-20b");
  gpt["attention_bias"] = false;
  CHECK(testing::model_import_error(gpt).rfind(
            "bad/config.json: /attention_bias: false cannot be expressed", 0) == 0);
  gpt = testing::hf_fixture_json("gpt-oss-20b");
  gpt.erase("model_type");
  gpt["architectures"] = {"GptOssForSomethingElse"};
  CHECK(testing::model_import_error(gpt).empty());  // A prefix match, as for the other families.
  gpt["architectures"] = {"GptOsForCausalLM"};
  CHECK(testing::model_import_error(gpt).rfind(
            "bad/config.json: /architectures/0: unsupported architecture "
            "'GptOsForCausalLM'",
            0) == 0);
}

}  // namespace
}  // namespace ppsim
