// Path-tracking typed reads over nlohmann::json, for every spec parser.
//
// A JsonReader wraps one JSON object at a known path inside a named source. Each read names
// its key; a missing required key, a wrong type or an out-of-range value throws InputError
// carrying the source, the JSON pointer of the offending value and what was expected.
// finish() rejects keys that no read asked for, with a "did you mean" among the keys that were
// asked for, so a typo such as "micro_batch" never passes silently.
//
// Not thread-safe; one reader per object being parsed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

// Deepest nesting of objects and arrays a JSON text may have (the specs need at most 5);
// deeper input is refused as it is read, before anything recursive can overflow the stack.
inline constexpr size_t kMaxJsonDepth = 64;

// Parses JSON text strictly: a syntax error, trailing bytes after the value or a NUL byte
// anywhere is an InputError naming the line and column; a duplicate key, nesting deeper than
// kMaxJsonDepth or a number beyond double's range (1e999) is an InputError naming its JSON
// pointer. Strings must be valid UTF-8 (nlohmann checks them).
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

// Offset of the first byte of `text` that does not start a valid UTF-8 sequence (overlong
// forms and surrogates included), or nullopt when all of it is UTF-8.
std::optional<size_t> invalid_utf8_offset(std::string_view text);
// Throws InputError (source, "<what> is not valid UTF-8 (byte N is 0xFF) ...") unless `text`
// is UTF-8.
void require_utf8(std::string_view text, const std::string& source, const std::string& what);

// Largest input file read_text_file accepts: 256 MiB (the largest shipped input, a profile, is
// under 1 MiB).
inline constexpr size_t kMaxInputFileBytes = size_t{256} << 20;

// Reads a whole file; a missing or unreadable file, or one above kMaxInputFileBytes, is an
// InputError naming the path.
std::string read_text_file(const std::string& path);

// A short description of a JSON value's type for messages: "a string", "an array", ...
std::string describe_json_type(const nlohmann::json& value);

class JsonReader {
 public:
  // REQUIRES: nothing; a non-object `value` throws InputError ("expected an object").
  JsonReader(const nlohmann::json& value, std::string source, std::string path = "");

  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  // JSON pointer of a key inside this object: path() + "/" + key.
  std::string path_of(const std::string& key) const;

  bool has(const std::string& key);

  // Integers: JSON integers only (3.0 is rejected), within [min, max].
  int64_t required_int(const std::string& key, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  std::optional<int64_t> optional_int(const std::string& key, int64_t min = INT64_MIN,
                                      int64_t max = INT64_MAX);
  // Numbers: any JSON number, finite, within [min, max].
  double required_number(const std::string& key, double min = -1e300, double max = 1e300);
  std::optional<double> optional_number(const std::string& key, double min = -1e300,
                                        double max = 1e300);
  bool required_bool(const std::string& key);
  std::optional<bool> optional_bool(const std::string& key);
  std::string required_string(const std::string& key);
  std::optional<std::string> optional_string(const std::string& key);
  // A string that must be one of `choices`; the error lists them and suggests the nearest.
  std::string required_choice(const std::string& key, const std::vector<std::string>& choices);
  std::optional<std::string> optional_choice(const std::string& key,
                                             const std::vector<std::string>& choices);
  // A nested object, or an array (of anything: callers read its elements).
  JsonReader required_object(const std::string& key);
  std::optional<JsonReader> optional_object(const std::string& key);
  const nlohmann::json& required_array(const std::string& key);
  const nlohmann::json* optional_array(const std::string& key);
  // Marks a key as known without reading it (for keys handled elsewhere).
  void allow(const std::string& key);

  // Throws InputError for the first key that no read or allow() named.
  void finish() const;

  // An InputError at `key` (or at this object when key is empty).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const nlohmann::json* lookup(const std::string& key);

  const nlohmann::json& object_;
  std::string source_;
  std::string path_;
  std::vector<std::string> known_keys_;
};

// Reads an integer, number or string from an array element at `path` (for lists of values).
int64_t json_element_int(const nlohmann::json& value, const std::string& source,
                         const std::string& path, int64_t min = INT64_MIN,
                         int64_t max = INT64_MAX);

}  // namespace ppsim
