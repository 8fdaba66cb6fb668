#include "simulator/spec/csv_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"

namespace ppsim {
namespace {

// A record as split from the text, before the header check.
struct RawRecord {
  int64_t line = 0;
  std::vector<std::string> fields;
  bool blank = false;  // No characters at all on the line.
};

class CsvScanner {
 public:
  CsvScanner(std::string_view text, const std::string& source) : text_(text), source_(source) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
  }

  bool done() const { return pos_ >= text_.size(); }

  // Reads one record and the line break after it.
  RawRecord next() {
    RawRecord record;
    record.line = line_;
    record.blank = at_line_end();
    if (record.blank) {
      skip_line_break();
      return record;
    }
    while (true) {
      record.fields.push_back(field());
      if (done()) break;
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      skip_line_break();
      break;
    }
    return record;
  }

 private:
  // At LF, CRLF, a CR that ends the text, or the end itself.
  bool at_line_end() const {
    return done() || text_[pos_] == '\n' ||
           (text_[pos_] == '\r' && (pos_ + 1 == text_.size() || text_[pos_ + 1] == '\n'));
  }

  void skip_line_break() {
    if (done()) return;
    if (text_[pos_] == '\r') ++pos_;
    if (!done() && text_[pos_] == '\n') ++pos_;
    ++line_;
  }

  [[noreturn]] void fail(int64_t line, const std::string& message) const {
    throw InputError(source_, "", fmt::format("line {}: {}", line, message));
  }

  std::string field() {
    std::string value;
    if (!done() && text_[pos_] == '"') return quoted();
    while (!done() && text_[pos_] != ',' && !at_line_end()) {
      char c = text_[pos_];
      if (c == '"') {
        fail(line_, fmt::format("a quote inside the unquoted field '{}'; quote the whole field "
                                "and double the inner quotes (\"a \"\"b\"\" c\")",
                                value));
      }
      if (c == '\r' || c == '\n') {
        fail(line_, "a bare carriage return inside a field; quote the field");
      }
      value += c;
      ++pos_;
    }
    return value;
  }

  std::string quoted() {
    int64_t start_line = line_;
    ++pos_;  // Opening quote.
    std::string value;
    while (true) {
      if (done()) {
        fail(start_line, "the quoted field that starts here is never closed (a missing '\"')");
      }
      char c = text_[pos_++];
      if (c == '"') {
        if (!done() && text_[pos_] == '"') {
          value += '"';
          ++pos_;
          continue;
        }
        break;
      }
      if (c == '\n') ++line_;
      value += c;
    }
    if (!done() && text_[pos_] != ',' && !at_line_end()) {
      fail(line_, fmt::format("text after the closing quote of the field \"{}\"; put the whole "
                              "field in quotes",
                              value.size() > 40 ? value.substr(0, 40) + "..." : value));
    }
    return value;
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

}  // namespace

std::optional<size_t> CsvTable::column_index(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return i;
  }
  return std::nullopt;
}

const std::string& CsvTable::field(const CsvRecord& record, std::string_view name) const {
  std::optional<size_t> index = column_index(name);
  PPSIM_CHECK(index.has_value(), "no CSV column " + std::string(name));
  return record.fields[*index];
}

CsvTable parse_csv(std::string_view text, const std::string& source) {
  // Fields reach JSON reports: the text must be UTF-8 (and holds no NUL).
  if (std::optional<size_t> offset = invalid_utf8_offset(text)) {
    size_t line = 1 + std::count(text.begin(), text.begin() + *offset, '\n');
    throw InputError(source, "",
                     fmt::format("line {}: byte 0x{:02X} is not valid UTF-8 (save the file as "
                                 "UTF-8)",
                                 line, static_cast<unsigned char>(text[*offset])));
  }
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    size_t line = 1 + std::count(text.begin(), text.begin() + nul, '\n');
    throw InputError(source, "", fmt::format("line {}: a NUL byte; CSV text has none", line));
  }
  CsvTable table;
  table.source = source;
  CsvScanner scanner(text, source);
  bool have_header = false;
  while (!scanner.done()) {
    RawRecord record = scanner.next();
    if (record.blank) continue;
    if (!have_header) {
      std::set<std::string> seen;
      for (size_t i = 0; i < record.fields.size(); ++i) {
        const std::string& name = record.fields[i];
        if (name.empty()) {
          throw InputError(source, "", fmt::format("line {}: header column {} has no name",
                                                   record.line, i + 1));
        }
        if (!seen.insert(name).second) {
          throw InputError(source, "", fmt::format("line {}: column '{}' appears twice in the "
                                                   "header",
                                                   record.line, name));
        }
      }
      table.columns = std::move(record.fields);
      have_header = true;
      continue;
    }
    if (record.fields.size() != table.columns.size()) {
      throw InputError(source, "",
                       fmt::format("line {}: {} fields, but the header has {} columns (a comma "
                                   "inside a field needs quotes)",
                                   record.line, record.fields.size(), table.columns.size()));
    }
    table.records.push_back(CsvRecord{record.line, std::move(record.fields)});
  }
  if (!have_header) throw InputError(source, "", "empty CSV: expected a header row of column names");
  return table;
}

CsvTable load_csv(const std::string& path) { return parse_csv(read_text_file(path), path); }

}  // namespace ppsim
