#include "simulator/accuracy/public_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numeric>

#include "simulator/spec/data_root.h"
#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/units.h"

namespace ppsim {
namespace {

// A row problem: becomes PublicRun::reason.
struct RowProblem {
  std::string message;
};

// Link latencies of the DGX node files (configs/clusters/nodes/dgx-a100.json): NCCL's Ring
// Simple per-hop latency over NVLink is a few us, over the NIC about 5 us (REFERENCE.md 6).
constexpr double kNvlinkLatency = 2.5e-6;
constexpr double kNicLatency = 5e-6;
// GPUs per node of HGX/DGX boards (DGX A100, DGX H100, HGX H200/B200).
constexpr int64_t kGpusPerNode = 8;

// Tokenizer vocabularies, per framework default (public_run.h).
constexpr int64_t kGpt2Vocab = 50257;     // GPT-2 BPE (Megatron-LM GPT examples).
constexpr int64_t kLlama3Vocab = 128256;  // Llama 3 tokenizer (torchtitan's default model).
constexpr int64_t kMptVocab = 50368;      // llm-foundry mpt-*.yaml vocab_size.

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string trim(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// True when `word` appears in `text` delimited by non-letters.
bool has_word(const std::string& text, std::string_view word) {
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    bool left = pos == 0 || !std::isalpha(static_cast<unsigned char>(text[pos - 1]));
    size_t end = pos + word.size();
    bool right = end == text.size() || !std::isalpha(static_cast<unsigned char>(text[end]));
    if (left && right) return true;
  }
  return false;
}

// Whether a (lower-case) framework cell names Megatron-Bridge or NeMo, whose published runs come
// from their recipes: the facts those recipes set stand in for the cells a row leaves empty.
bool runs_nemo_recipes(const std::string& framework) {
  return contains(framework, "megatron-bridge") || contains(framework, "nemo");
}

bool is_missing(const std::string& text) {
  std::string value = lower(trim(text));
  return value.empty() || value == "n/a" || value == "na" || value == "-" || value == "none stated";
}

// Reads the fields of one record by column name.
class RowReader {
 public:
  RowReader(const CsvTable& table, const CsvRecord& record) : table_(table), record_(record) {}

  // Trimmed text; "" when the column is absent.
  std::string text(std::string_view column) const {
    std::optional<size_t> index = table_.column_index(column);
    return index ? trim(record_.fields[*index]) : std::string();
  }

  std::optional<int64_t> integer(std::string_view column, int64_t min) const {
    std::string value = text(column);
    if (is_missing(value)) return std::nullopt;
    int64_t parsed = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    // Accept "8.0"-style integers written by spreadsheets.
    if (error != std::errc() || end != value.data() + value.size()) {
      double real = 0;
      auto [real_end, real_error] =
          std::from_chars(value.data(), value.data() + value.size(), real);
      if (real_error == std::errc() && real_end == value.data() + value.size() &&
          real == std::floor(real) && std::abs(real) < 9e15) {
        parsed = static_cast<int64_t>(real);
      } else {
        throw RowProblem{fmt::format("column '{}' is '{}', expected an integer", column, value)};
      }
    }
    if (parsed < min) {
      throw RowProblem{fmt::format("column '{}' is {}, expected at least {}", column, parsed, min)};
    }
    return parsed;
  }

  std::optional<double> number(std::string_view column) const {
    std::string value = text(column);
    if (is_missing(value)) return std::nullopt;
    double parsed = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (error != std::errc() || end != value.data() + value.size() || !std::isfinite(parsed)) {
      throw RowProblem{fmt::format("column '{}' is '{}', expected a number", column, value)};
    }
    return parsed;
  }

  int64_t required_integer(std::string_view column, int64_t min) const {
    std::optional<int64_t> value = integer(column, min);
    if (!value) throw RowProblem{fmt::format("column '{}' is empty (required)", column)};
    return *value;
  }

