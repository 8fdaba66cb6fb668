// Launcher exports: golden files for three plans in each format, the formats' syntax (JSON,
// TOML), every Megatron flag and DeepSpeed/torchtitan key against allow-lists taken from the
// launchers' sources, and hand-checkable layer splits, batch sizes and warnings.
#include "simulator/export/launcher_config.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "simulator/model/chunk_layout.h"
#include "simulator/planner/planner.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/runtime_support.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

const std::string kGoldenDir = std::string(PPSIM_SOURCE_DIR) + "/tests/golden/export";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string extension(LauncherFormat format) {
  switch (format) {
    case LauncherFormat::kMegatron:
      return "sh";
    case LauncherFormat::kDeepSpeed:
      return "json";
    case LauncherFormat::kTorchTitan:
      return "toml";
  }
  return "";
}

const LauncherFormat kFormats[] = {LauncherFormat::kMegatron, LauncherFormat::kDeepSpeed,
                                   LauncherFormat::kTorchTitan};

// One line of tests/golden/export/cases.txt.
struct GoldenCase {
  std::string name, model, cluster, plan;
  std::vector<LauncherFormat> formats;  // The formats whose runtime runs the plan.
  bool has(LauncherFormat format) const {
    return std::find(formats.begin(), formats.end(), format) != formats.end();
  }
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  std::istringstream lines(testing::read_file(kGoldenDir + "/cases.txt"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    GoldenCase entry;
    std::string formats;
    fields >> entry.name >> entry.model >> entry.cluster >> entry.plan >> formats;
    REQUIRE(!entry.plan.empty());
    if (formats.empty()) formats = "megatron,deepspeed,torchtitan";
    std::istringstream names(formats);
    for (std::string name; std::getline(names, name, ',');) {
      entry.formats.push_back(parse_launcher_format(name, "cases.txt"));
    }
    cases.push_back(entry);
  }
  return cases;
}

LauncherOutput export_case(LauncherFormat format, const GoldenCase& entry) {
  ModelSpec model = load_model_spec(entry.model);
  ClusterSpec cluster = load_cluster_spec(entry.cluster);
  Plan plan = parse_plan(entry.plan, "test");
  plan.runtime = launcher_runtime(format);  // Each file is written for its own runtime.
  validate_plan(plan, model, cluster, "test");
  return export_launcher(format, model, cluster, plan);
}

LauncherOutput export_inline(LauncherFormat format, const std::string& model_name,
                             const std::string& cluster_name, const std::string& plan_text) {
  return export_case(format, {"inline", model_name, cluster_name, plan_text, {}});
}

// "" when equal, else the first differing line of both.
std::string first_difference(const std::string& actual, const std::string& expected) {
  std::istringstream a(actual), e(expected);
  std::string line_a, line_e;
  for (int line = 1;; ++line) {
    bool more_a = static_cast<bool>(std::getline(a, line_a));
    bool more_e = static_cast<bool>(std::getline(e, line_e));
    if (!more_a && !more_e) return actual == expected ? "" : "(trailing newline differs)";
    if (!more_a || !more_e || line_a != line_e) {
      return "line " + std::to_string(line) + ":\n  actual:   " + (more_a ? line_a : "<end>") +
             "\n  expected: " + (more_e ? line_e : "<end>");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// A strict parser for the TOML subset the exporter writes: [table] and [dotted.table] headers,
// key = value with basic strings, integers, floats, booleans and (nested, multi-line) arrays,
// and # comments. Anything else, a duplicate key or a duplicate table throws. The result maps
// "table" -> {key -> value}.

class TomlSubset {
 public:
  explicit TomlSubset(std::string text) : text_(std::move(text)) {}

  std::map<std::string, nlohmann::json> parse() {
    std::map<std::string, nlohmann::json> tables;
    std::string table;
    tables[table] = nlohmann::json::object();
    while (skip_blank_lines()) {
      if (peek() == '[') {
        ++pos_;
        size_t end = text_.find(']', pos_);
        if (end == std::string::npos) fail("unclosed table header");
        table = text_.substr(pos_, end - pos_);
        for (char c : table) {
          if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
            fail("bad table name '" + table + "'");
          }
        }
        if (tables.count(table)) fail("duplicate table [" + table + "]");
        tables[table] = nlohmann::json::object();
        pos_ = end + 1;
      } else {
        std::string key = bare_key();
        skip_spaces();
        expect('=');
        skip_spaces();
        nlohmann::json value = parse_value();
        if (tables[table].contains(key)) fail("duplicate key '" + key + "'");
        tables[table][key] = value;
      }
      end_of_line();
    }
    return tables;
  }

 private:
  [[noreturn]] void fail(const std::string& message) {
    size_t line = 1 + std::count(text_.begin(), text_.begin() + std::min(pos_, text_.size()), '\n');
    throw std::runtime_error("TOML line " + std::to_string(line) + ": " + message);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_spaces() {
    while (peek() == ' ' || peek() == '\t') ++pos_;
  }
  void skip_comment() {
    if (peek() == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    }
  }
  // Skips blank and comment-only lines; false at the end of the text.
  bool skip_blank_lines() {
    for (;;) {
      skip_spaces();
      skip_comment();
      if (peek() == '\n') {
        ++pos_;
        continue;
      }
      return pos_ < text_.size();
    }
  }
  void end_of_line() {
    skip_spaces();
    skip_comment();
    if (pos_ < text_.size() && text_[pos_] != '\n') fail("unexpected text after a value");
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string bare_key() {
    size_t start = pos_;
    while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-')
      ++pos_;
    if (start == pos_) fail("expected a key");
    return text_.substr(start, pos_ - start);
  }
  nlohmann::json parse_value() {
    char c = peek();
    if (c == '"') return parse_string();
    if (c == '[') return parse_array();
    if (text_.compare(pos_, 4, "true") == 0) {
      pos_ += 4;
      return true;
    }
    if (text_.compare(pos_, 5, "false") == 0) {
      pos_ += 5;
      return false;
    }
    size_t start = pos_;
    if (peek() == '-' || peek() == '+') ++pos_;
    bool digits = false, is_float = false;
    while (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '.' || peek() == 'e' ||
           peek() == 'E' || ((peek() == '-' || peek() == '+') && is_float)) {
      if (peek() == '.' || peek() == 'e' || peek() == 'E') is_float = true;
      if (std::isdigit(static_cast<unsigned char>(peek()))) digits = true;
      ++pos_;
    }
    if (!digits) fail("expected a value");
    std::string number = text_.substr(start, pos_ - start);
    if (is_float) return std::stod(number);
    if (number.size() > 1 && number[number[0] == '-' || number[0] == '+' ? 1 : 0] == '0') {
      fail("leading zero in '" + number + "'");
    }
    return std::stoll(number);
  }
  nlohmann::json parse_string() {
    expect('"');
    std::string value;
    while (peek() != '"') {
      if (pos_ >= text_.size() || peek() == '\n') fail("unterminated string");
      if (peek() == '\\') {
        ++pos_;
        if (peek() != '"' && peek() != '\\') fail("unsupported escape");
      }
      value += text_[pos_++];
    }
    ++pos_;
    return value;
  }
  // Skips spaces, newlines and comments inside an array.
  void skip_array_space() {
    for (;;) {
      skip_spaces();
      skip_comment();
      if (peek() != '\n') return;
      ++pos_;
    }
  }
  nlohmann::json parse_array() {
    expect('[');
    nlohmann::json array = nlohmann::json::array();
    skip_array_space();
    while (peek() != ']') {
      array.push_back(parse_value());
      skip_array_space();
      if (peek() == ',') {
        ++pos_;
        skip_array_space();
      } else if (peek() != ']') {
        fail("expected ',' or ']' in an array");
      }
    }
    ++pos_;
    return array;
  }

  std::string text_;
  size_t pos_ = 0;
};

// Runs python3's tomllib on `text`; nullopt when python3 (3.11+) is not available.
std::optional<bool> python_tomllib_accepts(const std::string& text) {
  if (std::system("python3 -c 'import tomllib' >/dev/null 2>&1") != 0) return std::nullopt;
  char path[] = "/tmp/ppsim_toml_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  FILE* file = fdopen(fd, "w");
  std::fputs(text.c_str(), file);
  std::fclose(file);
  std::string command = std::string(
                            "python3 -c 'import sys, tomllib; tomllib.load(open(sys.argv[1], "
                            "\"rb\"))' ") +
                        path + " >/dev/null 2>&1";
  int status = std::system(command.c_str());
  std::remove(path);
  return status == 0;
}

// ---------------------------------------------------------------------------------------------
// Allow-lists: what each launcher accepts, from its source.

// Megatron-LM flags (NVIDIA/Megatron-LM megatron/training/arguments.py and the config dataclasses
// it turns into flags, REFERENCE.md 1.0-1.2; the last group checked in the source at d98e8a64).
// A value set means the flag takes one of these values; empty means any value (or none).
const std::map<std::string, std::set<std::string>>& megatron_flags() {
  static const std::map<std::string, std::set<std::string>> flags = {
      // REFERENCE.md 1.1
      {"--tensor-model-parallel-size", {}},
      {"--pipeline-model-parallel-size", {}},
      {"--context-parallel-size", {}},
      {"--expert-model-parallel-size", {}},
      {"--sequence-parallel", {}},
      // ModelParallelConfig.tp_comm_overlap (model_parallel_config.py at d98e8a64; arguments.py
      // asserts sequence parallelism with it).
      {"--tp-comm-overlap", {}},
      {"--num-layers-per-virtual-pipeline-stage", {}},
      {"--num-virtual-stages-per-pipeline-rank", {}},
      {"--decoder-first-pipeline-num-layers", {}},
      {"--decoder-last-pipeline-num-layers", {}},
      {"--pipeline-model-parallel-layout", {}},
      {"--use-distributed-optimizer", {}},
      {"--overlap-grad-reduce", {}},
      {"--overlap-param-gather", {}},
      {"--data-parallel-sharding-strategy",
       {"no_shard", "optim", "optim_grads", "optim_grads_params"}},
      {"--optimizer-cpu-offload", {}},
      // REFERENCE.md 1.2
      {"--micro-batch-size", {}},
      {"--global-batch-size", {}},
      {"--recompute-granularity", {"full", "selective"}},
      {"--recompute-method", {"uniform", "block"}},
      {"--recompute-num-layers", {}},
      // TransformerConfig.recompute_modules (argparse nargs="*"): the words are checked in
      // check_megatron_flags against __post_init__'s allowed_modules.
      {"--recompute-modules", {}},
      // ModelParallelConfig.cpu_offloading_num_layers (model_parallel_config.py; arguments.py
      // sets cpu_offloading when it is positive).
      {"--cpu-offloading-num-layers", {}},
      {"--bf16", {}},
      {"--fp16", {}},
      // arguments.py: --grad-reduce-in-bf16, --accumulate-allreduce-grads-in-fp32.
      {"--grad-reduce-in-bf16", {}},
      {"--accumulate-allreduce-grads-in-fp32", {}},
      {"--fp8-format", {"e4m3", "hybrid"}},
      // TransformerConfig.fp4 (argparse --fp4-format, choices e2m1) and fp4_recipe (nvfp4,
      // custom): transformer_config.py at d98e8a64.
      {"--fp4-format", {"e2m1"}},
      {"--fp4-recipe", {"nvfp4", "custom"}},
      // TransformerConfig fields (transformer_config.py: rotary_base, attention_dropout,
      // hidden_dropout, fp8_recipe, fp8_amax_history_len, fp8_amax_compute_algo) and
      // OptimizerConfig.overlap_cpu_optimizer_d2h_h2d, as argparse flags (argument_utils.py).
      {"--rotary-base", {}},
      {"--attention-dropout", {"0.0"}},
      {"--hidden-dropout", {"0.0"}},
      {"--fp8-recipe", {"tensorwise", "delayed", "mxfp8", "blockwise", "custom"}},
      {"--fp8-amax-history-len", {}},
      {"--fp8-amax-compute-algo", {"max", "most_recent"}},
      {"--overlap-cpu-optimizer-d2h-h2d", {}},
      {"--optimizer-offload-fraction", {}},  // OptimizerConfig.optimizer_offload_fraction
      {"--num-layers", {}},
      {"--hidden-size", {}},
      {"--ffn-hidden-size", {}},
      {"--num-attention-heads", {}},
      {"--kv-channels", {}},
      {"--group-query-attention", {}},
      {"--num-query-groups", {}},
      {"--seq-length", {}},
      {"--max-position-embeddings", {}},
      {"--position-embedding-type",
       {"learned_absolute", "rope", "yarn", "mrope", "relative", "none"}},
      {"--swiglu", {}},
      // arguments.py --squared-relu; --hybrid-layer-pattern and TransformerConfig's mamba_*
      // fields (transformer_config.py, flags through ArgumentGroupFactory) at d98e8a64.
      {"--squared-relu", {}},
      {"--hybrid-layer-pattern", {}},
      {"--mamba-num-heads", {}},
      {"--mamba-head-dim", {}},
      {"--mamba-state-dim", {}},
      {"--mamba-num-groups", {}},
      {"--untie-embeddings-and-output-weights", {}},
      {"--normalization", {"LayerNorm", "RMSNorm"}},
      {"--disable-bias-linear", {}},
      {"--num-experts", {}},
      {"--moe-router-topk", {}},
      {"--moe-ffn-hidden-size", {}},
      {"--moe-layer-freq", {}},
      // Checked in the source: DistributedInitConfig.use_megatron_fsdp,
      // CheckpointConfig.ckpt_format, arguments.py --use-precision-aware-optimizer (required by
      // --optimizer-cpu-offload), TransformerConfig.moe_token_dispatcher_type,
      // arguments.py --mock-data and --lr, TokenizerConfig.tokenizer_type and vocab_size,
      // TrainingConfig.train_iters, LoggerConfig.log_throughput.
      {"--use-megatron-fsdp", {}},
      {"--ckpt-format", {"torch", "torch_dist", "torch_dcp", "fsdp_dtensor"}},
      {"--use-precision-aware-optimizer", {}},
      {"--moe-token-dispatcher-type", {"allgather", "alltoall", "flex"}},
      // arguments.py _add_moe_args: --moe-flex-dispatcher-backend (choices deepep, hybridep),
      // --moe-router-num-groups and --moe-router-group-topk (TransformerConfig
      // moe_router_num_groups, moe_router_group_topk).
      {"--moe-flex-dispatcher-backend", {"deepep", "hybridep"}},
      {"--moe-router-num-groups", {}},
      {"--moe-router-group-topk", {}},
      {"--mock-data", {}},
      {"--tokenizer-type", {"NullTokenizer"}},
      {"--vocab-size", {}},
      {"--train-iters", {}},
      {"--lr", {}},
      {"--log-throughput", {}},
      // Checked in the source at d98e8a64: TransformerConfig fields (flags built by
      // ArgumentGroupFactory) multi_latent_attention, qk_layernorm, mtp_num_layers,
      // moe_shared_expert_intermediate_size, moe_grouped_gemm, moe_expert_capacity_factor,
      // moe_pad_expert_input_to_capacity; ModelParallelConfig expert_tensor_parallel_size and
      // overlap_moe_expert_parallel_comm; arguments.py _add_mla_args (--q-lora-rank,
      // --kv-lora-rank, --qk-head-dim, --qk-pos-emb-head-dim, --v-head-dim), _add_moe_args
      // (--moe-router-load-balancing-type, --moe-aux-loss-coeff), _add_network_size_args
      // (--window-size, --window-attn-skip-freq).
      {"--multi-latent-attention", {}},
      {"--q-lora-rank", {}},
      {"--kv-lora-rank", {}},
      {"--qk-head-dim", {}},
      {"--qk-pos-emb-head-dim", {}},
      {"--v-head-dim", {}},
      {"--qk-layernorm", {}},
      {"--window-size", {}},
      {"--window-attn-skip-freq", {}},
      {"--moe-shared-expert-intermediate-size", {}},
      {"--moe-grouped-gemm", {}},
      {"--moe-router-load-balancing-type",
       {"aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "none"}},
      {"--moe-aux-loss-coeff", {}},
      {"--moe-expert-capacity-factor", {}},
      {"--moe-pad-expert-input-to-capacity", {}},
      {"--mtp-num-layers", {}},
      {"--expert-tensor-parallel-size", {}},
      {"--overlap-moe-expert-parallel-comm", {}},
      // TransformerConfig.cuda_graph_impl (choices none, local, transformer_engine,
      // full_iteration) and cuda_graph_modules (nargs +: attn, mlp, moe, moe_router,
      // moe_preprocess, mamba); arguments.py asserts --no-check-for-nan-in-loss-and-grad under
      // full_iteration (Megatron-LM at 2026-08-22).
      {"--cuda-graph-impl", {"local", "transformer_engine", "full_iteration"}},
      {"--cuda-graph-modules", {"moe_router", "moe_router moe_preprocess"}},
      {"--no-check-for-nan-in-loss-and-grad", {}},
  };
  return flags;
}

// torchrun (torch.distributed.run) flags the script uses.
const std::set<std::string> kTorchrunFlags = {"--nproc_per_node", "--nnodes", "--node_rank",
                                              "--master_addr", "--master_port"};

// The flags and values inside one bash array `NAME=( ... )` of the script.
std::vector<std::pair<std::string, std::string>> bash_array_args(const std::string& script,
                                                                 const std::string& name) {
  std::vector<std::pair<std::string, std::string>> args;
  size_t start = script.find("\n" + name + "=(\n");
  REQUIRE(start != std::string::npos);
  size_t end = script.find("\n)\n", start);
  std::istringstream lines(script.substr(start + name.size() + 4, end - start - name.size() - 4));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string flag, value;
    words >> flag;
    std::getline(words >> std::ws, value);
    args.push_back({flag, value});
  }
  return args;
}

void check_megatron_flags(const std::string& script) {
  INFO(script);
  for (const char* array : {"MODEL_ARGS", "PARALLEL_ARGS", "TRAINING_ARGS", "RUN_ARGS"}) {
    for (const auto& [flag, value] : bash_array_args(script, array)) {
      INFO(array << ": " << flag << " " << value);
      auto known = megatron_flags().find(flag);
      REQUIRE(known != megatron_flags().end());
      if (!known->second.empty()) CHECK(known->second.count(value) == 1);
      if (flag == "--recompute-modules") {
        // transformer_config.py __post_init__ allowed_modules (the ones ppsim models).
        const std::set<std::string> allowed = {
            "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"};
        std::istringstream words(value);
        std::string word;
        int count = 0;
        while (words >> word) {
          CHECK(allowed.count(word) == 1);
          ++count;
        }
        CHECK(count > 0);
      }
    }
  }
  for (const auto& [flag, value] : bash_array_args(script, "DISTRIBUTED_ARGS")) {
    INFO("DISTRIBUTED_ARGS: " << flag);
    CHECK(kTorchrunFlags.count(flag) == 1);
  }
  // A hybrid model runs pretrain_hybrid.py (the flag is "the sole indicator", arguments.py).
  const bool hybrid = contains(script, "--hybrid-layer-pattern");
  CHECK(contains(script, std::string("torchrun \"${DISTRIBUTED_ARGS[@]}\" ") +
                             (hybrid ? "pretrain_hybrid.py" : "pretrain_gpt.py")));
}

// DeepSpeed keys (docs/_pages/config-json.md; runtime/config.py, zero/config.py,
// zero/offload_config.py, get_pipeline_config). Only keys DeepSpeed reads: it ignores unknown
// top-level keys silently, and nested blocks are pydantic models with extra="forbid".
void check_deepspeed_keys(const nlohmann::json& config) {
  const std::set<std::string> top = {"train_batch_size", "train_micro_batch_size_per_gpu",
                                     "gradient_accumulation_steps", "bf16", "fp16",
                                     // runtime/config.py get_communication_data_type.
                                     "communication_data_type", "zero_optimization", "pipeline"};
  const std::map<std::string, std::set<std::string>> nested = {
      {"bf16", {"enabled"}},
      {"fp16", {"enabled", "loss_scale"}},
      {"zero_optimization", {"stage", "overlap_comm", "offload_optimizer"}},
      {"pipeline", {"activation_checkpoint_interval"}},
  };
  for (const auto& [key, value] : config.items()) {
    INFO("key " << key);
    REQUIRE(top.count(key) == 1);
    if (nested.count(key)) {
      for (const auto& [inner, inner_value] : value.items()) {
        INFO("key " << key << "." << inner);
        CHECK(nested.at(key).count(inner) == 1);
      }
    }
  }
  if (config["zero_optimization"].contains("offload_optimizer")) {
    const nlohmann::json& offload = config["zero_optimization"]["offload_optimizer"];
    CHECK(offload["device"] == "cpu");
    CHECK(offload["pin_memory"] == true);
    for (const auto& [key, value] : offload.items()) {
      CHECK((key == "device" || key == "pin_memory" || key == "ratio"));
    }
  }
  CHECK(config["zero_optimization"]["stage"].get<int>() <= 3);
}

// torchtitan TOML-era keys (torchtitan/config/job_config.py at e347b1e5e, REFERENCE.md 3.1);
// its ConfigManager rejects any other field name.
void check_torchtitan_keys(const std::map<std::string, nlohmann::json>& tables) {
  const std::map<std::string, std::set<std::string>> allowed = {
      {"", {}},
      {"job", {"description"}},
      {"model", {"name", "flavor", "hf_assets_path", "converters"}},
      {"training",
       {"local_batch_size", "global_batch_size", "seq_len", "mixed_precision_param",
        "mixed_precision_reduce", "enable_cpu_offload"}},
      {"parallelism",
       {"data_parallel_replicate_degree", "data_parallel_shard_degree",
        "fsdp_reshard_after_forward", "tensor_parallel_degree", "enable_async_tensor_parallel",
        "pipeline_parallel_degree", "pipeline_parallel_schedule",
        "pipeline_parallel_microbatch_size", "module_fqns_per_model_part",
        "pipeline_parallel_expert_parallel_overlap", "context_parallel_degree",
        "expert_parallel_degree", "expert_tensor_parallel_degree"}},
      {"activation_checkpoint", {"mode", "selective_ac_option"}},
      {"compile", {"enable", "components"}},
      {"quantize.linear.float8", {"recipe_name", "filter_fqns"}},
      {"quantize.grouped_mm.float8", {"fqns"}},
      {"quantize.linear.mx", {"recipe_name", "filter_fqns"}},
      {"quantize.grouped_mm.mx", {"recipe_name", "fqns"}},
  };
  for (const auto& [table, keys] : tables) {
    INFO("table [" << table << "]");
    REQUIRE(allowed.count(table) == 1);
    for (const auto& [key, value] : keys.items()) {
      INFO("key " << key);
      CHECK(allowed.at(table).count(key) == 1);
    }
  }
  const nlohmann::json& parallelism = tables.at("parallelism");
  if (parallelism.contains("pipeline_parallel_schedule")) {
    const std::set<std::string> torch_schedules = {
        "GPipe", "1F1B", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"};
    CHECK(torch_schedules.count(parallelism["pipeline_parallel_schedule"]) == 1);
  }
  const std::set<std::string> modes = {"none", "selective", "full"};
  CHECK(modes.count(tables.at("activation_checkpoint")["mode"]) == 1);
  const std::set<std::string> reshard = {"default", "always", "never"};
  CHECK(reshard.count(parallelism["fsdp_reshard_after_forward"]) == 1);
}

std::map<std::string, nlohmann::json> parse_toml(const std::string& text) {
  return TomlSubset(text).parse();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("Launcher exports: golden files for thirteen plans in the formats that run them") {
  std::vector<GoldenCase> cases = golden_cases();
  REQUIRE(cases.size() == 13);
  for (const GoldenCase& entry : cases) {
    for (LauncherFormat format : entry.formats) {
      std::string path = kGoldenDir + "/" + entry.name + "_" + launcher_format_name(format) + "." +
                         extension(format);
      INFO(path << " (regenerate with tools/update_golden.sh after an intended change)");
      std::string golden = testing::read_file(path);
      REQUIRE(!golden.empty());
      LauncherOutput output = export_case(format, entry);
      CHECK(first_difference(output.text, golden) == "");
      for (const std::string& warning : output.warnings) {
        // Every warning is also in the file as a comment (DeepSpeed's JSON takes none).
        if (format == LauncherFormat::kDeepSpeed) break;
        std::string head = warning.substr(0, 40);
        CHECK(contains(output.text, head));
      }
    }
  }
}

TEST_CASE("Launcher exports: the same inputs give the same bytes") {
  for (const GoldenCase& entry : golden_cases()) {
    for (LauncherFormat format : entry.formats) {
      CHECK(export_case(format, entry).text == export_case(format, entry).text);
    }
  }
}

TEST_CASE("Launcher exports: every Megatron flag is one Megatron-LM accepts") {
  for (const GoldenCase& entry : golden_cases()) {
    if (!entry.has(LauncherFormat::kMegatron)) continue;
    check_megatron_flags(export_case(LauncherFormat::kMegatron, entry).text);
  }
  check_megatron_flags(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                                     "tp=2,pp=4,mbs=1,gbs=8,schedule=interleaved-1f1b,vpp=2,"
                                     "stage_layers=8:6:10:8,precision=fp8,zero_stage=2")
                           .text);
}

TEST_CASE("Launcher exports: the Megatron script is valid bash") {
  const bool have_shellcheck = std::system("command -v shellcheck >/dev/null 2>&1") == 0;
  if (!have_shellcheck) WARN("shellcheck not found; checking the scripts with bash -n only");
  for (const GoldenCase& entry : golden_cases()) {
    if (!entry.has(LauncherFormat::kMegatron)) continue;
    std::string path = kGoldenDir + "/" + entry.name + "_megatron.sh";
    INFO(path);
    CHECK(std::system(("bash -n '" + path + "'").c_str()) == 0);
    if (have_shellcheck) {
      CHECK(std::system(("shellcheck -S warning '" + path + "' >&2").c_str()) == 0);
    }
  }
}

TEST_CASE("Launcher exports: the DeepSpeed config parses as JSON with real keys") {
  for (const GoldenCase& entry : golden_cases()) {
    if (!entry.has(LauncherFormat::kDeepSpeed)) continue;
    std::string text = export_case(LauncherFormat::kDeepSpeed, entry).text;
    nlohmann::json config;
    REQUIRE_NOTHROW(config = nlohmann::json::parse(text));
    check_deepspeed_keys(config);
    Plan plan = parse_plan(entry.plan, "test");
    // DeepSpeed's rule: train_batch_size = micro batch x accumulation x data-parallel size.
    CHECK(config["train_batch_size"].get<int64_t>() ==
          config["train_micro_batch_size_per_gpu"].get<int64_t>() *
              config["gradient_accumulation_steps"].get<int64_t>() * plan.dp);
  }
}

TEST_CASE("Launcher exports: the torchtitan TOML parses as TOML with real keys") {
  for (const GoldenCase& entry : golden_cases()) {
    if (!entry.has(LauncherFormat::kTorchTitan)) continue;
    std::string text = export_case(LauncherFormat::kTorchTitan, entry).text;
    INFO(entry.name);
    std::map<std::string, nlohmann::json> tables;
    REQUIRE_NOTHROW(tables = parse_toml(text));
    check_torchtitan_keys(tables);
    std::optional<bool> accepted = python_tomllib_accepts(text);
    if (accepted) {
      CHECK(*accepted);
    } else {
      WARN("python3 with tomllib (3.11+) not found; checked with the built-in TOML subset only");
    }
  }
}

TEST_CASE("TOML subset checker: rejects what is not TOML") {
  CHECK_NOTHROW(
      parse_toml("# c\n[a]\nx = 1 # c\ny = [\"p\", [1, 2],\n  true,\n]\n[b.c]\nz = -2.5\n"));
  CHECK_THROWS(parse_toml("[a]\nx = 1\nx = 2\n"));  // duplicate key
  CHECK_THROWS(parse_toml("[a]\n[a]\n"));           // duplicate table
  CHECK_THROWS(parse_toml("x = \"open\n"));         // unterminated string
  CHECK_THROWS(parse_toml("x = 1 2\n"));            // junk after a value
  CHECK_THROWS(parse_toml("x = [1 2]\n"));          // missing comma
  CHECK_THROWS(parse_toml("x = yes\n"));            // not a value
  CHECK_THROWS(parse_toml("x = 012\n"));            // leading zero
}

// The PARALLEL_ARGS of the Megatron script for an inline plan of llama3-8b on one DGX H100.
// One bash array of a Megatron script (MODEL_ARGS, PARALLEL_ARGS, ...): flag to value.
std::map<std::string, std::string> args_of(const std::string& script, const char* array) {
  std::map<std::string, std::string> args;
  for (const auto& [flag, value] : bash_array_args(script, array)) args[flag] = value;
  return args;
}

std::map<std::string, std::string> megatron_parallel_args(const std::string& plan) {
  return args_of(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1", plan).text,
                 "PARALLEL_ARGS");
}

TEST_CASE("Megatron export: layer split flags follow the plan's stage layers") {
  SECTION("even split, interleaved: layers per virtual stage") {
    auto args = megatron_parallel_args("tp=2,pp=4,mbs=1,gbs=8,schedule=interleaved-1f1b,vpp=2");
    CHECK(args.at("--num-layers-per-virtual-pipeline-stage") == "4");  // 32 / 4 / 2
    CHECK(args.count("--decoder-first-pipeline-num-layers") == 0);
  }
  SECTION("even middle: first and last stage counts, vpp as stages per rank") {
    auto args = megatron_parallel_args(
        "tp=2,pp=4,mbs=1,gbs=8,schedule=interleaved-1f1b,vpp=2,stage_layers=6:10:10:6");
    CHECK(args.at("--decoder-first-pipeline-num-layers") == "6");
    CHECK(args.at("--decoder-last-pipeline-num-layers") == "6");
    CHECK(args.at("--num-virtual-stages-per-pipeline-rank") == "2");
    CHECK(args.count("--num-layers-per-virtual-pipeline-stage") == 0);
  }
  SECTION("uneven middle: an explicit layout, virtual stage i on rank i % pp") {
    auto args = megatron_parallel_args(
        "tp=2,pp=4,mbs=1,gbs=8,schedule=interleaved-1f1b,vpp=2,stage_layers=8:6:10:8");
    CHECK(args.at("--pipeline-model-parallel-layout") == "\"Et*4|t*3|t*5|t*4|t*4|t*3|t*5|t*4,L\"");
    CHECK(args.count("--num-virtual-stages-per-pipeline-rank") == 0);
  }
  SECTION("an empty first stage: a layout (first/last counts must be positive)") {
    auto args = megatron_parallel_args("tp=2,pp=4,mbs=1,gbs=8,stage_layers=0:11:11:10");
    CHECK(args.at("--pipeline-model-parallel-layout") == "\"E|t*11|t*11|t*10,L\"");
  }
  SECTION("pp = 1: no pipeline flags beyond the size") {
    auto args = megatron_parallel_args("tp=8,mbs=1,gbs=8");
    CHECK(args.at("--pipeline-model-parallel-size") == "1");
    CHECK(args.count("--num-layers-per-virtual-pipeline-stage") == 0);
  }
}

TEST_CASE("Megatron export: first/last flags only where every stage divides by vpp") {
  SECTION("first/last stage layers divisible by vpp: Megatron's own flags") {
    auto args = megatron_parallel_args(
        "tp=2,pp=4,mbs=1,gbs=8,schedule=interleaved-1f1b,vpp=2,first_stage_layers=6,"
        "last_stage_layers=6");
    CHECK(args.at("--decoder-first-pipeline-num-layers") == "6");
    CHECK(args.at("--decoder-last-pipeline-num-layers") == "6");
    CHECK(args.at("--num-virtual-stages-per-pipeline-rank") == "2");
  }
  SECTION("a first stage of 5 layers over 2 chunks: the layout, 3 then 2 (chunk_layout)") {
    auto args = megatron_parallel_args(
        "tp=2,pp=4,mbs=1,gbs=8,schedule=interleaved-1f1b,vpp=2,first_stage_layers=5,"
        "last_stage_layers=7");
    // Middle stages 20 / 2 = 10 each; rank 0: 3 + 2, rank 3: 4 + 3.
    CHECK(args.at("--pipeline-model-parallel-layout") == "\"Et*3|t*5|t*5|t*4|t*2|t*5|t*5|t*3,L\"");
    CHECK(args.count("--decoder-first-pipeline-num-layers") == 0);
  }
  SECTION("the plan's own layout, as given, even where every rank holds as many layers") {
    // 8 layers per rank, split 3 + 5 / 5 + 3 over each rank's two chunks: the even-split flag
    // would cut them 4 + 4.
    auto args = megatron_parallel_args(
        "tp=2,pp=4,mbs=1,gbs=8,pipeline_layout=Et*3|t*5|t*5|t*3|t*5|t*3|t*3|t*5,L");
    CHECK(args.at("--pipeline-model-parallel-layout") == "\"Et*3|t*5|t*5|t*3|t*5|t*3|t*3|t*5,L\"");
    CHECK(args.count("--num-layers-per-virtual-pipeline-stage") == 0);
    CHECK(args.count("--num-virtual-stages-per-pipeline-rank") == 0);
  }
  SECTION("empty middle ranks: the layout, not first/last flags over middle stages of 0") {
    // Ranks hold 12, 0, 0, 20: Megatron's first/last check (only divisibility) would pass 0
    // layers per middle rank, but only a layout states empty stages.
    auto args = megatron_parallel_args("tp=2,pp=4,mbs=1,gbs=8,pipeline_layout=Et*12|||t*20L");
    CHECK(args.at("--pipeline-model-parallel-layout") == "\"Et*12|||t*20,L\"");
    CHECK(args.count("--decoder-first-pipeline-num-layers") == 0);
  }
  SECTION("a microbatch group other than pp: Megatron's flag") {
    auto args = megatron_parallel_args(
        "tp=2,pp=4,mbs=1,gbs=12,schedule=interleaved-1f1b,vpp=2,"
        "microbatch_group_size_per_vp_stage=6");
    CHECK(args.at("--microbatch-group-size-per-virtual-pipeline-stage") == "6");
    CHECK(megatron_parallel_args("tp=2,pp=4,mbs=1,gbs=8,schedule=interleaved-1f1b,vpp=2")
              .count("--microbatch-group-size-per-virtual-pipeline-stage") == 0);
  }
  SECTION("an even split that vpp does not divide: the layout, not a truncated chunk size") {
    auto args = megatron_parallel_args("tp=2,pp=4,mbs=1,gbs=8,schedule=interleaved-1f1b,vpp=3");
    // 8 layers per rank over 3 chunks: 3, 3, 2.
    CHECK(args.at("--pipeline-model-parallel-layout") ==
          "\"Et*3|t*3|t*3|t*3|t*3|t*3|t*3|t*3|t*2|t*2|t*2|t*2,L\"");
    CHECK(args.count("--num-layers-per-virtual-pipeline-stage") == 0);
  }
}

TEST_CASE("Megatron export: MoE, MLA and MTP flags") {
  const std::string mla_model = "tests/data/models/tiny-mla-moe.json";
  LauncherOutput output =
      export_inline(LauncherFormat::kMegatron, mla_model, "dgx-h100:8",
                    "tp=1,pp=8,dp=8,ep=8,etp=1,mbs=1,gbs=256,schedule=interleaved-1f1b,vpp=4,"
                    "first_stage_layers=5,last_stage_layers=8,moe_a2a_overlap=true");
  auto model = args_of(output.text, "MODEL_ARGS");
  CHECK(model.count("--multi-latent-attention") == 1);
  CHECK(model.count("--group-query-attention") == 0);
  CHECK(model.count("--kv-channels") == 0);
  CHECK(model.at("--q-lora-rank") == "384");
  CHECK(model.at("--kv-lora-rank") == "128");
  CHECK(model.at("--qk-head-dim") == "64");
  CHECK(model.at("--qk-pos-emb-head-dim") == "32");
  CHECK(model.at("--v-head-dim") == "64");
  CHECK(model.at("--moe-layer-freq") == "\"([0]*3+[1]*58)\"");
  CHECK(model.at("--moe-shared-expert-intermediate-size") == "256");  // 1 x 256
  CHECK(model.at("--mtp-num-layers") == "1");
  CHECK(model.count("--moe-expert-capacity-factor") == 0);  // dropless
  auto parallel = args_of(output.text, "PARALLEL_ARGS");
  CHECK(parallel.at("--expert-model-parallel-size") == "8");
  CHECK(parallel.at("--expert-tensor-parallel-size") == "1");
  CHECK(parallel.at("--moe-token-dispatcher-type") == "alltoall");
  CHECK(parallel.count("--overlap-moe-expert-parallel-comm") == 1);
  // Ranks 0 and 7 hold 5 (2+1+1+1) and 8 layers; the MTP layer sits with the loss.
  const std::string& layout = parallel.at("--pipeline-model-parallel-layout");
  CHECK(layout.rfind("\"Et*2|t*2|", 0) == 0);
  CHECK(contains(layout, "|t*2,m,L\""));
  CHECK(output.warnings.empty());

  SECTION("capacity factor, qk-norm and per-model head width") {
    std::string qwen =
        export_inline(LauncherFormat::kMegatron, "tests/data/models/qwen3-30b-a3b-capacity.json",
                      "dgx-h100-4", "tp=2,pp=4,dp=4,ep=4,mbs=1,gbs=128,sequence_parallel=true")
            .text;
    auto args = args_of(qwen, "MODEL_ARGS");
    CHECK(args.at("--moe-expert-capacity-factor") == "1.25");
    CHECK(args.count("--moe-pad-expert-input-to-capacity") == 1);
    CHECK(args.count("--qk-layernorm") == 1);
    CHECK(args.at("--kv-channels") == "128");
    CHECK(args.count("--moe-layer-freq") == 0);
    CHECK(args_of(qwen, "PARALLEL_ARGS").count("--expert-tensor-parallel-size") == 0);
  }
  SECTION("MoE on the last layer of each group: Megatron's per-layer list") {
    // Llama 4 Maverick: layers 1, 3, ..., 47 MoE (interleave_moe_layer_step 2).
    std::string text =
        export_inline(LauncherFormat::kMegatron,
                      "tests/data/hf/Llama-4-Maverick-17B-128E/config.json", "dgx-h100:16",
                      "tp=8,pp=4,dp=4,ep=32,etp=1,mbs=1,gbs=128,sequence_parallel=true")
            .text;
    auto args = args_of(text, "MODEL_ARGS");
    CHECK(args.at("--moe-layer-freq") == "\"([0,1]*24)\"");
    CHECK(args.at("--moe-shared-expert-intermediate-size") == "8192");
    CHECK(args.at("--ffn-hidden-size") == "16384");
    CHECK(args.at("--moe-ffn-hidden-size") == "8192");
  }
  SECTION("DeepEP and HybridEP: the flex dispatcher; DeepSeek-V3's node-limited routing") {
    for (const char* backend : {"deepep", "hybridep"}) {
      INFO(backend);
      std::string text = export_inline(LauncherFormat::kMegatron, "deepseek-v3", "dgx-h100:128",
                                       "tp=2,pp=8,dp=64,ep=64,mbs=1,gbs=8192,"
                                       "schedule=interleaved-1f1b,vpp=4,sequence_parallel=true,"
                                       "moe_dispatcher=" +
                                           std::string(backend))
                             .text;
      auto parallel_flags = args_of(text, "PARALLEL_ARGS");
      CHECK(parallel_flags.at("--moe-token-dispatcher-type") == "flex");
      CHECK(parallel_flags.at("--moe-flex-dispatcher-backend") == backend);
      auto model_flags = args_of(text, "MODEL_ARGS");
      CHECK(model_flags.at("--moe-router-num-groups") == "8");
      CHECK(model_flags.at("--moe-router-group-topk") == "4");
    }
    // The flex dispatcher is Megatron-Core's: DeepSpeed and torchtitan refuse it.
    CHECK_THROWS_WITH(
        export_inline(LauncherFormat::kDeepSpeed, "mixtral-8x7b", "dgx-h100-1",
                      "tp=2,pp=2,dp=2,ep=2,mbs=1,gbs=64,runtime=deepspeed,moe_dispatcher=deepep"),
        Catch::Contains("cannot run the DeepEP MoE dispatcher (moe_dispatcher=deepep)"));
  }
  SECTION("overlap that Megatron would reject: refused") {
    CHECK_THROWS_WITH(
        export_inline(LauncherFormat::kMegatron, mla_model, "dgx-h100:8",
                      "tp=1,pp=8,dp=8,ep=8,mbs=1,gbs=256,schedule=1f1b,moe_a2a_overlap=true"),
        Catch::Contains("moe_a2a_overlap) with pp > 1 without virtual pipeline stages"));
  }
}

TEST_CASE("Megatron export: schedules Megatron lacks are refused, naming the schedule") {
  for (const char* schedule : {"gpipe", "zb-h1", "zb-h2", "zbv", "dualpipev"}) {
    std::string plan = std::string("tp=2,pp=4,mbs=1,gbs=16,schedule=") + schedule;
    INFO(schedule);
    CHECK_THROWS_WITH(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1", plan),
                      Catch::Contains(std::string("cannot run pipeline schedule ") + schedule) &&
                          Catch::Contains("it runs 1f1b, interleaved-1f1b"));
  }
  CHECK(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                      "tp=2,pp=4,mbs=1,gbs=16,schedule=1f1b")
            .warnings.empty());
}

TEST_CASE("Megatron export: shape, precision and optimizer flags") {
  std::string gpt = export_inline(LauncherFormat::kMegatron, "gpt3-1.3b", "dgx-h100-1",
                                  "tp=1,pp=1,dp=8,mbs=4,gbs=512,zero_stage=1")
                        .text;
  CHECK(contains(gpt, "  --position-embedding-type learned_absolute\n"));
  CHECK(contains(gpt, "  --normalization LayerNorm\n"));
  CHECK(!contains(gpt, "--swiglu"));
  CHECK(!contains(gpt, "--disable-bias-linear"));
  CHECK(!contains(gpt, "--untie-embeddings-and-output-weights"));  // GPT-3 ties embeddings.
  CHECK(contains(
      gpt, "  --use-distributed-optimizer\n  --overlap-grad-reduce\n  --overlap-param-gather\n"));
  CHECK(contains(gpt, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"));
  CHECK(contains(gpt, "NODE_RANK=${NODE_RANK:-0}\n"));

  std::string fp8 = export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                                  "tp=2,pp=1,dp=4,mbs=1,gbs=32,precision=fp8,zero_stage=3,"
                                  "offload_optimizer=true")
                        .text;
  CHECK(contains(fp8,
                 "  --bf16\n  --fp8-format hybrid\n  --fp8-recipe delayed\n"
                 "  --fp8-amax-history-len 1024\n  --fp8-amax-compute-algo max\n"));
  CHECK(contains(fp8, "  --group-query-attention\n  --num-query-groups 8\n"));
  CHECK(contains(fp8,
                 "  --use-megatron-fsdp\n  --data-parallel-sharding-strategy optim_grads_params\n"
                 "  --ckpt-format fsdp_dtensor\n"));
  // The fraction is always written: Megatron's default is 0.0 (optimizer_config.py).
  CHECK(contains(fp8,
                 "  --optimizer-cpu-offload\n  --optimizer-offload-fraction 1\n"
                 "  --use-precision-aware-optimizer\n  --overlap-cpu-optimizer-d2h-h2d\n"));
  CHECK(contains(fp8, "unset CUDA_DEVICE_MAX_CONNECTIONS\n"));

  // A partial offload passes its fraction.
  std::string partial = export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                                      "tp=2,pp=1,dp=4,mbs=1,gbs=32,zero_stage=1,offload=0.5")
                            .text;
  CHECK(contains(partial,
                 "  --optimizer-cpu-offload\n  --optimizer-offload-fraction 0.5\n"
                 "  --use-precision-aware-optimizer\n"));
  // Sequence parallelism under megatron-core overlaps TP communication by default
  // (--tp-comm-overlap); the plan can say no, and without SP there is nothing to overlap.
  const std::string sp_plan = "tp=2,pp=1,dp=4,mbs=1,gbs=32,zero_stage=1,sequence_parallel=true";
  CHECK(contains(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1", sp_plan).text,
                 "  --sequence-parallel\n  --tp-comm-overlap\n"));
  CHECK(!contains(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                                sp_plan + ",tp_comm_overlap=false")
                      .text,
                  "--tp-comm-overlap"));
  CHECK(!contains(partial, "--tp-comm-overlap"));
  // Offload without the distributed optimizer: --use-precision-aware-optimizer raises.
  CHECK_THROWS_WITH(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                                  "tp=2,pp=1,dp=4,mbs=1,gbs=32,offload=0.5"),
                    Catch::Contains("optimizer CPU offload without the distributed optimizer"));
}

TEST_CASE("Megatron export: nvfp4 writes Transformer Engine's NVFP4 recipe; others refuse it") {
  const std::string text = export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-b200:1",
                                         "tp=2,pp=1,dp=4,mbs=1,gbs=32,precision=nvfp4")
                               .text;
  check_megatron_flags(text);
  auto training = args_of(text, "TRAINING_ARGS");
  CHECK(training.count("--bf16") == 1);
  CHECK(training.at("--fp4-format") == "e2m1");
  CHECK(training.at("--fp4-recipe") == "nvfp4");
  CHECK(training.count("--fp8-format") == 0);
  CHECK_THROWS_WITH(export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-b200:1",
                                  "dp=8,mbs=1,gbs=64,zero_stage=3,precision=nvfp4,"
                                  "runtime=torchtitan"),
                    Catch::Contains("runtime torchtitan cannot run precision nvfp4"));
}

TEST_CASE(
    "Megatron export: recompute modules, and fp8 current scaling where delayed refuses them") {
  auto training = [](const std::string& plan) {
    std::string text =
        export_inline(LauncherFormat::kMegatron, "qwen3-30b-a3b", "dgx-h100-1", plan).text;
    check_megatron_flags(text);
    return args_of(text, "TRAINING_ARGS");
  };
  const std::string base = "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=64";
  auto modules = training(base + ",recompute_modules=moe_act:layernorm");
  CHECK(modules.at("--recompute-granularity") == "selective");
  CHECK(modules.at("--recompute-modules") == "moe_act layernorm");
  // Megatron's default list (core_attn) is not spelled out.
  CHECK(training(base + ",recompute=selective").count("--recompute-modules") == 0);
  // Delayed scaling refuses moe_act and layernorm recompute (transformer_config.py): fp8 runs
  // with current (tensorwise) scaling there, delayed elsewhere.
  auto fp8 = training(base + ",recompute_modules=moe_act,precision=fp8");
  CHECK(fp8.at("--fp8-recipe") == "tensorwise");
  CHECK(fp8.count("--fp8-amax-history-len") == 0);
  CHECK(training(base + ",recompute_modules=moe,precision=fp8").at("--fp8-recipe") == "delayed");
  CHECK(training(base + ",precision=fp8").at("--fp8-recipe") == "delayed");
  // Other launchers re-run the attention core at most.
  CHECK_THROWS_WITH(export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1",
                                  "dp=8,mbs=1,gbs=64,zero_stage=3,recompute_modules=mlp,"
                                  "runtime=torchtitan"),
                    Catch::Contains("runtime torchtitan cannot run selective recompute of mlp"));
}

TEST_CASE("Megatron export: CUDA graph flags per scope; other launchers refuse graphs") {
  auto parallel = [](const std::string& model, const std::string& plan) {
    std::string text = export_inline(LauncherFormat::kMegatron, model, "dgx-h100-1", plan).text;
    check_megatron_flags(text);
    return args_of(text, "PARALLEL_ARGS");
  };
  const std::string moe_plan = "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=64,cuda_graphs=";
  auto router = parallel("qwen3-30b-a3b", moe_plan + "moe-router");
  CHECK(router.at("--cuda-graph-impl") == "transformer_engine");
  CHECK(router.at("--cuda-graph-modules") == "moe_router moe_preprocess");
  // Token drop under the alltoall dispatcher copies counts to the host in the preprocess,
  // which Megatron refuses to graph: the router alone.
  auto dropped = parallel("tests/data/models/qwen3-30b-a3b-capacity.json", moe_plan + "moe-router");
  CHECK(dropped.at("--cuda-graph-modules") == "moe_router");
  auto layers = parallel("tests/data/models/qwen3-30b-a3b-capacity.json", moe_plan + "layers");
  CHECK(layers.at("--cuda-graph-impl") == "local");
  CHECK(layers.count("--cuda-graph-modules") == 0);
  auto full = parallel("qwen3-30b-a3b", moe_plan + "full-iteration");
  CHECK(full.at("--cuda-graph-impl") == "full_iteration");
  CHECK(full.count("--no-check-for-nan-in-loss-and-grad") == 1);
  CHECK(parallel("qwen3-30b-a3b", "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=64").count("--cuda-graph-impl") ==
        0);
  CHECK_THROWS_WITH(export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1",
                                  "dp=8,mbs=1,gbs=64,zero_stage=3,cuda_graphs=layers,"
                                  "runtime=torchtitan"),
                    Catch::Contains("runtime torchtitan cannot run CUDA graph capture"));
}

