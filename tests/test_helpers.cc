// Shared helpers for tests.
#include "tests/test_helpers.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "simulator/spec/csv_reader.h"
#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/json_reader.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/units.h"

namespace ppsim::testing {
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

// Runs `<launcher> '<ppsim>' <arguments>` from the repository root, stdout and stderr captured.
CommandResult run_launched(const std::string& launcher, const std::string& arguments) {
  char out_path[] = "/tmp/ppsim_test_out_XXXXXX";
  char err_path[] = "/tmp/ppsim_test_err_XXXXXX";
  int out_fd = mkstemp(out_path);
  int err_fd = mkstemp(err_path);
  close(out_fd);
  close(err_fd);
  std::string command = std::string("cd '") + PPSIM_SOURCE_DIR + "' && " + launcher + "'" +
                        PPSIM_BINARY + "' " + arguments + " >" + out_path + " 2>" + err_path +
                        " </dev/null";
  int status = std::system(command.c_str());
  CommandResult result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  std::remove(out_path);
  std::remove(err_path);
  return result;
}

}  // namespace

CommandResult run_ppsim(const std::string& arguments) { return run_launched("", arguments); }

CommandResult run_ppsim_mpi(const std::string& mpiexec, int ranks, const std::string& arguments) {
  return run_launched("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 '" + mpiexec +
                          "' -np " + std::to_string(ranks) + " --oversubscribe ",
                      arguments);
}

std::vector<PublicRun> shipped_public_runs() {
  const std::string file = std::string(PPSIM_SOURCE_DIR) + "/configs/accuracy/public-runs.csv";
  REQUIRE(std::ifstream(file).good());
  return read_public_runs(load_csv(file));
}

std::string test_data(const std::string& relative_path) {
  return std::string(PPSIM_TEST_DATA) + "/" + relative_path;
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/ppsim_" + std::to_string(::getpid()) + "_" + name;
}

ClusterSpec uniform_cluster(const std::string& gpu_name, int64_t nodes, int64_t gpus_per_node) {
  std::optional<GpuSpec> gpu = find_gpu(gpu_name);
  PPSIM_CHECK(gpu.has_value(), "unknown catalog GPU " + gpu_name);
  NodeGroup group;
  group.count = nodes;
  group.gpus_per_node = gpus_per_node;
  group.gpu = *gpu;
  group.intra_node = LinkSpec{gBps_to_bytes_per_s(450), us_to_s(2)};
  group.nic = NicSpec{LinkSpec{gbps_to_bytes_per_s(400), us_to_s(5)}, true};
  ClusterSpec cluster;
  cluster.name = gpu_name + "-x" + std::to_string(nodes);
  cluster.nodes.push_back(group);
  return cluster;
}

ModelSpec gpt3_175b_shape() {
  ModelSpec model;
  model.name = "gpt3-175b-shape";
  model.num_layers = 96;
  model.hidden_size = 12288;
  model.ffn_hidden_size = 4 * 12288;
  model.num_attention_heads = 96;
  model.num_kv_heads = 96;
  model.head_dim = 128;
  model.vocab_size = 50257;
  model.seq_length = 2048;
  model.activation = Activation::kGelu;
  model.norm = Norm::kLayerNorm;
  model.tied_embeddings = true;
  model.max_position_embeddings = 2048;
  return model;
}

ModelSpec llama2_70b_shape() {
  ModelSpec model;
  model.name = "llama2-70b-shape";
  model.num_layers = 80;
  model.hidden_size = 8192;
  model.ffn_hidden_size = 28672;
  model.num_attention_heads = 64;
  model.num_kv_heads = 8;
  model.head_dim = 128;
  model.vocab_size = 32000;
  model.seq_length = 4096;
  model.activation = Activation::kSwiglu;
  model.norm = Norm::kRmsNorm;
  model.tied_embeddings = false;
  model.max_position_embeddings = 4096;
  return model;
}

ModelSpec llama2_7b_shape() {
  ModelSpec model;
  model.name = "llama2-7b-shape";
  model.num_layers = 32;
  model.hidden_size = 4096;
  model.ffn_hidden_size = 11008;
  model.num_attention_heads = 32;
  model.num_kv_heads = 32;
  model.head_dim = 128;
  model.vocab_size = 32000;
  model.seq_length = 4096;
  model.activation = Activation::kSwiglu;
  model.norm = Norm::kRmsNorm;
  model.tied_embeddings = false;
  model.max_position_embeddings = 4096;
  return model;
}

ModelSpec tiny_dense_model() {
  ModelSpec model;
  model.name = "tiny-dense";
  model.num_layers = 2;
  model.hidden_size = 64;
  model.ffn_hidden_size = 256;
  model.num_attention_heads = 4;
  model.num_kv_heads = 2;
  model.head_dim = 16;
  model.vocab_size = 256;
  model.seq_length = 32;
  model.activation = Activation::kSwiglu;
  model.norm = Norm::kRmsNorm;
  model.tied_embeddings = false;
  model.max_position_embeddings = 32;
  return model;
}

ModelSpec tiny_moe_model() {
  ModelSpec model = tiny_dense_model();
  model.name = "tiny-moe";
  model.moe = MoeSpec{8, 2, 128, 1};
  model.moe->imbalance = 1.0;  // Balanced routing: the exact-oracle tests assume it.
  return model;
}

ModelSpec uniform_model(int64_t layers) {
  ModelSpec model;
  model.name = "uniform";
  model.num_layers = layers;
  model.hidden_size = 4096;
  model.ffn_hidden_size = 14336;
  model.num_attention_heads = 32;
  model.num_kv_heads = 8;
  model.head_dim = 128;
  model.vocab_size = 128;
  model.seq_length = 4096;
  model.tied_embeddings = false;
  return model;
}

ModelSpec small_dense_model() {
  ModelSpec model;
  model.name = "small";
  model.num_layers = 8;
  model.hidden_size = 2048;
  model.ffn_hidden_size = 8192;
  model.num_attention_heads = 16;
  model.num_kv_heads = 8;
  model.head_dim = 128;
  model.vocab_size = 128;
  model.seq_length = 2048;
  model.tied_embeddings = false;
  return model;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

std::string hf_fixture(const std::string& name) { return test_data("hf/" + name + "/config.json"); }

nlohmann::json hf_fixture_json(const std::string& name) {
  return parse_json_text(read_text_file(hf_fixture(name)), hf_fixture(name));
}

std::string model_import_error(const nlohmann::json& json) {
  try {
    parse_model_spec(json.dump(), "bad/config.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

bool has_note(const ModelSpec& model, const std::string& part) {
  for (const std::string& note : model.notes) {
    if (note.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace ppsim::testing