 private:
  const CsvTable& table_;
  const CsvRecord& record_;
};

Framework framework_of(const std::string& text) {
  std::string value = lower(text);
  if (contains(value, "torchtitan")) return Framework::kTorchtitan;
  if (contains(value, "llm-foundry") || contains(value, "composer") ||
      contains(value, "mosaicml")) {
    return Framework::kLlmFoundry;
  }
  if (contains(value, "megatron") || contains(value, "zero-bubble") ||
      contains(value, "zero bubble")) {
    return Framework::kMegatron;
  }
  return Framework::kUnknown;
}

// Architecture families (public_run.h).
enum class Family { kGpt, kLlama, kMpt };

Family family_of(const std::string& model_name, std::optional<int64_t> ffn, int64_t hidden,
                 std::vector<std::string>& defaults) {
  std::string name = lower(model_name);
  for (const char* word : {"llama", "mistral", "mixtral", "qwen", "deepseek"}) {
    if (contains(name, word)) return Family::kLlama;
  }
  if (contains(name, "mpt")) return Family::kMpt;
  for (const char* word : {"gpt", "nlg", "bloom", "opt"}) {
    if (contains(name, word)) return Family::kGpt;
  }
  if (!ffn || *ffn == 4 * hidden) {
    defaults.push_back(
        "architecture not named: GPT-style (GeLU, LayerNorm, learned positions, "
        "tied, biases) as ffn_hidden is 4*hidden");
    return Family::kGpt;
  }
  defaults.push_back(
      "architecture not named: Llama-style (SwiGLU, RMSNorm, rope, untied) as "
      "ffn_hidden is not 4*hidden");
  return Family::kLlama;
}

// The zoo model (models/<name>.json) a row's model text names, when there is one: "DeepSeekV3
// (w/o MTP)" -> deepseek-v3, "Qwen3_30B_a3B (tokendrop)" -> qwen3-30b-a3b, "Nemotron_3_Nano"
// -> nemotron-3-nano-30b-a3b, "Nemotron_3_Super" -> nemotron-3-super-120b-a12b. The rows' "arch
// fields from public HF model config" are the zoo files' sources, which also hold what the
// columns cannot (MLA ranks, shared experts, dense first layers, head_dim, qk-norm).
std::optional<ModelSpec> zoo_model_for(const std::string& model_text) {
  std::string name = lower(model_text.substr(0, model_text.find('(')));
  std::string stem;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.')
      stem += c;
    else if ((c == '_' || c == '-' || c == ' ') && !stem.empty() && stem.back() != '-')
      stem += '-';
  }
  while (!stem.empty() && stem.back() == '-') stem.pop_back();
  if (stem == "deepseekv3") stem = "deepseek-v3";
  if (stem == "nemotron-3-nano") stem = "nemotron-3-nano-30b-a3b";
  if (stem == "nemotron-3-super") stem = "nemotron-3-super-120b-a12b";
  std::string path = zoo_file("models", stem);
  if (path.empty()) return std::nullopt;
  return load_model_spec(path);
}

// What an MoE row's tags and notes say about routing and MTP, applied to its zoo model.
void read_moe_run_facts(const RowReader& row, ModelSpec& model,
                        std::vector<std::string>& defaults) {
  const std::string tags = lower(row.text("model"));
  const std::string notes = lower(row.text("notes"));
  if (contains(notes, "force-balanced") || contains(notes, "force balanced")) {
    model.moe->imbalance = 1.0;
    defaults.push_back("routing force-balanced (notes): moe.imbalance 1.0");
  }
  if (contains(tags, "tokendrop")) {
    // Megatron-Bridge's token-drop presets: --moe-expert-capacity-factor 1.0 with
    // --moe-pad-expert-input-to-capacity.
    model.moe->capacity_factor = 1.0;
    defaults.push_back("tokendrop: moe.capacity_factor 1.0, padded (Megatron-Bridge preset)");
  }
  if (contains(tags, "w/o mtp")) {
    model.mtp_layers = 0;
  } else if (contains(tags, "w/ mtp")) {
    model.mtp_layers = std::max<int64_t>(1, model.mtp_layers);
  } else if (model.mtp_layers > 0) {
    defaults.push_back(fmt::format("MTP not tagged: the model's {} layer(s)", model.mtp_layers));
  }
}

ModelSpec read_model(const RowReader& row, Framework framework,
                     std::vector<std::string>& defaults) {
  if (std::optional<ModelSpec> zoo = zoo_model_for(row.text("model"))) {
    // A zoo model: the row's columns must agree with it.
    ModelSpec model = *zoo;
    if (row.integer("layers", 1).value_or(model.num_layers) != model.num_layers ||
        row.integer("hidden", 1).value_or(model.hidden_size) != model.hidden_size ||
        row.integer("heads", 1).value_or(model.num_attention_heads) != model.num_attention_heads) {
      throw RowProblem{fmt::format("layers/hidden/heads disagree with zoo model {}", model.name)};
    }
    model.seq_length = row.required_integer("seq_len", 1);
    model.max_position_embeddings = std::max(model.max_position_embeddings, model.seq_length);
    if (model.moe) read_moe_run_facts(row, model, defaults);
    defaults.push_back("architecture from the zoo model " + model.name);
    return model;
  }
  ModelSpec model;
  model.name = row.text("model").empty() ? "row " + row.text("row_id") : row.text("model");
  model.num_layers = row.required_integer("layers", 1);
  model.hidden_size = row.required_integer("hidden", 1);
  model.num_attention_heads = row.required_integer("heads", 1);
  model.seq_length = row.required_integer("seq_len", 1);
  std::optional<int64_t> ffn = row.integer("ffn_hidden", 1);
  Family family = family_of(model.name, ffn, model.hidden_size, defaults);
  if (ffn) {
    model.ffn_hidden_size = *ffn;
  } else {
    model.ffn_hidden_size = 4 * model.hidden_size;
    defaults.push_back("ffn_hidden not stated: 4*hidden (GPT)");
  }
  if (std::optional<int64_t> kv = row.integer("kv_heads", 1)) {
    model.num_kv_heads = *kv;
  } else {
    model.num_kv_heads = model.num_attention_heads;
    defaults.push_back("kv_heads not stated: = heads (MHA)");
  }
  if (std::optional<int64_t> vocab = row.integer("vocab", 1)) {
    model.vocab_size = *vocab;
  } else {
    switch (framework) {
      case Framework::kTorchtitan:
        model.vocab_size = kLlama3Vocab;
        defaults.push_back("vocab not stated: 128256 (torchtitan's Llama 3 tokenizer)");
        break;
      case Framework::kLlmFoundry:
        model.vocab_size = kMptVocab;
        defaults.push_back("vocab not stated: 50368 (llm-foundry mpt yamls)");
        break;
      default:
        model.vocab_size = kGpt2Vocab;
        defaults.push_back("vocab not stated: 50257 (GPT-2 BPE, Megatron-LM's GPT examples)");
        break;
    }
  }
  if (model.hidden_size % model.num_attention_heads != 0) {
    throw RowProblem{fmt::format("hidden {} is not a multiple of heads {}", model.hidden_size,
                                 model.num_attention_heads)};
  }
  model.head_dim = model.hidden_size / model.num_attention_heads;
  switch (family) {
    case Family::kLlama:
      model.activation = Activation::kSwiglu;
      model.norm = Norm::kRmsNorm;
      model.position_embedding = PositionEmbedding::kRope;
      model.tied_embeddings = false;
      model.linear_bias = false;
      break;
    case Family::kMpt:
      model.activation = Activation::kGelu;
      model.norm = Norm::kLayerNorm;
      // Learned positions, not ALiBi: llm-foundry's pretrain yamls (which its benchmark driver
      // runs) set no attn_config.alibi, and MPTConfig's default is learned_pos_emb=True.
      model.position_embedding = PositionEmbedding::kLearned;
      model.tied_embeddings = true;
      model.linear_bias = false;
      break;
    case Family::kGpt:
      model.activation = Activation::kGelu;
      model.norm = Norm::kLayerNorm;
      model.position_embedding = PositionEmbedding::kLearned;
      model.tied_embeddings = true;
      model.linear_bias = true;
      break;
  }
  model.max_position_embeddings = model.seq_length;
  std::optional<int64_t> experts = row.integer("moe_experts", 1);
  if (experts && *experts > 1) {
    MoeSpec moe;
    moe.num_experts = *experts;
    if (std::optional<int64_t> top_k = row.integer("moe_topk", 1)) {
      moe.top_k = *top_k;
    } else {
      moe.top_k = 2;
      defaults.push_back("moe_topk not stated: 2 (Mixtral, GShard)");
    }
    if (std::optional<int64_t> expert_ffn = row.integer("moe_ffn_hidden", 1)) {
      moe.expert_ffn_hidden_size = *expert_ffn;
    } else {
      moe.expert_ffn_hidden_size = model.ffn_hidden_size;
      defaults.push_back("moe_ffn_hidden not stated: = ffn_hidden");
    }
    moe.every_n_layers = 1;
    if (moe.top_k > moe.num_experts) {
      throw RowProblem{
          fmt::format("moe_topk {} exceeds moe_experts {}", moe.top_k, moe.num_experts)};
    }
    model.moe = moe;
  }
  try {
    validate_model_spec(model, "row");
  } catch (const InputError& error) {
    throw RowProblem{"model: " + error.message()};
  }
  return model;
}

// The first "<number> GB" in the text, if any.
std::optional<double> stated_capacity_gb(const std::string& text) {
  std::string value = lower(text);
  for (size_t pos = value.find("gb"); pos != std::string::npos; pos = value.find("gb", pos + 2)) {
    size_t end = pos;
    while (end > 0 && value[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > 0 && (std::isdigit(static_cast<unsigned char>(value[begin - 1])) ||
                         value[begin - 1] == '.')) {
      --begin;
    }
    if (begin == end) continue;
    double number = 0;
    auto [ptr, error] = std::from_chars(value.data() + begin, value.data() + end, number);
    if (error == std::errc() && number > 0) return number;
  }
  return std::nullopt;
}

// Nominal capacity of a catalog GPU as its name states it ("...-80GB" -> 80).
std::optional<double> nominal_capacity_gb(const std::string& catalog_name) {
  return stated_capacity_gb(catalog_name);
}

// Node NIC bandwidth from the interconnect text.
struct NicGuess {
  NicSpec nic;
  std::string said;  // How it was read, for the defaults list; empty when stated plainly.
  bool stated = false;
};

// All "<number><unit>" link rates in the text, in Gb/s, each with the count of an "Nx" before it.
struct Rate {
  double gbps = 0;
  double count = 1;
};

// The most NICs a node's text may state: published nodes carry 8 to 18 (DGX H100/B200: 8 compute
// NICs; GB200 NVL72 trays: 4 per tray, 72 per rack). A larger "N x" is not a NIC count, and
// would overflow the integer comparison below (found by public_runs_csv_fuzz).
constexpr double kMaxNicsPerNode = 1024;

std::vector<Rate> link_rates(const std::string& text) {
  std::vector<Rate> rates;
  std::string value = lower(text);
  for (size_t i = 0; i < value.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(value[i])) ||
        (i > 0 &&
         (std::isdigit(static_cast<unsigned char>(value[i - 1])) || value[i - 1] == '.'))) {
      continue;
    }
    size_t j = i;
    while (j < value.size() &&
           (std::isdigit(static_cast<unsigned char>(value[j])) || value[j] == '.'))
      ++j;
    double number = 0;
    std::from_chars(value.data() + i, value.data() + j, number);
    size_t k = j;
    while (k < value.size() && value[k] == ' ') ++k;
    double scale = 0;
    if (value.compare(k, 4, "gb/s") == 0 || value.compare(k, 4, "gbps") == 0 ||
        value.compare(k, 4, "gbit") == 0) {
      scale = 1;
    }
    if (value.compare(k, 4, "tb/s") == 0 || value.compare(k, 4, "tbps") == 0) scale = 1000;
    // "GB/s" (bytes) cannot be told from "Gb/s" (bits) once lowered; a NIC is quoted in bits.
    if (scale > 0) {
      Rate rate;
      rate.gbps = number * scale;
      // "8x200Gb/s" or "8 x 200 Gb/s": the count before.
      size_t x = i;
      while (x > 0 && value[x - 1] == ' ') --x;
      if (x > 0 && (value[x - 1] == 'x' || value[x - 1] == '*')) {
        size_t c_end = x - 1;
        while (c_end > 0 && value[c_end - 1] == ' ') --c_end;
        size_t c_begin = c_end;
        while (c_begin > 0 && std::isdigit(static_cast<unsigned char>(value[c_begin - 1])))
          --c_begin;
        if (c_begin < c_end) {
          double count = 0;
          std::from_chars(value.data() + c_begin, value.data() + c_end, count);
          if (count > 0 && count <= kMaxNicsPerNode) rate.count = count;
        }
      }
      rates.push_back(rate);
    }
    i = j;
  }
  return rates;
}

