// Checks the shipped zoo files (models/, configs/clusters/) as plain JSON: each parses, has the
// required keys with the right types, and no key the spec format does not know. Independent of
// the spec parsers, so a zoo file and its parser cannot both drift the same way.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "simulator/spec/gpu_catalog.h"

namespace ppsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kRoot = PPSIM_SOURCE_DIR;

// The *.json files directly in `dir`, sorted.
std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

json parse_file(const fs::path& path) {
  json value = json::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
  INFO(path.string());
  REQUIRE_FALSE(value.is_discarded());
  REQUIRE(value.is_object());
  return value;
}

void check_keys(const json& object, const std::set<std::string>& required,
                const std::set<std::string>& optional) {
  for (const std::string& key : required) {
    INFO("missing key " << key);
    CHECK(object.contains(key));
  }
  for (const auto& [key, value] : object.items()) {
    INFO("unknown key " << key);
    CHECK((required.count(key) + optional.count(key)) == 1);
  }
}

void check_positive_int(const json& object, const std::string& key) {
  INFO("key " << key);
  REQUIRE(object.contains(key));
  CHECK(object[key].is_number_integer());
  CHECK(object[key].get<int64_t>() >= 1);
}

void check_positive_number(const json& object, const std::string& key) {
  INFO("key " << key);
  REQUIRE(object.contains(key));
  CHECK(object[key].is_number());
  CHECK(object[key].get<double>() > 0);
}

void check_choice(const json& object, const std::string& key,
                  const std::set<std::string>& choices) {
  INFO("key " << key);
  REQUIRE(object.contains(key));
  REQUIRE(object[key].is_string());
  CHECK(choices.count(object[key].get<std::string>()) == 1);
}

void check_nonempty_string(const json& object, const std::string& key) {
  INFO("key " << key);
  REQUIRE(object.contains(key));
  REQUIRE(object[key].is_string());
  CHECK_FALSE(object[key].get<std::string>().empty());
}

// A node group, in a cluster (with "count") or a node type file (without).
void check_node_group(const json& group, bool in_cluster) {
  std::set<std::string> required = {"gpus_per_node", "gpu", "intra_node", "nic"};
  std::set<std::string> optional = {"price_per_gpu_hour", "gpu_overrides", "host_memory_GiB",
                                    "cpu_adam_Gparams_per_s", "nvlink_domain_gpus"};
  if (in_cluster) {
    required.insert("count");
    optional.insert("node_type");
  } else {
    optional.insert("description");
  }
  check_keys(group, required, optional);
  if (in_cluster) check_positive_int(group, "count");
  check_positive_int(group, "gpus_per_node");
  REQUIRE(group["gpu"].is_string());
  INFO("gpu " << group["gpu"]);
  CHECK(find_gpu(group["gpu"].get<std::string>()).has_value());

  const json& intra = group["intra_node"];
  REQUIRE(intra.is_object());
  check_keys(intra, {"bandwidth_GBps", "latency_us"}, {});
  check_positive_number(intra, "bandwidth_GBps");
  check_positive_number(intra, "latency_us");

  const json& nic = group["nic"];
  REQUIRE(nic.is_object());
  check_keys(nic, {"bandwidth_Gbps", "per_gpu", "latency_us"}, {});
  check_positive_number(nic, "bandwidth_Gbps");
  CHECK(nic["per_gpu"].is_boolean());
  check_positive_number(nic, "latency_us");
  if (group.contains("price_per_gpu_hour")) check_positive_number(group, "price_per_gpu_hour");
  if (group.contains("node_type")) {
    INFO("node_type " << group["node_type"]);
    REQUIRE(group["node_type"].is_string());
    CHECK(fs::exists(kRoot / "configs/clusters/nodes" /
                     (group["node_type"].get<std::string>() + ".json")));
  }
}

bool mentions(const fs::path& readme, const std::string& stem) {
  return read_file(readme).find("`" + stem + "`") != std::string::npos;
}

TEST_CASE("ZooFiles: the required models and clusters exist") {
  for (const char* model :
       {"gpt3-1.3b", "gpt3-13b", "gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b",
        "llama3-70b", "llama3.1-405b", "mixtral-8x7b", "megatron-1t", "deepseek-v3",
        "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-20b", "gpt-oss-120b", "kimi-k2"}) {
    INFO("model " << model);
    CHECK(fs::exists(kRoot / "models" / (std::string(model) + ".json")));
  }
  for (const char* cluster :
       {"dgx-a100-1", "dgx-h100-1", "dgx-h100-4", "dgx-h100-32", "mixed-a100-h100", "l40s-eth-4"}) {
    INFO("cluster " << cluster);
    CHECK(fs::exists(kRoot / "configs/clusters" / (std::string(cluster) + ".json")));
  }
  for (const char* node : {"dgx-a100", "dgx-h100", "hgx-h200", "l40s-pcie", "dgx-b200"}) {
    INFO("node type " << node);
    CHECK(fs::exists(kRoot / "configs/clusters/nodes" / (std::string(node) + ".json")));
  }
}