// grad_reduce_in_fp32 in every launcher: Megatron-LM's --grad-reduce-in-bf16 (bf16 reduction)
// and --accumulate-allreduce-grads-in-fp32 (fp16 plans reducing in fp32), DeepSpeed's
// communication_data_type, torchtitan's mixed_precision_reduce; nothing where the launcher's
// default already is the plan's dtype.
TEST_CASE("Exports: the gradients' dtype (grad_reduce_in_fp32)") {
  auto training = [](const std::string& plan) {
    std::string text =
        export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1", plan).text;
    check_megatron_flags(text);
    return args_of(text, "TRAINING_ARGS");
  };
  const std::string base = "tp=2,pp=1,dp=4,mbs=1,gbs=64,zero_stage=1";
  CHECK(training(base).count("--grad-reduce-in-bf16") == 0);
  CHECK(training(base + ",grad_reduce_in_fp32=false").count("--grad-reduce-in-bf16") == 1);
  CHECK(training(base + ",grad_reduce_in_fp32=false").count("--bf16") == 1);
  CHECK(training(base + ",precision=fp16").count("--accumulate-allreduce-grads-in-fp32") == 0);
  CHECK(training(base + ",precision=fp16,grad_reduce_in_fp32=true")
            .count("--accumulate-allreduce-grads-in-fp32") == 1);
  auto deepspeed = [](const std::string& plan) {
    return nlohmann::json::parse(
        export_inline(LauncherFormat::kDeepSpeed, "llama3-8b", "dgx-h100-1", plan).text);
  };
  CHECK(deepspeed("dp=8,mbs=1,gbs=64,zero_stage=1")["communication_data_type"] == "fp32");
  CHECK(
      deepspeed(
          "dp=8,mbs=1,gbs=64,zero_stage=1,grad_reduce_in_fp32=false")["communication_data_type"] ==
      "bf16");
  CHECK(deepspeed("dp=8,mbs=1,gbs=64,zero_stage=1,precision=fp16")["communication_data_type"] ==
        "fp16");
  auto titan = [](const std::string& plan) {
    std::string text = export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1",
                                     plan + ",runtime=torchtitan")
                           .text;
    std::map<std::string, nlohmann::json> tables = parse_toml(text);
    check_torchtitan_keys(tables);
    return tables.at("training");
  };
  CHECK_FALSE(titan("dp=8,mbs=1,gbs=64,zero_stage=3").contains("mixed_precision_reduce"));
  CHECK(titan("dp=8,mbs=1,gbs=64,zero_stage=3,grad_reduce_in_fp32=false")
            .at("mixed_precision_reduce") == "bfloat16");
  // The 2021-2022 Megatron-LM forces fp32 reduction under bf16.
  Plan legacy = parse_plan(base + ",grad_reduce_in_fp32=false,runtime=megatron-lm", "test");
  CHECK_THROWS_WITH(export_launcher(LauncherFormat::kMegatron, load_model_spec("llama3-8b"),
                                    load_cluster_spec("dgx-h100-1"), legacy),
                    Catch::Contains("runtime megatron-lm cannot run bf16 gradient reduction"));
}

