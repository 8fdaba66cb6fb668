#include "simulator/spec/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "simulator/spec/data_root.h"
#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"
#include "simulator/spec/pipeline_layout.h"

namespace ppsim {
namespace {

const std::vector<std::string> kRecomputeNames = {"none", "selective", "full"};
const std::vector<std::string> kRecomputeModuleNames = {
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"};
const std::vector<std::string> kMoeDispatcherNames = {"alltoall", "deepep", "hybridep"};
const std::vector<std::string> kCudaGraphsNames = {"none", "moe-router", "layers",
                                                   "full-iteration"};
const std::vector<std::string> kFp8RecipeNames = {"delayed", "tensorwise", "mxfp8", "blockwise"};

std::vector<int64_t> read_int_list(const nlohmann::json& array, const JsonReader& reader,
                                   const std::string& key, int64_t min, int64_t max) {
  std::vector<int64_t> values;
  for (size_t i = 0; i < array.size(); ++i) {
    values.push_back(json_element_int(array[i], reader.source(),
                                      reader.path_of(key) + "/" + std::to_string(i), min, max));
  }
  return values;
}

// Reads a key that has a short form ("micro_batch_size" or "mbs"); both at once is an error.
std::optional<int64_t> read_int_with_alias(JsonReader& reader, const std::string& key,
                                           const std::string& alias, int64_t min, int64_t max) {
  std::optional<int64_t> long_form = reader.optional_int(key, min, max);
  std::optional<int64_t> short_form = reader.optional_int(alias, min, max);
  if (long_form && short_form) {
    reader.fail(alias,
                fmt::format("'{}' and '{}' are the same setting; give only one", key, alias));
  }
  return long_form ? long_form : short_form;
}

Plan parse_plan_json(const nlohmann::json& json, const std::string& source) {
  JsonReader reader(json, source);
  Plan plan;
  plan.tp = reader.optional_int("tp", 1, kMaxPlanDegree).value_or(1);
  plan.pp = reader.optional_int("pp", 1, kMaxPlanDegree).value_or(1);
  plan.dp = reader.optional_int("dp", 1, kMaxPlanDegree).value_or(1);
  plan.cp = reader.optional_int("cp", 1, kMaxPlanDegree).value_or(1);
  plan.ep = reader.optional_int("ep", 1, kMaxPlanDegree).value_or(1);
  plan.etp = reader.optional_int("etp", 1, kMaxPlanDegree).value_or(0);
  // The GPUs tp*pp*dp*cp, each factor at most 2^24: the product needs 128 bits, so it is
  // checked step by step.
  int64_t gpus = 1;
  for (auto [key, degree] : {std::pair<const char*, int64_t>{"tp", plan.tp}, {"pp", plan.pp},
                             {"dp", plan.dp}, {"cp", plan.cp}}) {
    if (__builtin_mul_overflow(gpus, degree, &gpus) || gpus > kMaxPlanGpus) {
      reader.fail(key, fmt::format("tp*pp*dp*cp = {}*{}*{}*{} is more than {} GPUs "
                                   "(docs/limits.md)",
                                   plan.tp, plan.pp, plan.dp, plan.cp, kMaxPlanGpus));
    }
  }
  plan.moe_a2a_overlap = reader.optional_bool("moe_a2a_overlap").value_or(false);
  plan.moe_dispatcher = *find_moe_dispatcher(
      reader.optional_choice("moe_dispatcher", kMoeDispatcherNames).value_or("alltoall"));
  std::optional<int64_t> vpp = reader.optional_int("vpp", 1, kMaxPlanDegree);
  plan.microbatch_group_size =
      reader.optional_int("microbatch_group_size_per_vp_stage", 1, kMaxBatch).value_or(0);
  plan.micro_batch_size =
      read_int_with_alias(reader, "micro_batch_size", "mbs", 1, kMaxBatch).value_or(1);
  std::optional<int64_t> gbs = read_int_with_alias(reader, "global_batch_size", "gbs", 1, kMaxBatch);
  if (!gbs) {
    reader.fail("",
                "required key 'global_batch_size' (or 'gbs') is missing: the sequences per "
                "optimizer step, e.g. \"global_batch_size\": 512");
  }
  plan.global_batch_size = *gbs;
  plan.seq_length = read_int_with_alias(reader, "seq_length", "seq", 1, kMaxPlanSequence);
  const std::optional<std::string> schedule = reader.optional_choice("schedule", schedule_names());
  const bool schedule_given = schedule.has_value();
  plan.schedule = *find_schedule(schedule.value_or("1f1b"));
  std::optional<std::string> recompute = reader.optional_choice("recompute", kRecomputeNames);
  plan.recompute = recompute == "full"        ? Recompute::kFull
                   : recompute == "selective" ? Recompute::kSelective
                                              : Recompute::kNone;
  if (const nlohmann::json* modules = reader.optional_array("recompute_modules")) {
    if (recompute && plan.recompute != Recompute::kSelective) {
      reader.fail("recompute_modules",
                  fmt::format("recompute_modules chooses what selective recompute re-runs, and "
                              "recompute is {} (give recompute=selective, or leave recompute out)",
                              *recompute));
    }
    plan.recompute = Recompute::kSelective;
    if (modules->empty()) {
      reader.fail("recompute_modules",
                  "give at least one module (" + join_names(kRecomputeModuleNames) + ")");
    }
    for (size_t i = 0; i < modules->size(); ++i) {
      const std::string path = reader.path_of("recompute_modules") + "/" + std::to_string(i);
      const nlohmann::json& entry = (*modules)[i];
      std::optional<RecomputeModule> module =
          entry.is_string() ? find_recompute_module(entry.get<std::string>()) : std::nullopt;
      if (!module) {
        const std::string given = entry.is_string() ? entry.get<std::string>() : entry.dump();
        throw InputError(reader.source(), path,
                         fmt::format("unknown recompute module {}; expected one of {}{}",
                                     entry.is_string() ? "'" + given + "'" : given,
                                     join_names(kRecomputeModuleNames),
                                     did_you_mean(given, kRecomputeModuleNames)));
      }
      plan.recompute_modules |= recompute_module_bit(*module);
    }
  }
  if (std::optional<int64_t> layers =
          reader.optional_int("recompute_num_layers", 1, kMaxPlanDegree)) {
    if (plan.recompute != Recompute::kFull && (recompute || plan.recompute_modules != 0)) {
      reader.fail("recompute_num_layers",
                  fmt::format("recompute_num_layers chooses how many layers of each pipeline "
                              "chunk full recompute re-runs, and recompute is {} (give "
                              "recompute=full, or leave recompute out)",
                              recompute_name(plan.recompute)));
    }
    plan.recompute = Recompute::kFull;
    plan.recompute_num_layers = *layers;
  }
  plan.sequence_parallel = reader.optional_bool("sequence_parallel").value_or(false);
  plan.zero_stage = static_cast<int>(reader.optional_int("zero_stage", 0, 3).value_or(0));
  std::optional<bool> offload = reader.optional_bool("offload_optimizer");
  std::optional<double> fraction = reader.optional_number("offload_fraction", 0, 1);
  std::optional<double> fraction_short = reader.optional_number("offload", 0, 1);
  if (fraction && fraction_short) {
    reader.fail("offload", "'offload_fraction' and 'offload' are the same setting; give only one");
  }
  const char* fraction_key = fraction ? "offload_fraction" : "offload";
  if (fraction_short) fraction = fraction_short;
  plan.offload_optimizer = offload.value_or(fraction.has_value() && *fraction > 0);
  if (fraction) {
    if (offload && *offload != (*fraction > 0)) {
      reader.fail(fraction_key,
                  fmt::format("{}={:g} contradicts offload_optimizer={}; a fraction above 0 "
                              "offloads, 0 does not (give one of the two keys, or make them agree)",
                              fraction_key, *fraction, *offload));
    }
    if (*fraction > 0) plan.offload_fraction = *fraction;
  }
  if (std::optional<std::string> precision =
          reader.optional_choice("precision", precision_names())) {
    plan.precision = *find_precision(*precision);
  }
  if (const nlohmann::json* layers = reader.optional_array("stage_layers")) {
    plan.stage_layers = read_int_list(*layers, reader, "stage_layers", 0, kMaxPlanDegree);
  }
  plan.first_stage_layers =
      reader.optional_int("first_stage_layers", 0, kMaxPlanDegree).value_or(0);
  plan.last_stage_layers = reader.optional_int("last_stage_layers", 0, kMaxPlanDegree).value_or(0);
  if ((plan.first_stage_layers > 0 || plan.last_stage_layers > 0) && !plan.stage_layers.empty()) {
    reader.fail(plan.first_stage_layers > 0 ? "first_stage_layers" : "last_stage_layers",
                "give either stage_layers (every stage) or first_stage_layers/last_stage_layers "
                "(the middle stages split the rest), not both");
  }
  if (std::optional<std::string> layout = reader.optional_string("pipeline_layout")) {
    if (!plan.stage_layers.empty() || plan.first_stage_layers > 0 ||
        plan.last_stage_layers > 0) {
      reader.fail("pipeline_layout",
                  "give either pipeline_layout (every virtual stage) or stage_layers / "
                  "first_stage_layers / last_stage_layers, not both");
    }
    const std::vector<LayoutStage> stages =
        parse_pipeline_layout(*layout, source, reader.path_of("pipeline_layout"));
    plan.pipeline_layout = *layout;
    // Megatron derives the virtual stages per rank from the layout (and interleaves them); a
    // stated schedule of another placement keeps its own, and plan_problem names the clash.
    const int64_t count = static_cast<int64_t>(stages.size());
    if (!vpp && (!schedule_given || is_interleaved(plan.schedule)) && count % plan.pp == 0 &&
        count / plan.pp <= kMaxPlanDegree) {
      vpp = count / plan.pp;
      if (*vpp > 1 && !schedule_given) plan.schedule = ScheduleKind::kInterleaved1F1B;
    }
  }
  if (const nlohmann::json* placement = reader.optional_array("placement")) {
    plan.placement = read_int_list(*placement, reader, "placement", 0, kMaxPlanDegree);
  }
  const nlohmann::json* shares = reader.optional_array("replica_microbatches");
  const nlohmann::json* short_shares = reader.optional_array("rmb");
  if (shares && short_shares) {
    reader.fail("rmb", "'replica_microbatches' and 'rmb' are the same setting; give only one");
  }
  if (shares || short_shares) {
    plan.replica_microbatches = read_int_list(shares ? *shares : *short_shares, reader,
                                              shares ? "replica_microbatches" : "rmb", 1,
                                              kMaxBatch);
  }
  plan.runtime = *find_runtime(
      reader.optional_choice("runtime", runtime_names()).value_or(runtime_name(kDefaultRuntime)));
  plan.tp_comm_overlap = reader.optional_bool("tp_comm_overlap");
  plan.grad_reduce_in_fp32 = reader.optional_bool("grad_reduce_in_fp32");
  plan.activation_offload_layers =
      reader.optional_int("activation_offload_layers", 0, kMaxPlanDegree).value_or(0);
  plan.cuda_graphs = *find_cuda_graphs(
      reader.optional_choice("cuda_graphs", kCudaGraphsNames).value_or("none"));
  if (std::optional<std::string> recipe = reader.optional_choice("fp8_recipe", kFp8RecipeNames)) {
    plan.fp8_recipe = find_fp8_recipe(*recipe);
  }
  if (std::optional<std::string> attention =
          reader.optional_choice("attention", attention_kernel_names())) {
    plan.attention = find_attention_kernel(*attention);
  }
  if (reader.has("training")) {
    reader.allow("training");
    if (!json["training"].is_object()) {
      reader.fail("training", "expected an object such as {\"tokens\": \"15.6T\"}");
    }
    plan.training = parse_training_spec(json["training"], source, reader.path_of("training"));
  }
  reader.finish();
  // V-shaped schedules hold two chunks per rank by definition.
  plan.vpp = vpp.value_or(default_chunks_per_rank(plan.schedule));
  return plan;
}

// A value of the inline form as JSON: integer, boolean, ':'-separated integer list, or string.
nlohmann::json inline_value(const std::string& key, const std::string& text,
                            const std::string& source) {
  if (text.empty()) throw InputError(source, "/" + key, "empty value after '='");
  if (text == "true") return true;
  if (text == "false") return false;
  auto as_int = [](const std::string& piece) -> std::optional<int64_t> {
    int64_t value = 0;
    auto [end, error] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (error != std::errc() || end != piece.data() + piece.size()) return std::nullopt;
    return value;
  };
  // The ':'-separated pieces of a list value (an empty piece stays, for the key's check).
  auto pieces = [&text] {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find(':', start);
      if (end == std::string::npos) end = text.size();
      parts.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return parts;
  };
  if (key == "recompute_modules") return pieces();
  if (key == "stage_layers" || key == "placement" || key == "replica_microbatches" ||
      key == "rmb") {
    nlohmann::json list = nlohmann::json::array();
    for (const std::string& piece : pieces()) {
      std::optional<int64_t> value = as_int(piece);
      if (!value) {
        throw InputError(source, "/" + key,
                         fmt::format("expected integers separated by ':' (e.g. 9:10:10:3), got "
                                     "'{}'",
                                     text));
      }
      list.push_back(*value);
    }
    return list;
  }
  if (std::optional<int64_t> value = as_int(text)) return *value;
  // Fractions ("offload=0.6"): a whole-text decimal number.
  char* end = nullptr;
  double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size() && std::isfinite(number)) return number;
  return text;
}

nlohmann::json inline_plan_to_json(const std::string& text, const std::string& source) {
  nlohmann::json json = nlohmann::json::object();
  std::string last_key;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    size_t equals = item.find('=');
    // Megatron's layouts carry cosmetic commas ("Et*2|(t*2|)*34,t*3|..."): a piece without '='
    // right after pipeline_layout continues it.
    if (equals == std::string::npos && last_key == "pipeline_layout") {
      json[last_key] = json[last_key].get<std::string>() + "," + item;
      continue;
    }
    if (equals == std::string::npos || equals == 0) {
      throw InputError(source, "",
                       fmt::format("'{}' is not KEY=VALUE; write the plan as "
                                   "tp=8,pp=4,dp=8,mbs=1,gbs=512,schedule=1f1b",
                                   item));
    }
    std::string key = item.substr(0, equals);
    if (json.contains(key)) {
      throw InputError(source, "/" + key, fmt::format("'{}' is given twice", key));
    }
    if (key == "pipeline_layout") {
      json[key] = item.substr(equals + 1);  // A string whatever it looks like.
    } else {
      json[key] = inline_value(key, item.substr(equals + 1), source);
    }
    last_key = key;
  }
  return json;
}

std::string plan_source_dir() { return data_root() + "/configs/plans"; }

// What is wrong with a plan's replica_microbatches (its length, entries and sum), or nullopt.
std::optional<std::string> replica_share_problem(const Plan& plan) {
  const std::vector<int64_t>& shares = plan.replica_microbatches;
  if (static_cast<int64_t>(shares.size()) != plan.dp) {
    return fmt::format(
        "replica_microbatches has {} entries but dp={} (give one microbatch count "
        "per data-parallel replica)",
        shares.size(), plan.dp);
  }
  int64_t sum = 0;
  for (size_t d = 0; d < shares.size(); ++d) {
    if (shares[d] < 1) {
      return fmt::format(
          "replica_microbatches[{}] is {}; every replica needs at least 1 "
          "microbatch",
          d, shares[d]);
    }
    sum += shares[d];
  }
  if (plan.global_batch_size % plan.micro_batch_size != 0) {
    return fmt::format("global batch {} is not divisible by mbs = {}", plan.global_batch_size,
                       plan.micro_batch_size);
  }
  int64_t total = plan.global_batch_size / plan.micro_batch_size;
  if (sum != total) {
    return fmt::format(
        "replica_microbatches add up to {} but global_batch_size / "
        "micro_batch_size = {} / {} = {} (the shares must cover the global batch)",
        sum, plan.global_batch_size, plan.micro_batch_size, total);
  }
  return std::nullopt;
}

}  // namespace

