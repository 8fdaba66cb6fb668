// Shared helpers for tests.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/accuracy/public_run.h"
#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"

namespace ppsim::testing {

// What a run of the ppsim binary printed and returned.
struct CommandResult {
  int exit_code = -1;  // The process exit status (128+signal when killed by one).
  std::string out;     // stdout.
  std::string err;     // stderr.
};

// Runs the built ppsim binary with `arguments` (a shell-quoted string) from the repository root.
CommandResult run_ppsim(const std::string& arguments);

// The same under `<mpiexec> -np <ranks>`: both OMPI_ALLOW_RUN_AS_ROOT variables (CI runs as
// root, which OpenMPI refuses otherwise) and --oversubscribe (more ranks than free cores).
CommandResult run_ppsim_mpi(const std::string& mpiexec, int ranks, const std::string& arguments);

// The whole content of a file, bytes as they are ("" when it cannot be read).
std::string read_file(const std::string& path);

// A file under tests/data.
std::string test_data(const std::string& relative_path);

// The runs of configs/accuracy/public-runs.csv, which ships in the repository: a missing file
// fails the calling test (a broken checkout, never a skip).
std::vector<PublicRun> shipped_public_runs();

// `text` with the first `from` replaced by `to`; fails the calling test when `from` is absent.
std::string replace_once(std::string text, const std::string& from, const std::string& to);

// tests/data/hf/NAME/config.json, a HuggingFace config fixture.
std::string hf_fixture(const std::string& name);

// That fixture's JSON, for edits.
nlohmann::json hf_fixture_json(const std::string& name);

// The InputError message of importing `json` as a model read from "bad/config.json", or ""
// when it imports.
std::string model_import_error(const nlohmann::json& json);

// Whether one of the model's import notes contains `part`.
bool has_note(const ModelSpec& model, const std::string& part);

// A scratch file path under $TMPDIR (or /tmp), unique to this test process: "ppsim_<pid>_<name>".
std::string temp_path(const std::string& name);

// A homogeneous cluster of `nodes` nodes of `gpus_per_node` catalog GPUs `gpu_name`
// (e.g. "H100-SXM-80GB"), NVLink inside nodes and one 400 Gb/s NIC per GPU.
ClusterSpec uniform_cluster(const std::string& gpu_name, int64_t nodes, int64_t gpus_per_node = 8);

// GPT-3 175B's shape (Brown et al. 2020): 96 layers, h 12288, 96 heads, F 4h, V 50257, s 2048,
// GeLU, LayerNorm, tied embeddings; rope and no biases, so Megatron's memory formula (which
// counts neither learned positions nor biases) applies exactly.
ModelSpec gpt3_175b_shape();

// Llama-2-70B (HF config): 80 layers, h 8192, 64 heads, 8 kv heads, F 28672, V 32000, s 4096,
// SwiGLU, RMSNorm, untied embeddings.
ModelSpec llama2_70b_shape();

// Llama-2-7B (HF config): 32 layers, h 4096, 32 heads (MHA), F 11008, V 32000, s 4096,
// SwiGLU, RMSNorm, rope, untied embeddings, no biases.
ModelSpec llama2_7b_shape();

// A tiny dense model whose op FLOPs are checkable by hand: 2 layers, h 64, 4 heads of 16,
// 2 kv heads (GQA), F 256, V 256 (a multiple of 128, so padding changes nothing up to tp 2),
// s 32, SwiGLU, RMSNorm, rope, untied, no biases.
ModelSpec tiny_dense_model();

// tiny_dense_model with an MoE feed-forward in every layer: 8 experts, top-2, F_e 128.
ModelSpec tiny_moe_model();

// A Llama-3-8B-like model of `layers` layers (h 4096, F 14336, 32 heads, 8 kv heads, s 4096,
// untied) whose embedding and head are tiny (V 128), so every pipeline stage of equal layer
// count costs nearly the same.
ModelSpec uniform_model(int64_t layers);

// A small dense model for Monte-Carlo and work-split tests: 8 layers, h 2048, F 8192, 16 heads
// (8 KV, 128 wide), vocabulary 128, sequence 2048, untied; swiglu, RMSNorm.
ModelSpec small_dense_model();

}  // namespace ppsim::testing
