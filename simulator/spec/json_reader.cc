#include "simulator/spec/json_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <utility>
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
  // Replace, not throw, on bytes that are not UTF-8 (a message must never fail to form).
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// Line and column (1-based) of byte `offset` of `text`.
std::pair<size_t, size_t> line_and_column(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
  size_t line_start = offset == 0 ? std::string::npos : text.rfind('\n', offset - 1);
  size_t column = line_start == std::string::npos ? offset + 1 : offset - line_start;
  return {line, column};
}

// Builds the DOM like nlohmann's own parser, and on top of it keeps the JSON pointer of the
// value being read, so that a duplicate key, a nesting deeper than kMaxJsonDepth or a number
// out of range is an InputError with its path. Throws from the callbacks; the partial DOM is
// released by the caller's unwinding.
class StrictDomBuilder {
 public:
  using json = nlohmann::json;
  StrictDomBuilder(json& root, const std::string& text, const std::string& source)
      : dom_(root, true), text_(text), source_(source) {}

  bool null() { return value(), dom_.null(); }
  bool boolean(bool v) { return value(), dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return value(), dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(), dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return value(), dom_.number_float(v, s);
  }
  bool string(json::string_t& v) { return value(), dom_.string(v); }
  bool binary(json::binary_t& v) { return value(), dom_.binary(v); }
  bool start_object(size_t n) {
    value();
    enter();
    levels_.push_back(Level{true, {}, {}, 0});
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    Level& level = levels_.back();
    if (!level.keys.insert(k).second) {
      level.key = k;
      auto [line, column] = line_and_column(text_, position_hint());
      throw InputError(source_, path(),
                       fmt::format("duplicate key '{}' (line {}, column {}); each key may appear "
                                   "once in an object (remove one of the two)",
                                   k, line, column));
    }
    level.key = k;
    return dom_.key(k);
  }
  bool end_object() { return levels_.pop_back(), dom_.end_object(); }
  bool start_array(size_t n) {
    value();
    enter();
    levels_.push_back(Level{false, {}, {}, 0});
    return dom_.start_array(n);
  }
  bool end_array() { return levels_.pop_back(), dom_.end_array(); }

  bool parse_error(size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& error) {
    auto [line, column] = line_and_column(text_, position == 0 ? 0 : position - 1);
    if (error.id == 406) {  // out_of_range.406: a number beyond double's range.
      throw InputError(source_, pending_path(),
                       fmt::format("number {} at line {}, column {} is out of range (a JSON "
                                   "number must be finite, within about ±1.8e308)",
                                   last_token, line, column));
    }
    std::string what = error.what();
    size_t detail = what.find("syntax error");
    if (detail != std::string::npos) what = what.substr(detail);
    throw InputError(source_, "",
                     fmt::format("invalid JSON at line {}, column {}: {}", line, column, what));
  }

 private:
  struct Level {
    bool object;
    std::set<std::string> keys;
    std::string key;   // Object: the key whose value is being read.
    size_t count;      // Array: elements started so far.
  };

  // A value (scalar or container) starts at the current position.
  void value() {
    if (!levels_.empty() && !levels_.back().object) ++levels_.back().count;
  }
  void enter() {
    if (levels_.size() >= kMaxJsonDepth) {
      throw InputError(source_, path(),
                       fmt::format("JSON nested deeper than {} levels; ppsim's specs need a "
                                   "handful (docs/limits.md)",
                                   kMaxJsonDepth));
    }
  }
  // Pointer of the value most recently started (for arrays, the last element).
  std::string path() const {
    std::string text;
    for (const Level& level : levels_) {
      text += "/" + (level.object ? escape_pointer_token(level.key)
                                  : std::to_string(level.count == 0 ? 0 : level.count - 1));
    }
    return text.empty() ? "/" : text;
  }
  // Pointer of a value that has not started yet (a number the lexer refused).
  std::string pending_path() const {
    std::string text;
    for (const Level& level : levels_) {
      text += "/" + (level.object ? escape_pointer_token(level.key) : std::to_string(level.count));
    }
    return text.empty() ? "/" : text;
  }
  // nlohmann does not pass the position to key(); the duplicate is reported at the first
  // occurrence of the key's quoted text after the previous one, good enough to find it.
  size_t position_hint() const {
    const std::string& key = levels_.back().key;
    std::string quoted = "\"" + key + "\"";
    size_t first = text_.find(quoted);
    size_t second = first == std::string::npos ? first : text_.find(quoted, first + 1);
    return second == std::string::npos ? 0 : second;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& text_;
  const std::string& source_;
  std::vector<Level> levels_;
};

}  // namespace

std::optional<size_t> invalid_utf8_offset(std::string_view text) {
  size_t i = 0;
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  while (i < text.size()) {
    unsigned char c = bytes[i];
    size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) return i;
    uint32_t code = length == 1 ? c : length == 2 ? (c & 0x1F) : length == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < length; ++k) {
      if ((bytes[i + k] & 0xC0) != 0x80) return i;
      code = (code << 6) | (bytes[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points above U+10FFFF are not UTF-8.
    static constexpr uint32_t kMinimum[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[length] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return i;
    i += length;
  }
  return std::nullopt;
}

void require_utf8(std::string_view text, const std::string& source, const std::string& what) {
  if (std::optional<size_t> offset = invalid_utf8_offset(text)) {
    throw InputError(source, "",
                     fmt::format("{} is not valid UTF-8 (byte {} is 0x{:02X}); ppsim reads "
                                 "UTF-8 text",
                                 what, *offset, static_cast<unsigned char>(text[*offset])));
  }
}

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
  // nlohmann's lexer takes a NUL byte for the end of input, so text after one would be
  // ignored silently: refuse it.
  size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    auto [line, column] = line_and_column(text, nul);
    throw InputError(source, "",
                     fmt::format("invalid JSON at line {}, column {}: a NUL byte (\\0); JSON "
                                 "text has none (a truncated or binary file?)",
                                 line, column));
  }
  nlohmann::json root;
  StrictDomBuilder builder(root, text, source);
  // Strict: anything but whitespace after the value is a syntax error.
  nlohmann::json::sax_parse(text, &builder, nlohmann::json::input_format_t::json, true);
  return root;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file (check the path and its permissions)");
  // Read at most kMaxInputFileBytes + 1 bytes, so that /dev/zero or a huge file is refused
  // without exhausting memory.
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes) {
      throw InputError(path, "",
                       fmt::format("the file is larger than {} MiB, more than any spec, profile "
                                   "or table ppsim reads (docs/limits.md)",
                                   kMaxInputFileBytes >> 20));
    }
  }
  return text;
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