TEST_CASE("Megatron export: activation offloading as --cpu-offloading-num-layers") {
  std::string text = export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                                   "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=1,"
                                   "activation_offload_layers=6")
                         .text;
  check_megatron_flags(text);
  CHECK(args_of(text, "TRAINING_ARGS").at("--cpu-offloading-num-layers") == "6");
  CHECK(args_of(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                              "tp=1,pp=1,dp=8,mbs=1,gbs=64")
                    .text,
                "TRAINING_ARGS")
            .count("--cpu-offloading-num-layers") == 0);
}

TEST_CASE("Exports: partial full recompute (recompute_num_layers) as each launcher spells it") {
  const std::string plan = "tp=1,pp=2,dp=4,mbs=1,gbs=64,zero_stage=2,recompute_num_layers=8";
  // Megatron: the block method over the first N layers of each chunk.
  std::string megatron =
      export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                    "tp=1,pp=2,dp=4,mbs=1,gbs=64,zero_stage=1,recompute_num_layers=8")
          .text;
  check_megatron_flags(megatron);
  auto training = args_of(megatron, "TRAINING_ARGS");
  CHECK(training.at("--recompute-granularity") == "full");
  CHECK(training.at("--recompute-method") == "block");
  CHECK(training.at("--recompute-num-layers") == "8");
  auto whole = args_of(export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1",
                                     "tp=1,pp=2,dp=4,mbs=1,gbs=64,zero_stage=1,recompute=full")
                           .text,
                       "TRAINING_ARGS");
  CHECK(whole.at("--recompute-method") == "uniform");
  CHECK(whole.at("--recompute-num-layers") == "1");
  // torchtitan: 8 of each 16-layer chunk is every second block, its layer-level selective AC.
  auto tables =
      parse_toml(export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1", plan).text);
  CHECK(tables["activation_checkpoint"]["mode"] == "selective");
  CHECK(tables["activation_checkpoint"]["selective_ac_option"] == "2");
  auto full = parse_toml(export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1",
                                       "tp=1,pp=2,dp=4,mbs=1,gbs=64,zero_stage=2,recompute=full")
                             .text);
  CHECK(full["activation_checkpoint"]["mode"] == "full");
  CHECK_FALSE(full["activation_checkpoint"].contains("selective_ac_option"));
  auto covering =
      parse_toml(export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1",
                               "tp=1,pp=2,dp=4,mbs=1,gbs=64,zero_stage=2,recompute_num_layers=16")
                     .text);
  CHECK(covering["activation_checkpoint"]["mode"] == "full");  // 16 of 16: every block.
  CHECK_THROWS_WITH(export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1",
                                  "tp=1,pp=2,dp=4,mbs=1,gbs=64,zero_stage=2,"
                                  "recompute_num_layers=5"),
                    Catch::Contains("not every k-th layer of equal chunks"));
  // DeepSpeed without a pipeline: a note on which layers to wrap.
  LauncherOutput deepspeed =
      export_inline(LauncherFormat::kDeepSpeed, "llama3-8b", "dgx-h100-1",
                    "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero_stage=3,recompute_num_layers=6");
  CHECK(std::any_of(deepspeed.notes.begin(), deepspeed.notes.end(), [](const std::string& n) {
    return n.find("full recompute of the first 6 transformer layers") != std::string::npos;
  }));
}

