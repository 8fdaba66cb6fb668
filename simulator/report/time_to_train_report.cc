#include "simulator/report/time_to_train_report.h"

#include <fmt/format.h>

#include <cmath>

#include "simulator/report/report_format.h"
#include "simulator/spec/units.h"

namespace ppsim {
namespace {

constexpr double kSecondsPerDay = 24 * kHour;

// A finite number, or JSON null.
nlohmann::ordered_json finite_or_null(double value) {
  return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

std::string fixed_or_none(double value, int decimals, const char* none) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : std::string(none);
}

}  // namespace

double seconds_to_days(double seconds) { return seconds / kSecondsPerDay; }

std::string time_to_train_text(const TimeToTrain& result) {
  const CheckpointCost& checkpoint = result.checkpoint;
  const double rate = result.failure_rate.total();
  std::string out = fmt::format(
      "# time to train {} tokens: {} interval, {} checkpoints\n", human_count(result.tokens),
      result.interval_rule == IntervalRule::kSteps ? std::string("given")
                                                   : interval_rule_name(result.interval_rule),
      checkpoint.async ? "asynchronous" : "synchronous");
  bool ramp = false;
  for (const TrainingPhase& phase : result.phases) ramp = ramp || phase.ramp;
  if (ramp) {
    const char* row = "# {:>6} {:>16} {:>7} {:>7} {:>10} {:>10}\n";
    out += fmt::format(fmt::runtime(row), "phase", "tokens", "gbs", "seq", "steps", "step(s)");
    for (size_t i = 0; i < result.phases.size(); ++i) {
      const TrainingPhase& phase = result.phases[i];
      out += fmt::format(fmt::runtime(row), phase.ramp ? std::to_string(i) : "rest", phase.tokens,
                         phase.plan.global_batch_size,
                         phase.tokens_per_step / phase.plan.global_batch_size, phase.steps,
                         fmt::format("{:.4f}", phase.step_time_s));
    }
  }
  out += fmt::format("steps                  {}\n", result.steps);
  out += fmt::format("tokens                 {}\n", result.tokens);
  out += fmt::format("step_time_s            {:.6f}\n", result.step_time_s);
  out += fmt::format("compute_days           {:.3f}\n", seconds_to_days(result.compute_s));
  out += fmt::format("checkpoint.bytes_per_rank {:.4g} ({} GiB)\n", checkpoint.bytes_per_rank,
                     gib(checkpoint.bytes_per_rank));
  out +=
      fmt::format("checkpoint.bytes_total {:.4g} ({} GiB; write {:.0f} GB/s, read {:.0f} GB/s)\n",
                  checkpoint.bytes_total, gib(checkpoint.bytes_total),
                  checkpoint.write_bandwidth / kGiga, checkpoint.read_bandwidth / kGiga);
  out += fmt::format("checkpoint.save_s      {:.3f}\n", checkpoint.save_s);
  out += fmt::format("checkpoint.blocking_s  {:.3f}\n", checkpoint.blocking_s);
  out += fmt::format("checkpoint.interval_s  {}\n", fixed_or_none(result.interval_s, 1, "none"));
  out += fmt::format("checkpoint.count       {}\n", result.checkpoint_count);
  out += fmt::format("failures.expected      {:.1f}\n", result.expected_failures);
  out += fmt::format(
      "failures.rate_per_day  {:.3f} (GPU {:.3f}, node {:.3f}, NIC {:.3f}; job MTBF {} h)\n",
      rate * kSecondsPerDay, result.failure_rate.gpu * kSecondsPerDay,
      result.failure_rate.node * kSecondsPerDay, result.failure_rate.nic * kSecondsPerDay,
      rate > 0 ? fmt::format("{:.2f}", 1 / rate / kHour) : std::string("inf"));
  out += fmt::format("failures.lost_s        {:.1f}\n", result.lost_s);
  out += fmt::format("failures.restart_s     {:.1f} (load {:.1f})\n", result.restart_s,
                     checkpoint.load_s);
  out += fmt::format("goodput                {:.4f}\n", result.goodput);
  std::string spread;
  if (result.wall_percentiles) {
    const WallTimePercentiles& p = *result.wall_percentiles;
    spread = fmt::format(" (p50 {:.2f}, p90 {:.2f} over {} draws, seed {})", seconds_to_days(p.p50),
                         seconds_to_days(p.p90), p.iterations, p.seed);
  }
  out += fmt::format("wall_days              {}{}\n",
                     fixed_or_none(seconds_to_days(result.wall_s), 3, "never"), spread);
  out += fmt::format("gpu_hours              {:.0f} ({} GPUs)\n", result.gpu_hours, result.gpus);
  if (result.cost_usd) out += fmt::format("cost_usd               {:.0f}\n", *result.cost_usd);
  for (const std::string& note : result.notes) out += fmt::format("# note: {}\n", note);
  return out;
}

nlohmann::ordered_json time_to_train_json(const TimeToTrain& result) {
  const CheckpointCost& checkpoint = result.checkpoint;
  nlohmann::ordered_json json;
  json["steps"] = result.steps;
  json["tokens"] = result.tokens;
  json["step_time_s"] = result.step_time_s;
  json["compute_days"] = seconds_to_days(result.compute_s);
  json["checkpoint"] = {{"bytes_per_rank", checkpoint.bytes_per_rank},
                        {"bytes_total", checkpoint.bytes_total},
                        {"save_s", checkpoint.save_s},
                        {"blocking_s", checkpoint.blocking_s},
                        {"interval_s", finite_or_null(result.interval_s)},
                        {"count", result.checkpoint_count}};
  json["failures"] = {{"expected", finite_or_null(result.expected_failures)},
                      {"rate_per_day", result.failure_rate.total() * kSecondsPerDay},
                      {"lost_s", result.lost_s},
                      {"restart_s", result.restart_s}};
  json["goodput"] = result.goodput;
  json["wall_days"] = finite_or_null(seconds_to_days(result.wall_s));
  if (result.wall_percentiles) {
    json["wall_days_p50"] = seconds_to_days(result.wall_percentiles->p50);
    json["wall_days_p90"] = seconds_to_days(result.wall_percentiles->p90);
  }
  json["gpu_hours"] = finite_or_null(result.gpu_hours);
  if (result.cost_usd) json["cost_usd"] = finite_or_null(*result.cost_usd);
  bool ramp = false;
  for (const TrainingPhase& phase : result.phases) ramp = ramp || phase.ramp;
  if (ramp) {
    nlohmann::ordered_json phases = nlohmann::ordered_json::array();
    for (const TrainingPhase& phase : result.phases) {
      phases.push_back({{"tokens", phase.tokens},
                        {"global_batch_size", phase.plan.global_batch_size},
                        {"seq_length", phase.tokens_per_step / phase.plan.global_batch_size},
                        {"steps", phase.steps},
                        {"step_time_s", phase.step_time_s}});
    }
    json["phases"] = phases;
  }
  if (!result.notes.empty()) json["notes"] = result.notes;
  return json;
}

}  // namespace ppsim
