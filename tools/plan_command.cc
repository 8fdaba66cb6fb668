// `ppsim plan`: the main job. Enumerates the valid plans for a model on a cluster, prunes them
// by the memory model and lists those that fit. Until the event simulator lands, the order is
// by cost heuristics stated in the output, not by simulated step time.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/error.h"
#include "simulator/memory_model.h"
#include "simulator/model_stats.h"
#include "simulator/plan_candidates.h"
#include "simulator/report_format.h"
#include "tools/commands.h"

namespace ppsim {
namespace {

struct Options {
  std::string model = "llama3-70b";
  std::string cluster = "dgx-h100-4";
  int64_t global_batch = 256;
  int64_t seq_len = 0;
  int64_t gpus = 0;
  int64_t top = 10;
  std::string schedule = "1f1b";
  bool json = false;
};

struct Candidate {
  Plan plan;
  MemoryReport memory;
};

// Fitting plans first; then less recompute (less extra compute), fewer model-parallel GPUs
// (less communication per layer), larger microbatches (more efficient GEMMs).
bool better(const Candidate& a, const Candidate& b) {
  if (a.memory.fits != b.memory.fits) return a.memory.fits;
  if (!a.memory.fits) return a.memory.over_bytes < b.memory.over_bytes;
  if (a.plan.recompute != b.plan.recompute) return a.plan.recompute < b.plan.recompute;
  int64_t a_model_parallel = a.plan.tp * a.plan.pp * a.plan.cp;
  int64_t b_model_parallel = b.plan.tp * b.plan.pp * b.plan.cp;
  if (a_model_parallel != b_model_parallel) return a_model_parallel < b_model_parallel;
  return a.plan.micro_batch_size > b.plan.micro_batch_size;
}

int run_plan(const Options& options) {
  ModelSpec model = load_model_spec(options.model);
  ClusterSpec cluster = load_cluster_spec(options.cluster);
  if (options.gpus > cluster.num_gpus()) {
    throw InputError("--gpus", "",
                     fmt::format("{} GPUs requested but cluster '{}' has {}", options.gpus,
                                 cluster.name, cluster.num_gpus()));
  }
  CandidateLimits limits;
  limits.gpus = options.gpus;
  limits.global_batch_size = options.global_batch;
  if (options.seq_len > 0) limits.seq_length = options.seq_len;
  Plan schedule_holder = parse_plan("gbs=1,schedule=" + options.schedule, "--schedule");
  limits.schedule = schedule_holder.schedule;
  std::vector<Plan> plans = enumerate_plans(model, cluster, limits);
  std::vector<Candidate> candidates;
  for (const Plan& plan : plans) candidates.push_back({plan, estimate_memory(model, cluster, plan)});
  std::stable_sort(candidates.begin(), candidates.end(), better);
  int64_t fitting = std::count_if(candidates.begin(), candidates.end(),
                                  [](const Candidate& c) { return c.memory.fits; });
  size_t shown = std::min<size_t>(options.top, candidates.size());
  int64_t seq = options.seq_len > 0 ? options.seq_len : model.seq_length;

  if (options.json) {
    nlohmann::ordered_json json;
    json["model"] = model.name;
    json["cluster"] = cluster.name;
    json["considered"] = candidates.size();
    json["fitting"] = fitting;
    json["ranking"] = "memory model only: fitting first, then less recompute, fewer "
                      "model-parallel GPUs, larger microbatches";
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (size_t i = 0; i < shown; ++i) {
      nlohmann::ordered_json entry;
      entry["plan"] = nlohmann::ordered_json::parse(plan_to_json(candidates[i].plan));
      entry["peak_memory_bytes"] = candidates[i].memory.peak_bytes;
      entry["fits"] = candidates[i].memory.fits;
      entry["over_bytes"] = candidates[i].memory.over_bytes;
      list.push_back(entry);
    }
    json["plans"] = list;
    fmt::print("{}\n", json.dump(2));
  } else {
    ParameterCounts counts = count_parameters(model);
    fmt::print("# ppsim plan\n");
    fmt::print("# model    {}: {} parameters ({} active), {} layers, hidden {}, {:.3g} GFLOP "
               "per token at sequence {}\n",
               model.name, human_count(counts.total), human_count(counts.active),
               model.num_layers, model.hidden_size,
               training_flops_per_token(model, seq) / 1e9, seq);
    fmt::print("# cluster  {}\n", describe_cluster(cluster));
    fmt::print("# batch    {} sequences of {} tokens per step\n", options.global_batch, seq);
    fmt::print("# {} valid plans considered, {} fit in memory\n", candidates.size(), fitting);
    fmt::print("# order: fitting first, then less recompute, fewer model-parallel GPUs, larger "
               "microbatches (memory model only; no step-time simulation in this build)\n");
    fmt::print("#\n# {:>4} {:>9} {:>9} {:>5}  {}\n", "rank", "peak", "capacity", "fits", "plan");
    fmt::print("# {:>4} {:>9} {:>9} {:>5}\n", "", "(GiB)", "(GiB)", "");
    for (size_t i = 0; i < shown; ++i) {
      const Candidate& candidate = candidates[i];
      const StageMemory& worst = candidate.memory.stages.at(candidate.memory.worst_stage);
      fmt::print("  {:>4} {:>9} {:>9} {:>5}  {}\n", i + 1, gib(candidate.memory.peak_bytes),
                 gib(worst.capacity_bytes), candidate.memory.fits ? "yes" : "no",
                 plan_to_inline(candidate.plan));
    }
  }
  if (fitting == 0) {
    if (candidates.empty()) {
      fmt::print(stderr, "ppsim: no valid plan: no factorisation of {} GPUs satisfies the plan "
                         "rules for {} (try another --gpus or --global-batch)\n",
                 options.gpus > 0 ? options.gpus : cluster.num_gpus(), model.name);
    } else {
      const Candidate& closest = candidates.front();
      fmt::print(stderr, "ppsim: nothing fits: the closest plan, {}, needs {} GiB on stage {}, "
                         "{} GiB over its {} GiB (use more GPUs or a larger-memory GPU)\n",
                 plan_to_inline(closest.plan), gib(closest.memory.peak_bytes),
                 closest.memory.worst_stage, gib(closest.memory.over_bytes),
                 gib(closest.memory.stages.at(closest.memory.worst_stage).capacity_bytes));
    }
    return kExitNothingFits;
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "plan", "Find the parallel plans that fit a model on a cluster (the main job)");
  command->add_option("--model", options->model, "Zoo name, model JSON or HF config.json")
      ->capture_default_str();
  command->add_option("--cluster", options->cluster,
                      "Zoo name, cluster JSON, or NODE_TYPE:NODES (dgx-h100:4)")
      ->capture_default_str();
  command->add_option("--global-batch", options->global_batch, "Sequences per optimizer step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--seq-len", options->seq_len, "Sequence length (default: the model's)")
      ->check(CLI::PositiveNumber);
  command->add_option("--gpus", options->gpus, "GPUs to use (default: all of the cluster)")
      ->check(CLI::PositiveNumber);
  command->add_option("--top", options->top, "Plans to list")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--schedule", options->schedule, "Pipeline schedule for pp > 1")
      ->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON");
  command->footer(
      "Example:\n"
      "  ppsim plan --model llama3-70b --cluster dgx-h100-4 --global-batch 256 --top 5\n"
      "Exit status: 0 when a plan fits, 3 when nothing fits (the closest is named), 2 for bad "
      "input.");
  command->callback([options, &exit_code] { exit_code = run_plan(*options); });
}

}  // namespace ppsim
