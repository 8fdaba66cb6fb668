// StragglerModel: the slow GPUs, slow or flapping links and random jitter a cluster suffers, as
// the user states them (cluster spec "stragglers" or the --straggler / --jitter flags).
//
// Flag forms (docs/stragglers.md; FACTOR in (0, 1], 1 = nominal):
//   gpu=RANK:FACTOR           global GPU RANK computes at FACTOR of its speed;
//   node=N:FACTOR             every GPU of node N (global node index) does;
//   link=A-B:FACTOR[:+LATENCY_US][:period=MS:duty=FRAC]
//                             the network path between nodes A and B (both directions) carries
//                             each flow at FACTOR of the rate it would get alone, and every
//                             transfer on it waits LATENCY_US longer; with period and duty it
//                             flaps: slow during the first FRAC of every MS of simulated time
//                             (state sampled at each iteration's start, straggler_effects.h);
//   jitter: lognormal:SIGMA | uniform:MAX | exponential:MEAN
//                             every compute action's duration is multiplied by a random
//                             slowdown s >= 1 (straggler_effects.h gives each distribution).
// JSON: "stragglers": [ENTRY, ...], each ENTRY either a flag string ("gpu=3:0.5",
// "jitter=lognormal:0.05") or an object with exactly one of
//   {"gpu": RANK, "factor"}, {"node": N, "factor"},
//   {"link": [A, B], "factor"?, "extra_latency_us"?, "period_ms"?, "duty"?},
//   {"jitter": "lognormal"|"uniform"|"exponential", "sigma"|"max"|"mean": VALUE}.
// Unknown keys are errors (with "did you mean"); ranges are checked against the cluster by
// validate_straggler_model() in cluster_spec.h.
//
// Thread-safety: plain data and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ppsim {

enum class StragglerKind : uint8_t { kGpu, kNode, kLink };

// A link that is slow only part of the time.
struct Flapping {
  double period = 0;  // Seconds of simulated time; JSON "period_ms" / flag "period=MS". > 0.
  double duty = 1;    // Fraction of each period the link is slow, (0, 1]; "duty".
};

// One injected fault.
struct Straggler {
  StragglerKind kind = StragglerKind::kGpu;
  int64_t gpu = 0;          // kGpu: global GPU rank (Megatron order, worker_layout.h).
  int64_t node = 0;         // kNode: global node index; kLink: one end.
  int64_t other_node = 0;   // kLink: the other end (!= node).
  double factor = 1;        // Speed (kGpu, kNode) or bandwidth (kLink) fraction, (0, 1].
  double extra_latency = 0; // kLink: seconds added to every transfer on the path; JSON
                            // "extra_latency_us", flag ":+US". Default 0.
  std::optional<Flapping> flapping;  // kLink only; nullopt = slow all the time.
  // Where it was stated, for later errors: "--straggler" or the cluster file, and its JSON path.
  std::string source;
  std::string json_path;
};

// Range limits (docs/limits.md), so that no straggler turns a step into years of simulated
// time: a factor in [kMinStragglerFactor, 1]; lognormal sigma at most kMaxJitterSigma (e^(2*5)
// = 22,000x at five sigma); a uniform MAX or exponential MEAN slowdown at most kMaxJitterSlowdown
// (101x nominal at the uniform's top).
inline constexpr double kMinStragglerFactor = 1e-6;
inline constexpr double kMaxJitterSigma = 2.0;
inline constexpr double kMaxJitterSlowdown = 100.0;

enum class JitterKind : uint8_t { kLognormal, kUniform, kExponential };

// Random slowdown of every compute action.
struct JitterSpec {
  JitterKind kind = JitterKind::kLognormal;
  double parameter = 0;  // lognormal: sigma; uniform: max; exponential: mean. > 0.
  std::string source;    // As Straggler::source.
  std::string json_path;
};

struct StragglerModel {
  std::vector<Straggler> stragglers;  // In the order stated (cluster spec first, then flags).
  std::optional<JitterSpec> jitter;   // At most one.

  bool empty() const { return stragglers.empty() && !jitter; }
  // True when step times vary between iterations (jitter, or a flapping link).
  bool stochastic() const;
  // True when some GPU or node computes slower (speed factors, which layer balance can use).
  bool has_slow_gpus() const;
};

// The canonical flag text of a fault: "gpu=3:0.5", "link=0-1:0.5:+20:period=100:duty=0.3",
// "jitter=lognormal:0.05" (numbers printed shortest round-trip, so the text parses back).
std::string straggler_text(const Straggler& straggler);
std::string jitter_text(const JitterSpec& jitter);
// A sentence for reports: "GPU 3 at 0.5x compute speed", "link node0-node1 at 0.5x bandwidth
// +20 us, slow 30% of every 100 ms", "lognormal jitter (sigma 0.05) on every compute action".
std::string straggler_description(const Straggler& straggler);
std::string jitter_description(const JitterSpec& jitter);

// Parses one --straggler value (gpu=, node= or link= form). Errors name `flag` and the form.
Straggler parse_straggler_flag(const std::string& text, const std::string& flag = "--straggler");
// Parses one --jitter value ("lognormal:0.05"). Errors name `flag` and the forms.
JitterSpec parse_jitter_flag(const std::string& text, const std::string& flag = "--jitter");

// Parses a cluster spec's "stragglers" array at `path` ("/stragglers") inside `source`.
StragglerModel parse_straggler_json(const nlohmann::json& array, const std::string& source,
                                    const std::string& path);

// Adds `extra` to `model` (flags after the cluster's); a second jitter is an error naming it.
void merge_straggler_models(StragglerModel& model, const StragglerModel& extra);

}  // namespace ppsim
