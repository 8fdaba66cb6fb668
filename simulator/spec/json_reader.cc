#include "simulator/spec/json_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// Escapes a key for a JSON pointer (RFC 6901).
std::string escape_pointer_token(const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') escaped += "~0";
    else if (c == '/') escaped += "~1";
    else escaped += c;
  }
  return escaped;
}

std::string show_value(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    // Translate the byte offset into a line and column a user can find.
    size_t offset = std::min<size_t>(error.byte == 0 ? 0 : error.byte - 1, text.size());
    size_t line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
    size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
    size_t column = line_start == std::string::npos ? offset + 1 : offset - line_start;
    std::string what = error.what();
    size_t detail = what.find("syntax error");
    if (detail != std::string::npos) what = what.substr(detail);
    throw InputError(source, "",
                     fmt::format("invalid JSON at line {}, column {}: {}", line, column, what));
  }
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file (check the path and its permissions)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string describe_json_type(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

JsonReader::JsonReader(const nlohmann::json& value, std::string source, std::string path)
    : object_(value), source_(std::move(source)), path_(std::move(path)) {
  if (!object_.is_object()) {
    throw InputError(source_, path_.empty() ? "/" : path_,
                     fmt::format("expected an object, got {}", describe_json_type(object_)));
  }
}

std::string JsonReader::path_of(const std::string& key) const {
  return path_ + "/" + escape_pointer_token(key);
}

const nlohmann::json* JsonReader::lookup(const std::string& key) {
  if (std::find(known_keys_.begin(), known_keys_.end(), key) == known_keys_.end()) {
    known_keys_.push_back(key);
  }
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

bool JsonReader::has(const std::string& key) { return object_.contains(key); }

void JsonReader::allow(const std::string& key) { lookup(key); }

void JsonReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(source_, key.empty() ? (path_.empty() ? "/" : path_) : path_of(key), message);
}

int64_t JsonReader::required_int(const std::string& key, int64_t min, int64_t max) {
  std::optional<int64_t> value = optional_int(key, min, max);
  if (!value) fail(key, "required key is missing (expected an integer)");
  return *value;
}

std::optional<int64_t> JsonReader::optional_int(const std::string& key, int64_t min,
                                                int64_t max) {
  const nlohmann::json* value = lookup(key);
  if (!value) return std::nullopt;
  return json_element_int(*value, source_, path_of(key), min, max);
}

double JsonReader::required_number(const std::string& key, double min, double max) {
  std::optional<double> value = optional_number(key, min, max);
  if (!value) fail(key, "required key is missing (expected a number)");
  return *value;
}

std::optional<double> JsonReader::optional_number(const std::string& key, double min,
                                                  double max) {
  const nlohmann::json* value = lookup(key);
  if (!value) return std::nullopt;
  if (!value->is_number()) {
    fail(key, fmt::format("expected a number, got {} {}", describe_json_type(*value),
                          show_value(*value)));
  }
  double number = value->get<double>();
  if (!std::isfinite(number) || number < min || number > max) {
    fail(key, fmt::format("expected a number in [{}, {}], got {}", min, max, show_value(*value)));
  }
  return number;
}

bool JsonReader::required_bool(const std::string& key) {
  std::optional<bool> value = optional_bool(key);
  if (!value) fail(key, "required key is missing (expected true or false)");
  return *value;
}

std::optional<bool> JsonReader::optional_bool(const std::string& key) {
  const nlohmann::json* value = lookup(key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) {
    fail(key, fmt::format("expected true or false, got {} {}", describe_json_type(*value),
                          show_value(*value)));
  }
  return value->get<bool>();
}

std::string JsonReader::required_string(const std::string& key) {
  std::optional<std::string> value = optional_string(key);
  if (!value) fail(key, "required key is missing (expected a string)");
  return *value;
}

std::optional<std::string> JsonReader::optional_string(const std::string& key) {
  const nlohmann::json* value = lookup(key);
  if (!value) return std::nullopt;
  if (!value->is_string()) {
    fail(key, fmt::format("expected a string, got {} {}", describe_json_type(*value),
                          show_value(*value)));
  }
  return value->get<std::string>();
}

std::string JsonReader::required_choice(const std::string& key,
                                        const std::vector<std::string>& choices) {
  std::optional<std::string> value = optional_choice(key, choices);
  if (!value) fail(key, "required key is missing (expected one of " + join_names(choices) + ")");
  return *value;
}

std::optional<std::string> JsonReader::optional_choice(const std::string& key,
                                                       const std::vector<std::string>& choices) {
  std::optional<std::string> value = optional_string(key);
  if (value && std::find(choices.begin(), choices.end(), *value) == choices.end()) {
    fail(key, fmt::format("unknown value '{}'; expected one of {}{}", *value, join_names(choices),
                          did_you_mean(*value, choices)));
  }
  return value;
}

JsonReader JsonReader::required_object(const std::string& key) {
  std::optional<JsonReader> value = optional_object(key);
  if (!value) fail(key, "required key is missing (expected an object)");
  return std::move(*value);
}

std::optional<JsonReader> JsonReader::optional_object(const std::string& key) {
  const nlohmann::json* value = lookup(key);
  if (!value) return std::nullopt;
  return JsonReader(*value, source_, path_of(key));
}

const nlohmann::json& JsonReader::required_array(const std::string& key) {
  const nlohmann::json* value = optional_array(key);
  if (!value) fail(key, "required key is missing (expected an array)");
  return *value;
}

const nlohmann::json* JsonReader::optional_array(const std::string& key) {
  const nlohmann::json* value = lookup(key);
  if (value && !value->is_array()) {
    fail(key, fmt::format("expected an array, got {} {}", describe_json_type(*value),
                          show_value(*value)));
  }
  return value;
}

void JsonReader::finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (std::find(known_keys_.begin(), known_keys_.end(), it.key()) == known_keys_.end()) {
      std::vector<std::string> sorted = known_keys_;
      std::sort(sorted.begin(), sorted.end());
      throw InputError(source_, path_of(it.key()),
                       fmt::format("unknown key '{}'{}; known keys here: {}", it.key(),
                                   did_you_mean(it.key(), known_keys_), join_names(sorted)));
    }
  }
}

int64_t json_element_int(const nlohmann::json& value, const std::string& source,
                         const std::string& path, int64_t min, int64_t max) {
  if (!value.is_number_integer()) {
    throw InputError(source, path,
                     fmt::format("expected an integer, got {} {}", describe_json_type(value),
                                 show_value(value)));
  }
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    throw InputError(source, path, fmt::format("integer {} is too large", show_value(value)));
  }
  int64_t number = value.get<int64_t>();
  if (number < min || number > max) {
    std::string range = max == INT64_MAX ? fmt::format("at least {}", min)
                                         : fmt::format("in [{}, {}]", min, max);
    throw InputError(source, path, fmt::format("expected an integer {}, got {}", range, number));
  }
  return number;
}

}  // namespace ppsim
