#include "simulator/report/simulate_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "simulator/model/model_stats.h"
#include "simulator/report/memory_report.h"
#include "simulator/report/report_format.h"
#include "simulator/spec/error.h"
#include "simulator/report/time_to_train_report.h"

namespace ppsim {
namespace {

// " (identical replicas once)" or " (2 classes of identical replicas: 127 + 1)": how the
// replicas were merged.
std::string classes_note(const ReplicaClasses& classes, int64_t dp) {
  if (classes.all_simulated() || dp <= 1) return "";
  if (classes.count() == 1) return " (identical replicas once)";
  return fmt::format(" ({} classes of identical replicas: {})", classes.count(),
                     classes.sizes_text());
}

// "F x12, SEND_F x11, dp_reduce x2": the critical path's tasks by kind.
std::string critical_summary(const StepMetrics& metrics) {
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  for (const CriticalTask& task : metrics.critical_path) {
    std::string kind = task.what.substr(0, task.what.find('['));
    if (counts[kind]++ == 0) order.push_back(kind);
  }
  std::string text;
  for (const std::string& kind : order) {
    text += fmt::format("{}{} x{}", text.empty() ? "" : ", ", kind, counts[kind]);
  }
  return text;
}

// Per GPU type utilisation (gpu_utilisation.h); printed when the plan uses several types.
std::string gpu_types_text(const StepMetrics& metrics) {
  if (metrics.gpu_types.size() < 2) return "";
  std::string out = "# utilisation per GPU type\n";
  const char* row = "{} {:<16} {:>6} {:>9} {:>10} {:>10} {:>10} {:>10}\n";
  out += fmt::format(fmt::runtime(row), "#", "gpu", "count", "busy", "compute", "idle", "peak",
                     "capacity");
  out += fmt::format(fmt::runtime(row), "#", "", "", "(%)", "(s)", "(s)", "(GiB)", "(GiB)");
  for (const GpuTypeUse& type : metrics.gpu_types) {
    out += fmt::format(fmt::runtime(row), " ", type.gpu, type.count,
                       fmt::format("{:.1f}", 100 * type.busy_fraction),
                       fmt::format("{:.4f}", type.compute_s), fmt::format("{:.4f}", type.idle_s),
                       gib(type.peak_memory_bytes), gib(type.capacity_bytes));
  }
  return out;
}

// Optimizer offload's traffic and host memory (offload_traffic.h); empty without offload.
std::string offload_text(const Step& step, const StepMetrics& metrics) {
  if (!metrics.offload) return "";
  const OffloadTraffic& offload = *metrics.offload;
  std::string out = fmt::format("# optimizer offload {}: per GPU on {}\n", offload.fraction,
                                step.worker_names[offload.worker]);
  out += fmt::format("offload_d2h_GiB        {}\n", gib(offload.d2h_bytes_per_gpu));
  out += fmt::format("offload_h2d_GiB        {}\n", gib(offload.h2d_bytes_per_gpu));
  out += fmt::format("offload_pcie_d2h_s     {:.6f}\n", offload.pcie_d2h_s);
  out += fmt::format("offload_pcie_h2d_s     {:.6f}\n", offload.pcie_h2d_s);
  out += fmt::format("offload_cpu_adam_s     {:.6f}\n", offload.cpu_adam_s);
  out += fmt::format("offload_exposed_s      {:.6f}\n", offload.exposed_s);
  out += fmt::format("# all GPUs: {} GiB down, {} GiB up over PCIe per step\n",
                     gib(offload.d2h_bytes_total), gib(offload.h2d_bytes_total));
  for (const NodeHostMemory& node : offload.host.nodes) {
    out += fmt::format("# host memory node {} ({} GPUs): {} of {} GiB{}\n", node.node, node.gpus,
                       gib(node.bytes), gib(node.capacity_bytes),
                       node.bytes <= node.capacity_bytes ? "" : " DOES NOT FIT");
  }
  return out;
}

}  // namespace

std::string simulate_report_text(const SimulateReport& report) {
  const ModelSpec& model = *report.model;
  const ClusterSpec& cluster = *report.cluster;
  const Plan& plan = *report.plan;
  const Step& step = *report.step;
  const StepMetrics& metrics = *report.metrics;
  std::string out;
  out += "# ppsim simulate\n";
  out += fmt::format("# model    {} ({} parameters)\n", model.name,
                     human_count(count_parameters(model).total));
  out += fmt::format("# cluster  {}\n", describe_cluster(cluster));
  out += fmt::format("# plan     {}\n", plan_to_inline(plan));
  std::string shares = fmt::format("{}", num_microbatches(plan));
  if (!plan.replica_microbatches.empty()) {
    shares = fmt::format("{}", fmt::join(plan.replica_microbatches, ":"));
  }
  out += fmt::format("# step     {} microbatches of {} x {} tokens per replica; {} of {} replicas "
                     "simulated{}; {} tasks, {} events\n",
                     shares, plan.micro_batch_size,
                     effective_seq_length(plan, model), step.classes.count(), plan.dp,
                     classes_note(step.classes, plan.dp), metrics.tasks, metrics.events);
  out += provenance_text(step.provenance);
  out += fmt::format("iteration_time_s       {:.6f}\n", metrics.iteration_time_s);
  out += fmt::format("tokens_per_s           {:.1f}\n", metrics.tokens_per_s);
  out += fmt::format("model_tflops_per_gpu   {:.1f}\n", metrics.model_tflops_per_gpu);
  out += fmt::format("mfu                    {:.3f}\n", metrics.mfu);
  out += fmt::format("bubble_pct             {:.2f}\n", metrics.bubble_pct);
  out += "# breakdown of the step on its critical worker (seconds)\n";
  out += fmt::format("compute                {:.6f}\n", metrics.breakdown_s.compute);
  out += fmt::format("bubble                 {:.6f}\n", metrics.breakdown_s.bubble);
  out += fmt::format("exposed_comm           {:.6f}\n", metrics.breakdown_s.exposed_comm);
  out += fmt::format("straggler_wait         {:.6f}\n", metrics.breakdown_s.straggler_wait);
  out += fmt::format("optimizer              {:.6f}\n", metrics.breakdown_s.optimizer);
  out += "#\n";
  const char* row = "{} {:>5} {:>6} {:<16} {:>10} {:>10} {:>10} {:>10} {:>5}\n";
  out += fmt::format(fmt::runtime(row), "#", "stage", "layers", "gpu", "busy", "act_peak", "peak",
                     "capacity", "fits");
  out += fmt::format(fmt::runtime(row), "#", "", "", "", "(s)", "(GiB)", "(GiB)", "(GiB)", "");
  for (const StageResult& stage : metrics.stages) {
    out += fmt::format(fmt::runtime(row), " ", stage.index, stage.layers, stage.gpu,
                       fmt::format("{:.4f}", stage.busy_s), gib(stage.activation_peak_bytes),
                       gib(stage.peak_memory_bytes), gib(stage.capacity_bytes),
                       stage.peak_memory_bytes <= stage.capacity_bytes ? "yes" : "no");
  }
  out += gpu_types_text(metrics);
  out += offload_text(step, metrics);
  out += fmt::format("# critical path: {} tasks ({})\n", metrics.critical_path.size(),
                     critical_summary(metrics));
  if (!metrics.critical_path.empty()) {
    const CriticalTask& first = metrics.critical_path.front();
    const CriticalTask& last = metrics.critical_path.back();
    out += fmt::format("#   from {} on {} at {:.6f} s to {} on {} at {:.6f} s\n", first.what,
                       step.worker_names[first.worker], first.start_s, last.what,
                       step.worker_names[last.worker], last.end_s);
    // A path through a collective can cross replicas: name the workers it passes, in order.
    const int32_t ranks = static_cast<int32_t>(plan.pp);
    std::vector<int32_t> replicas;
    for (const CriticalTask& task : metrics.critical_path) {
      int32_t replica = task.worker / ranks;
      if (std::find(replicas.begin(), replicas.end(), replica) == replicas.end()) {
        replicas.push_back(replica);
      }
    }
    if (replicas.size() > 1) {
      std::vector<std::string> through;
      int32_t previous = -1;
      for (const CriticalTask& task : metrics.critical_path) {
        if (task.worker == previous) continue;
        previous = task.worker;
        std::string name = step.worker_names[task.worker];
        name = name.substr(0, name.find(" ("));
        if (std::find(through.begin(), through.end(), name) == through.end()) {
          through.push_back(name);
        }
      }
      out += fmt::format("#   crosses replicas at a gradient reduction: through {}\n",
                         join_names(through, ", then "));
    }
  }
  if (report.stragglers != nullptr) out += straggler_report_text(*report.stragglers);
  if (report.time_to_train != nullptr) out += time_to_train_text(*report.time_to_train);
  bool host_over = metrics.host_memory && !metrics.host_memory->fits;
  bool gpu_over = false;
  for (const StageResult& stage : metrics.stages) {
    gpu_over = gpu_over || stage.peak_memory_bytes > stage.capacity_bytes;
  }
  if (metrics.fits) {
    out += fmt::format("# OK: fits, peak {} GiB\n", gib(metrics.peak_memory_bytes));
  } else if (host_over && !gpu_over) {
    const HostMemoryReport& host = *metrics.host_memory;
    out += fmt::format(
        "# DOES NOT FIT: node {} needs {} GiB of host memory for the offloaded "
        "{}, {} GiB over (lower {} or raise host_memory_GiB)\n",
        host.worst_node, gib(host.peak_bytes),
        metrics.offload ? "optimizer" : "activations", gib(host.over_bytes),
        metrics.offload ? "the offload fraction" : "activation_offload_layers");
  } else {
    out += fmt::format("# DOES NOT FIT: peak {} GiB exceeds a stage's capacity\n",
                       gib(metrics.peak_memory_bytes));
  }
  return out;
}

std::string simulate_report_json(const SimulateReport& report) {
  const ModelSpec& model = *report.model;
  const ClusterSpec& cluster = *report.cluster;
  const Plan& plan = *report.plan;
  const Step& step = *report.step;
  const StepMetrics& metrics = *report.metrics;
  nlohmann::ordered_json json;
  json["model"] = model.name;
  json["cluster"] = cluster.name;
  json["plan"] = nlohmann::ordered_json::parse(plan_to_json(plan));
  json["microbatches"] = num_microbatches(plan);
  json["replica_microbatches"] = replica_microbatch_counts(plan);
  json["seq_length"] = effective_seq_length(plan, model);
  json["iteration_time_s"] = metrics.iteration_time_s;
  json["tokens_per_s"] = metrics.tokens_per_s;
  json["model_tflops_per_gpu"] = metrics.model_tflops_per_gpu;
  json["mfu"] = metrics.mfu;
  json["bubble_pct"] = metrics.bubble_pct;
  json["breakdown_s"] = {{"compute", metrics.breakdown_s.compute},
                         {"bubble", metrics.breakdown_s.bubble},
                         {"exposed_comm", metrics.breakdown_s.exposed_comm},
                         {"straggler_wait", metrics.breakdown_s.straggler_wait},
                         {"optimizer", metrics.breakdown_s.optimizer}};
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageResult& stage : metrics.stages) {
    nlohmann::ordered_json entry;
    entry["index"] = stage.index;
    entry["layers"] = stage.layers;
    entry["gpu"] = stage.gpu;
    entry["busy_s"] = stage.busy_s;
    entry["activation_peak_bytes"] = stage.activation_peak_bytes;
    entry["peak_memory_bytes"] = stage.peak_memory_bytes;
    entry["capacity_bytes"] = stage.capacity_bytes;
    entry["fits"] = stage.peak_memory_bytes <= stage.capacity_bytes;
    stages.push_back(entry);
  }
  json["stages"] = stages;
  json["peak_memory_bytes"] = metrics.peak_memory_bytes;
  json["fits"] = metrics.fits;
  json["events"] = metrics.events;
  json["tasks"] = metrics.tasks;
  json["simulated_replicas"] = metrics.simulated_replicas;
  json["replica_classes"] = step.classes.weight;
  add_provenance_json(json, step.provenance);
  json["critical_path_length"] = metrics.critical_path.size();
  nlohmann::ordered_json path = nlohmann::ordered_json::array();
  for (const CriticalTask& task : metrics.critical_path) {
    path.push_back({{"worker", step.worker_names[task.worker]},
                    {"task", task.what},
                    {"start_s", task.start_s},
                    {"end_s", task.end_s}});
  }
  json["critical_path"] = path;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (const GpuTypeUse& type : metrics.gpu_types) {
    types.push_back({{"gpu", type.gpu},
                     {"count", type.count},
                     {"busy_fraction", type.busy_fraction},
                     {"compute_s", type.compute_s},
                     {"idle_s", type.idle_s},
                     {"peak_memory_bytes", type.peak_memory_bytes},
                     {"capacity_bytes", type.capacity_bytes}});
  }
  json["gpu_types"] = types;
  if (metrics.offload) {
    const OffloadTraffic& offload = *metrics.offload;
    json["offload"] = {{"fraction", offload.fraction},
                       {"worker", step.worker_names[offload.worker]},
                       {"d2h_bytes_per_gpu", offload.d2h_bytes_per_gpu},
                       {"h2d_bytes_per_gpu", offload.h2d_bytes_per_gpu},
                       {"d2h_bytes_total", offload.d2h_bytes_total},
                       {"h2d_bytes_total", offload.h2d_bytes_total},
                       {"pcie_d2h_s", offload.pcie_d2h_s},
                       {"pcie_h2d_s", offload.pcie_h2d_s},
                       {"cpu_adam_s", offload.cpu_adam_s},
                       {"exposed_s", offload.exposed_s},
                       {"host_memory", host_memory_json(offload.host)}};
  }
  if (report.stragglers != nullptr) add_straggler_json(json, *report.stragglers);
  if (report.time_to_train != nullptr) {
    json["time_to_train"] = time_to_train_json(*report.time_to_train);
  }
  return json.dump(2) + "\n";
}

}  // namespace ppsim
