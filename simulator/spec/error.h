// User-facing errors and internal checks.
//
// Three kinds of failure, handled three ways (STYLE.md rule 7):
// - bad user input throws InputError, caught only in tools/ (exit status 2);
// - a bug hits PPSIM_CHECK, which throws InternalError (file:line and the condition); tools/
//   turns it, like any other escaping exception, into exit status 1 and a request for a bug
//   report naming the inputs (so a service wrapping ppsim never sees an abort);
// - an infeasible request (a plan that does not fit) is a result with a reason, not an error.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

// Bad input from the user: names the source (file or flag), the JSON path inside it, and
// what was wrong and how to fix it. what() is the full one-line message without the
// "ppsim: error: " prefix, e.g. "models/x.json: /num_layers: expected a positive integer, got -3".
class InputError : public std::runtime_error {
 public:
  // source: a file path, "--plan", "<inline>"...; json_path: "/nodes/1/gpu" or "" when none.
  InputError(std::string source, std::string json_path, std::string message);

  const std::string& source() const { return source_; }
  const std::string& json_path() const { return json_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string source_;
  std::string json_path_;
  std::string message_;
};

// A bug in ppsim (a failed PPSIM_CHECK): what() is "internal error at file:line: check failed:
// condition: detail". Never thrown for bad input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The closest of `candidates` to `word` by edit distance, or "" when none is close enough
// to be a plausible typo (distance at most max(2, |word|/3), or a candidate that starts with
// the word, for truncated names).
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" when closest_match finds one, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// "a, b, c" for messages that list the valid choices.
std::string join_names(const std::vector<std::string>& names, std::string_view separator = ", ");

[[noreturn]] void check_failed(const char* file, int line, const char* condition,
                               const std::string& detail);

}  // namespace ppsim

// Internal invariant: a false condition is a bug in ppsim, never bad input.
#define PPSIM_CHECK(condition, ...)                                                    \
  do {                                                                                \
    if (!(condition)) ::ppsim::check_failed(__FILE__, __LINE__, #condition, std::string{__VA_ARGS__}); \
  } while (0)
