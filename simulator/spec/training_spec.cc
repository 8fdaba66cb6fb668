#include "simulator/spec/training_spec.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {
namespace {

// The decimal exponent of a token suffix, or -1 when `c` is none.
int suffix_exponent(char c) {
  switch (std::toupper(static_cast<unsigned char>(c))) {
    case 'K':
      return 3;
    case 'M':
      return 6;
    case 'B':
    case 'G':
      return 9;
    case 'T':
      return 12;
    default:
      return -1;
  }
}

// A token count in a JSON value: an integer, or a string parse_token_count reads.
int64_t json_token_count(const nlohmann::json& value, const std::string& source,
                         const std::string& path) {
  if (value.is_string()) return parse_token_count(value.get<std::string>(), source, path);
  return json_element_int(value, source, path, 1);
}

}  // namespace

std::string interval_rule_name(IntervalRule rule) {
  switch (rule) {
    case IntervalRule::kDaly:
      return "daly";
    case IntervalRule::kYoung:
      return "young";
    case IntervalRule::kSteps:
      return "steps";
  }
  return "daly";
}

int64_t parse_token_count(const std::string& text, const std::string& source,
                          const std::string& json_path) {
  auto fail = [&](const std::string& why) -> int64_t {
    throw InputError(source, json_path,
                     fmt::format("'{}' is not a token count: {}; write a positive whole number, "
                                 "plainly or with a suffix K, M, B (or G), T (e.g. 15.6T, 300B, "
                                 "1000000)",
                                 text, why));
  };
  if (text.empty()) return fail("it is empty");
  // Digits, an optional '.' and digits, an optional suffix: exact decimal arithmetic, so 15.6T
  // is 15,600,000,000,000 and not 15.6 * 1e12 rounded.
  size_t i = 0;
  std::string digits;
  int decimals = 0;
  bool point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
      if (point) ++decimals;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (digits.empty()) return fail("it does not start with a number");
  int exponent = 0;
  if (i < text.size()) {
    exponent = suffix_exponent(text[i]);
    if (exponent < 0 || i + 1 != text.size()) {
      return fail(fmt::format("unexpected '{}'", text.substr(i)));
    }
  } else if (point) {
    return fail("a fraction needs a suffix (K, M, B, T)");
  }
  if (decimals > exponent) return fail("it is not a whole number of tokens");
  for (int k = 0; k < exponent - decimals; ++k) digits += '0';
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return fail("it is zero");
  digits = digits.substr(first);
  const std::string max = std::to_string(std::numeric_limits<int64_t>::max());
  if (digits.size() > max.size() || (digits.size() == max.size() && digits > max)) {
    return fail("it is too large");
  }
  return std::stoll(digits);
}

void parse_checkpoint_interval(const std::string& text, TrainingSpec& spec,
                               const std::string& source, const std::string& json_path) {
  if (text == "daly") {
    spec.interval_rule = IntervalRule::kDaly;
    return;
  }
  if (text == "young") {
    spec.interval_rule = IntervalRule::kYoung;
    return;
  }
  bool all_digits = !text.empty() && text.size() <= 18;
  for (char c : text) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
  if (!all_digits || std::stoll(text) < 1) {
    throw InputError(source, json_path,
                     fmt::format("unknown checkpoint interval '{}'; expected daly (Daly's "
                                 "higher-order optimum, the default), young (Young's first-order "
                                 "optimum) or a positive number of steps{}",
                                 text, did_you_mean(text, {"daly", "young"})));
  }
  spec.interval_rule = IntervalRule::kSteps;
  spec.interval_steps = std::stoll(text);
}

TrainingSpec parse_training_spec(const nlohmann::json& value, const std::string& source,
                                 const std::string& path) {
  JsonReader reader(value, source, path);
  TrainingSpec spec;
  reader.allow("tokens");
  if (!value.contains("tokens")) {
    reader.fail("",
                "required key 'tokens' is missing: the tokens of the whole run, e.g. "
                "\"tokens\": \"15.6T\"");
  }
  spec.tokens = json_token_count(value["tokens"], source, reader.path_of("tokens"));
  if (const nlohmann::json* ramp = reader.optional_array("batch_ramp")) {
    int64_t ramp_tokens = 0;
    for (size_t i = 0; i < ramp->size(); ++i) {
      std::string phase_path = reader.path_of("batch_ramp") + "/" + std::to_string(i);
      JsonReader phase_reader((*ramp)[i], source, phase_path);
      BatchPhase phase;
      phase_reader.allow("tokens");
      if (!(*ramp)[i].contains("tokens")) {
        phase_reader.fail("", "required key 'tokens' is missing: the tokens of this phase");
      }
      phase.tokens = json_token_count((*ramp)[i]["tokens"], source, phase_path + "/tokens");
      phase.global_batch_size = phase_reader.required_int("global_batch_size", 1);
      phase.seq_length = phase_reader.optional_int("seq_length", 1);
      phase_reader.finish();
      ramp_tokens += phase.tokens;
      spec.batch_ramp.push_back(phase);
    }
    if (ramp_tokens > spec.tokens) {
      reader.fail("batch_ramp",
                  fmt::format("the ramp's phases hold {} tokens, more than the run's {} "
                              "(\"tokens\" counts the whole run, ramp included)",
                              ramp_tokens, spec.tokens));
    }
  }
  if (reader.has("checkpoint_interval")) {
    reader.allow("checkpoint_interval");
    const nlohmann::json& interval = value["checkpoint_interval"];
    std::string text = interval.is_string()           ? interval.get<std::string>()
                       : interval.is_number_integer() ? std::to_string(interval.get<int64_t>())
                                                      : interval.dump();
    parse_checkpoint_interval(text, spec, source, reader.path_of("checkpoint_interval"));
  }
  reader.finish();
  return spec;
}

std::string training_spec_to_json(const TrainingSpec& spec) {
  nlohmann::ordered_json json;
  json["tokens"] = spec.tokens;
  if (!spec.batch_ramp.empty()) {
    nlohmann::ordered_json ramp = nlohmann::ordered_json::array();
    for (const BatchPhase& phase : spec.batch_ramp) {
      nlohmann::ordered_json entry;
      entry["tokens"] = phase.tokens;
      entry["global_batch_size"] = phase.global_batch_size;
      if (phase.seq_length) entry["seq_length"] = *phase.seq_length;
      ramp.push_back(entry);
    }
    json["batch_ramp"] = ramp;
  }
  if (spec.interval_rule == IntervalRule::kSteps) {
    json["checkpoint_interval"] = spec.interval_steps;
  } else {
    json["checkpoint_interval"] = interval_rule_name(spec.interval_rule);
  }
  return json.dump();
}

}  // namespace ppsim