NicGuess read_nic(const std::string& interconnect, const GpuSpec& gpu, int64_t gpus_per_node) {
  NicGuess guess;
  guess.nic.link.latency = kNicLatency;
  std::string value = lower(interconnect);
  std::vector<Rate> rates = link_rates(value);
  if (!rates.empty()) {
    const Rate& rate = rates.front();
    guess.stated = true;
    double bytes = gbps_to_bytes_per_s(rate.gbps);
    if (rate.count > 1) {
      // N NICs of R per node.
      if (static_cast<int64_t>(rate.count) == gpus_per_node) {
        guess.nic = NicSpec{LinkSpec{bytes, kNicLatency}, true};
      } else {
        guess.nic = NicSpec{LinkSpec{bytes * rate.count, kNicLatency}, false};
      }
    } else if (contains(value, "per gpu") || contains(value, "per-gpu") ||
               contains(value, "each gpu")) {
      guess.nic = NicSpec{LinkSpec{bytes, kNicLatency}, true};
    } else if (contains(value, "node")) {
      guess.nic = NicSpec{LinkSpec{bytes, kNicLatency}, false};
    } else {
      guess.nic = NicSpec{LinkSpec{bytes, kNicLatency}, true};
      guess.said = fmt::format("NIC {} Gb/s taken as one per GPU (rail-optimised)", rate.gbps);
    }
    return guess;
  }
  struct Named {
    const char* name;
    double gbps;
  };
  for (Named named : {Named{"xdr", 800}, Named{"ndr", 400}, Named{"hdr", 200}, Named{"edr", 100}}) {
    if (contains(value, named.name)) {
      guess.stated = true;
      guess.nic = NicSpec{LinkSpec{gbps_to_bytes_per_s(named.gbps), kNicLatency}, true};
      guess.said = fmt::format("NIC '{}' taken as one {} Gb/s {} per GPU", interconnect, named.gbps,
                               named.name);
      return guess;
    }
  }
  bool ampere_or_older = contains(gpu.name, "A100") || contains(gpu.name, "V100");
  double gbps = ampere_or_older ? 200 : 400;
  guess.nic = NicSpec{LinkSpec{gbps_to_bytes_per_s(gbps), kNicLatency}, true};
  guess.said = fmt::format("NIC speed not stated: {}x{} Gb/s per node ({} reference)",
                           gpus_per_node, gbps, ampere_or_older ? "DGX A100 HDR" : "DGX H100 NDR");
  return guess;
}

