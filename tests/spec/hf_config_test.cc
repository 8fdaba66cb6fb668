// HuggingFace config.json import of the MoE, MLA and Qwen3 architectures: each fixture under
// tests/data/hf/<name>/config.json (the public config reduced to the keys we read and a few
// others) must give the zoo model's shape, and shapes ppsim cannot express must be refused.
#include "simulator/spec/hf_config.h"

#include <catch2/catch.hpp>
#include <cmath>
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

// Published totals (the model cards and papers), MTP layers excluded as the cards count them.
TEST_CASE("HfConfig: DeepSeek-V2, Qwen2-MoE, GLM-4.5 and OLMoE import with their published size") {
  struct Case {
    const char* fixture;
    double published_total;  // Parameters, MTP excluded.
    double tolerance;        // Relative; the cards round to three or four figures.
  };
  // DeepSeek-V2 paper (arXiv 2405.04434): 236B and 15.7B (Lite); Qwen1.5-MoE-A2.7B and
  // Qwen2-57B-A14B model cards: 14.3B and 57.4B; OLMoE paper (arXiv 2409.02060): 6.9B; GLM-4.5
  // report (arXiv 2508.06471) table 1: 355B and 106B, rounded more loosely (the MTP layer of
  // 4.0B and 2.4B is outside both; the cards' safetensors totals, 358B and 110B, include it).
  for (const Case& c : {Case{"DeepSeek-V2", 236e9, 0.005}, Case{"DeepSeek-V2-Lite", 15.7e9, 0.005},
                        Case{"Qwen1.5-MoE-A2.7B", 14.3e9, 0.005},
                        Case{"Qwen2-57B-A14B", 57.4e9, 0.005},
                        Case{"OLMoE-1B-7B-0924", 6.9e9, 0.005}, Case{"GLM-4.5", 355e9, 0.01},
                        Case{"GLM-4.5-Air", 106e9, 0.01}}) {
    INFO(c.fixture);
    ModelSpec model = load_model_spec(testing::hf_fixture(c.fixture));
    REQUIRE(model.moe.has_value());
    ParameterCounts counts = count_parameters(model);
    CHECK(std::abs(counts.total - counts.mtp - c.published_total) <=
          c.tolerance * c.published_total);
  }

  // Hand-computed from the config (model_stats.h conventions): Qwen2-57B-A14B, 28 layers of
  // GQA attention with q/k/v biases (h 3584, 28 heads, 4 key/value heads of 128), 64 experts of
  // width 2560 (8 active) beside one shared expert of width 20480, untied embeddings.
  ModelSpec qwen = load_model_spec(testing::hf_fixture("Qwen2-57B-A14B"));
  {
    const double h = 3584, q = 3584, kv = 512, vocab = 151936;
    const double attention = h * (q + 2 * kv) + q * h + (q + 2 * kv);
    const double expert = 3 * h * 2560, shared = 3 * h * 20480, router = h * 64;
    const double outside = 2 * vocab * h + h;  // Embedding, output layer, final norm.
    const double layer_fixed = attention + 2 * h + shared + router;
    ParameterCounts counts = count_parameters(qwen);
    CHECK(counts.total == 28 * (layer_fixed + 64 * expert) + outside);
    CHECK(counts.active == 28 * (layer_fixed + 8 * expert) + outside);
    CHECK(qwen.qkv_bias);
    CHECK(qwen.moe->num_shared_experts == 1);
    CHECK(qwen.moe->shared_width() == 20480);
  }
  // OLMoE: 16 layers of MHA (h 2048, 16 heads of 128) with query/key norms, 64 experts of width
  // 1024, 8 active, no shared expert.
  ModelSpec olmoe = load_model_spec(testing::hf_fixture("OLMoE-1B-7B-0924"));
  {
    const double h = 2048, vocab = 50304;
    const double attention = 4 * h * h + 2 * 128;  // Per-head q/k norm gains.
    const double expert = 3 * h * 1024, router = h * 64;
    ParameterCounts counts = count_parameters(olmoe);
    CHECK(counts.total == 16 * (attention + 2 * h + 64 * expert + router) + 2 * vocab * h + h);
    CHECK(counts.active == 16 * (attention + 2 * h + 8 * expert + router) + 2 * vocab * h + h);
    CHECK(olmoe.qk_norm);
    CHECK(olmoe.moe->num_shared_experts == 0);
  }
  // GLM-4.5: q/k/v biases, per-head q/k norms (Air has none), three dense layers, one shared
  // expert, one MTP layer; DeepSeek-V2: MLA, two shared experts, node-limited routing, no MTP.
  ModelSpec glm = load_model_spec(testing::hf_fixture("GLM-4.5"));
  CHECK(glm.qkv_bias);
  CHECK(glm.qk_norm);
  CHECK_FALSE(glm.linear_bias);
  CHECK(glm.head_dim == 128);
  CHECK(glm.mtp_layers == 1);
  CHECK(glm.moe->first_k_dense == 3);
  CHECK(glm.moe->num_shared_experts == 1);
  CHECK(glm.moe->top_k == 8);
  CHECK_FALSE(load_model_spec(testing::hf_fixture("GLM-4.5-Air")).qk_norm);
  ModelSpec v2 = load_model_spec(testing::hf_fixture("DeepSeek-V2"));
  REQUIRE(v2.mla.has_value());
  CHECK(v2.mla->q_lora_rank == 1536);
  CHECK(v2.mtp_layers == 0);
  CHECK(v2.moe->num_shared_experts == 2);
  CHECK(v2.moe->num_groups == 8);
  CHECK(v2.moe->group_topk == 3);
  CHECK(load_model_spec(testing::hf_fixture("DeepSeek-V2-Lite")).mla->q_lora_rank == 0);
}