// The plan's tp_comm_overlap under torchtitan is its async TP, which torchtitan runs only on
// the compiled model (tensor_parallel.py maybe_enable_async_tp raises without compile.enable and
// 'model' in compile.components).
TEST_CASE("torchtitan export: tp_comm_overlap as async TP with the model compiled") {
  const std::string plan =
      "tp=8,pp=1,dp=4,mbs=1,gbs=32,zero_stage=3,sequence_parallel=true,"
      "runtime=torchtitan";
  LauncherOutput async = export_inline(LauncherFormat::kTorchTitan, "llama3-70b", "dgx-h100-4",
                                       plan + ",tp_comm_overlap=true");
  auto tables = parse_toml(async.text);
  check_torchtitan_keys(tables);
  CHECK(tables["parallelism"]["enable_async_tensor_parallel"] == true);
  CHECK(tables["compile"]["enable"] == true);
  const auto components = tables["compile"]["components"].get<std::vector<std::string>>();
  CHECK(std::find(components.begin(), components.end(), "model") != components.end());
  CHECK(async.text.find("--compile.enable_async_tensor_parallel") != std::string::npos);
  CHECK(async.text.find("--parallelism.enable_async_tensor_parallel") != std::string::npos);
  // Off (torchtitan's default): no compile section, the flag false.
  auto plain =
      parse_toml(export_inline(LauncherFormat::kTorchTitan, "llama3-70b", "dgx-h100-4", plan).text);
  CHECK(plain["parallelism"]["enable_async_tensor_parallel"] == false);
  CHECK(plain.count("compile") == 0);
}

