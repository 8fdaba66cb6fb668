#include "simulator/spec/error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace ppsim {
namespace {

std::string compose(const std::string& source, const std::string& json_path,
                    const std::string& message) {
  std::string text = source;
  if (!json_path.empty()) text += (text.empty() ? "" : ": ") + json_path;
  if (!text.empty()) text += ": ";
  return text + message;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

InputError::InputError(std::string source, std::string json_path, std::string message)
    : std::runtime_error(compose(source, json_path, message)),
      source_(std::move(source)),
      json_path_(std::move(json_path)),
      message_(std::move(message)) {}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (!best.empty() || word.size() < 3) return best;
  // A truncated name ("micro_batch" for "micro_batch_size") is a typo too: the shortest
  // candidate that starts with the word.
  for (const std::string& candidate : candidates) {
    if (candidate.size() > word.size() && candidate.compare(0, word.size(), word) == 0 &&
        (best.empty() || candidate.size() < best.size())) {
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string match = closest_match(word, candidates);
  return match.empty() ? "" : " (did you mean '" + match + "'?)";
}

std::string join_names(const std::vector<std::string>& names, std::string_view separator) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += separator;
    text += names[i];
  }
  return text;
}

void check_failed(const char* file, int line, const char* condition, const std::string& detail) {
  std::string text = std::string("internal error at ") + file + ":" + std::to_string(line) +
                     ": check failed: " + condition + (detail.empty() ? "" : ": ") + detail;
  throw InternalError(text);
}

}  // namespace ppsim