TEST_CASE("HfConfig: Llama 4 Scout and Maverick: shared experts, interleaved MoE, chunks") {
  // Meta's model cards: 109B and 400B total with the vision tower (about 0.85B, not simulated),
  // 17B active; the text models' 48 layers of 5,120.
  ModelSpec scout = load_model_spec(testing::hf_fixture("Llama-4-Scout-17B-16E"));
  ModelSpec maverick = load_model_spec(testing::hf_fixture("Llama-4-Maverick-17B-128E"));
  CHECK(std::abs(count_parameters(scout).total - 109e9) <= 0.015 * 109e9);
  CHECK(std::abs(count_parameters(maverick).total - 400e9) <= 0.015 * 400e9);
  for (const ModelSpec* model : {&scout, &maverick}) {
    CHECK(std::abs(count_parameters(*model).active - 17e9) <= 0.02 * 17e9);
    CHECK(model->moe->num_shared_experts == 1);
    CHECK(model->moe->shared_width() == 8192);
    CHECK(model->ffn_hidden_size == 16384);
    // Every fourth layer (NoPE) global, the others in chunks of 8,192.
    CHECK(model->attention_window(0) == 8192);
    CHECK(model->attention_window(3) == 0);
  }
  CHECK(scout.seq_length == 8192);  // rope_scaling's original context.
  CHECK(scout.qk_norm);
  CHECK(scout.num_moe_layers() == 48);
  CHECK_FALSE(maverick.qk_norm);
  CHECK_FALSE(maverick.is_moe_layer(0));
  CHECK(maverick.is_moe_layer(1));
  CHECK(maverick.num_moe_layers() == 24);
  // Maverick by hand: 24 dense layers (MLP 16,384), 24 MoE layers (128 experts of 8,192, one
  // active, a shared expert of 8,192, the router), GQA 40/8 heads of 128, untied embeddings.
  const double h = 5120, vocab = 202048;
  const double attention = h * (5120 + 2 * 1024) + 5120 * h;
  const double dense = 3 * h * 16384, expert = 3 * h * 8192, router = h * 128;
  const double outside = 2 * vocab * h + h;
  ParameterCounts counts = count_parameters(maverick);
  CHECK(counts.total ==
        48 * (attention + 2 * h) + 24 * dense + 24 * (129 * expert + router) + outside);
  CHECK(counts.active ==
        48 * (attention + 2 * h) + 24 * dense + 24 * (2 * expert + router) + outside);

  // A moe_layers list that is not the interleave pattern, and a layer mix ppsim cannot window.
  nlohmann::json json = testing::hf_fixture_json("Llama-4-Maverick-17B-128E");
  json["text_config"]["moe_layers"][0] = 0;
  CHECK(testing::model_import_error(json) ==
        "bad/config.json: /text_config/moe_layers: layer 0 is listed, but "
        "interleave_moe_layer_step 2 makes the last layer of each group of 2 MoE; ppsim "
        "expresses only that pattern");
  json = testing::hf_fixture_json("Llama-4-Maverick-17B-128E");
  json["text_config"]["no_rope_layers"][5] = 0;
  CHECK(testing::model_import_error(json).rfind(
            "bad/config.json: /text_config/no_rope_layers/5: this layer mix cannot be expressed",
            0) == 0);
  // Llama4ForCausalLM: the text config alone; without no_rope_layers every fourth is NoPE.
  nlohmann::json text = testing::hf_fixture_json("Llama-4-Scout-17B-16E")["text_config"];
  text["architectures"] = {"Llama4ForCausalLM"};
  text.erase("model_type");
  text.erase("no_rope_layers");
  ModelSpec text_only = parse_model_spec(text.dump(), "a/config.json");
  check_same_shape(text_only, scout);
}