ClusterSpec read_cluster(const RowReader& row, const std::string& gpu_type, int64_t num_gpus,
                         std::vector<std::string>& defaults) {
  std::optional<std::string> name = catalog_gpu_for(gpu_type);
  if (!name) {
    throw RowProblem{
        fmt::format("unsupported GPU '{}' (ppsim knows {})", gpu_type, join_names(gpu_names()))};
  }
  GpuSpec gpu = *find_gpu(*name);
  std::string text = lower(gpu_type);
  if (!contains(text, "sxm") && !contains(text, "pcie") && !contains(text, "nvl") &&
      contains(gpu.name, "SXM")) {
    defaults.push_back(
        fmt::format("GPU form factor not stated: '{}' taken as {}", gpu_type, gpu.name));
  }
  std::optional<double> stated = stated_capacity_gb(gpu_type);
  std::optional<double> nominal = nominal_capacity_gb(gpu.name);
  if (stated && nominal && std::abs(*stated - *nominal) > 1.5) {
    // Scale the driver-visible capacity by the stated/nominal ratio (gpu_catalog.cc convention).
    gpu.memory_bytes *= *stated / *nominal;
    gpu.name += fmt::format("({:.0f}GB)", *stated);
    defaults.push_back(
        fmt::format("GPU memory {:.0f} GB from '{}' (catalog peaks and bandwidths "
                    "kept)",
                    *stated, gpu_type));
  }
  NodeGroup group;
  group.gpus_per_node = std::min(kGpusPerNode, num_gpus);
  group.count = (num_gpus + group.gpus_per_node - 1) / group.gpus_per_node;
  group.gpu = gpu;
  if (contains(text, "nvl72")) {
    // Trays of 4 in NVLink domains: 72-GPU racks when the job fills whole racks, else the
    // 64-GPU (16-tray) blocks such jobs are scheduled on, which leave 2 trays of a rack spare.
    const int64_t domain = num_gpus % 72 == 0 ? 72 : 64;
    group.host_gpus = 4;
    group.gpus_per_node = std::min(domain, num_gpus);
    group.count = (num_gpus + group.gpus_per_node - 1) / group.gpus_per_node;
    if (domain == 64 && num_gpus > 64) {
      defaults.push_back("NVL72 job of " + std::to_string(num_gpus) +
                         " GPUs taken as 64-GPU NVLink blocks (16 of a rack's 18 trays)");
    }
  }
  double intra = gpu.nvlink_bandwidth > 0 ? gpu.nvlink_bandwidth : gpu.pcie_bandwidth;
  group.intra_node = LinkSpec{intra, kNvlinkLatency};
  NicGuess nic = read_nic(row.text("interconnect"), gpu, group.gpus_per_host());
  group.nic = nic.nic;
  if (!nic.said.empty() && group.count > 1) defaults.push_back(nic.said);
  ClusterSpec cluster;
  cluster.name = fmt::format("{}x{} {}", group.count, group.gpus_per_node, gpu.name);
  cluster.nodes.push_back(group);
  return cluster;
}

// The ppsim schedule name a published schedule text describes.
std::string read_schedule_name(const std::string& text) {
  std::string value = lower(text);
  if (is_missing(value)) return schedule_name(kDefaultSchedule);
  if (contains(value, "zero bubble") || contains(value, "zero-bubble") || contains(value, "zb")) {
    if (contains(value, "zbv") || contains(value, "zb-v") || contains(value, "v-shape") ||
        contains(value, "v shape")) {
      return "zbv";
    }
    // "auto-searched" or "ZB-1p"/"ZB-2p" is the paper's searched schedule (zb-1p, zb-2p);
    // "ZB-H1"/"ZB-H2" its handcrafted forms.
    const bool searched = contains(value, "auto") || contains(value, "search");
    if (contains(value, "2p") || contains(value, "h2")) {
      return searched || contains(value, "zb-2p") ? "zb-2p" : "zb-h2";
    }
    if (contains(value, "p*m_b") || contains(value, "1p") || contains(value, "h1")) {
      return searched || contains(value, "zb-1p") ? "zb-1p" : "zb-h1";
    }
    throw RowProblem{
        fmt::format("unsupported schedule '{}' (zero-bubble variant not named: "
                    "ZB-1p/ZB-H1, ZB-2p/ZB-H2 or ZB-V)",
                    text)};
  }
  if (contains(value, "dualpipe")) return "dualpipev";
  if (contains(value, "interleav") || contains(value, "virtual")) return "interleaved-1f1b";
  if (contains(value, "gpipe")) return "gpipe";
  if (contains(value, "1f1b") || contains(value, "pipedream")) return "1f1b";
  throw RowProblem{
      fmt::format("unsupported schedule '{}' (ppsim runs {})", text, join_names(schedule_names()))};
}

ScheduleKind read_schedule(const std::string& text) {
  return *find_schedule(read_schedule_name(text));
}

