// Hybrid Mamba-2 models in the specs: the model keys (hybrid_layer_pattern, mamba), their
// errors, the Nemotron-H HuggingFace import, what plans and runtimes accept, and the
// Megatron-LM export of the pattern.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/export/megatron_export.h"
#include "simulator/model/model_stats.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/plan.h"
#include "simulator/spec/runtime_support.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

// A four-layer hybrid: Mamba, attention, Mamba, MoE.
nlohmann::json tiny_hybrid() {
  return nlohmann::json::parse(R"({
    "name": "tiny-hybrid", "num_layers": 4, "hybrid_layer_pattern": "M*ME",
    "hidden_size": 256, "ffn_hidden_size": 512, "num_attention_heads": 8, "num_kv_heads": 2,
    "vocab_size": 1000, "seq_length": 512, "activation": "squared_relu", "norm": "rmsnorm",
    "tied_embeddings": false, "position_embedding": "none",
    "mamba": {"num_heads": 8, "head_dim": 32, "state_size": 16, "num_groups": 2},
    "moe": {"num_experts": 4, "top_k": 2, "expert_ffn_hidden_size": 128}
  })");
}

TEST_CASE("HybridSpec: the pattern and the mamba object parse, with their defaults") {
  const ModelSpec model = parse_model_spec(tiny_hybrid().dump(), "m.json");
  CHECK(model.hybrid_layer_pattern == "M*ME");
  REQUIRE(model.mamba.has_value());
  CHECK(model.mamba->conv_kernel == 4);
  CHECK(model.mamba->chunk_size == 128);
  CHECK(model.mamba->inner_width() == 256);
  CHECK(model.mamba->in_proj_width() == 2 * 256 + 2 * 2 * 16 + 8);
  CHECK(model.activation == Activation::kSquaredRelu);
  CHECK(activation_name(model.activation) == std::string("squared_relu"));
  CHECK(model.position_embedding == PositionEmbedding::kNone);
  CHECK(model.num_moe_layers() == 1);
}

TEST_CASE("HybridSpec: inconsistent patterns are errors naming the key") {
  struct Case {
    const char* edit;
    const char* expected;
  };
  auto edited = [](const std::string& edit) {
    nlohmann::json json = tiny_hybrid();
    if (edit == "short") json["hybrid_layer_pattern"] = "M*M";
    if (edit == "letter") json["hybrid_layer_pattern"] = "M*MX";
    if (edit == "no mamba") json.erase("mamba");
    if (edit == "no M") json["hybrid_layer_pattern"] = "-*-E";
    if (edit == "no moe") json.erase("moe");
    if (edit == "no E") json["hybrid_layer_pattern"] = "M*M-";
    if (edit == "moe placement") json["moe"]["every_n_layers"] = 2;
    if (edit == "mtp") json["mtp_layers"] = 1;
    if (edit == "mtp pattern") json["mtp_layer_pattern"] = "*E";
    if (edit == "mtp letter") {
      json["mtp_layers"] = 1;
      json["mtp_layer_pattern"] = "*Q";
    }
    if (edit == "groups") json["mamba"]["num_groups"] = 3;
    if (edit == "no pattern") json.erase("hybrid_layer_pattern");
    return json;
  };
  for (const Case& c : {Case{"short", "/hybrid_layer_pattern: hybrid_layer_pattern has 3 layers "
                                      "but num_layers is 4"},
                        Case{"letter", "character 3 is 'X'"},
                        Case{"no mamba", "give the \"mamba\" object"},
                        Case{"no M", "/mamba: mamba is given but hybrid_layer_pattern has no 'M'"},
                        Case{"no moe", "'E' layers: give the \"moe\" object"},
                        Case{"no E", "moe is given but hybrid_layer_pattern has no 'E' layer"},
                        Case{"moe placement", "leave moe.every_n_layers"},
                        Case{"mtp", "/mtp_layer_pattern: mtp_layer_pattern is missing"},
                        Case{"mtp pattern", "mtp_layer_pattern is given but mtp_layers is 0"},
                        Case{"mtp letter", "mtp_layer_pattern character 1 is 'Q'"},
                        Case{"groups", "/mamba/num_groups: num_groups=3 does not divide"},
                        Case{"no pattern", "mamba layers need \"hybrid_layer_pattern\""}}) {
    INFO(c.edit);
    const std::string error = testing::model_import_error(edited(c.edit));
    CHECK_THAT(error, Catch::Contains("bad/config.json"));
    CHECK_THAT(error, Catch::Contains(c.expected));
  }
}