TEST_CASE("ZooFiles: every model file has the model format's keys") {
  std::vector<fs::path> files = json_files(kRoot / "models");
  REQUIRE(files.size() >= 11);
  for (const fs::path& path : files) {
    INFO(path.string());
    json model = parse_file(path);
    check_keys(model,
               {"name", "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
                "num_kv_heads", "vocab_size", "seq_length", "activation", "norm", "tied_embeddings",
                "source"},
               {"moe", "head_dim", "linear_bias", "position_embedding", "max_position_embeddings",
                "mla", "mtp_layers", "qk_norm", "qkv_bias", "sliding_window", "sliding_window_pattern",
                "rope_theta", "hybrid_layer_pattern", "mamba", "mtp_layer_pattern"});
    check_nonempty_string(model, "source");
    REQUIRE(model["name"].is_string());
    CHECK(model["name"].get<std::string>() == path.stem().string());
    for (const char* key : {"num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
                            "num_kv_heads", "vocab_size", "seq_length"}) {
      check_positive_int(model, key);
    }
    check_choice(model, "activation", {"swiglu", "gelu", "squared_relu"});
    check_choice(model, "norm", {"rmsnorm", "layernorm"});
    CHECK(model["tied_embeddings"].is_boolean());
    if (model.contains("linear_bias")) CHECK(model["linear_bias"].is_boolean());
    if (model.contains("position_embedding")) {
      check_choice(model, "position_embedding", {"rope", "learned", "none"});
    }
    if (model.contains("max_position_embeddings")) {
      check_positive_int(model, "max_position_embeddings");
    }
    if (model.contains("rope_theta")) {  // HF rope_theta: a positive base, rope models only.
      CHECK(model["rope_theta"].is_number());
      CHECK(model["rope_theta"].get<double>() >= 10000);
      CHECK(model.value("position_embedding", "rope") == "rope");
    }

    const int64_t heads = model["num_attention_heads"].get<int64_t>();
    const int64_t kv_heads = model["num_kv_heads"].get<int64_t>();
    CHECK(heads % kv_heads == 0);
    if (model.contains("head_dim")) {
      check_positive_int(model, "head_dim");
    } else {
      CHECK(model["hidden_size"].get<int64_t>() % heads == 0);
    }
    if (model.contains("moe")) {
      const json& moe = model["moe"];
      REQUIRE(moe.is_object());
      check_keys(moe, {"num_experts", "top_k", "expert_ffn_hidden_size"},
                 {"every_n_layers", "layer_offset", "num_shared_experts",
                  "shared_expert_ffn_hidden_size",
                  "first_k_dense", "imbalance", "capacity_factor", "num_groups", "group_topk",
                  "latent_size"});
      for (const char* key : {"num_experts", "top_k", "expert_ffn_hidden_size"}) {
        check_positive_int(moe, key);
      }
      CHECK(moe["top_k"].get<int64_t>() <= moe["num_experts"].get<int64_t>());
      if (moe.contains("every_n_layers")) check_positive_int(moe, "every_n_layers");
      if (moe.contains("shared_expert_ffn_hidden_size")) {
        check_positive_int(moe, "shared_expert_ffn_hidden_size");
      }
      for (const char* key : {"num_shared_experts", "first_k_dense"}) {
        if (!moe.contains(key)) continue;
        INFO("key " << key);
        CHECK(moe[key].is_number_integer());
        CHECK(moe[key].get<int64_t>() >= 0);
      }
      if (moe.contains("first_k_dense")) {
        CHECK(moe["first_k_dense"].get<int64_t>() <= model["num_layers"].get<int64_t>());
      }
      if (moe.contains("imbalance")) CHECK(moe["imbalance"].get<double>() >= 1.0);
      if (moe.contains("capacity_factor")) check_positive_number(moe, "capacity_factor");
      // Group-limited routing: both or neither, groups dividing the experts.
      CHECK(moe.contains("num_groups") == moe.contains("group_topk"));
      if (moe.contains("num_groups")) {
        check_positive_int(moe, "num_groups");
        check_positive_int(moe, "group_topk");
        CHECK(moe["num_experts"].get<int64_t>() % moe["num_groups"].get<int64_t>() == 0);
        CHECK(moe["group_topk"].get<int64_t>() <= moe["num_groups"].get<int64_t>());
      }
    }
    // A hybrid model: one of M * - E per layer, a Mamba mixer exactly when there are 'M's.
    if (model.contains("hybrid_layer_pattern")) {
      REQUIRE(model["hybrid_layer_pattern"].is_string());
      const std::string pattern = model["hybrid_layer_pattern"].get<std::string>();
      CHECK(static_cast<int64_t>(pattern.size()) == model["num_layers"].get<int64_t>());
      CHECK(pattern.find_first_not_of("M*-E") == std::string::npos);
      const std::string mtp = model.value("mtp_layer_pattern", "");
      CHECK(mtp.find_first_not_of("M*-E") == std::string::npos);
      CHECK(mtp.empty() == (model.value("mtp_layers", 0) == 0));
      const std::string layers = pattern + mtp;
      CHECK(model.contains("mamba") == (layers.find('M') != std::string::npos));
      CHECK(model.contains("moe") == (layers.find('E') != std::string::npos));
    } else {
      CHECK_FALSE(model.contains("mamba"));
      CHECK_FALSE(model.contains("mtp_layer_pattern"));
    }
    if (model.contains("mamba")) {
      const json& mamba = model["mamba"];
      REQUIRE(mamba.is_object());
      check_keys(mamba, {"num_heads", "head_dim", "state_size", "num_groups"},
                 {"conv_kernel", "chunk_size"});
      for (const auto& [key, value] : mamba.items()) check_positive_int(mamba, key);
      CHECK(mamba["num_heads"].get<int64_t>() % mamba["num_groups"].get<int64_t>() == 0);
    }
    if (model.contains("mla")) {
      const json& mla = model["mla"];
      REQUIRE(mla.is_object());
      check_keys(mla, {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"},
                 {"q_lora_rank"});
      for (const char* key :
           {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "q_lora_rank"}) {
        if (mla.contains(key)) check_positive_int(mla, key);
      }
      CHECK(kv_heads == heads);  // MLA has a key and value per head.
    }
    if (model.contains("qk_norm")) CHECK(model["qk_norm"].is_boolean());
    if (model.contains("qkv_bias")) CHECK(model["qkv_bias"].is_boolean());
    for (const char* key : {"mtp_layers", "sliding_window", "sliding_window_pattern"}) {
      if (model.contains(key)) check_positive_int(model, key);
    }
    if (model.contains("sliding_window_pattern")) CHECK(model.contains("sliding_window"));
    CHECK(mentions(kRoot / "models/README.md", path.stem().string()));
  }
}

TEST_CASE("ZooFiles: every node type file is one node group without count") {
  std::vector<fs::path> files = json_files(kRoot / "configs/clusters/nodes");
  REQUIRE(files.size() >= 5);
  for (const fs::path& path : files) {
    INFO(path.string());
    check_node_group(parse_file(path), /*in_cluster=*/false);
    CHECK(mentions(kRoot / "configs/clusters/README.md", path.stem().string()));
  }
}

TEST_CASE("ZooFiles: every cluster file has the cluster format's keys") {
  std::vector<fs::path> files = json_files(kRoot / "configs/clusters");
  REQUIRE(files.size() >= 6);
  for (const fs::path& path : files) {
    INFO(path.string());
    json cluster = parse_file(path);
    check_keys(cluster, {"name", "nodes", "inter_node"},
               {"description", "gpus", "profile", "stragglers"});
    REQUIRE(cluster["name"].is_string());
    CHECK(cluster["name"].get<std::string>() == path.stem().string());
    if (cluster.contains("description")) check_nonempty_string(cluster, "description");
    REQUIRE(cluster["nodes"].is_array());
    CHECK_FALSE(cluster["nodes"].empty());
    for (const json& group : cluster["nodes"]) {
      REQUIRE(group.is_object());
      check_node_group(group, /*in_cluster=*/true);
    }
    const json& inter = cluster["inter_node"];
    REQUIRE(inter.is_object());
    check_keys(inter, {"oversubscription"}, {});
    REQUIRE(inter["oversubscription"].is_number());
    CHECK(inter["oversubscription"].get<double>() >= 1.0);
    CHECK(mentions(kRoot / "configs/clusters/README.md", path.stem().string()));
  }
}

}  // namespace
}  // namespace ppsim