Recompute read_recompute(const std::string& text, std::vector<std::string>& defaults) {
  std::string value = lower(text);
  if (is_missing(value) || value == "none" || value == "no" || value == "false") {
    if (is_missing(value)) defaults.push_back("recompute not stated: none");
    return Recompute::kNone;
  }
  if (contains(value, "selective")) {
    if (has_word(value, "op") || has_word(value, "layer")) {
      defaults.push_back(
          fmt::format("recompute '{}' (torchtitan selective AC) simulated as selective: "
                      "torchtitan's op policy's memory, the attention core's re-run time",
                      text));
    }
    return Recompute::kSelective;
  }
  if (contains(value, "full") || contains(value, "activation checkpointing") || value == "yes" ||
      value == "true") {
    return Recompute::kFull;
  }
  if (value.rfind("none", 0) == 0) return Recompute::kNone;
  throw RowProblem{
      fmt::format("unsupported recompute '{}' (expected none, selective or full)", text)};
}

int read_zero_stage(const std::string& text, Framework framework,
                    const std::string& framework_text, std::vector<std::string>& defaults) {
  std::string value = lower(text);
  if (is_missing(value)) {
    if (framework == Framework::kTorchtitan || framework == Framework::kLlmFoundry) {
      defaults.push_back("sharding not stated: FSDP full shard (ZeRO-3), the framework's default");
      return 3;
    }
    return 0;
  }
  if (contains(value, "full_shard") || contains(value, "fsdp2") || contains(value, "zero-3") ||
      contains(value, "zero3") || contains(value, "zero stage 3") || value == "fsdp") {
    return 3;
  }
  if (contains(value, "shard_grad_op") || contains(value, "zero-2") || contains(value, "zero2")) {
    return 2;
  }
  if (contains(value, "distributed optimizer") || contains(value, "distopt") ||
      contains(value, "zero-1") || contains(value, "zero1")) {
    return 1;
  }
  // Plain data parallelism, however spelled ("DDP (FSDP=0)" is DDP, not FSDP).
  if (value.rfind("none", 0) == 0 || value == "no" || has_word(value, "ddp") ||
      contains(value, "fsdp=0") || contains(value, "fsdp = 0")) {
    // Megatron-Bridge and NeMo 2 recipes shard the optimizer over DDP's ranks: every
    // pretraining recipe's DistributedDataParallelConfig sets use_distributed_optimizer=True
    // (Megatron-Bridge src/megatron/bridge/recipes/*, e.g. qwen/qwen3_moe.py and
    // deepseek/deepseek_v3.py; NeMo nemo/collections/llm/recipes/optim/adam.py).
    if (has_word(value, "ddp") && runs_nemo_recipes(lower(framework_text))) {
      defaults.push_back(
          "DDP under Megatron-Bridge/NeMo: the distributed optimizer (zero_stage 1, the "
          "recipes' use_distributed_optimizer=True)");
      return 1;
    }
    return 0;
  }
  if (contains(value, "fsdp")) {
    defaults.push_back(fmt::format("sharding '{}' taken as FSDP full shard (ZeRO-3)", text));
    return 3;
  }
  throw RowProblem{
      fmt::format("unsupported fsdp_zero_distopt '{}' (expected FSDP FULL_SHARD / "
                  "SHARD_GRAD_OP, ZeRO-1/2/3, distributed optimizer or none)",
                  text)};
}

Precision read_precision(const std::string& text, const std::string& framework_text,
                         std::vector<std::string>& defaults) {
  std::string value = lower(text);
  if (is_missing(value)) {
    std::string framework = lower(framework_text);
    if (contains(framework, "zero-bubble") || contains(framework, "zero bubble")) {
      // sail-sg/zero-bubble-pipeline-parallelism's launch script (examples/
      // pretrain_zero_bubble.sh) adds --fp16 unless FP32 is set: fp16 keeps 2-byte gradients.
      defaults.push_back("precision not stated: fp16 (the zero-bubble fork's launch script)");
      return Precision::kFp16;
    }
    defaults.push_back("precision not stated: bf16");
    return Precision::kBf16;
  }
  if (contains(value, "fp8") || contains(value, "float8")) return Precision::kFp8;
  // NVFP4 (Megatron-Bridge's nvfp4 preset: Transformer Engine's NVFP4BlockScaling).
  if (contains(value, "fp4")) return Precision::kNvfp4;
  bool fp16 = contains(value, "fp16") || contains(value, "float16");
  bool bf16 = contains(value, "bf16") || contains(value, "bfloat16");
  if (bf16 && !fp16) return Precision::kBf16;
  if (fp16 && !bf16) return Precision::kFp16;
  if (contains(value, "mixed") || (fp16 && bf16) || contains(value, "amp")) {
    defaults.push_back(fmt::format("precision '{}': bf16 (same peak as fp16)", text));
    return Precision::kBf16;
  }
  throw RowProblem{
      fmt::format("unsupported precision '{}' (expected bf16, fp16, fp8 or nvfp4)", text)};
}

// The fp8 recipe a precision label names: Megatron-Bridge's "MXFP8" / "FP8-MX" (MXFP8 block
// scaling), "FP8-CS" (current scaling, tensorwise), "FP8-DS" (delayed), "blockwise"; nullopt
// when it names none (the runtime's default, plan.h fp8_recipe_in_force).
std::optional<Fp8Recipe> read_fp8_recipe(const std::string& text) {
  const std::string value = lower(text);
  if (contains(value, "mxfp8") || contains(value, "fp8-mx") || contains(value, "fp8_mx")) {
    return Fp8Recipe::kMxfp8;
  }
  if (contains(value, "fp8-cs") || contains(value, "fp8_cs") || contains(value, "current") ||
      contains(value, "tensorwise")) {
    return Fp8Recipe::kTensorwise;
  }
  if (contains(value, "fp8-ds") || contains(value, "fp8_ds") || contains(value, "delayed")) {
    return Fp8Recipe::kDelayed;
  }
  if (contains(value, "blockwise") || contains(value, "block-wise")) return Fp8Recipe::kBlockwise;
  return std::nullopt;
}

bool read_flag(const std::string& column, const std::string& text) {
  std::string value = lower(text);
  if (is_missing(value) || value == "no" || value == "false" || value == "0") return false;
  if (value == "yes" || value == "true" || value == "1") return true;
  throw RowProblem{fmt::format("column '{}' is '{}', expected yes or no", column, text)};
}

