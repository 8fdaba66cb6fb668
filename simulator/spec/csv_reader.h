// CsvTable: a table read from RFC-4180 CSV text, a header row naming the columns, then records.
//
// Accepted (RFC 4180, section 2, plus what spreadsheets write):
// - fields separated by ',', records by LF or CRLF; a UTF-8 byte-order mark before the header
//   is skipped; a last record without a line break is a record;
// - a field in double quotes may hold commas, line breaks and doubled quotes ("" is one ");
// - lines that hold nothing at all (no field, not even an empty quoted one) are skipped.
// Rejected with InputError naming the source and the line (1-based, of the record's first
// line for a record that spans several): a quote inside an unquoted field, text after a
// closing quote, an unterminated quoted field, a record whose field count differs from the
// header's, an empty or duplicate column name, and a file with no header.
//
// Thread-safety: parse_csv is a pure function; a CsvTable is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

// One data record: its fields in column order and where it starts in the source.
struct CsvRecord {
  int64_t line = 0;                 // 1-based line of the record's first character.
  std::vector<std::string> fields;  // One per column, unquoted; same count as the header.
};

struct CsvTable {
  std::string source;                // File path or "<text>", for messages.
  std::vector<std::string> columns;  // Header names, in file order; unique and non-empty.
  std::vector<CsvRecord> records;    // Data records in file order (the header excluded).

  // Index of column `name`, or nullopt.
  std::optional<size_t> column_index(std::string_view name) const;
  // The field of `record` in column `name`. REQUIRES: the column exists (column_index).
  const std::string& field(const CsvRecord& record, std::string_view name) const;
};

// Parses CSV text (UTF-8, no NUL byte). Pure; errors throw InputError(source, "", "line N: ...").
CsvTable parse_csv(std::string_view text, const std::string& source);

// Reads and parses a CSV file; a missing or unreadable file is an InputError naming it.
CsvTable load_csv(const std::string& path);

}  // namespace ppsim
