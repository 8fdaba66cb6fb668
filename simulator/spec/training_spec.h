// TrainingSpec: the whole training run a plan is asked to finish (tokens, a warm-up batch ramp,
// the checkpoint interval), and its parsers (docs/time-to-train.md).
//
// JSON (the plan spec's "training" object):
//   {"tokens": 15600000000000 | "15.6T",
//    "batch_ramp"?: [{"tokens": "252M", "global_batch_size": 1024, "seq_length"?: 4096}, ...],
//    "checkpoint_interval"?: "daly" | "young" | STEPS}
// Flags: --train-tokens N (wins over "tokens"), --checkpoint-interval daly|young|STEPS (wins over
// "checkpoint_interval").
// Token counts are positive whole numbers, written plainly (300000000000) or with a decimal
// suffix K (1e3), M (1e6), B or G (1e9), T (1e12): "15.6T", "300B", "2.87T", "252M". The ramp's
// phases run first, in order, each with its own global batch (and sequence length, default the
// plan's); the tokens left after them run at the plan's batch.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ppsim {

// One warm-up phase of a batch-size ramp.
struct BatchPhase {
  int64_t tokens = 0;                 // Tokens trained in this phase. Required, >= 1.
  int64_t global_batch_size = 0;      // Sequences per step in this phase. Required, >= 1.
  std::optional<int64_t> seq_length;  // Tokens per sequence; default the plan's.
};

// How the checkpoint interval is chosen (checkpoint_restart.h has the formulas).
enum class IntervalRule {
  kDaly,   // Daly's higher-order optimum (2006). Default.
  kYoung,  // Young's first-order optimum (1974).
  kSteps,  // A given number of steps (TrainingSpec::interval_steps).
};

struct TrainingSpec {
  int64_t tokens = 0;                  // Tokens of the whole run, ramp included. Required, >= 1.
  std::vector<BatchPhase> batch_ramp;  // Warm-up phases, in order; empty = none.
  IntervalRule interval_rule = IntervalRule::kDaly;
  int64_t interval_steps = 0;  // Steps between checkpoints when interval_rule is kSteps.
};

// "daly", "young" or "steps" (for reports).
std::string interval_rule_name(IntervalRule rule);

// Parses a token count ("15.6T", "300B", "1000000"). Throws InputError naming `source` and
// `json_path` when the text is not a positive whole number of tokens (or overflows int64).
int64_t parse_token_count(const std::string& text, const std::string& source,
                          const std::string& json_path = "");

// Parses --checkpoint-interval / "checkpoint_interval": "daly", "young" or a positive integer of
// steps, into `spec`. Throws InputError naming `source` and `json_path`.
void parse_checkpoint_interval(const std::string& text, TrainingSpec& spec,
                               const std::string& source, const std::string& json_path = "");

// Parses the "training" object `value` found at `path` in `source`. Errors name both.
TrainingSpec parse_training_spec(const nlohmann::json& value, const std::string& source,
                                 const std::string& path);

// The spec as the JSON object parse_training_spec accepts (tokens as integers).
std::string training_spec_to_json(const TrainingSpec& spec);

}  // namespace ppsim