TEST_CASE("DeepSpeed export: batch, ZeRO and what the pipeline engine rejects") {
  SECTION("pure data parallel, ZeRO-3 with offload") {
    LauncherOutput output = export_inline(LauncherFormat::kDeepSpeed, "llama3-8b", "dgx-h100-1",
                                          "dp=8,mbs=2,gbs=128,zero_stage=3,offload_optimizer=true");
    nlohmann::json config = nlohmann::json::parse(output.text);
    CHECK(config["train_batch_size"] == 128);
    CHECK(config["train_micro_batch_size_per_gpu"] == 2);
    CHECK(config["gradient_accumulation_steps"] == 8);  // 128 / (2 * 8)
    CHECK(config["zero_optimization"]["stage"] == 3);
    CHECK(config["zero_optimization"]["overlap_comm"] == true);
    CHECK(config["bf16"]["enabled"] == true);
    CHECK(output.warnings.empty());
    CHECK_FALSE(config["zero_optimization"]["offload_optimizer"].contains("ratio"));
  }
  SECTION("a partial optimizer offload sets the ratio") {
    LauncherOutput output = export_inline(LauncherFormat::kDeepSpeed, "llama3-8b", "dgx-h100-1",
                                          "dp=8,mbs=2,gbs=128,zero_stage=3,offload=0.25");
    nlohmann::json config = nlohmann::json::parse(output.text);
    CHECK(config["zero_optimization"]["offload_optimizer"]["ratio"] == 0.25);
  }
  SECTION("what DeepSpeed refuses is refused, naming the feature") {
    auto refused = [](const std::string& plan) {
      return export_inline(LauncherFormat::kDeepSpeed, "llama3-8b", "dgx-h100-1", plan);
    };
    CHECK_THROWS_WITH(refused("pp=4,dp=2,mbs=1,gbs=16,zero_stage=2,recompute=full"),
                      Catch::Contains("ZeRO stage 2 with pipeline parallelism"));
    CHECK_THROWS_WITH(refused("pp=4,dp=2,mbs=1,gbs=16,schedule=interleaved-1f1b,vpp=2"),
                      Catch::Contains("pipeline schedule interleaved-1f1b (it runs 1f1b)"));
    CHECK_THROWS_WITH(refused("dp=8,mbs=2,gbs=128,zero_stage=2,offload=0.5"),
                      Catch::Contains("partial offload needs ZeRO-3"));
    CHECK_THROWS_WITH(refused("dp=8,mbs=2,gbs=128,offload_optimizer=true"),
                      Catch::Contains("optimizer CPU offload without ZeRO"));
    CHECK_THROWS_WITH(refused("tp=2,dp=2,cp=2,mbs=1,gbs=16"),
                      Catch::Contains("ring context parallelism (cp=2)"));
    CHECK_THROWS_WITH(refused("pp=3,dp=2,mbs=1,gbs=16"),
                      Catch::Contains("uneven pipeline stages (layers per stage 11:11:10)"));
  }
  SECTION("pipeline with ZeRO-1, fp16, full recompute") {
    LauncherOutput output = export_inline(LauncherFormat::kDeepSpeed, "llama3-8b", "dgx-h100-1",
                                          "pp=4,dp=2,mbs=1,gbs=16,zero_stage=1,recompute=full,"
                                          "precision=fp16");
    nlohmann::json config = nlohmann::json::parse(output.text);
    CHECK(config["zero_optimization"]["stage"] == 1);
    CHECK(config["pipeline"]["activation_checkpoint_interval"] == 1);
    CHECK(config["fp16"]["enabled"] == true);
    CHECK(!config.contains("bf16"));
    CHECK(output.warnings.empty());
  }
}

