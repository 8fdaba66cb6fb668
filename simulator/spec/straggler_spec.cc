#include "simulator/spec/straggler_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"
#include "simulator/spec/units.h"

namespace ppsim {
namespace {

constexpr const char* kStragglerForms =
    "expected gpu=RANK:FACTOR, node=N:FACTOR or "
    "link=A-B:FACTOR[:+LATENCY_US][:period=MS:duty=FRAC], FACTOR in (0, 1] "
    "(e.g. gpu=3:0.5, link=0-1:0.5:+20:period=100:duty=0.3)";
constexpr const char* kJitterForms =
    "expected lognormal:SIGMA, uniform:MAX or exponential:MEAN with a positive parameter "
    "(e.g. lognormal:0.05)";

const std::vector<std::string>& jitter_names() {
  static const std::vector<std::string> names = {"lognormal", "uniform", "exponential"};
  return names;
}

// The JSON key of each jitter kind's parameter.
const char* jitter_parameter_key(JitterKind kind) {
  switch (kind) {
    case JitterKind::kLognormal:
      return "sigma";
    case JitterKind::kUniform:
      return "max";
    case JitterKind::kExponential:
      return "mean";
  }
  return "";
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

std::optional<double> to_number(const std::string& text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> to_index(const std::string& text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// Fails unless factor is in (0, 1].
void check_factor(double factor, const std::function<void(const std::string&)>& fail) {
  if (!(factor >= kMinStragglerFactor && factor <= 1)) {
    fail(
        fmt::format("factor {} is outside [{:g}, 1]: a straggler runs at that fraction of its "
                    "nominal speed or bandwidth (a part a million times slower is a dead one; "
                    "docs/limits.md)",
                    factor, kMinStragglerFactor));
  }
}

// The jitter parameter's upper bound (straggler_spec.h kMaxJitter*), or an error.
void check_jitter_parameter(const JitterSpec& jitter,
                            const std::function<void(const std::string&)>& fail) {
  double max = jitter.kind == JitterKind::kLognormal ? kMaxJitterSigma : kMaxJitterSlowdown;
  if (!(jitter.parameter > 0 && jitter.parameter <= max)) {
    fail(fmt::format("{} {} is outside (0, {:g}] (docs/limits.md: larger jitter is a broken "
                     "machine, not noise)",
                     jitter_parameter_key(jitter.kind), jitter.parameter, max));
  }
}

void check_flapping(const Flapping& flapping, const std::function<void(const std::string&)>& fail) {
  if (!(flapping.period > 0)) fail("period must be positive (milliseconds)");
  if (!(flapping.duty > 0 && flapping.duty <= 1)) {
    fail(fmt::format("duty {} is outside (0, 1] (the fraction of each period the link is slow)",
                     flapping.duty));
  }
}

Straggler parse_link_flag(const std::string& text, const std::string& body,
                          const std::function<void(const std::string&)>& fail) {
  Straggler straggler;
  straggler.kind = StragglerKind::kLink;
  std::vector<std::string> parts = split(body, ':');
  std::vector<std::string> ends = split(parts[0], '-');
  std::optional<int64_t> a = ends.size() == 2 ? to_index(ends[0]) : std::nullopt;
  std::optional<int64_t> b = ends.size() == 2 ? to_index(ends[1]) : std::nullopt;
  if (!a || !b) fail(fmt::format("'{}': the link's ends must be two node indices A-B", parts[0]));
  // value(): `fail` throws, which the compiler cannot see through a std::function.
  if (a.value() == b.value()) fail(fmt::format("'{}': a link joins two different nodes", parts[0]));
  straggler.node = a.value();
  straggler.other_node = b.value();
  if (parts.size() < 2) fail(fmt::format("'{}' has no FACTOR", text));
  std::optional<double> factor = to_number(parts[1]);
  if (!factor) fail(fmt::format("'{}' is not a number (FACTOR)", parts[1]));
  straggler.factor = *factor;
  check_factor(*factor, fail);
  std::optional<double> period, duty;
  for (size_t i = 2; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (!part.empty() && part[0] == '+') {
      std::optional<double> latency = to_number(part.substr(1));
      if (!latency || *latency < 0 || *latency > kMaxLatencyUs) {
        fail(fmt::format("'{}': expected +LATENCY_US, microseconds in [0, {:g}]", part,
                         kMaxLatencyUs));
      }
      straggler.extra_latency = *latency * kMicrosecond;
    } else if (part.rfind("period=", 0) == 0) {
      period = to_number(part.substr(7));
      if (!period || *period > 1e9) {
        fail(fmt::format("'{}': expected period=MS, milliseconds up to 1e9", part));
      }
    } else if (part.rfind("duty=", 0) == 0) {
      duty = to_number(part.substr(5));
      if (!duty) fail(fmt::format("'{}': expected duty=FRAC, a fraction in (0, 1]", part));
    } else {
      fail(fmt::format("unknown link option '{}'", part));
    }
  }
  if (period.has_value() != duty.has_value()) {
    fail("a flapping link needs both period=MS and duty=FRAC");
  }
  if (period) {
    straggler.flapping = Flapping{*period * kMillisecond, *duty};
    check_flapping(*straggler.flapping, fail);
  }
  return straggler;
}

JitterSpec parse_jitter_text(const std::string& text,
                             const std::function<void(const std::string&)>& fail) {
  size_t colon = text.find(':');
  std::string name = text.substr(0, colon);
  const std::vector<std::string>& names = jitter_names();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    fail(fmt::format("unknown distribution '{}'{}", name, did_you_mean(name, names)));
  }
  JitterSpec jitter;
  jitter.kind = static_cast<JitterKind>(it - names.begin());
  std::optional<double> parameter =
      colon == std::string::npos ? std::nullopt : to_number(text.substr(colon + 1));
  if (!parameter || *parameter <= 0) {
    fail(
        fmt::format("'{}': {} needs a positive {}", text, name, jitter_parameter_key(jitter.kind)));
  }
  jitter.parameter = parameter.value();
  check_jitter_parameter(jitter, [&](const std::string& message) {
    fail(fmt::format("'{}': {}", text, message));
  });
  return jitter;
}

// The required "factor"; when it is missing, a misspelt key ("facter") is the likelier cause,
// so unknown keys are reported first (with "did you mean").
double required_factor(JsonReader& reader) {
  std::optional<double> factor = reader.optional_number("factor");
  if (factor) return *factor;
  reader.finish();
  reader.fail("factor", "required key is missing (expected a number in (0, 1])");
}

Straggler parse_straggler_object(JsonReader& reader) {
  Straggler straggler;
  int kinds = reader.has("gpu") + reader.has("node") + reader.has("link");
  if (kinds != 1) {
    reader.fail("", "expected exactly one of \"gpu\", \"node\", \"link\" or \"jitter\"");
  }
  auto fail_at = [&reader](const std::string& key) {
    return [&reader, key](const std::string& message) { reader.fail(key, message); };
  };
  if (reader.has("gpu")) {
    straggler.kind = StragglerKind::kGpu;
    straggler.gpu = reader.required_int("gpu", 0);
    straggler.factor = required_factor(reader);
  } else if (reader.has("node")) {
    straggler.kind = StragglerKind::kNode;
    straggler.node = reader.required_int("node", 0);
    straggler.factor = required_factor(reader);
  } else {
    straggler.kind = StragglerKind::kLink;
    const nlohmann::json& ends = reader.required_array("link");
    std::string path = reader.path_of("link");
    if (ends.size() != 2) {
      reader.fail("link", "expected the link's two node indices, e.g. [0, 1]");
    }
    straggler.node = json_element_int(ends[0], reader.source(), path + "/0", 0);
    straggler.other_node = json_element_int(ends[1], reader.source(), path + "/1", 0);
    if (straggler.node == straggler.other_node) {
      reader.fail("link", "a link joins two different nodes");
    }
    straggler.factor = reader.optional_number("factor").value_or(1.0);
    straggler.extra_latency =
        reader.optional_number("extra_latency_us", 0, kMaxLatencyUs).value_or(0) * kMicrosecond;
    std::optional<double> period = reader.optional_number("period_ms", 0, 1e9);
    std::optional<double> duty = reader.optional_number("duty");
    if (period.has_value() != duty.has_value()) {
      reader.fail(period ? "period_ms" : "duty",
                  "a flapping link needs both \"period_ms\" and \"duty\"");
    }
    if (period) {
      straggler.flapping = Flapping{*period * kMillisecond, *duty};
      check_flapping(*straggler.flapping, fail_at(""));
    }
  }
  check_factor(straggler.factor, fail_at("factor"));
  reader.finish();
  straggler.source = reader.source();
  straggler.json_path = reader.path();
  return straggler;
}

JitterSpec parse_jitter_object(JsonReader& reader) {
  std::string name = reader.required_choice("jitter", jitter_names());
  JitterSpec jitter;
  auto it = std::find(jitter_names().begin(), jitter_names().end(), name);
  jitter.kind = static_cast<JitterKind>(it - jitter_names().begin());
  jitter.parameter = reader.required_number(jitter_parameter_key(jitter.kind), 1e-300);
  check_jitter_parameter(jitter, [&](const std::string& message) {
    reader.fail(jitter_parameter_key(jitter.kind), message);
  });
  reader.finish();
  jitter.source = reader.source();
  jitter.json_path = reader.path();
  return jitter;
}

}  // namespace

bool StragglerModel::stochastic() const {
  if (jitter) return true;
  for (const Straggler& straggler : stragglers) {
    if (straggler.flapping) return true;
  }
  return false;
}

bool StragglerModel::has_slow_gpus() const {
  for (const Straggler& straggler : stragglers) {
    if (straggler.kind != StragglerKind::kLink && straggler.factor < 1) return true;
  }
  return false;
}

std::string straggler_text(const Straggler& straggler) {
  switch (straggler.kind) {
    case StragglerKind::kGpu:
      return fmt::format("gpu={}:{}", straggler.gpu, straggler.factor);
    case StragglerKind::kNode:
      return fmt::format("node={}:{}", straggler.node, straggler.factor);
    case StragglerKind::kLink: {
      std::string text =
          fmt::format("link={}-{}:{}", straggler.node, straggler.other_node, straggler.factor);
      if (straggler.extra_latency > 0) {
        text += fmt::format(":+{}", straggler.extra_latency / kMicrosecond);
      }
      if (straggler.flapping) {
        text += fmt::format(":period={}:duty={}", straggler.flapping->period / kMillisecond,
                            straggler.flapping->duty);
      }
      return text;
    }
  }
  return "";
}

std::string jitter_text(const JitterSpec& jitter) {
  return fmt::format("jitter={}:{}", jitter_names()[static_cast<size_t>(jitter.kind)],
                     jitter.parameter);
}

std::string straggler_description(const Straggler& straggler) {
  switch (straggler.kind) {
    case StragglerKind::kGpu:
      return fmt::format("GPU {} at {}x compute speed", straggler.gpu, straggler.factor);
    case StragglerKind::kNode:
      return fmt::format("node {} at {}x compute speed", straggler.node, straggler.factor);
    case StragglerKind::kLink: {
      std::string text = fmt::format("link node{}-node{} at {}x bandwidth", straggler.node,
                                     straggler.other_node, straggler.factor);
      if (straggler.extra_latency > 0) {
        text += fmt::format(" +{} us", straggler.extra_latency / kMicrosecond);
      }
      if (straggler.flapping) {
        text += fmt::format(", slow {}% of every {} ms", 100 * straggler.flapping->duty,
                            straggler.flapping->period / kMillisecond);
      }
      return text;
    }
  }
  return "";
}

std::string jitter_description(const JitterSpec& jitter) {
  return fmt::format("{} jitter ({} {}) on every compute action",
                     jitter_names()[static_cast<size_t>(jitter.kind)],
                     jitter_parameter_key(jitter.kind), jitter.parameter);
}

Straggler parse_straggler_flag(const std::string& text, const std::string& flag) {
  auto fail = [&](const std::string& message) {
    throw InputError(flag, "", fmt::format("'{}': {}; {}", text, message, kStragglerForms));
  };
  size_t equals = text.find('=');
  if (equals == std::string::npos) fail("no KIND= prefix");
  std::string kind = text.substr(0, equals);
  std::string body = text.substr(equals + 1);
  static const std::vector<std::string> kinds = {"gpu", "node", "link"};
  if (kind == "link") {
    Straggler straggler = parse_link_flag(text, body, fail);
    straggler.source = flag;
    return straggler;
  }
  if (kind != "gpu" && kind != "node") {
    fail(fmt::format("unknown straggler kind '{}'{}", kind, did_you_mean(kind, kinds)));
  }
  std::vector<std::string> parts = split(body, ':');
  if (parts.size() != 2) fail(fmt::format("expected {}=INDEX:FACTOR", kind));
  std::optional<int64_t> index = to_index(parts[0]);
  if (!index) fail(fmt::format("'{}' is not a non-negative integer index", parts[0]));
  std::optional<double> factor = to_number(parts[1]);
  if (!factor) fail(fmt::format("'{}' is not a number (FACTOR)", parts[1]));
  check_factor(*factor, fail);
  Straggler straggler;
  straggler.kind = kind == "gpu" ? StragglerKind::kGpu : StragglerKind::kNode;
  (kind == "gpu" ? straggler.gpu : straggler.node) = *index;
  straggler.factor = *factor;
  straggler.source = flag;
  return straggler;
}

JitterSpec parse_jitter_flag(const std::string& text, const std::string& flag) {
  auto fail = [&](const std::string& message) {
    throw InputError(flag, "", fmt::format("'{}': {}; {}", text, message, kJitterForms));
  };
  JitterSpec jitter = parse_jitter_text(text, fail);
  jitter.source = flag;
  return jitter;
}

StragglerModel parse_straggler_json(const nlohmann::json& array, const std::string& source,
                                    const std::string& path) {
  StragglerModel model;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string element_path = fmt::format("{}/{}", path, i);
    const nlohmann::json& element = array[i];
    StragglerModel one;
    if (element.is_string()) {
      std::string text = element.get<std::string>();
      auto fail = [&](const std::string& message) {
        throw InputError(
            source, element_path,
            fmt::format("'{}': {}; {}, or jitter=DIST:PARAM", text, message, kStragglerForms));
      };
      if (text.rfind("jitter=", 0) == 0) {
        one.jitter = parse_jitter_text(text.substr(7), fail);
        one.jitter->source = source;
        one.jitter->json_path = element_path;
      } else {
        try {
          one.stragglers.push_back(parse_straggler_flag(text, source));
        } catch (const InputError& error) {
          throw InputError(source, element_path, error.message());
        }
        one.stragglers.back().json_path = element_path;
      }
    } else {
      JsonReader reader(element, source, element_path);
      if (reader.has("jitter")) {
        one.jitter = parse_jitter_object(reader);
      } else {
        one.stragglers.push_back(parse_straggler_object(reader));
      }
    }
    merge_straggler_models(model, one);
  }
  return model;
}

void merge_straggler_models(StragglerModel& model, const StragglerModel& extra) {
  for (const Straggler& straggler : extra.stragglers) model.stragglers.push_back(straggler);
  if (extra.jitter) {
    if (model.jitter) {
      throw InputError(extra.jitter->source, extra.jitter->json_path,
                       fmt::format("a second jitter model ({}; the first is {} from {}): state "
                                   "one jitter distribution",
                                   jitter_text(*extra.jitter), jitter_text(*model.jitter),
                                   model.jitter->source));
    }
    model.jitter = extra.jitter;
  }
}

}  // namespace ppsim