TEST_CASE("HybridSpec: Nemotron 3 Nano's HuggingFace config imports as the zoo model") {
  const ModelSpec imported = load_model_spec(testing::hf_fixture("NVIDIA-Nemotron-3-Nano-30B-A3B"));
  const ModelSpec zoo = load_model_spec("nemotron-3-nano-30b-a3b");
  CHECK(imported.hybrid_layer_pattern == zoo.hybrid_layer_pattern);
  CHECK(imported.activation == Activation::kSquaredRelu);
  CHECK(imported.position_embedding == PositionEmbedding::kNone);
  CHECK(imported.head_dim == 128);
  CHECK(imported.num_kv_heads == 2);
  REQUIRE(imported.mamba.has_value());
  CHECK(imported.mamba->num_heads == zoo.mamba->num_heads);
  CHECK(imported.mamba->head_dim == zoo.mamba->head_dim);
  CHECK(imported.mamba->state_size == zoo.mamba->state_size);
  CHECK(imported.mamba->num_groups == zoo.mamba->num_groups);
  REQUIRE(imported.moe.has_value());
  CHECK(imported.moe->shared_width() == 3712);
  CHECK(imported.moe->num_groups == 0);  // n_group 1: no group-limited routing.
  CHECK(count_parameters(imported).total == count_parameters(zoo).total);
  CHECK(count_parameters(imported).active == count_parameters(zoo).active);
  // max_position_embeddings 262144 without a recorded pre-training length: 4,096, noted.
  CHECK(imported.seq_length == 4096);
  CHECK(testing::has_note(imported, "original_max_position_embeddings"));
}

TEST_CASE("HybridSpec: Nemotron 3 Super's config imports with its latent MoE and MTP block") {
  const ModelSpec imported =
      load_model_spec(testing::hf_fixture("NVIDIA-Nemotron-3-Super-120B-A12B"));
  const ModelSpec zoo = load_model_spec("nemotron-3-super-120b-a12b");
  CHECK(imported.hybrid_layer_pattern == zoo.hybrid_layer_pattern);
  CHECK(imported.mtp_layers == 1);
  CHECK(imported.mtp_layer_pattern == "*E");
  REQUIRE(imported.moe.has_value());
  CHECK(imported.moe->latent_size == 1024);
  CHECK(imported.moe->top_k == 22);
  CHECK(count_parameters(imported).total == count_parameters(zoo).total);
  CHECK(count_parameters(imported).active == count_parameters(zoo).active);
  // Its Megatron launch: the latent size and the MTP block after "/".
  const ClusterSpec cluster = testing::uniform_cluster("B200", 8);
  const Plan plan = parse_plan("tp=1,pp=1,dp=64,ep=64,mbs=1,gbs=512", "--plan");
  const std::string text = export_megatron(zoo, cluster, plan).text;
  CHECK_THAT(text, Catch::Contains("--hybrid-layer-pattern \"" + zoo.hybrid_layer_pattern +
                                   "/*E\""));
  CHECK_THAT(text, Catch::Contains("--moe-latent-size 1024"));
  CHECK_THAT(text, Catch::Contains("--mtp-num-layers 1"));
}

TEST_CASE("HybridSpec: Nemotron-H configs ppsim cannot express are refused") {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* expected;
  };
  for (const Case& c : {Case{"mlp_hidden_act", "silu", "/mlp_hidden_act: 'silu' is not modelled"},
                        Case{"num_nextn_predict_layers", 1, "/mtp_hybrid_override_pattern"},
                        Case{"mlp_bias", true, "/mlp_bias: biases"},
                        Case{"hybrid_override_pattern", "MEM", "has 3 layers but num_layers"},
                        Case{"n_groups", 6, "/n_groups: num_groups=6 does not divide"}}) {
    INFO(c.key);
    nlohmann::json json = testing::hf_fixture_json("NVIDIA-Nemotron-3-Nano-30B-A3B");
    json[c.key] = c.value;
    CHECK_THAT(testing::model_import_error(json), Catch::Contains(c.expected));
  }
  nlohmann::json json = testing::hf_fixture_json("NVIDIA-Nemotron-3-Nano-30B-A3B");
  json.erase("mamba_num_heads");
  CHECK_THAT(testing::model_import_error(json), Catch::Contains("/mamba_num_heads"));
}