// Chunks per stage for interleaving whose vp is not stated: one layer per chunk (the papers'
// "each transformer layer a chunk"), so as many chunks as the fullest stage holds layers. The
// first and last stages may hold fewer (their embedding and loss take a layer's slot, and
// chunk_layout leaves their last chunk without layers), but every middle stage needs a layer
// per chunk; where the middle stages differ, the largest count that divides every stage's
// layers (equal chunks), or 1.
int64_t chunks_of_one_layer(const std::vector<int64_t>& layers) {
  const int64_t fullest = *std::max_element(layers.begin(), layers.end());
  bool middles_full = true;
  for (size_t stage = 1; stage + 1 < layers.size(); ++stage) {
    middles_full = middles_full && layers[stage] == fullest;
  }
  if (middles_full) return fullest;
  int64_t g = 0;
  for (int64_t count : layers) g = std::gcd(g, count);
  return g;
}

Plan read_plan(const RowReader& row, const ModelSpec& model, int64_t num_gpus, Framework framework,
               std::vector<std::string>& defaults) {
  Plan plan;
  plan.tp = row.integer("tp", 1).value_or(1);
  plan.pp = row.integer("pp", 1).value_or(1);
  plan.cp = row.integer("cp", 1).value_or(1);
  plan.ep = row.integer("ep", 1).value_or(1);
  const std::string framework_text = lower(row.text("framework"));
  const bool nemo_recipes = runs_nemo_recipes(framework_text);
  if (model.is_moe() && plan.tp > 1 && nemo_recipes) {
    // The columns have no expert tensor-parallel size; Megatron-Bridge's MoE recipes set it to
    // 1 (scripts/performance/configs/*/*_workload_base_configs.py: BASE_DEEPSEEK_V3_CONFIG,
    // BASE_QWEN3_*_CONFIG expert_tensor_parallel_size=1), not Megatron's default of tp.
    plan.etp = 1;
    defaults.push_back(
        "expert tensor parallelism not stated: etp 1 (Megatron-Bridge MoE recipes)");
  }
  int64_t model_parallel = plan.tp * plan.pp * plan.cp;
  if (std::optional<int64_t> dp = row.integer("dp", 1)) {
    plan.dp = *dp;
  } else {
    if (num_gpus % model_parallel != 0) {
      throw RowProblem{
          fmt::format("num_gpus {} is not a multiple of tp*pp*cp = {}", num_gpus, model_parallel)};
    }
    plan.dp = num_gpus / model_parallel;
    defaults.push_back(fmt::format("dp not stated: num_gpus/(tp*pp*cp) = {}", plan.dp));
  }
  if (plan.num_gpus() != num_gpus) {
    throw RowProblem{fmt::format("tp*pp*dp*cp = {}*{}*{}*{} = {} but num_gpus is {}", plan.tp,
                                 plan.pp, plan.dp, plan.cp, plan.num_gpus(), num_gpus)};
  }
  std::optional<int64_t> accumulation = row.integer("grad_accum", 1);
  std::optional<int64_t> gbs = row.integer("global_batch", 1);
  std::optional<int64_t> mbs = row.integer("micro_batch", 1);
  if (!mbs) {
    if (!gbs || !accumulation || *gbs % (plan.dp * *accumulation) != 0) {
      throw RowProblem{
          "micro_batch is empty and cannot be derived from global_batch/(dp*grad_accum)"};
    }
    mbs = *gbs / (plan.dp * *accumulation);
    defaults.push_back(
        fmt::format("micro_batch not stated: global_batch/(dp*grad_accum) = {}", *mbs));
  }
  if (!gbs) {
    if (!accumulation) throw RowProblem{"global_batch and grad_accum are both empty"};
    gbs = *mbs * plan.dp * *accumulation;
    defaults.push_back(
        fmt::format("global_batch not stated: micro_batch*dp*grad_accum = {}", *gbs));
  }
  plan.micro_batch_size = *mbs;
  plan.global_batch_size = *gbs;
  if (*gbs % (plan.dp * *mbs) != 0) {
    throw RowProblem{
        fmt::format("global_batch {} is not a multiple of dp*micro_batch = {} (ppsim "
                    "runs whole microbatches)",
                    *gbs, plan.dp * *mbs)};
  }
  if (accumulation && *accumulation * plan.dp * *mbs != *gbs) {
    defaults.push_back(
        fmt::format("grad_accum {} disagrees with global_batch/(dp*micro_batch) = "
                    "{}; global_batch used",
                    *accumulation, *gbs / (plan.dp * *mbs)));
  }
  std::string schedule_text = row.text("pipeline_schedule");
  std::optional<int64_t> vp = row.integer("vp", 1);
  plan.schedule = plan.pp > 1 ? read_schedule(schedule_text) : kDefaultSchedule;
  if (plan.pp > 1 && is_missing(schedule_text)) {
    if (vp && *vp > 1 && contains(lower(row.text("framework")), "megatron")) {
      // Megatron interleaves whenever virtual stages are given.
      plan.schedule = *find_schedule("interleaved-1f1b");
      defaults.push_back("schedule not stated, vp > 1 under Megatron: interleaved-1f1b");
    } else {
      defaults.push_back("schedule not stated: 1f1b");
    }
  }
  if (is_v_shaped(plan.schedule)) {
    plan.vpp = default_chunks_per_rank(plan.schedule);
  } else if (is_interleaved(plan.schedule)) {
    std::vector<int64_t> layers = stage_layer_counts(plan, model);
    if (vp && *vp > 1) {
      plan.vpp = *vp;
    } else {
      int64_t v = chunks_of_one_layer(layers);
      if (v <= 1) {
        throw RowProblem{
            fmt::format("interleaved 1F1B with chunks of unequal size: the {} layers "
                        "split over pp={} as {}..{} per stage give the middle stages "
                        "unequal layer counts and no common chunk count > 1; state vp",
                        model.num_layers, plan.pp,
                        *std::min_element(layers.begin(), layers.end()),
                        *std::max_element(layers.begin(), layers.end()))};
      }
      plan.vpp = v;
      defaults.push_back(
          fmt::format("vp not stated for interleaved 1F1B: {} chunks per stage "
                      "(one layer each; a first or last stage with fewer layers leaves "
                      "its last chunk empty)",
                      v));
    }
    if (plan.vpp == 1) plan.schedule = kDefaultSchedule;  // Interleaving one chunk is 1F1B.
  } else if (vp && *vp > 1) {
    throw RowProblem{
        fmt::format("vp={} with schedule '{}' (vp > 1 needs an interleaved or V "
                    "schedule)",
                    *vp, schedule_text)};
  }
  plan.recompute = read_recompute(row.text("recompute"), defaults);
  std::string sequence_parallel = row.text("sequence_parallel");
  plan.sequence_parallel = read_flag("sequence_parallel", sequence_parallel);
  if (is_missing(sequence_parallel) && plan.tp > 1 && framework == Framework::kTorchtitan) {
    // torchtitan's tensor-parallel plan shards the norms over the sequence (SequenceParallel).
    plan.sequence_parallel = true;
    defaults.push_back(
        "sequence_parallel not stated: yes (torchtitan's TP plan shards norms "
        "over the sequence)");
  }
  if (is_missing(sequence_parallel) && plan.tp > 1 && nemo_recipes) {
    // Megatron-Bridge and NeMo 2 recipes turn sequence parallelism on with tensor parallelism
    // (e.g. Megatron-Bridge recipes/llama/llama3.py, NeMo collections/llm/recipes/llama3_70b.py:
    // sequence_parallel=True), and Megatron-Core requires it with ep > 1 and tp > 1.
    plan.sequence_parallel = true;
    defaults.push_back(
        "sequence_parallel not stated: yes (Megatron-Bridge/NeMo recipes set it with tp > 1)");
  }
  if (plan.sequence_parallel && plan.tp == 1) {
    plan.sequence_parallel = false;
    defaults.push_back("sequence_parallel ignored: tp = 1");
  }
  plan.zero_stage = read_zero_stage(row.text("fsdp_zero_distopt"), framework,
                                    row.text("framework"), defaults);
  if (is_missing(row.text("precision")) && contains(lower(row.text("notes")), "fp8-family")) {
    plan.precision = Precision::kFp8;
    defaults.push_back("precision not stated, notes say FP8-family: fp8");
  } else {
    plan.precision = read_precision(row.text("precision"), row.text("framework"), defaults);
  }
  if (plan.precision == Precision::kFp8) plan.fp8_recipe = read_fp8_recipe(row.text("precision"));
  if (plan.precision == Precision::kFp8 && !plan.fp8_recipe &&
      contains(lower(row.text("framework")), "megatron-bridge")) {
    // Megatron-Bridge's performance scripts run fp8 as current scaling (FP8-CS), MXFP8 or
    // blockwise (FP8-SC) and never delayed (their configs are *_FP8_CS / _FP8_MX / _FP8_SC,
    // scripts/performance/configs at 34a815a19 and 0ec1df783^), so a table's plain "FP8" is
    // FP8-CS.
    plan.fp8_recipe = Fp8Recipe::kTensorwise;
    defaults.push_back(
        "fp8 recipe not stated under Megatron-Bridge: tensorwise (its performance scripts' fp8 "
        "is current scaling, MXFP8 or blockwise, never delayed)");
  }
  if (nemo_recipes && plan.precision != Precision::kFp16) {
    // Their published throughput comes from the performance recipes, which reduce gradients in
    // bf16: Megatron-Bridge perf_recipes/_common.py _perf_precision sets grad_reduce_in_fp32 =
    // False for every precision ("the benchmark-mode default"), as NeMo 2's
    // scripts/performance and performance-mode recipes set plugins.grad_reduce_in_fp32 = False.
    plan.grad_reduce_in_fp32 = false;
    defaults.push_back(
        "gradient reduction not stated: bf16 (grad_reduce_in_fp32=false, Megatron-Bridge/NeMo "
        "performance recipes)");
  }
  return plan;
}