std::string recompute_name(Recompute recompute) {
  return kRecomputeNames[static_cast<size_t>(recompute)];
}

const std::vector<std::string>& recompute_module_names() { return kRecomputeModuleNames; }

std::optional<std::string> recompute_modules_problem(RecomputeModules modules,
                                                     const ModelSpec& model) {
  if ((modules & recompute_module_bit(RecomputeModule::kMlaUpProj)) && !model.mla) {
    // Megatron-Core's assert (transformer_config.py): the module exists only in MLA layers.
    return fmt::format("recompute_modules mla_up_proj needs multi-latent attention, which {} "
                       "does not have (leave it out)",
                       model.name);
  }
  return std::nullopt;
}

std::optional<RecomputeModule> find_recompute_module(const std::string& name) {
  auto it = std::find(kRecomputeModuleNames.begin(), kRecomputeModuleNames.end(), name);
  if (it == kRecomputeModuleNames.end()) return std::nullopt;
  return static_cast<RecomputeModule>(it - kRecomputeModuleNames.begin());
}

RecomputeModules recomputed_modules(Recompute recompute, RecomputeModules modules) {
  switch (recompute) {
    case Recompute::kNone:
      return 0;
    case Recompute::kFull:
      return kAllRecomputeModules;
    case Recompute::kSelective:
      return modules != 0 ? modules : recompute_module_bit(RecomputeModule::kCoreAttn);
  }
  return 0;
}