TEST_CASE("HybridSpec: plans must split the Mamba heads and groups over tp and cp") {
  const ModelSpec model = load_model_spec("nemotron-3-nano-30b-a3b");
  Plan plan;
  plan.tp = 8;  // Divides the 32 attention heads and 64 Mamba heads and 8 groups.
  CHECK_FALSE(op_shape_problem(plan, model).has_value());
  plan.tp = 16;  // Divides the heads (and is a multiple of the 2 kv heads), not the 8 groups.
  CHECK_THAT(op_shape_problem(plan, model).value_or(""),
             Catch::Contains("tp=16 must divide the 64 Mamba heads and 8 groups"));
  plan.tp = 2;
  plan.cp = 2;  // Megatron-Core's Mamba context parallelism: 16 heads, 2 groups per GPU.
  CHECK_FALSE(op_shape_problem(plan, model).has_value());
  plan.cp = 16;  // 2 heads per GPU, each group of the tp rank repeated to 4 ranks.
  CHECK_FALSE(op_shape_problem(plan, model).has_value());
  plan.cp = 64;
  CHECK_THAT(op_shape_problem(plan, model).value_or(""),
             Catch::Contains("cp=64 must divide the 32 Mamba heads of each tp rank"));
  plan.cp = 1;
  // Groups and cp must divide one another: 6 groups of 8 heads on cp 4 split neither way.
  MambaSpec odd{.num_heads = 48, .head_dim = 64, .state_size = 128, .num_groups = 6};
  CHECK_THAT(
      mamba_split_problem(odd, 1, 4).value_or(""),
      Catch::Contains("cp=4 and the 6 Mamba groups of each tp rank must divide one another"));
  CHECK_FALSE(mamba_split_problem(odd, 1, 3).has_value());  // 2 groups per rank.
  CHECK_FALSE(mamba_split_problem(odd, 2, 6).has_value());  // 3 groups, each on 2 ranks.
  plan.runtime = Runtime::kTorchtitan;
  CHECK_THAT(runtime_shape_problem(plan, model).value_or(""), Catch::Contains("Mamba-2 layers"));
  plan.runtime = Runtime::kMegatronCore;
  CHECK_FALSE(runtime_shape_problem(plan, model).has_value());
}

TEST_CASE("HybridSpec: the Megatron export writes the pattern with its pipeline split") {
  const ModelSpec model = load_model_spec("nemotron-3-nano-30b-a3b");
  const ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 2);
  Plan plan = parse_plan("tp=1,pp=2,dp=8,ep=8,mbs=1,gbs=512", "--plan");
  const std::string text = export_megatron(model, cluster, plan).text;
  // 52 layers on two stages: 26 each.
  CHECK_THAT(text, Catch::Contains("--hybrid-layer-pattern \"MEMEM*EMEMEM*EMEMEM*EMEMEM|"
                                   "*EMEMEM*EMEMEMEM*EMEMEMEME\""));
  CHECK_THAT(text, Catch::Contains("--mamba-num-heads 64"));
  CHECK_THAT(text, Catch::Contains("--mamba-head-dim 64"));
  CHECK_THAT(text, Catch::Contains("--mamba-state-dim 128"));
  CHECK_THAT(text, Catch::Contains("--mamba-num-groups 8"));
  CHECK_THAT(text, Catch::Contains("--squared-relu"));
  CHECK_THAT(text, Catch::Contains("--position-embedding-type none"));
  CHECK_THAT(text, Catch::Contains("--moe-shared-expert-intermediate-size 3712"));
  CHECK_THAT(text, Catch::Contains("pretrain_hybrid.py"));
  CHECK_THAT(text, !Catch::Contains("--rotary-base"));
  CHECK_THAT(text, !Catch::Contains("--moe-layer-freq"));
  CHECK_THAT(text, !Catch::Contains("--swiglu"));
  CHECK_THAT(text, !Catch::Contains("pretrain_gpt.py"));
}

}  // namespace
}  // namespace ppsim