TEST_CASE("torchtitan export: batch sizes, stage split and schedule names") {
  auto tables_of = [](const std::string& plan) {
    return parse_toml(
        export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1", plan).text);
  };
  SECTION("pipeline: local batch is the replica's share, split into microbatches") {
    auto tables = tables_of(
        "tp=2,pp=2,dp=2,mbs=2,gbs=32,schedule=1f1b,sequence_parallel=true,"
        "zero_stage=2");
    CHECK(tables["training"]["local_batch_size"] == 16);  // 32 / dp 2
    CHECK(tables["training"]["global_batch_size"] == 32);
    CHECK(tables["parallelism"]["pipeline_parallel_microbatch_size"] == 2);
    CHECK(tables["parallelism"]["pipeline_parallel_schedule"] == "1F1B");
    CHECK(tables["parallelism"]["data_parallel_shard_degree"] == 2);
    CHECK(tables["model"]["flavor"] == "8B");
  }
  SECTION("no pipeline: local batch is one microbatch, accumulation makes the rest") {
    auto tables = tables_of("dp=8,mbs=2,gbs=64");
    CHECK(tables["training"]["local_batch_size"] == 2);
    CHECK(tables["parallelism"]["data_parallel_replicate_degree"] == 8);  // DDP
    CHECK(tables["parallelism"]["data_parallel_shard_degree"] == 1);
    CHECK(!tables["parallelism"].contains("pipeline_parallel_schedule"));
  }
  SECTION("zbv: V placement, rank r holds stages r and 2pp-1-r") {
    auto tables = tables_of(
        "tp=4,pp=2,mbs=1,gbs=8,schedule=zbv,stage_layers=12:20,"
        "sequence_parallel=true");
    const nlohmann::json& parts = tables["parallelism"]["module_fqns_per_model_part"];
    REQUIRE(parts.size() == 4);
    CHECK(parts[0].size() == 7);   // tok_embeddings + 6 layers (rank 0)
    CHECK(parts[1].size() == 10);  // rank 1
    CHECK(parts[2].size() == 10);  // rank 1
    CHECK(parts[3].size() == 8);   // 6 layers + norm + output (rank 0)
    CHECK(parts[0][0] == "tok_embeddings");
    CHECK(parts[1][0] == "layers.6");
    CHECK(parts[3][7] == "output");
    CHECK(tables["parallelism"]["pipeline_parallel_schedule"] == "ZBVZeroBubble");
  }
  SECTION("what torchtitan refuses is refused, naming the feature") {
    auto refused = [](const std::string& plan) {
      return export_inline(LauncherFormat::kTorchTitan, "llama3-8b", "dgx-h100-1", plan);
    };
    CHECK_THROWS_WITH(refused("tp=2,pp=4,mbs=1,gbs=16,schedule=zb-h2,sequence_parallel=true"),
                      Catch::Contains("pipeline schedule zb-h2"));
    // The case: offload without FSDP sharding is a no-op in torchtitan.
    CHECK_THROWS_WITH(refused("tp=8,mbs=1,gbs=8,sequence_parallel=true,offload_optimizer=true"),
                      Catch::Contains("optimizer CPU offload without FSDP sharding"));
    CHECK_THROWS_WITH(refused("tp=2,dp=4,mbs=1,gbs=8,sequence_parallel=true,zero_stage=3,"
                              "offload=0.5"),
                      Catch::Contains("partial optimizer offload"));
    CHECK_THROWS_WITH(refused("tp=2,dp=4,mbs=1,gbs=8,sequence_parallel=true,zero_stage=1"),
                      Catch::Contains("ZeRO stage 1"));
    CHECK_THROWS_WITH(refused("tp=2,dp=4,mbs=1,gbs=8,sequence_parallel=true"),
                      Catch::Contains("ZeRO stage 0 (replicated DDP)"));
    CHECK_THROWS_WITH(refused("tp=2,dp=4,mbs=1,gbs=8,zero_stage=2"),
                      Catch::Contains("tensor parallelism without sequence parallelism"));
    CHECK_THROWS_WITH(refused("dp=8,mbs=1,gbs=8,precision=fp16"),
                      Catch::Contains("precision fp16"));
  }
  SECTION("fp8: float8 converters") {
    auto tables =
        tables_of("tp=2,dp=4,mbs=1,gbs=8,precision=fp8,sequence_parallel=true,zero_stage=2");
    CHECK(tables["model"]["converters"] == nlohmann::json::array({"quantize.linear.float8"}));
    CHECK(tables.count("quantize.linear.float8") == 1);
    CHECK(tables["quantize.linear.float8"]["recipe_name"] == "tensorwise");
  }
}

TEST_CASE("torchtitan and DeepSpeed exports: MoE families, expert tp and capacity") {
  SECTION("a Mixtral has no torchtitan model: a warning, and no qwen3 name") {
    LauncherOutput output = export_inline(LauncherFormat::kTorchTitan, "mixtral-8x7b", "dgx-h100-1",
                                          "tp=2,dp=4,ep=2,mbs=1,gbs=8,seq=4096,"
                                          "sequence_parallel=true,zero_stage=2");
    auto tables = parse_toml(output.text);
    CHECK(tables["model"]["name"] == "ppsim-mixtral-8x7b");
    REQUIRE(!output.warnings.empty());
    CHECK(contains(output.warnings[0], "torchtitan has no model of this kind"));
  }
  SECTION("a Qwen3-30B-A3B shape finds its flavor; capacity and etp are stated") {
    LauncherOutput output = export_inline(
        LauncherFormat::kTorchTitan, "tests/data/models/qwen3-30b-a3b-capacity.json", "dgx-h100-4",
        "tp=2,pp=4,dp=4,ep=8,etp=1,mbs=1,gbs=128,sequence_parallel=true,zero_stage=2");
    auto tables = parse_toml(output.text);
    CHECK(tables["model"]["name"] == "qwen3");
    CHECK(tables["model"]["flavor"] == "30B-A3B");
    CHECK(tables["parallelism"]["expert_parallel_degree"] == 8);
    CHECK(tables["parallelism"]["expert_tensor_parallel_degree"] == 1);
    REQUIRE(output.warnings.size() == 1);
    CHECK(contains(output.warnings[0], "dropless"));
  }
  SECTION("an MLA model maps to deepseek_v3 and its MTP layer is warned about") {
    LauncherOutput output = export_inline(
        LauncherFormat::kTorchTitan, "tests/data/models/tiny-mla-moe.json", "dgx-h100:8",
        "tp=1,pp=8,dp=8,ep=8,etp=1,mbs=1,gbs=256,schedule=interleaved-1f1b,vpp=4,"
        "first_stage_layers=5,last_stage_layers=8,zero_stage=2");
    auto tables = parse_toml(output.text);
    CHECK(tables["model"]["name"] == "deepseek_v3");
    const nlohmann::json& parts = tables["parallelism"]["module_fqns_per_model_part"];
    REQUIRE(parts.size() == 32);
    CHECK(parts[0].size() == 3);  // tok_embeddings + 2 layers (rank 0's first chunk)
    bool mtp_warned = false;
    for (const std::string& warning : output.warnings)
      mtp_warned = mtp_warned || contains(warning, "multi-token prediction");
    CHECK(mtp_warned);
  }
  SECTION("DeepSeek-V2-Lite's HF config is torchtitan's deepseek_v3 16B flavor") {
    // torchtitan's "16B" flavor (27 layers of 2048, MLA without a query rank, 64 experts of 1408
    // top-6 beside 2 shared, one dense layer) is DeepSeek-V2-Lite's shape.
    LauncherOutput output = export_inline(
        LauncherFormat::kTorchTitan, "tests/data/hf/DeepSeek-V2-Lite/config.json", "dgx-h100:1",
        "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=64,runtime=torchtitan,zero_stage=3");
    auto tables = parse_toml(output.text);
    CHECK(tables["model"]["name"] == "deepseek_v3");
    CHECK(tables["model"]["flavor"] == "16B");
    for (const std::string& warning : output.warnings) CHECK_FALSE(contains(warning, "flavor"));
  }
  SECTION("DeepSpeed: capacity and expert tp in the MoE note") {
    LauncherOutput output =
        export_inline(LauncherFormat::kDeepSpeed, "tests/data/models/qwen3-30b-a3b-capacity.json",
                      "dgx-h100-4", "tp=2,pp=4,dp=4,ep=4,mbs=1,gbs=128,sequence_parallel=true");
    auto joined = [](const std::vector<std::string>& lines) {
      std::string text;
      for (const std::string& line : lines) text += line + "\n";
      return text;
    };
    CHECK(contains(joined(output.notes),
                   "ep_size=4, k=8, capacity_factor=1.25, drop_tokens=True, "
                   "enable_expert_tensor_parallelism=True)"));
    LauncherOutput dropless =
        export_inline(LauncherFormat::kDeepSpeed, "tests/data/models/tiny-mla-moe.json",
                      "dgx-h100:8", "tp=1,pp=1,dp=64,ep=8,mbs=1,gbs=256,zero_stage=1");
    CHECK(contains(joined(dropless.notes), "drop_tokens=False), plus a dense MLP of width 256"));
    CHECK_THROWS_WITH(
        export_inline(LauncherFormat::kDeepSpeed, "tests/data/models/tiny-mla-moe.json",
                      "dgx-h100:8",
                      "tp=1,pp=1,dp=64,ep=8,mbs=1,gbs=256,zero_stage=1,moe_a2a_overlap=true"),
        Catch::Contains("MoE all-to-all overlap (moe_a2a_overlap) at all"));
  }
}

// ---------------------------------------------------------------------------------------------
// Each launcher's file read the way the launcher reads it, and the plan's facts asserted: the
// process count is the product of the degrees, gbs = mbs x dp x accumulation, the pipeline
// layout and schedule, the offload form, dropout 0 and the model's RoPE base, MoE settings.

// What Megatron-LM's argparse sees: every "--flag [value]" of the script's bash arrays, and the
// torchrun process count (GPUS_PER_NODE x NUM_NODES).
struct MegatronArgs {
  std::map<std::string, std::string> flags;  // "" for store_true flags.
  int64_t processes = 0;
};

MegatronArgs read_megatron(const std::string& script) {
  MegatronArgs args;
  std::istringstream lines(script);
  std::string line;
  int64_t per_node = 0, nodes = 0;
  bool in_array = false;
  while (std::getline(lines, line)) {
    if (line.rfind("GPUS_PER_NODE=", 0) == 0) per_node = std::stoll(line.substr(14));
    if (line.rfind("NUM_NODES=", 0) == 0) nodes = std::stoll(line.substr(10));
    if (line.size() > 2 && line.substr(line.size() - 2) == "=(") {
      in_array = true;
      continue;
    }
    if (line == ")") in_array = false;
    if (!in_array || line.rfind("  --", 0) != 0) continue;
    std::string body = line.substr(2);
    size_t space = body.find(' ');
    std::string flag = body.substr(0, space);
    std::string value = space == std::string::npos ? "" : body.substr(space + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    INFO(flag);
    CHECK(args.flags.count(flag) == 0);  // argparse would take the last; we write each once.
    args.flags[flag] = value;
  }
  args.processes = per_node * nodes;
  return args;
}

int64_t flag_int(const MegatronArgs& args, const std::string& flag, int64_t fallback) {
  auto it = args.flags.find(flag);
  return it == args.flags.end() ? fallback : std::stoll(it->second);
}

// Layers per pipeline rank as Megatron assigns them from its flags (uniform, first/last, or the
// explicit --pipeline-model-parallel-layout, virtual stage i on rank i % pp), and the virtual
// stages per rank.
std::pair<std::vector<int64_t>, int64_t> megatron_rank_layers(const MegatronArgs& args) {
  const int64_t layers = flag_int(args, "--num-layers", 0);
  const int64_t pp = flag_int(args, "--pipeline-model-parallel-size", 1);
  std::vector<int64_t> per_rank(pp, 0);
  if (args.flags.count("--hybrid-layer-pattern")) {
    // arguments.py: the "|"-separated segments are the pipeline chunks, segment i on rank
    // i % pp; more segments than pp are virtual stages; no pipes on pp > 1 is an even split.
    std::string pattern = args.flags.at("--hybrid-layer-pattern");
    if (pattern.size() >= 2 && pattern.front() == '"') {
      pattern = pattern.substr(1, pattern.size() - 2);
    }
    std::vector<std::string> segments;
    std::istringstream parts(pattern);
    for (std::string segment; std::getline(parts, segment, '|');) segments.push_back(segment);
    if (segments.size() == 1 && pp > 1) {
      per_rank.assign(pp, static_cast<int64_t>(pattern.size()) / pp);
      return {per_rank, 1};
    }
    REQUIRE(static_cast<int64_t>(segments.size()) % pp == 0);
    for (size_t i = 0; i < segments.size(); ++i) {
      CHECK(segments[i].find_first_not_of("M*-E") == std::string::npos);
      per_rank[i % pp] += static_cast<int64_t>(segments[i].size());
    }
    return {per_rank, static_cast<int64_t>(segments.size()) / pp};
  }
  if (args.flags.count("--pipeline-model-parallel-layout")) {
    std::string layout = args.flags.at("--pipeline-model-parallel-layout");
    std::vector<std::string> stages;
    std::istringstream parts(layout);
    for (std::string stage; std::getline(parts, stage, '|');) stages.push_back(stage);
    for (size_t i = 0; i < stages.size(); ++i) {
      int64_t count = 0;
      for (size_t k = 0; k < stages[i].size(); ++k) {
        if (stages[i][k] != 't') continue;
        if (k + 1 < stages[i].size() && stages[i][k + 1] == '*') {
          count += std::stoll(stages[i].substr(k + 2));
        } else {
          ++count;
        }
      }
      per_rank[i % pp] += count;
    }
    return {per_rank, static_cast<int64_t>(stages.size()) / pp};
  }
  int64_t vpp = 1;
  if (args.flags.count("--num-layers-per-virtual-pipeline-stage")) {
    vpp = layers / pp / flag_int(args, "--num-layers-per-virtual-pipeline-stage", 1);
  }
  vpp = flag_int(args, "--num-virtual-stages-per-pipeline-rank", vpp);
  if (args.flags.count("--decoder-first-pipeline-num-layers")) {
    const int64_t first = flag_int(args, "--decoder-first-pipeline-num-layers", 0);
    const int64_t last = flag_int(args, "--decoder-last-pipeline-num-layers", 0);
    per_rank.assign(pp, pp > 2 ? (layers - first - last) / (pp - 2) : 0);
    per_rank.front() = first;
    per_rank.back() = last;
    return {per_rank, vpp};
  }
  per_rank.assign(pp, layers / pp);
  return {per_rank, vpp};
}

void check_megatron_means(const ModelSpec& model, const Plan& plan, const std::string& script) {
  MegatronArgs args = read_megatron(script);
  const int64_t tp = flag_int(args, "--tensor-model-parallel-size", 1);
  const int64_t pp = flag_int(args, "--pipeline-model-parallel-size", 1);
  const int64_t cp = flag_int(args, "--context-parallel-size", 1);
  // Megatron derives dp from the world size (initialize.py) and asserts it divides.
  REQUIRE(args.processes % (tp * pp * cp) == 0);
  const int64_t dp = args.processes / (tp * pp * cp);
  CHECK(args.processes == plan.num_gpus());
  CHECK((tp == plan.tp && pp == plan.pp && cp == plan.cp && dp == plan.dp));
  const int64_t mbs = flag_int(args, "--micro-batch-size", 0);
  const int64_t gbs = flag_int(args, "--global-batch-size", 0);
  REQUIRE(gbs % (mbs * dp) == 0);  // num_microbatches_calculator.py
  CHECK(gbs / (mbs * dp) == num_microbatches(plan));
  CHECK(mbs == plan.micro_batch_size);
  auto [rank_layers, vpp] = megatron_rank_layers(args);
  CHECK(rank_layers == stage_layer_counts(plan, model));
  CHECK(vpp == (plan.pp > 1 ? chunks_per_rank(plan.schedule, plan.vpp) : 1));
  // Megatron runs interleaving exactly when it has virtual stages (schedules.py).
  CHECK((vpp > 1) == (plan.pp > 1 && is_interleaved(plan.schedule) && plan.vpp > 1));
  CHECK(args.flags.count("--optimizer-cpu-offload") == (plan.offload_optimizer ? 1u : 0u));
  if (plan.offload_optimizer) {
    CHECK(std::stod(args.flags.at("--optimizer-offload-fraction")) == plan.offload_fraction);
    CHECK(args.flags.count("--use-distributed-optimizer") == 1);
    CHECK(args.flags.count("--overlap-cpu-optimizer-d2h-h2d") == 1);
  }
  CHECK(args.flags.at("--attention-dropout") == "0.0");
  CHECK(args.flags.at("--hidden-dropout") == "0.0");
  if (model.position_embedding == PositionEmbedding::kRope) {
    CHECK(std::stod(args.flags.at("--rotary-base")) == model.rope_theta);
  }
  if (model.moe) {
    CHECK(flag_int(args, "--num-experts", 0) == model.moe->num_experts);
    CHECK(flag_int(args, "--moe-router-topk", 0) == model.moe->top_k);
    CHECK(flag_int(args, "--expert-model-parallel-size", 1) == plan.ep);
    CHECK(args.flags.count("--moe-grouped-gemm") == 1);
    CHECK(args.flags.count("--moe-aux-loss-coeff") == 1);
  }
  if (plan.precision == Precision::kFp8) {
    // The recipe ppsim priced; MXFP8 in e4m3 (Megatron-Bridge's bf16_with_mxfp8_mixed), the
    // others in hybrid; the amax history only for delayed scaling.
    const Fp8Recipe recipe = fp8_recipe_in_force(plan);
    CHECK(args.flags.at("--fp8-recipe") == fp8_recipe_name(recipe));
    CHECK(args.flags.at("--fp8-format") == (recipe == Fp8Recipe::kMxfp8 ? "e4m3" : "hybrid"));
    const size_t amax_flags = recipe == Fp8Recipe::kDelayed ? 1 : 0;
    CHECK(args.flags.count("--fp8-amax-history-len") == amax_flags);
    CHECK(args.flags.count("--fp8-amax-compute-algo") == amax_flags);
  }
}

// DeepSpeed: the JSON as DeepSpeedConfig reads it, with the process count from the launch line
// (a note); the data-parallel size is processes / (pp x tp) (PipeModelDataParallelTopology).
void check_deepspeed_means(const Plan& plan, const LauncherOutput& output) {
  nlohmann::json config = nlohmann::json::parse(output.text);
  check_deepspeed_keys(config);
  int64_t per_node = 0, nodes = 1;
  for (const std::string& note : output.notes) {
    size_t at = note.find("--num_gpus ");
    if (note.rfind("launch:", 0) == 0 && at != std::string::npos) {
      per_node = std::stoll(note.substr(at + 11));
      size_t n = note.find("--num_nodes ");
      if (n != std::string::npos) nodes = std::stoll(note.substr(n + 12));
    }
  }
  const int64_t processes = per_node * nodes;
  CHECK(processes == plan.num_gpus());
  REQUIRE(processes % (plan.pp * plan.tp) == 0);
  const int64_t dp = processes / (plan.pp * plan.tp);
  // DeepSpeedConfig._batch_assertion.
  CHECK(config["train_batch_size"].get<int64_t>() ==
        config["train_micro_batch_size_per_gpu"].get<int64_t>() *
            config["gradient_accumulation_steps"].get<int64_t>() * dp);
  CHECK(config["gradient_accumulation_steps"].get<int64_t>() == num_microbatches(plan));
  const int stage = config["zero_optimization"]["stage"].get<int>();
  CHECK(stage == plan.zero_stage);
  if (plan.pp > 1) CHECK(stage < 2);  // pipe/engine.py
  const nlohmann::json& zero = config["zero_optimization"];
  CHECK(zero.contains("offload_optimizer") == plan.offload_optimizer);
  if (plan.offload_optimizer) {
    const double ratio = zero["offload_optimizer"].value("ratio", 1.0);
    CHECK(ratio == plan.offload_fraction);
    if (ratio < 1) CHECK(stage == 3);  // zero/config.py offload_ratio_check
  }
}

// torchtitan: the TOML as its ConfigManager and ParallelDims read it; the process count from the
// launch comment.
void check_torchtitan_means(const ModelSpec& model, const Plan& plan, const std::string& text) {
  auto tables = parse_toml(text);
  check_torchtitan_keys(tables);
  int64_t processes = 0;
  size_t at = text.find("NGPU=");
  if (at != std::string::npos) {
    processes = std::stoll(text.substr(at + 5));
  } else {
    at = text.find("--nproc_per_node=");
    size_t n = text.find("--nnodes=");
    REQUIRE((at != std::string::npos && n != std::string::npos));
    processes = std::stoll(text.substr(at + 17)) * std::stoll(text.substr(n + 9));
  }
  nlohmann::json& par = tables["parallelism"];
  const int64_t replicate = par["data_parallel_replicate_degree"].get<int64_t>();
  const int64_t shard = par["data_parallel_shard_degree"].get<int64_t>();
  const int64_t cp = par["context_parallel_degree"].get<int64_t>();
  const int64_t tp = par["tensor_parallel_degree"].get<int64_t>();
  const int64_t pp = par["pipeline_parallel_degree"].get<int64_t>();
  CHECK(replicate * shard * cp * tp * pp == processes);  // parallel_dims.py world-size rule
  CHECK(processes == plan.num_gpus());
  CHECK(replicate * shard == plan.dp);
  nlohmann::json& training = tables["training"];
  const int64_t local = training["local_batch_size"].get<int64_t>();
  const int64_t global = training["global_batch_size"].get<int64_t>();
  REQUIRE(global % (local * plan.dp) == 0);
  const int64_t accumulation = global / (local * plan.dp);
  if (pp > 1) {
    const int64_t microbatch = par["pipeline_parallel_microbatch_size"].get<int64_t>();
    CHECK(microbatch == plan.micro_batch_size);
    CHECK(accumulation * local / microbatch == num_microbatches(plan));
    CHECK(par["pipeline_parallel_schedule"] ==
          std::string(schedule_traits(plan.schedule).torch_class));
    // Layers per rank from the parts: loop placement (part i on rank i % pp) or V.
    const nlohmann::json& parts = par["module_fqns_per_model_part"];
    const int64_t per_rank = static_cast<int64_t>(parts.size()) / pp;
    CHECK(per_rank == chunks_per_rank(plan.schedule, plan.vpp));
    std::vector<int64_t> layers(pp, 0);
    for (size_t i = 0; i < parts.size(); ++i) {
      int64_t rank = rank_of_chunk(plan.schedule, pp, per_rank, static_cast<int64_t>(i));
      for (const auto& name : parts[i]) {
        if (name.get<std::string>().rfind("layers.", 0) == 0) ++layers[rank];
      }
    }
    CHECK(layers == stage_layer_counts(plan, model));
  } else {
    CHECK(local == plan.micro_batch_size);
    CHECK(accumulation == num_microbatches(plan));
  }
  const bool offload =
      training.contains("enable_cpu_offload") && training["enable_cpu_offload"].get<bool>();
  CHECK(offload == plan.offload_optimizer);
  if (offload) CHECK(shard * cp > 1);  // fsdp_enabled: else the policy is never applied
  if (model.moe) {
    CHECK(par["expert_parallel_degree"].get<int64_t>() == plan.ep);
    if (!model.qk_norm) CHECK(tables["model"]["name"] != "qwen3");
  }
}

TEST_CASE("Launcher exports: each golden file read as its launcher reads it means the plan") {
  for (const GoldenCase& entry : golden_cases()) {
    INFO(entry.name);
    ModelSpec model = load_model_spec(entry.model);
    for (LauncherFormat format : entry.formats) {
      INFO(launcher_format_name(format));
      Plan plan = parse_plan(entry.plan, "test");
      LauncherOutput output = export_case(format, entry);
      if (format == LauncherFormat::kMegatron) check_megatron_means(model, plan, output.text);
      if (format == LauncherFormat::kDeepSpeed) check_deepspeed_means(plan, output);
      if (format == LauncherFormat::kTorchTitan) check_torchtitan_means(model, plan, output.text);
    }
  }
}

TEST_CASE("Launcher exports: the planner's best plan per runtime exports and means itself") {
  // A small search per runtime; its best plan must export (the runtime runs it) and read back.
  struct Search {
    const char* model;
    Runtime runtime;
    LauncherFormat format;
  };
  for (const Search& search :
       {Search{"llama3-8b", Runtime::kMegatronCore, LauncherFormat::kMegatron},
        Search{"llama3-8b", Runtime::kDeepSpeed, LauncherFormat::kDeepSpeed},
        Search{"llama3-8b", Runtime::kTorchtitan, LauncherFormat::kTorchTitan},
        Search{"mixtral-8x7b", Runtime::kMegatronCore, LauncherFormat::kMegatron}}) {
    INFO(search.model << " on " << runtime_name(search.runtime));
    ModelSpec model = load_model_spec(search.model);
    ClusterSpec cluster = load_cluster_spec("dgx-h100-1");
    PlannerOptions options;
    options.space.global_batch_size = 64;
    options.space.seq_length = 4096;
    options.space.runtime = search.runtime;
    options.top = 3;
    options.threads = 2;
    PlanSearchResult result = search_plans(model, cluster, options);
    REQUIRE(!result.plans.empty());
    for (const RankedPlan& ranked : result.plans) {
      const Plan& plan = ranked.plan;
      INFO(plan_to_inline(plan));
      CHECK(!runtime_plan_problem(plan, model));
      LauncherOutput output;
      REQUIRE_NOTHROW(output = export_launcher(search.format, model, cluster, plan));
      if (search.format == LauncherFormat::kMegatron)
        check_megatron_means(model, plan, output.text);
      if (search.format == LauncherFormat::kDeepSpeed) check_deepspeed_means(plan, output);
      if (search.format == LauncherFormat::kTorchTitan)
        check_torchtitan_means(model, plan, output.text);
    }
  }
}

TEST_CASE("Launcher formats: names, file names and did-you-mean") {
  CHECK(launcher_format_names() == std::vector<std::string>{"megatron", "deepspeed", "torchtitan"});
  for (LauncherFormat format : kFormats) {
    CHECK(parse_launcher_format(launcher_format_name(format), "--format") == format);
  }
  CHECK(launcher_file_name(LauncherFormat::kMegatron) == "megatron_launch.sh");
  CHECK(launcher_file_name(LauncherFormat::kDeepSpeed) == "ds_config.json");
  CHECK(launcher_file_name(LauncherFormat::kTorchTitan) == "torchtitan_job.toml");
  try {
    parse_launcher_format("megatorn", "--format");
    FAIL("expected an InputError");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()) ==
          "--format: unknown launcher format 'megatorn'; expected one of megatron, deepspeed, "
          "torchtitan (did you mean 'megatron'?)");
  }
}

TEST_CASE("Megatron export: a GeGLU model (Gemma) gets --swiglu and a warning that names why") {
  LauncherOutput output = export_inline(LauncherFormat::kMegatron, "tests/data/hf/gemma-2-9b",
                                        "dgx-h100-1", "tp=8,mbs=1,gbs=8");
  CHECK(args_of(output.text, "MODEL_ARGS").count("--swiglu") == 1);
  bool warned = false;
  for (const std::string& warning : output.warnings) {
    warned = warned || contains(warning, "no GeGLU, so the script writes --swiglu");
  }
  CHECK(warned);
  // A SwiGLU model exports without that warning.
  for (const std::string& warning :
       export_inline(LauncherFormat::kMegatron, "llama3-8b", "dgx-h100-1", "tp=8,mbs=1,gbs=8")
           .warnings) {
    CHECK_FALSE(contains(warning, "GeGLU"));
  }
}

}  // namespace ppsim