RecomputeModules recomputed_modules(const Plan& plan) {
  return recomputed_modules(plan.recompute, plan.recompute_modules);
}

std::vector<std::string> recompute_module_list(RecomputeModules modules) {
  std::vector<std::string> names;
  for (int i = 0; i < kRecomputeModuleCount; ++i) {
    if (modules & recompute_module_bit(static_cast<RecomputeModule>(i))) {
      names.push_back(kRecomputeModuleNames[i]);
    }
  }
  return names;
}

std::string recompute_modules_text(RecomputeModules modules, std::string_view separator) {
  return join_names(recompute_module_list(modules), separator);
}

std::string moe_dispatcher_name(MoeDispatcher dispatcher) {
  return kMoeDispatcherNames[static_cast<size_t>(dispatcher)];
}

const std::vector<std::string>& moe_dispatcher_names() { return kMoeDispatcherNames; }

// What a CUDA graph scope needs of the model (Megatron-Core's asserts in
// TransformerConfig.__post_init__, transformer_config.py): a whole-layer MoE graph needs
// drop-and-pad's static shapes, a router scope needs routers. (Its full-recompute assert is a
// runtime fact: runtime_support.cc.)
std::optional<std::string> cuda_graphs_problem(CudaGraphs graphs, const ModelSpec& model) {
  const std::string name = "cuda_graphs=" + cuda_graphs_name(graphs);
  switch (graphs) {
    case CudaGraphs::kNone:
    case CudaGraphs::kFullIteration:
      return std::nullopt;
    case CudaGraphs::kMoeRouter:
      if (!model.is_moe()) {
        return fmt::format("{} graphs MoE routers, and {} has no MoE layers (use layers or "
                           "full-iteration)",
                           name, model.name);
      }
      break;
    case CudaGraphs::kLayers:
      if (model.is_moe() && model.moe->dropless()) {
        return fmt::format("{} needs static MoE shapes: Megatron graphs an MoE layer whole only "
                           "with drop-and-pad (set moe.capacity_factor), else use moe-router or "
                           "full-iteration",
                           name);
      }
      break;
  }
  return std::nullopt;
}

bool moe_preprocess_graphed(const Plan& plan, const ModelSpec& model) {
  return plan.cuda_graphs == CudaGraphs::kMoeRouter && model.is_moe() &&
         !(plan.moe_dispatcher == MoeDispatcher::kAllToAll && !model.moe->dropless());
}