// The runtime (spec/runtime.h) a framework text names, and the attention kernel when the text
// names one its runtime does not run by default.
void read_runtime(Framework framework, const std::string& framework_text, Plan& plan,
                  std::vector<std::string>& defaults) {
  std::string value = lower(framework_text);
  bool core = contains(value, "megatron-core") || contains(value, "mcore") ||
              contains(value, "nemo") || contains(value, "megatron-bridge") ||
              contains(value, "transformer engine") || contains(value, "transformer-engine");
  if (contains(value, "deepspeed")) {
    plan.runtime = Runtime::kDeepSpeed;
  } else if (framework == Framework::kTorchtitan) {
    plan.runtime = Runtime::kTorchtitan;
  } else if (framework == Framework::kLlmFoundry || contains(value, "fsdp")) {
    plan.runtime = Runtime::kPytorchFsdp;
    if (contains(value, "triton")) {
      // llm-foundry's attn_impl: triton (its benchmark driver's default, docs/runtimes.md).
      plan.attention = AttentionKernel::kTriton;
      defaults.push_back("attention: Triton FlashAttention (named in the framework text)");
    }
  } else if (core) {
    plan.runtime = Runtime::kMegatronCore;
  } else if (framework == Framework::kMegatron) {
    plan.runtime = Runtime::kMegatronLm;
    if (contains(value, "flash")) {
      plan.attention = AttentionKernel::kFlash2;
      defaults.push_back("attention: flash-attn 2 (named in the framework text)");
    }
  } else {
    plan.runtime = kDefaultRuntime;
    defaults.push_back(fmt::format("runtime not recognised in '{}': {}", framework_text,
                                   runtime_name(kDefaultRuntime)));
  }
}

// torchtitan's async TP (enable_async_tensor_parallel), where the framework or other_result
// text names it (torchtitan's performance tables list it among a row's optimizations): the
// plan's tp_comm_overlap, which torchtitan runs only when told (runtime.h TpCommOverlap).
void read_async_tp(const RowReader& row, Plan& plan, std::vector<std::string>& defaults) {
  if (plan.runtime != Runtime::kTorchtitan || plan.tp < 2 || !plan.sequence_parallel) return;
  const std::string text = lower(row.text("framework") + " " + row.text("other_result"));
  if (!contains(text, "async tp") && !contains(text, "async tensor parallel")) return;
  plan.tp_comm_overlap = true;
  defaults.push_back("tp_comm_overlap: async TP (named in the row's text)");
}

}  // namespace