TEST_CASE("HfConfig: Qwen2-MoE, GLM-4.5 and OLMoE shapes ppsim cannot express are clear errors") {
  nlohmann::json qwen = testing::hf_fixture_json("Qwen1.5-MoE-A2.7B");
  qwen["decoder_sparse_step"] = 0;
  CHECK(testing::model_import_error(qwen).rfind("bad/config.json: /decoder_sparse_step: ", 0) ==
        0);
  qwen = testing::hf_fixture_json("Qwen1.5-MoE-A2.7B");
  qwen["mlp_only_layers"] = {3};
  CHECK(testing::model_import_error(qwen).rfind(
            "bad/config.json: /mlp_only_layers/0: dense layers other than a prefix", 0) == 0);
  qwen = testing::hf_fixture_json("Qwen1.5-MoE-A2.7B");
  qwen["shared_expert_intermediate_size"] = 0;  // No shared expert.
  CHECK(parse_model_spec(qwen.dump(), "a/config.json").moe->num_shared_experts == 0);

  nlohmann::json glm = testing::hf_fixture_json("GLM-4.5-Air");
  glm["num_experts_per_tok"] = 129;
  CHECK(testing::model_import_error(glm) ==
        "bad/config.json: /num_experts_per_tok: num_experts_per_tok=129 exceeds the 128 routed "
        "experts");
  glm = testing::hf_fixture_json("GLM-4.5-Air");
  glm["first_k_dense_replace"] = 47;
  CHECK(testing::model_import_error(glm) ==
        "bad/config.json: /first_k_dense_replace: first_k_dense_replace=47 exceeds "
        "num_hidden_layers=46");

  nlohmann::json olmoe = testing::hf_fixture_json("OLMoE-1B-7B-0924");
  olmoe["attention_bias"] = true;
  CHECK(testing::model_import_error(olmoe).rfind(
            "bad/config.json: /attention_bias: attention-only biases", 0) == 0);
  olmoe = testing::hf_fixture_json("OLMoE-1B-7B-0924");
  olmoe.erase("num_experts");
  CHECK(testing::model_import_error(olmoe) ==
        "bad/config.json: /num_experts: required HuggingFace field is missing (expected a "
        "positive integer)");
}

TEST_CASE("HfConfig: the architectures list alone selects the importer") {
  for (const char* name :
       {"DeepSeek-V3", "Kimi-K2-Instruct", "Qwen3-30B-A3B", "Qwen3-8B", "gpt-oss-20b",
        "DeepSeek-V2-Lite", "Qwen1.5-MoE-A2.7B", "GLM-4.5-Air", "OLMoE-1B-7B-0924"}) {
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

TEST_CASE("HfConfig: Qwen's decoder_sparse_step makes the last layer of each group MoE") {
  // transformers' Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer: layer i is sparse when
  // (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers.
  nlohmann::json json = testing::hf_fixture_json("Qwen3-30B-A3B");
  json["decoder_sparse_step"] = 3;
  json["mlp_only_layers"] = {0, 1, 2, 3};
  ModelSpec model = parse_model_spec(json.dump(), "a/config.json");
  CHECK(model.moe->every_n_layers == 3);
  CHECK(model.moe->layer_offset == 2);
  for (int64_t i = 0; i < model.num_layers; ++i) {
    INFO("layer " << i);
    CHECK(model.is_moe_layer(i) == (i >= 4 && (i + 1) % 3 == 0));
  }
  CHECK(model.num_moe_layers() == 15);  // Layers 5, 8, ..., 47.
  // Half the layers MoE: half the routed experts' parameters of every-layer MoE.
  json["decoder_sparse_step"] = 2;
  json["mlp_only_layers"] = nlohmann::json::array();
  ModelSpec every_other = parse_model_spec(json.dump(), "a/config.json");
  ModelSpec every = load_model_spec(testing::hf_fixture("Qwen3-30B-A3B"));
  const double dense_mlp = 3.0 * 2048 * 6144, moe_mlp = 128 * 3.0 * 2048 * 768 + 2048.0 * 128;
  CHECK(count_parameters(every).total - count_parameters(every_other).total ==
        24 * (moe_mlp - dense_mlp));
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
  qwen["attention_bias"] = true;
  CHECK(testing::model_import_error(qwen).rfind(
            "bad/config.json: /attention_bias: attention-only biases", 0) == 0);
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