std::string fp8_recipe_name(Fp8Recipe recipe) {
  return kFp8RecipeNames[static_cast<size_t>(recipe)];
}

const std::vector<std::string>& fp8_recipe_names() { return kFp8RecipeNames; }

std::optional<Fp8Recipe> find_fp8_recipe(const std::string& name) {
  auto it = std::find(kFp8RecipeNames.begin(), kFp8RecipeNames.end(), name);
  if (it == kFp8RecipeNames.end()) return std::nullopt;
  return static_cast<Fp8Recipe>(it - kFp8RecipeNames.begin());
}

bool layer_recomputed(const Plan& plan, int64_t position) {
  switch (plan.recompute) {
    case Recompute::kNone:
      return false;
    case Recompute::kSelective:
      return true;
    case Recompute::kFull:
      return plan.recompute_num_layers == 0 || position < plan.recompute_num_layers;
  }
  return false;
}

Plan without_recompute(const Plan& plan) {
  Plan none = plan;
  none.recompute = Recompute::kNone;
  none.recompute_modules = 0;
  none.recompute_num_layers = 0;
  return none;
}

bool recomputes_moe_act_or_layernorm(const Plan& plan) {
  const RecomputeModules modules = recompute_module_bit(RecomputeModule::kMoeAct) |
                                   recompute_module_bit(RecomputeModule::kLayernorm);
  return plan.recompute == Recompute::kSelective && (recomputed_modules(plan) & modules) != 0;
}

Fp8Recipe fp8_recipe_in_force(const Plan& plan) {
  if (plan.fp8_recipe) return *plan.fp8_recipe;
  if (plan.runtime == Runtime::kTorchtitan) return Fp8Recipe::kTensorwise;
  if (plan.runtime == Runtime::kMegatronCore && recomputes_moe_act_or_layernorm(plan)) {
    return Fp8Recipe::kTensorwise;
  }
  return Fp8Recipe::kDelayed;
}

std::optional<std::string> gpu_fp8_recipe_problem(Fp8Recipe recipe, const GpuSpec& gpu) {
  if (recipe == Fp8Recipe::kMxfp8 && !blackwell_or_later(gpu)) {
    return fmt::format(
        "fp8_recipe mxfp8 needs Blackwell's block-scaled tensor cores (B200, GB200, B300, GB300), "
        "which {} lacks (use tensorwise or delayed)",
        gpu.name);
  }
  if (recipe == Fp8Recipe::kBlockwise && !hopper_or_later(gpu)) {
    return fmt::format(
        "fp8_recipe blockwise needs Hopper or later (compute capability 9.0+), which {} is not "
        "(use tensorwise or delayed)",
        gpu.name);
  }
  return std::nullopt;
}

std::string cuda_graphs_name(CudaGraphs graphs) {
  return kCudaGraphsNames[static_cast<size_t>(graphs)];
}

const std::vector<std::string>& cuda_graphs_names() { return kCudaGraphsNames; }

std::optional<CudaGraphs> find_cuda_graphs(const std::string& name) {
  auto it = std::find(kCudaGraphsNames.begin(), kCudaGraphsNames.end(), name);
  if (it == kCudaGraphsNames.end()) return std::nullopt;
  return static_cast<CudaGraphs>(it - kCudaGraphsNames.begin());
}

std::optional<MoeDispatcher> find_moe_dispatcher(const std::string& name) {
  auto it = std::find(kMoeDispatcherNames.begin(), kMoeDispatcherNames.end(), name);
  if (it == kMoeDispatcherNames.end()) return std::nullopt;
  return static_cast<MoeDispatcher>(it - kMoeDispatcherNames.begin());
}

Plan parse_plan(const std::string& text, const std::string& source) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw InputError(source, "", "the plan is empty");
  if (text[first] == '{') return parse_plan_json(parse_json_text(text, source), source);
  return parse_plan_json(inline_plan_to_json(text, source), source);
}