const std::vector<std::string>& public_run_columns() {
  static const std::vector<std::string> columns = {"row_id",
                                                   "source_id",
                                                   "model",
                                                   "layers",
                                                   "hidden",
                                                   "ffn_hidden",
                                                   "heads",
                                                   "kv_heads",
                                                   "vocab",
                                                   "seq_len",
                                                   "moe_experts",
                                                   "moe_topk",
                                                   "moe_ffn_hidden",
                                                   "gpu_type",
                                                   "num_gpus",
                                                   "interconnect",
                                                   "framework",
                                                   "tp",
                                                   "pp",
                                                   "dp",
                                                   "cp",
                                                   "ep",
                                                   "vp",
                                                   "sequence_parallel",
                                                   "fsdp_zero_distopt",
                                                   "micro_batch",
                                                   "global_batch",
                                                   "grad_accum",
                                                   "pipeline_schedule",
                                                   "recompute",
                                                   "precision",
                                                   "mem_gb_per_gpu",
                                                   "target_tokens_per_s_per_gpu"};
  return columns;
}

void check_public_run_columns(const CsvTable& table) {
  std::vector<std::string> missing;
  std::string hints;
  for (const std::string& column : public_run_columns()) {
    if (table.column_index(column)) continue;
    missing.push_back(column);
    std::string close = closest_match(column, table.columns);
    if (!close.empty()) hints += fmt::format("; '{}' may be a misspelling of '{}'", close, column);
  }
  if (missing.empty()) return;
  throw InputError(table.source, "",
                   fmt::format("line 1: missing column{} {} (a runs file needs the columns of "
                               "public-runs.csv: {}){}",
                               missing.size() > 1 ? "s" : "", join_names(missing),
                               join_names(public_run_columns()), hints));
}

std::optional<std::string> catalog_gpu_for(const std::string& gpu_type) {
  std::string value = lower(gpu_type);
  bool pcie = contains(value, "pcie");
  // Grace-Blackwell racks are their own catalog entries (a GB200 is not a DGX B200: 1200 W,
  // and an NVLink domain of 72 GPUs, which read_cluster sets).
  if (contains(value, "gb200")) return "GB200";
  if (contains(value, "gb300")) return "GB300";
  if (contains(value, "b300")) return "B300";
  if (contains(value, "b200")) return "B200";
  if (contains(value, "h200")) return "H200-SXM-141GB";
  if (contains(value, "h100")) {
    if (contains(value, "nvl")) return "H100-NVL-94GB";
    if (pcie) return "H100-PCIe-80GB";
    // The SXM part on HBM2e is Grand Teton's 96 GB H100 (its own catalog entry: 2.4 TB/s).
    return contains(value, "hbm2e") ? "H100-SXM-96GB" : "H100-SXM-80GB";
  }
  if (contains(value, "a100")) {
    bool forty = contains(value, "40gb") || contains(value, "40 gb") || contains(value, "40g");
    if (pcie) {
      if (forty) return std::nullopt;
      return "A100-PCIe-80GB";
    }
    return forty ? "A100-SXM-40GB" : "A100-SXM-80GB";
  }
  if (contains(value, "v100")) return "V100-SXM-32GB";
  if (contains(value, "mi300x")) return "MI300X";
  if (contains(value, "l40s")) return "L40S";
  if (contains(value, "l4") && !contains(value, "l40")) return "L4";
  if (contains(value, "a10") && !contains(value, "a100")) return "A10";
  return std::nullopt;
}

std::string framework_name(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return "megatron-lm";
    case Framework::kTorchtitan:
      return "torchtitan";
    case Framework::kLlmFoundry:
      return "llm-foundry";
    case Framework::kUnknown:
      return "unknown";
  }
  return "unknown";
}

PublicRun read_public_run(const CsvTable& table, const CsvRecord& record) {
  RowReader row(table, record);
  PublicRun run;
  run.line = record.line;
  run.row_id = row.text("row_id");
  run.source_id = row.text("source_id");
  run.source = row.text("source");
  run.model_name = row.text("model");
  run.gpu_type = row.text("gpu_type");
  run.schedule_text = row.text("pipeline_schedule");
  std::string framework_text = row.text("framework");
  run.framework = framework_of(framework_text);
  try {
    run.target_tokens_per_s_per_gpu = row.number("target_tokens_per_s_per_gpu");
    if (run.target_tokens_per_s_per_gpu && *run.target_tokens_per_s_per_gpu <= 0) {
      throw RowProblem{"target_tokens_per_s_per_gpu must be positive"};
    }
    run.published_memory_gb = row.number("mem_gb_per_gpu");
    run.num_gpus = row.required_integer("num_gpus", 1);
    if (run.framework == Framework::kUnknown) {
      run.defaults.push_back(
          fmt::format("framework '{}' not recognised: generic defaults", framework_text));
    }
    run.model = read_model(row, run.framework, run.defaults);
    run.cluster = read_cluster(row, run.gpu_type, run.num_gpus, run.defaults);
    run.plan = read_plan(row, run.model, run.num_gpus, run.framework, run.defaults);
    read_runtime(run.framework, framework_text, run.plan, run.defaults);
    read_async_tp(row, run.plan, run.defaults);
    if (run.plan.precision == Precision::kFp8 && !run.plan.fp8_recipe) {
      run.defaults.push_back(fmt::format("fp8 recipe not stated: {} (the runtime's default)",
                                         fp8_recipe_name(fp8_recipe_in_force(run.plan))));
    }
    if (std::optional<std::string> problem = plan_problem(run.plan, run.model, run.cluster)) {
      throw RowProblem{"impossible plan: " + *problem};
    }
  } catch (const RowProblem& problem) {
    run.reason = problem.message;
  }
  return run;
}

std::vector<PublicRun> read_public_runs(const CsvTable& table) {
  check_public_run_columns(table);
  std::vector<PublicRun> runs;
  runs.reserve(table.records.size());
  for (const CsvRecord& record : table.records) runs.push_back(read_public_run(table, record));
  return runs;
}

}  // namespace ppsim