Plan load_plan(const std::string& path_or_inline) {
  namespace fs = std::filesystem;
  if (path_or_inline.find_first_not_of(" \t\r\n") == std::string::npos ||
      path_or_inline.find('=') != std::string::npos ||
      path_or_inline.find('{') != std::string::npos) {
    return parse_plan(path_or_inline, "--plan");
  }
  if (is_existing_file(path_or_inline)) {
    return parse_plan(read_text_file(path_or_inline), path_or_inline);
  }
  std::string shipped = plan_source_dir() + "/" + path_or_inline + ".json";
  if (is_existing_file(shipped)) return parse_plan(read_text_file(shipped), shipped);
  std::vector<std::string> names;
  if (fs::is_directory(plan_source_dir())) {
    for (const auto& entry : fs::directory_iterator(plan_source_dir())) {
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  throw InputError(
      "--plan", "",
      fmt::format("'{}' is neither a file, a shipped plan ({}) nor an inline plan "
                  "such as tp=8,pp=4,dp=8,mbs=1,gbs=512{}",
                  path_or_inline, join_names(names), did_you_mean(path_or_inline, names)));
}

std::string plan_to_json(const Plan& plan) {
  nlohmann::ordered_json json;
  json["tp"] = plan.tp;
  json["pp"] = plan.pp;
  json["dp"] = plan.dp;
  json["cp"] = plan.cp;
  json["ep"] = plan.ep;
  if (plan.etp > 0) json["etp"] = plan.etp;
  if (plan.moe_a2a_overlap) json["moe_a2a_overlap"] = true;
  if (plan.moe_dispatcher != MoeDispatcher::kAllToAll) {
    json["moe_dispatcher"] = moe_dispatcher_name(plan.moe_dispatcher);
  }
  json["vpp"] = plan.vpp;
  if (plan.microbatch_group_size > 0)
    json["microbatch_group_size_per_vp_stage"] = plan.microbatch_group_size;
  json["micro_batch_size"] = plan.micro_batch_size;
  json["global_batch_size"] = plan.global_batch_size;
  if (plan.seq_length) json["seq_length"] = *plan.seq_length;
  json["schedule"] = schedule_name(plan.schedule);
  json["recompute"] = recompute_name(plan.recompute);
  if (plan.recompute == Recompute::kSelective && plan.recompute_modules != 0) {
    json["recompute_modules"] = recompute_module_list(plan.recompute_modules);
  }
  if (plan.recompute_num_layers > 0) json["recompute_num_layers"] = plan.recompute_num_layers;
  json["sequence_parallel"] = plan.sequence_parallel;
  json["zero_stage"] = plan.zero_stage;
  json["offload_optimizer"] = plan.offload_optimizer;
  if (plan.offload_optimizer) json["offload_fraction"] = plan.offload_fraction;
  json["precision"] = precision_name(plan.precision);
  if (!plan.stage_layers.empty()) json["stage_layers"] = plan.stage_layers;
  if (plan.first_stage_layers > 0) json["first_stage_layers"] = plan.first_stage_layers;
  if (plan.last_stage_layers > 0) json["last_stage_layers"] = plan.last_stage_layers;
  if (!plan.pipeline_layout.empty()) json["pipeline_layout"] = plan.pipeline_layout;
  if (!plan.placement.empty()) json["placement"] = plan.placement;
  if (!plan.replica_microbatches.empty()) json["replica_microbatches"] = plan.replica_microbatches;
  json["runtime"] = runtime_name(plan.runtime);
  if (plan.attention) json["attention"] = attention_kernel_name(*plan.attention);
  if (plan.tp_comm_overlap) json["tp_comm_overlap"] = *plan.tp_comm_overlap;
  if (plan.cuda_graphs != CudaGraphs::kNone) {
    json["cuda_graphs"] = cuda_graphs_name(plan.cuda_graphs);
  }
  if (plan.grad_reduce_in_fp32) json["grad_reduce_in_fp32"] = *plan.grad_reduce_in_fp32;
  if (plan.fp8_recipe) json["fp8_recipe"] = fp8_recipe_name(*plan.fp8_recipe);
  if (plan.activation_offload_layers > 0)
    json["activation_offload_layers"] = plan.activation_offload_layers;
  if (plan.training)
    json["training"] = nlohmann::ordered_json::parse(training_spec_to_json(*plan.training));
  return json.dump();
}

std::string plan_to_inline(const Plan& plan) {
  std::string text = fmt::format("tp={},pp={},dp={}", plan.tp, plan.pp, plan.dp);
  if (plan.cp > 1) text += fmt::format(",cp={}", plan.cp);
  if (plan.ep > 1) text += fmt::format(",ep={}", plan.ep);
  if (plan.etp > 0) text += fmt::format(",etp={}", plan.etp);
  if (plan.moe_a2a_overlap) text += ",moe_a2a_overlap=true";
  if (plan.moe_dispatcher != MoeDispatcher::kAllToAll) {
    text += ",moe_dispatcher=" + moe_dispatcher_name(plan.moe_dispatcher);
  }
  text += fmt::format(",mbs={},gbs={}", plan.micro_batch_size, plan.global_batch_size);
  if (plan.seq_length) text += fmt::format(",seq={}", *plan.seq_length);
  text += ",schedule=" + schedule_name(plan.schedule);
  bool default_vpp = plan.vpp == default_chunks_per_rank(plan.schedule);
  if (!default_vpp) text += fmt::format(",vpp={}", plan.vpp);
  if (plan.microbatch_group_size > 0)
    text += fmt::format(",microbatch_group_size_per_vp_stage={}", plan.microbatch_group_size);
  if (plan.recompute != Recompute::kNone) text += ",recompute=" + recompute_name(plan.recompute);
  if (plan.recompute == Recompute::kSelective && plan.recompute_modules != 0) {
    text += ",recompute_modules=" + recompute_modules_text(plan.recompute_modules, ":");
  }
  if (plan.recompute_num_layers > 0) {
    text += fmt::format(",recompute_num_layers={}", plan.recompute_num_layers);
  }
  if (plan.sequence_parallel) text += ",sequence_parallel=true";
  if (plan.zero_stage != 0) text += fmt::format(",zero_stage={}", plan.zero_stage);
  if (plan.offload_optimizer) {
    text += plan.offload_fraction == 1.0 ? ",offload_optimizer=true"
                                         : fmt::format(",offload={}", plan.offload_fraction);
  }
  if (plan.precision != Precision::kBf16) text += ",precision=" + precision_name(plan.precision);
  auto list = [](const std::vector<int64_t>& values) {
    std::string joined;
    for (size_t i = 0; i < values.size(); ++i) joined += (i ? ":" : "") + std::to_string(values[i]);
    return joined;
  };
  if (!plan.stage_layers.empty()) text += ",stage_layers=" + list(plan.stage_layers);
  if (plan.first_stage_layers > 0)
    text += fmt::format(",first_stage_layers={}", plan.first_stage_layers);
  if (plan.last_stage_layers > 0)
    text += fmt::format(",last_stage_layers={}", plan.last_stage_layers);
  if (!plan.pipeline_layout.empty()) text += ",pipeline_layout=" + plan.pipeline_layout;
  if (!plan.placement.empty()) text += ",placement=" + list(plan.placement);
  if (!plan.replica_microbatches.empty()) text += ",rmb=" + list(plan.replica_microbatches);
  if (plan.runtime != kDefaultRuntime) text += ",runtime=" + runtime_name(plan.runtime);
  if (plan.attention) text += ",attention=" + attention_kernel_name(*plan.attention);
  if (plan.tp_comm_overlap)
    text += fmt::format(",tp_comm_overlap={}", *plan.tp_comm_overlap ? "true" : "false");
  if (plan.cuda_graphs != CudaGraphs::kNone) {
    text += ",cuda_graphs=" + cuda_graphs_name(plan.cuda_graphs);
  }
  if (plan.grad_reduce_in_fp32)
    text += fmt::format(",grad_reduce_in_fp32={}", *plan.grad_reduce_in_fp32 ? "true" : "false");
  if (plan.fp8_recipe) text += ",fp8_recipe=" + fp8_recipe_name(*plan.fp8_recipe);
  if (plan.activation_offload_layers > 0)
    text += fmt::format(",activation_offload_layers={}", plan.activation_offload_layers);
  return text;
}

AttentionKernel attention_kernel(const Plan& plan) {
  return plan.attention.value_or(runtime_traits(plan.runtime).attention);
}

bool grad_reduce_in_fp32_in_force(const Plan& plan) {
  return plan.grad_reduce_in_fp32.value_or(plan.precision != Precision::kFp16);
}

int zero_stage_in_force(const Plan& plan) {
  if (plan.zero_stage >= 2 && plan.pp > 1 &&
      runtime_traits(plan.runtime).fsdp_unsharded_under_pp) {
    return 1;
  }
  return plan.zero_stage;
}

bool tp_comm_overlap_in_force(const Plan& plan) {
  return plan.tp_comm_overlap.value_or(
      runtime_support(plan.runtime).tp_comm_overlap == TpCommOverlap::kDefault && plan.tp > 1 &&
      plan.sequence_parallel);
}

double offloaded_fraction(const Plan& plan) {
  return plan.offload_optimizer ? plan.offload_fraction : 0.0;
}

int64_t effective_seq_length(const Plan& plan, const ModelSpec& model) {
  return plan.seq_length.value_or(model.seq_length);
}

int64_t microbatch_group_in_force(const Plan& plan) {
  return plan.microbatch_group_size > 0 ? plan.microbatch_group_size : plan.pp;
}

int64_t num_microbatches(const Plan& plan) {
  PPSIM_CHECK(plan.micro_batch_size > 0 && plan.dp > 0);
  if (!plan.replica_microbatches.empty()) {
    return *std::max_element(plan.replica_microbatches.begin(), plan.replica_microbatches.end());
  }
  return plan.global_batch_size / (plan.micro_batch_size * plan.dp);
}

std::vector<int64_t> replica_microbatch_counts(const Plan& plan) {
  if (!plan.replica_microbatches.empty()) return plan.replica_microbatches;
  return std::vector<int64_t>(plan.dp, num_microbatches(plan));
}

bool has_unequal_shares(const Plan& plan) {
  const std::vector<int64_t>& shares = plan.replica_microbatches;
  return std::adjacent_find(shares.begin(), shares.end(), std::not_equal_to<>()) != shares.end();
}

std::vector<LayoutStage> pipeline_layout_stages(const Plan& plan) {
  PPSIM_CHECK(!plan.pipeline_layout.empty(), "the plan has a pipeline layout");
  return parse_pipeline_layout(plan.pipeline_layout, "plan", "/pipeline_layout");
}

std::vector<int64_t> stage_layer_counts(const Plan& plan, const ModelSpec& model) {
  if (!plan.stage_layers.empty()) return plan.stage_layers;
  if (!plan.pipeline_layout.empty()) {
    return rank_decoder_layers(pipeline_layout_stages(plan), plan.pp);
  }
  if ((plan.first_stage_layers > 0 || plan.last_stage_layers > 0) && plan.pp > 1) {
    std::vector<int64_t> counts(plan.pp, 0);
    int64_t middle = plan.pp - 2;
    int64_t first = plan.first_stage_layers, last = plan.last_stage_layers;
    // A side not given takes the middle stages' share (Megatron: the remaining layers split).
    if (first == 0 || last == 0) {
      int64_t given = first + last, free_stages = middle + 1;
      int64_t share = std::max<int64_t>(0, model.num_layers - given) / free_stages;
      if (first == 0) first = share;
      if (last == 0) last = share;
    }
    counts.front() = first;
    counts.back() = last;
    int64_t rest = model.num_layers - first - last;
    for (int64_t stage = 1; stage <= middle; ++stage) {
      counts[stage] = rest / middle + (stage - 1 < rest % middle ? 1 : 0);
    }
    if (middle == 0) counts.back() = model.num_layers - first;
    return counts;
  }
  // The last stage's MTP layers take layer slots of their own, as entries of Megatron's
  // pipeline layout do ("mtp" beside "decoder"), while it keeps at least one decoder layer.
  const int64_t mtp_slots =
      plan.pp > 1 ? std::min(model.mtp_layers, std::max<int64_t>(0, model.num_layers / plan.pp - 1))
                  : 0;
  // Layers that do not divide the stages need an explicit split in Megatron (a pipeline layout or
  // the first/last-stage flags); ppsim takes the balancing one, where each output head -- the
  // loss's and each MTP layer's own -- also takes a slot on the last stage, as
  // --account-for-loss-in-pipeline-split counts the loss as a layer. A head costs about a layer:
  // DeepSeek-V3's 7,168 x 129,280 projection is 1.9 GFLOP a token against 1.3 for a layer.
  // Megatron-Bridge's DeepSeek-V3 layouts are this split (61 layers on 16 stages: 4 beside the
  // embedding, 4 x 14, 1 beside MTP and the loss; on 8: 8, 8 x 6, 5). Even splits stay even,
  // Megatron's default.
  const bool needs_layout = plan.pp > 1 && model.num_layers % plan.pp != 0;
  int64_t head_slots = needs_layout ? 1 + mtp_slots : 0;
  // Fewer head slots where the last stage would keep no decoder layer of its share.
  while (head_slots > 0 &&
         (model.num_layers + mtp_slots + head_slots) / plan.pp < mtp_slots + head_slots + 1) {
    --head_slots;
  }
  const int64_t slots = model.num_layers + mtp_slots + head_slots;
  std::vector<int64_t> counts(plan.pp, slots / plan.pp);
  int64_t remainder = slots % plan.pp;
  // Extra layers go to the middle stages first: the first and last also carry embedding and loss.
  std::vector<int64_t> order;
  for (int64_t stage = 1; stage + 1 < plan.pp; ++stage) order.push_back(stage);
  if (plan.pp > 1) order.push_back(plan.pp - 1);
  order.push_back(0);
  for (int64_t i = 0; i < remainder; ++i) counts[order[i % order.size()]] += 1;
  counts.back() -= mtp_slots + head_slots;
  return counts;
}

std::optional<std::string> op_shape_problem(const Plan& plan, const ModelSpec& model) {
  if (model.num_attention_heads % plan.tp != 0) {
    return fmt::format("tp={} does not divide the {} attention heads of {}", plan.tp,
                       model.num_attention_heads, model.name);
  }
  if (model.num_kv_heads % plan.tp != 0 && plan.tp % model.num_kv_heads != 0) {
    return fmt::format(
        "tp={} and the {} key/value heads of {} do not divide each other (kv heads "
        "must be a multiple of tp, or tp a multiple of them)",
        plan.tp, model.num_kv_heads, model.name);
  }
  if (model.mamba) {
    if (std::optional<std::string> problem = mamba_split_problem(*model.mamba, plan.tp, plan.cp)) {
      return fmt::format("{} ({}'s Mamba layers)", *problem, model.name);
    }
  }
  if (plan.ep > 1) {
    if (!model.is_moe()) {
      return fmt::format("ep={} but {} has no experts (ep needs an MoE model)", plan.ep,
                         model.name);
    }
    if (model.moe->num_experts % plan.ep != 0) {
      return fmt::format("ep={} does not divide the {} experts of {}", plan.ep,
                         model.moe->num_experts, model.name);
    }
  }
  int64_t seq = effective_seq_length(plan, model);
  if (plan.cp > 1 && seq % (2 * plan.cp) != 0) {
    return fmt::format("cp={} needs the sequence length ({}) divisible by 2*cp = {}", plan.cp, seq,
                       2 * plan.cp);
  }
  return std::nullopt;
}

std::optional<std::string> plan_problem(const Plan& plan, const ModelSpec& model,
                                        const ClusterSpec& cluster) {
  int64_t used = plan.num_gpus();
  if (used > cluster.num_gpus()) {
    return fmt::format("tp*pp*dp*cp = {}*{}*{}*{} = {} GPUs, but cluster '{}' has {}", plan.tp,
                       plan.pp, plan.dp, plan.cp, used, cluster.name, cluster.num_gpus());
  }
  if (std::optional<std::string> problem = op_shape_problem(plan, model)) return *problem;
  if (!plan.replica_microbatches.empty()) {
    if (std::optional<std::string> problem = replica_share_problem(plan)) return *problem;
  } else if (plan.global_batch_size % (plan.dp * plan.micro_batch_size) != 0) {
    return fmt::format("global batch {} is not divisible by dp*mbs = {}*{} = {}",
                       plan.global_batch_size, plan.dp, plan.micro_batch_size,
                       plan.dp * plan.micro_batch_size);
  }
  if (plan.pp > model.num_layers) {
    return fmt::format("pp={} stages but {} has only {} layers", plan.pp, model.name,
                       model.num_layers);
  }
  if (!plan.stage_layers.empty()) {
    if (static_cast<int64_t>(plan.stage_layers.size()) != plan.pp) {
      return fmt::format("stage_layers has {} entries but pp={}", plan.stage_layers.size(),
                         plan.pp);
    }
    int64_t sum = 0;
    for (int64_t layers : plan.stage_layers) sum += layers;
    if (sum != model.num_layers) {
      return fmt::format("stage_layers add up to {} but {} has {} layers", sum, model.name,
                         model.num_layers);
    }
    for (int64_t stage = 1; stage + 1 < plan.pp; ++stage) {
      if (plan.stage_layers[stage] == 0) {
        return fmt::format("stage {} has no layers; only the first and last stage may be empty",
                           stage);
      }
    }
  }
  bool v_shaped = is_v_shaped(plan.schedule);
  if (v_shaped && plan.vpp != 2) {
    return fmt::format("{} holds exactly 2 chunks per rank; vpp={} is not allowed",
                       schedule_name(plan.schedule), plan.vpp);
  }
  if (plan.microbatch_group_size > 0 && !(is_interleaved(plan.schedule) && plan.vpp > 1)) {
    return fmt::format(
        "microbatch_group_size_per_vp_stage={} groups the microbatches of interleaved-1f1b with "
        "vpp > 1, and this plan runs {} with vpp={}; leave it out, or interleave",
        plan.microbatch_group_size, schedule_name(plan.schedule), plan.vpp);
  }
  if (plan.vpp > 1 && !is_interleaved(plan.schedule) && !v_shaped) {
    return fmt::format(
        "vpp={} needs schedule interleaved-1f1b (or zbv/dualpipev); {} runs one "
        "chunk per rank",
        plan.vpp, schedule_name(plan.schedule));
  }
  if (is_interleaved(plan.schedule) && plan.pp < 2) {
    return "interleaved-1f1b needs pp >= 2";
  }
  if (plan.first_stage_layers > 0 || plan.last_stage_layers > 0) {
    if (plan.pp < 2) return "first_stage_layers/last_stage_layers need pp >= 2";
    int64_t ends = plan.first_stage_layers + plan.last_stage_layers;
    if (ends >= model.num_layers && plan.pp > 2) {
      return fmt::format(
          "first_stage_layers + last_stage_layers = {} leave no layers for the "
          "{} middle stages of {}'s {} layers",
          ends, plan.pp - 2, model.name, model.num_layers);
    }
    if (ends > model.num_layers) {
      return fmt::format("first_stage_layers + last_stage_layers = {} exceed {}'s {} layers", ends,
                         model.name, model.num_layers);
    }
  }
  if (!plan.pipeline_layout.empty()) {
    if (v_shaped) {
      return fmt::format(
          "pipeline_layout puts virtual stage i on rank i % pp (Megatron's interleaving), and {} "
          "places its chunks in a V; give the split as stage_layers instead",
          schedule_name(plan.schedule));
    }
    if (std::optional<std::string> problem = pipeline_layout_problem(
            pipeline_layout_stages(plan), plan.pp, chunks_per_rank(plan.schedule, plan.vpp),
            model.num_layers, model.mtp_layers, model.name)) {
      return *problem;
    }
  }
  // A stage's layers spread over its chunks as evenly as they go (chunk_layout.h), as Megatron's
  // pipeline layouts allow; a middle stage needs a layer in every chunk. A pipeline_layout says
  // where every layer goes and may leave any virtual stage empty, as Megatron's may (GLM-5.2's
  // H100 recipe keeps five empty, megatron/bridge/recipes/glm/h100/glm5.py).
  std::vector<int64_t> layers = stage_layer_counts(plan, model);
  const int64_t chunks = chunks_per_rank(plan.schedule, plan.vpp);
  for (int64_t stage = 1; plan.pipeline_layout.empty() && stage + 1 < plan.pp; ++stage) {
    if (layers[stage] < chunks) {
      return fmt::format(
          "stage {} has {} layers for its {} chunks (vpp); middle stages need at "
          "least one layer per chunk",
          stage, layers[stage], chunks);
    }
  }
  for (size_t d = 0; d < plan.replica_microbatches.size(); ++d) {
    if (std::optional<std::string> problem = schedule_problem(
            plan.schedule, static_cast<int32_t>(plan.pp),
            static_cast<int32_t>(plan.replica_microbatches[d]), static_cast<int32_t>(plan.vpp),
            static_cast<int32_t>(microbatch_group_in_force(plan)))) {
      return fmt::format("replica_microbatches[{}] = {}: {}", d, plan.replica_microbatches[d],
                         *problem);
    }
  }
  int64_t microbatches = num_microbatches(plan);
  if (const int32_t per_rank = schedule_traits(plan.schedule).min_microbatches_per_rank;
      per_rank > 0 && microbatches < per_rank * plan.pp) {
    return fmt::format(
        "{} needs at least {}*pp = {} microbatches; this plan has {} "
        "(raise global_batch_size or lower dp*mbs)",
        schedule_name(plan.schedule), per_rank, per_rank * plan.pp, microbatches);
  }
  if (std::optional<std::string> problem =
          schedule_problem(plan.schedule, static_cast<int32_t>(plan.pp),
                           static_cast<int32_t>(microbatches), static_cast<int32_t>(plan.vpp),
                           static_cast<int32_t>(microbatch_group_in_force(plan)))) {
    return *problem;
  }
  if (plan.tp_comm_overlap.value_or(false) && (plan.tp == 1 || !plan.sequence_parallel)) {
    return fmt::format(
        "tp_comm_overlap=true needs tp > 1 with sequence_parallel=true (this plan: tp={}, "
        "sequence_parallel={}); Megatron overlaps only sequence-parallel all-gathers and "
        "reduce-scatters",
        plan.tp, plan.sequence_parallel);
  }
  if (plan.fp8_recipe && plan.precision != Precision::kFp8) {
    return fmt::format("fp8_recipe={} needs precision=fp8 (this plan: precision={}); the recipe "
                       "says how fp8 tensors are scaled",
                       fp8_recipe_name(*plan.fp8_recipe), precision_name(plan.precision));
  }
  if (plan.activation_offload_layers > 0) {
    if (plan.pp > 1) {
      return fmt::format(
          "activation_offload_layers={} needs pp = 1 (this plan: pp={}); Megatron-Core offloads "
          "activations only without pipeline parallelism (transformer_config.py), the one form "
          "ppsim models",
          plan.activation_offload_layers, plan.pp);
    }
    if (plan.activation_offload_layers >= model.num_layers) {
      return fmt::format(
          "activation_offload_layers={} must be below {}'s {} layers (Megatron-Core keeps the "
          "last layer's activations on the GPU)",
          plan.activation_offload_layers, model.name, model.num_layers);
    }
  }
  if (plan.moe_a2a_overlap && (!model.is_moe() || plan.ep == 1)) {
    return "moe_a2a_overlap needs an MoE model with ep > 1 (there is no all-to-all to overlap)";
  }
  if (plan.moe_dispatcher != MoeDispatcher::kAllToAll && (!model.is_moe() || plan.ep == 1)) {
    return fmt::format("moe_dispatcher={} needs an MoE model with ep > 1 (there are no tokens to "
                       "dispatch to other ranks)",
                       moe_dispatcher_name(plan.moe_dispatcher));
  }
  if (std::optional<std::string> problem = cuda_graphs_problem(plan.cuda_graphs, model)) {
    return problem;
  }
  if (plan.recompute == Recompute::kSelective) {
    if (std::optional<std::string> problem =
            recompute_modules_problem(plan.recompute_modules, model)) {
      return problem;
    }
  }
  if (plan.recompute_num_layers > model.num_layers) {
    return fmt::format("recompute_num_layers={} is more than {}'s {} layers (it counts the "
                       "layers of each pipeline chunk that full recompute re-runs)",
                       plan.recompute_num_layers, model.name, model.num_layers);
  }
  if (plan.etp > 0 && !model.is_moe()) {
    return fmt::format("etp={} but {} has no experts (etp splits expert MLPs)", plan.etp,
                       model.name);
  }
  if (model.is_moe()) {
    // MoE parallel folding: the expert groups (etp x ep) tile the tp x dp x cp GPUs of a stage.
    const int64_t etp = plan.expert_tp();
    if ((plan.tp * plan.dp * plan.cp) % (etp * plan.ep) != 0) {
      return fmt::format(
          "etp*ep = {}*{} = {} must divide tp*dp*cp = {} (expert groups fold over "
          "the GPUs of a pipeline stage)",
          etp, plan.ep, etp * plan.ep, plan.tp * plan.dp * plan.cp);
    }
    if (model.moe->expert_ffn_hidden_size % etp != 0) {
      return fmt::format("etp={} does not divide the expert FFN width {} of {}", etp,
                         model.moe->expert_ffn_hidden_size, model.name);
    }
  }
  if (plan.sequence_parallel && plan.tp == 1) {
    return "sequence_parallel needs tp > 1 (it shards activations across the tp group)";
  }
  // Placement: which node group hosts each stage; each stage needs tp*dp*cp GPUs there.
  std::vector<int64_t> placement = plan.placement;
  if (!placement.empty() && static_cast<int64_t>(placement.size()) != plan.pp) {
    return fmt::format("placement has {} entries but pp={}", placement.size(), plan.pp);
  }
  std::vector<int64_t> gpus_needed(cluster.nodes.size(), 0);
  for (int64_t stage = 0; stage < static_cast<int64_t>(placement.size()); ++stage) {
    if (placement[stage] >= static_cast<int64_t>(cluster.nodes.size())) {
      return fmt::format(
          "placement puts stage {} on node group {}, but cluster '{}' has {} "
          "group(s)",
          stage, placement[stage], cluster.name, cluster.nodes.size());
    }
    gpus_needed[placement[stage]] += plan.tp * plan.dp * plan.cp;
  }
  for (size_t group = 0; group < cluster.nodes.size(); ++group) {
    const NodeGroup& nodes = cluster.nodes[group];
    if (gpus_needed[group] > nodes.num_gpus()) {
      return fmt::format("placement needs {} GPUs in node group {} ({}), which has {}",
                         gpus_needed[group], group, nodes.gpu.name, nodes.num_gpus());
    }
  }
  int64_t smallest_node = cluster.nodes.front().gpus_per_node;
  for (const NodeGroup& nodes : cluster.nodes)
    smallest_node = std::min(smallest_node, nodes.gpus_per_node);
  if (plan.tp > smallest_node) {
    return fmt::format(
        "tp={} is more than the {} GPUs per node (tensor parallelism stays inside "
        "a node)",
        plan.tp, smallest_node);
  }
  for (const NodeGroup& nodes : cluster.nodes) {
    if (std::optional<std::string> problem = gpu_precision_problem(plan.precision, nodes.gpu)) {
      return problem;
    }
    if (plan.precision == Precision::kFp8) {
      if (std::optional<std::string> problem =
              gpu_fp8_recipe_problem(fp8_recipe_in_force(plan), nodes.gpu)) {
        return problem;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> gpu_precision_problem(Precision precision, const GpuSpec& gpu) {
  switch (precision) {
    case Precision::kFp8:
      if (gpu.peak_fp8_flops > 0) return std::nullopt;
      return fmt::format("precision fp8 needs FP8 tensor cores, which {} lacks (use bf16)",
                         gpu.name);
    case Precision::kNvfp4:
      if (gpu.peak_fp4_flops > 0) return std::nullopt;
      return fmt::format(
          "precision nvfp4 needs FP4 tensor cores (Blackwell: B200, GB200, B300, GB300), which "
          "{} lacks (use fp8 or bf16)",
          gpu.name);
    case Precision::kBf16:
      if (gpu.peak_bf16_flops > 0) return std::nullopt;
      return fmt::format("precision bf16 is not supported by {} (use fp16)", gpu.name);
    case Precision::kFp16:
      return std::nullopt;
  }
  return std::nullopt;
}

void validate_plan(const Plan& plan, const ModelSpec& model, const ClusterSpec& cluster,
                   const std::string& source) {
  if (std::optional<std::string> problem = plan_problem(plan, model, cluster)) {
    throw InputError(source, "", "impossible plan: " + *problem);
  }
}

}  // namespace ppsim
