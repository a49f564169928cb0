#include "bpulint/compare/compile_log.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "bpulint/base/input_file.h"
#include "bpulint/base/json_writer.h"

namespace bpulint {
namespace {

struct Line {
  std::string text;       // after the logging prefix, without ANSI colour codes and the line end
  bool prefixed = false;  // the line had a logging prefix
  size_t number = 0;      // 1-based
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t'; }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (is_space(s.front()) || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (is_space(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Log text quoted in an error message: valid UTF-8, no control characters
// (the message stays one line), at most 80 characters.
std::string snippet(std::string_view s) {
  std::string out;
  for (unsigned char c : sanitize_utf8(s.substr(0, 240))) out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  if (out.size() > 80) {
    size_t cut = 77;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    out = out.substr(0, cut) + "...";
  }
  return out;
}

// Length of the logging prefix both tools print, 0 when the line has none:
// "2025-07-22 06:06:25,200 file: print_info_dict.py func: print_info_dict line No: 72 ".
// The "file: ... line No: N" part and a level word are optional, so other
// logging setups of the same tools are recognised by the timestamp alone.
size_t prefix_length(std::string_view s) {
  static const char kStamp[] = "dddd-dd-dd dd:dd:dd,ddd";
  constexpr size_t kStampLen = sizeof kStamp - 1;
  if (s.size() < kStampLen) return 0;
  for (size_t i = 0; i < kStampLen; ++i) {
    const char want = kStamp[i];
    if (want == 'd' ? !is_digit(s[i]) : want == ',' ? (s[i] != ',' && s[i] != '.') : s[i] != want) return 0;
  }
  size_t pos = kStampLen;
  auto skip_spaces = [&] {
    while (pos < s.size() && is_space(s[pos])) ++pos;
  };
  auto token_end = [&](size_t from) {
    while (from < s.size() && !is_space(s[from])) ++from;
    return from;
  };
  skip_spaces();
  for (std::string_view level : {"DEBUG ", "INFO ", "WARNING ", "WARN ", "ERROR ", "CRITICAL "}) {
    if (starts_with(s.substr(pos), level)) {
      pos += level.size();
      skip_spaces();
      break;
    }
  }
  if (!starts_with(s.substr(pos), "file: ")) return pos;
  size_t q = token_end(pos + 6);
  if (!starts_with(s.substr(q), " func: ")) return pos;
  q = token_end(q + 7);
  if (!starts_with(s.substr(q), " line No: ")) return pos;
  q += 10;
  const size_t digits_from = q;
  while (q < s.size() && is_digit(s[q])) ++q;
  if (q == digits_from) return pos;
  if (q < s.size() && s[q] == ' ') ++q;
  return q;
}

// Terminal colour codes (ESC [ ... letter) that a log captured from a
// terminal may carry.
std::string strip_ansi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < s.size() && (is_digit(s[j]) || s[j] == ';')) ++j;
      if (j < s.size() && ((s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= 'a' && s[j] <= 'z'))) {
        i = j;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(start, end - start);
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    Line line;
    line.number = lines.size() + 1;
    const std::string clean = raw.find('\x1b') == std::string_view::npos ? std::string(raw) : strip_ansi(raw);
    const size_t prefix = prefix_length(clean);
    line.prefixed = prefix > 0;
    line.text = clean.substr(prefix);
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

bool is_frame(std::string_view s, char c) {
  s = trim(s);
  return s.size() >= 3 && std::all_of(s.begin(), s.end(), [c](char x) { return x == c; });
}

struct Cell {
  std::string_view text;
  size_t begin = 0;  // offsets into the line, for re-joining cells
  size_t end = 0;
};

// hb_mapper headers: titles hold single spaces ("Cosine Similarity"), so
// columns are split at runs of two or more blanks (or a tab).
std::vector<Cell> split_header(std::string_view s) {
  std::vector<Cell> cells;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size()) break;
    const size_t begin = i;
    size_t end = i;
    while (i < s.size()) {
      if (s[i] == '\t' || (s[i] == ' ' && i + 1 < s.size() && is_space(s[i + 1]))) break;
      if (s[i] == ' ' && i + 1 == s.size()) break;
      end = ++i;
    }
    cells.push_back({s.substr(begin, end - begin), begin, end});
  }
  return cells;
}

// hb_mapper rows: values never contain blanks, so any run of blanks splits.
std::vector<Cell> split_tokens(std::string_view s) {
  std::vector<Cell> cells;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size()) break;
    const size_t begin = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    cells.push_back({s.substr(begin, i - begin), begin, i});
  }
  return cells;
}

// hb_compile rows: "| a | b |" -> "a", "b" (trimmed).
std::vector<Cell> split_pipes(std::string_view s) {
  std::vector<Cell> cells;
  size_t begin = 1;  // after the leading '|'
  const size_t last = s.size() - 1;  // the closing '|' (checked by the caller)
  while (begin <= last) {
    size_t end = s.find('|', begin);
    if (end == std::string_view::npos || end > last) end = last;
    size_t b = begin, e = end;
    while (b < e && is_space(s[b])) ++b;
    while (e > b && is_space(s[e - 1])) --e;
    cells.push_back({s.substr(b, e - b), b, e});
    if (end == last) break;
    begin = end + 1;
  }
  return cells;
}

// Where the table's columns are, by header name.
struct Columns {
  size_t count = 0;
  size_t node = 0;
  size_t on = 0;
  size_t type = SIZE_MAX;  // Type (hb_mapper) or NodeType (hb_compile), when present
};

bool find_columns(const std::vector<Cell>& header, Columns& cols) {
  bool node = false, on = false;
  cols.count = header.size();
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string_view name = header[i].text;
    if (name == "Node" && !node) {
      cols.node = i;
      node = true;
    } else if (name == "ON" && !on) {
      cols.on = i;
      on = true;
    } else if ((name == "Type" || name == "NodeType") && cols.type == SIZE_MAX) {
      cols.type = i;
    }
  }
  return node && on;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The ON cell as compare reads it: BPU, CPU, NULL or "--". hb_compile prints
// the backend hbdk4's advice gives (compile-logs.md, round 4): the VPU and
// SPU are parts of the BPU (`VPU+BPU`, `VPU`, `SPU` are BPU side); JIT code
// runs on the host, so `JIT` is read as CPU (not on the BPU). Any case.
bool placement_on(std::string_view cell, std::string& on) {
  const std::string u = upper(cell);
  if (u == "BPU" || u == "CPU" || u == "NULL" || u == "--") {
    on = u;
    return true;
  }
  if (u == "JIT") {
    on = "CPU";
    return true;
  }
  // VPU, SPU, and '+'-joined engines of the BPU (VPU+BPU).
  size_t begin = 0;
  while (begin <= u.size()) {
    size_t end = u.find('+', begin);
    if (end == std::string::npos) end = u.size();
    const std::string_view part = std::string_view(u).substr(begin, end - begin);
    if (part != "BPU" && part != "VPU" && part != "SPU") return false;
    begin = end + 1;
  }
  on = "BPU";
  return true;
}

// A row's cells by header name. A node name holding the separator (blanks in
// an hb_mapper row, '|' in an hb_compile row) spreads over several cells:
// the surplus is given back to the name, the only free-text column.
bool read_row(std::string_view text, const std::vector<Cell>& cells, const Columns& cols, size_t line,
              PlacementRow& row, std::string& error) {
  const size_t extra = cells.size() > cols.count ? cells.size() - cols.count : 0;
  auto at = [&](size_t column) -> std::string_view {
    const size_t i = column > cols.node ? column + extra : column;
    return i < cells.size() ? cells[i].text : std::string_view();
  };
  if (cols.node < cells.size()) {
    const size_t last = std::min(cols.node + extra, cells.size() - 1);
    row.node = std::string(text.substr(cells[cols.node].begin, cells[last].end - cells[cols.node].begin));
  }
  row.line = line;
  if (row.node.empty()) {
    error = "line " + std::to_string(line) + ": a placement table row without a node name";
    return false;
  }
  const std::string_view on = at(cols.on);
  if (on.empty()) {
    error = "line " + std::to_string(line) + ": placement table row '" + snippet(row.node) +
            "' has no ON value (truncated log?)";
    return false;
  }
  // "--": folded away before placement (public J6 tables); not placed, neither BPU nor CPU.
  if (!placement_on(on, row.on)) {
    error = "line " + std::to_string(line) + ": placement table row '" + snippet(row.node) + "' has ON '" +
            snippet(on) + "', expected BPU, CPU, NULL or -- (or VPU, SPU, JIT)";
    return false;
  }
  if (cols.type != SIZE_MAX) row.type = std::string(at(cols.type));
  return true;
}

struct Table {
  LogFormat format = LogFormat::HbMapper;
  size_t header_line = 0;
  std::vector<PlacementRow> rows;
};

// An hb_mapper header at lines[i]: "Node  ON  ..." between a '=' frame and a '-' frame.
bool hb_mapper_header(const std::vector<Line>& lines, size_t i, Columns& cols) {
  if (i == 0 || i + 1 >= lines.size()) return false;
  const std::string_view text = trim(lines[i].text);
  if (!starts_with(text, "Node")) return false;
  if (!is_frame(lines[i - 1].text, '=') || !is_frame(lines[i + 1].text, '-')) return false;
  const std::vector<Cell> header = split_header(text);
  return !header.empty() && header[0].text == "Node" && find_columns(header, cols);
}

// Rows follow the '-' frame and end at a blank line, a frame, a line whose
// logging prefix differs from the header's (the next log message), or the end.
// Returns the index of the first line after the table.
size_t read_hb_mapper_table(const std::vector<Line>& lines, size_t header, const Columns& cols, Table& table,
                            bool& ok, std::string& error) {
  table.format = LogFormat::HbMapper;
  table.header_line = lines[header].number;
  size_t j = header + 2;
  for (; j < lines.size(); ++j) {
    const Line& l = lines[j];
    const std::string_view text = trim(l.text);
    if (text.empty() || is_frame(text, '=') || is_frame(text, '-') || l.prefixed != lines[header].prefixed) break;
    PlacementRow row;
    if (!read_row(text, split_tokens(text), cols, l.number, row, error)) {
      ok = false;
      return j;
    }
    table.rows.push_back(std::move(row));
  }
  return j;
}

// A box border "+-----+----+" (or a "|---|---|" rule).
bool is_border(std::string_view text) {
  if (text.size() < 2) return false;
  if (text.front() == '+') {
    return std::all_of(text.begin(), text.end(), [](char c) { return c == '+' || c == '-' || c == '=' || c == ':'; });
  }
  return text.front() == '|' && text.back() == '|' &&
         std::all_of(text.begin(), text.end(), [](char c) { return c == '|' || c == '-' || c == '=' || c == ':' || c == '+' || c == ' '; });
}

bool hb_compile_header(const Line& line, Columns& cols) {
  const std::string_view text = trim(line.text);
  if (text.size() < 2 || text.front() != '|' || text.back() != '|' || is_border(text)) return false;
  return find_columns(split_pipes(text), cols);
}

// Box rows and borders follow the header until the first other line, or two
// borders in a row (this table's bottom, the next table's top: hb_compile
// prints the output table right after the node table).
size_t read_hb_compile_table(const std::vector<Line>& lines, size_t header, const Columns& cols, Table& table,
                             bool& ok, std::string& error) {
  table.format = LogFormat::HbCompile;
  table.header_line = lines[header].number;
  size_t j = header + 1;
  bool after_border = false;
  for (; j < lines.size(); ++j) {
    const std::string_view text = trim(lines[j].text);
    if (text.empty() || (text.front() != '|' && text.front() != '+')) break;
    if (is_border(text)) {
      if (after_border && j > header + 1) break;
      after_border = true;
      continue;
    }
    after_border = false;
    if (text.front() == '+') break;
    PlacementRow row;
    if (text.size() < 2 || text.back() != '|') {
      error = "line " + std::to_string(lines[j].number) + ": placement table row '" + snippet(text) +
              "' is cut short (truncated log?)";
      ok = false;
      return j;
    }
    if (!read_row(text, split_pipes(text), cols, lines[j].number, row, error)) {
      ok = false;
      return j;
    }
    table.rows.push_back(std::move(row));
  }
  return j;
}

// One CSV line (RFC 4180 quoting: "a,b" and "" for a quote inside quotes).
std::vector<std::string> split_csv(std::string_view s) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  for (auto& cell : cells) cell = std::string(trim(cell));
  return cells;
}

bool is_csv_line(std::string_view text) {
  return text.find(',') != std::string_view::npos && text.front() != '|' && text.front() != '+';
}

// Where a CSV table's columns are: the placement table (Node, ON) or the
// advice file (Device, OpType and the op's name).
struct CsvColumns {
  LogFormat format = LogFormat::TableCsv;
  size_t count = 0;
  size_t node = SIZE_MAX;
  size_t on = SIZE_MAX;      // ON, or the advice file's Device
  size_t type = SIZE_MAX;    // NodeType / Type / OpType
  size_t reason = SIZE_MAX;  // advice: the first column whose title says reason or advice
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool csv_header(std::string_view text, CsvColumns& cols) {
  text = trim(text);
  if (starts_with(text, "\xEF\xBB\xBF")) text.remove_prefix(3);  // a byte-order mark (spreadsheet export)
  if (text.empty() || !is_csv_line(text)) return false;
  const std::vector<std::string> cells = split_csv(text);
  if (cells.size() < 3) return false;
  CsvColumns c;
  c.count = cells.size();
  size_t device = SIZE_MAX, name = SIZE_MAX;
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string& t = cells[i];
    const std::string l = lower(t);
    if (t == "Node" && c.node == SIZE_MAX) c.node = i;
    else if (t == "ON" && c.on == SIZE_MAX) c.on = i;
    else if ((t == "NodeType" || t == "Type" || t == "OpType") && c.type == SIZE_MAX) c.type = i;
    else if (l == "device" && device == SIZE_MAX) device = i;
    // The advice file's name column: hbdk4 prints the op's name or its
    // location; accept the titles a name column goes by.
    else if ((l == "opname" || l == "op_name" || l == "name" || l == "node_name" || l == "location" || l == "loc") &&
             name == SIZE_MAX) {
      name = i;
    } else if ((l.find("reason") != std::string::npos || l.find("advice") != std::string::npos) && c.reason == SIZE_MAX) {
      c.reason = i;
    }
  }
  if (c.node != SIZE_MAX && c.on != SIZE_MAX) {
    c.format = LogFormat::TableCsv;
    c.reason = SIZE_MAX;
  } else if (device != SIZE_MAX && c.type != SIZE_MAX && (name != SIZE_MAX || c.node != SIZE_MAX)) {
    c.format = LogFormat::AdviceCsv;
    c.node = name != SIZE_MAX ? name : c.node;
    c.on = device;
  } else {
    return false;
  }
  cols = c;
  return true;
}

// An advice name may be an MLIR location, loc("/model.0/conv/Conv"): the name inside.
std::string advice_name(std::string name) {
  if (starts_with(name, "loc(") && name.size() > 5 && name.back() == ')') name = name.substr(4, name.size() - 5);
  if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
  return name;
}

// A CSV row's cells, one per header column. A row with more fields than its
// header has an unquoted comma in its last column (a data type of two
// values, `f32,si16`; an advice reason): the known columns are read from the
// left by header position and the surplus goes back to the last column.
std::vector<std::string> csv_row_cells(std::string_view text, size_t columns) {
  std::vector<std::string> cells = split_csv(text);
  if (columns == 0 || cells.size() <= columns) return cells;
  for (size_t i = columns; i < cells.size(); ++i) cells[columns - 1] += "," + cells[i];
  cells.resize(columns);
  return cells;
}

// Rows follow the header up to a blank line or the end.
size_t read_csv_table(const std::vector<Line>& lines, size_t header, const CsvColumns& cols, Table& table,
                      std::vector<NodeReason>& reasons, bool& ok, std::string& error) {
  table.format = cols.format;
  table.header_line = lines[header].number;
  size_t j = header + 1;
  for (; j < lines.size(); ++j) {
    const std::string_view text = trim(lines[j].text);
    if (text.empty()) break;
    const std::vector<std::string> cells = csv_row_cells(text, cols.count);
    auto at = [&](size_t column) -> std::string { return column < cells.size() ? cells[column] : std::string(); };
    PlacementRow row;
    row.line = lines[j].number;
    row.node = at(cols.node);
    if (cols.format == LogFormat::AdviceCsv) row.node = advice_name(row.node);
    if (row.node.empty()) {
      error = "line " + std::to_string(row.line) + ": a placement table row without a node name";
      ok = false;
      return j;
    }
    const std::string on = at(cols.on);
    if (on.empty()) {
      error = "line " + std::to_string(row.line) + ": placement table row '" + snippet(row.node) + "' has no " +
              (cols.format == LogFormat::AdviceCsv ? "Device" : "ON") + " value (truncated file?)";
      ok = false;
      return j;
    }
    if (cols.format == LogFormat::AdviceCsv) {
      const std::string device = lower(on);
      if (device == "bpu") row.on = "BPU";
      else if (device == "external_cpu" || device == "cpu") row.on = "CPU";
      else {
        error = "line " + std::to_string(row.line) + ": advice row '" + snippet(row.node) + "' has Device '" + snippet(on) +
                "', expected bpu or external_cpu";
        ok = false;
        return j;
      }
    } else if (placement_on(on, row.on)) {
    } else if (on == "fused") {
      row.on = "NULL";  // fused into a neighbour: what the printed table says with NULL
    } else {
      error = "line " + std::to_string(row.line) + ": placement table row '" + snippet(row.node) + "' has ON '" +
              snippet(on) + "', expected BPU, CPU, NULL, -- or fused (or VPU, SPU, JIT)";
      ok = false;
      return j;
    }
    row.type = at(cols.type);
    const std::string why = at(cols.reason);
    if (!why.empty()) {
      NodeReason r;
      r.node = row.node;
      r.op_type = row.type;
      r.text = why;
      r.line = row.line;
      reasons.push_back(std::move(r));
    }
    table.rows.push_back(std::move(row));
  }
  return j;
}

// ---- hbdk4's <prefix>_advice.json ------------------------------------------
//
// Its layout is not public (compile-logs.md gives its meaning only), so it is
// read tolerantly (tests/compare/README.md): records are JSON objects that
// carry a name (a tensor's or an op's) and a backend; they come as an array,
// as arrays held by a top-level object, or as a top-level object keyed by
// name whose values are records or bare backend strings.

// A JSON value, as much as the advice reader needs: strings and scalars keep
// their text; `line` is where the value starts.
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  std::string text;
  std::vector<Json> items;                             // Array
  std::vector<std::pair<std::string, Json>> members;  // Object, in file order
  size_t line = 1;
};

// A strict RFC 8259 reader with a depth limit (hostile input never
// exhausts the stack); errors say "line N: ...".
class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : s_(text) {}

  bool read(Json& out, std::string& error) {
    if (!value(out, 0)) {
      error = "line " + std::to_string(line_) + ": not valid JSON (" + error_ + ")";
      return false;
    }
    skip_space();
    if (pos_ != s_.size()) {
      error = "line " + std::to_string(line_) + ": not valid JSON (text after the value)";
      return false;
    }
    return true;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool fail(const char* why) {
    error_ = why;
    return false;
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r' || s_[pos_] == '\n')) {
      if (s_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return fail("unexpected character");
    pos_ += word.size();
    return true;
  }

  static void put_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(unsigned long& cp) {
    if (pos_ + 4 > s_.size()) return fail("a cut \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      const int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
      if (d < 0) return fail("a bad \\u escape");
      cp = cp * 16 + static_cast<unsigned long>(d);
    }
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // the opening quote
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned long cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            unsigned long low = 0;
            if (!hex4(low)) return false;
            if (low < 0xDC00 || low >= 0xE000) return fail("a bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xD800 && cp < 0xE000) {
            return fail("a lone surrogate");
          }
          put_utf8(out, cp);
          break;
        }
        default: return fail("a bad escape");
      }
    }
    return fail("a string without its closing quote (truncated file?)");
  }

  bool number(std::string& out) {
    const size_t begin = pos_;
    if (s_[pos_] == '-') ++pos_;
    const size_t digits = pos_;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    if (pos_ == digits || (s_[digits] == '0' && pos_ - digits > 1)) return fail("a bad number");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      const size_t frac = ++pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
      if (pos_ == frac) return fail("a bad number");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      const size_t exp = pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
      if (pos_ == exp) return fail("a bad number");
    }
    out = std::string(s_.substr(begin, pos_ - begin));
    return true;
  }

  bool value(Json& out, int depth) {
    skip_space();
    out.line = line_;
    if (pos_ >= s_.size()) return fail("it ends early (truncated file?)");
    if (depth > kMaxDepth) return fail("nested too deeply");
    const char c = s_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.kind = Json::String;
      return string(out.text);
    }
    if (c == '-' || is_digit(c)) {
      out.kind = Json::Number;
      return number(out.text);
    }
    if (c == 't' || c == 'f') {
      out.kind = Json::Bool;
      out.text = c == 't' ? "true" : "false";
      return literal(out.text);
    }
    out.kind = Json::Null;
    return literal("null");
  }

  bool array(Json& out, int depth) {
    out.kind = Json::Array;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    while (true) {
      out.items.emplace_back();
      if (!value(out.items.back(), depth + 1)) return false;
      skip_space();
      if (pos_ >= s_.size()) return fail("an array without its ']' (truncated file?)");
      if (s_[pos_] == ']') return ++pos_, true;
      if (s_[pos_++] != ',') return fail("expected ',' or ']'");
    }
  }

  bool object(Json& out, int depth) {
    out.kind = Json::Object;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    while (true) {
      skip_space();
      if (pos_ >= s_.size()) return fail("an object without its '}' (truncated file?)");
      if (s_[pos_] != '"') return fail("expected a quoted key");
      std::string key;
      if (!string(key)) return false;
      skip_space();
      if (pos_ >= s_.size() || s_[pos_++] != ':') return fail("expected ':' after a key");
      out.members.emplace_back(std::move(key), Json{});
      if (!value(out.members.back().second, depth + 1)) return false;
      skip_space();
      if (pos_ >= s_.size()) return fail("an object without its '}' (truncated file?)");
      if (s_[pos_] == '}') return ++pos_, true;
      if (s_[pos_++] != ',') return fail("expected ',' or '}'");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  size_t line_ = 1;
  std::string error_;
};

// A member by any of `keys`, case-insensitive; nullptr when none.
const Json* member(const Json& object, std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    for (const auto& [name, value] : object.members) {
      if (lower(name) == key) return &value;
    }
  }
  return nullptr;
}

// hbdk4's backend as the table prints it (horizon_tc_ui NodeInfo): Vpu and
// Spu are BPU, external_cpu CPU, external_jit JIT (read as CPU), no backend "--".
bool advice_backend(const Json* backend, std::string& on) {
  if (backend == nullptr || backend->kind == Json::Null) {
    on = "--";
    return true;
  }
  if (backend->kind != Json::String) return false;
  const std::string b = lower(backend->text);
  if (b.empty()) on = "--";
  else if (b == "external_cpu" || b == "cpu") on = "CPU";
  else if (b == "external_jit" || b == "jit") on = "CPU";
  else return placement_on(b, on);
  return true;
}

// One advice record -> a row; false (with an error) for a backend it cannot read.
// A record without a name is not a record: `named` is false then.
bool advice_row(const Json& record, const std::string& key_name, PlacementRow& row, bool& named, std::string& error) {
  named = false;
  const Json* name = member(record, {"tensor", "tensor_name", "output", "output_name", "name", "op_name", "opname",
                                     "node", "node_name", "location", "loc"});
  if (name != nullptr && name->kind == Json::String && !name->text.empty()) {
    row.node = advice_name(name->text);
  } else if (!key_name.empty()) {
    row.node = advice_name(key_name);
  } else {
    return true;
  }
  named = !row.node.empty();
  if (!named) return true;
  const Json* backend = member(record, {"backend", "device"});
  row.line = record.line;
  if (!advice_backend(backend, row.on)) {
    error = "line " + std::to_string(record.line) + ": advice record '" + snippet(row.node) + "' has backend '" +
            snippet(backend->text.empty() ? "(an object or array)" : backend->text) +
            "', expected Vpu, Spu, Bpu, external_cpu, external_jit or null";
    return false;
  }
  if (const Json* type = member(record, {"op_type", "optype", "type", "op"}); type != nullptr && type->kind == Json::String) {
    row.type = type->text;
  }
  return true;
}

// Every record of the file, in file order (see the layouts above).
bool advice_rows(const Json& root, std::vector<PlacementRow>& rows, std::string& error) {
  auto take_array = [&](const Json& array) {
    for (const Json& item : array.items) {
      if (item.kind != Json::Object) continue;
      PlacementRow row;
      bool named = false;
      if (!advice_row(item, "", row, named, error)) return false;
      if (named) rows.push_back(std::move(row));
    }
    return true;
  };
  if (root.kind == Json::Array) return take_array(root);
  if (root.kind != Json::Object) return true;
  for (const auto& [key, value] : root.members) {
    if (value.kind == Json::Array) {
      if (!take_array(value)) return false;
    } else if (value.kind == Json::Object) {
      PlacementRow row;
      bool named = false;
      if (!advice_row(value, key, row, named, error)) return false;
      if (named) rows.push_back(std::move(row));
    } else if (value.kind == Json::String || value.kind == Json::Null) {  // "tensor": "Vpu"
      PlacementRow row;
      row.node = advice_name(key);
      row.line = value.line;
      // A bare string that names no backend is not a record ("version": "1.0").
      if (!row.node.empty() && advice_backend(&value, row.on)) rows.push_back(std::move(row));
    }
  }
  return true;
}

// A JSON text is an advice file: its first character (after blanks and a
// byte-order mark) opens an object or an array.
bool looks_like_json(std::string_view text) {
  if (starts_with(text, "\xEF\xBB\xBF")) text.remove_prefix(3);
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
}

bool parse_advice_json(std::string_view text, CompileLog& out, std::string& error) {
  if (starts_with(text, "\xEF\xBB\xBF")) text.remove_prefix(3);
  Json root;
  if (!JsonReader(text).read(root, error)) return false;
  out.format = LogFormat::AdviceJson;
  out.tables = 1;
  out.table_line = root.line;
  if (!advice_rows(root, out.rows, error)) return false;
  if (out.rows.empty()) {
    error = "no advice records: expected JSON objects with a tensor or op name and a backend (or device)";
    return false;
  }
  return true;
}

// "can not get nhwc info from shape: [5, 1024]" (hb_mapper prints it once
// per model input of that shape, before the table) -> {5, 1024}.
void find_shape_reasons(const Line& line, std::vector<NodeReason>& reasons) {
  static constexpr std::string_view kKey = "can not get nhwc info from shape:";
  const std::string_view text = line.text;
  const size_t at = text.find(kKey);
  if (at == std::string_view::npos) return;
  size_t i = at + kKey.size();
  while (i < text.size() && is_space(text[i])) ++i;
  if (i >= text.size() || text[i] != '[') return;
  const size_t close = text.find(']', i);
  if (close == std::string_view::npos) return;
  NodeReason r;
  for (size_t p = i + 1; p < close;) {
    while (p < close && (is_space(text[p]) || text[p] == ',')) ++p;
    if (p == close) break;
    long long d = 0;
    size_t digits = 0;
    while (p < close && is_digit(text[p]) && digits < 15) d = d * 10 + (text[p++] - '0'), ++digits;
    if (digits == 0 || (p < close && !is_space(text[p]) && text[p] != ',')) return;  // not a plain list of dims
    r.shape.push_back(d);
  }
  if (r.shape.empty() || r.shape.size() > 8) return;
  r.text = std::string(trim(text));
  r.line = line.number;
  reasons.push_back(std::move(r));
}

// A march name as the tools print it: bayes-e, nash-p, bernoulli2.
std::string march_token(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size() && (is_space(s[pos]) || s[pos] == '\'' || s[pos] == '"')) ++pos;
  size_t end = pos;
  while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '-' || s[end] == '_')) ++end;
  const std::string_view token = s.substr(pos, end - pos);
  const bool has_letter = std::any_of(token.begin(), token.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  return token.size() <= 32 && has_letter ? std::string(token) : std::string();
}

// Every way the tools print the march (see compile_log.h).
void find_marches(std::string_view text, std::vector<std::string>& marches) {
  std::vector<std::string> found;
  auto after = [&](std::string_view key, bool colon) {
    for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
      std::string_view rest = text.substr(at + key.size());
      if (colon) {
        size_t i = 0;
        while (i < rest.size() && is_space(rest[i])) ++i;
        if (i == rest.size() || rest[i] != ':') continue;
        rest.remove_prefix(i + 1);
      }
      found.push_back(march_token(rest));
    }
  };
  after("BPU march", true);                        // hb_mapper summary: "BPU march           : bayes-e"
  if (starts_with(trim(text), "march:")) found.push_back(march_token(trim(text).substr(6)));  // dumped yaml
  after("'march': ", false);                       // a dumped dict
  after("compile the model with march ", false);   // "Start to compile the model with march bayes-e."
  after("--march ", false);                        // a printed command line
  after("--march=", false);
  if (text.find("convert") != std::string_view::npos) after("input args (", false);  // hbdk.convert input args ('nash-e',)
  for (auto& m : found) {
    if (!m.empty() && std::find(marches.begin(), marches.end(), m) == marches.end()) marches.push_back(std::move(m));
  }
}

// "hbdk version 3.49.15", "hb_mapper version   : 1.24.3", "hmct version: 2.1.9".
void find_versions(std::string_view text, std::vector<ToolVersion>& versions) {
  static const char* const kTools[] = {"hb_mapper", "hb_compile", "hbdk", "hbdk4", "horizon_nn", "hmct",
                                       "horizon_tc_ui", "horizon_plugin_pytorch"};
  for (const char* tool_name : kTools) {
    const std::string_view tool(tool_name);
    for (size_t at = text.find(tool); at != std::string_view::npos; at = text.find(tool, at + 1)) {
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) continue;
      size_t i = at + tool.size();
      if (i >= text.size() || !is_space(text[i])) continue;
      while (i < text.size() && is_space(text[i])) ++i;
      if (!starts_with(text.substr(i), "version")) continue;
      i += 7;
      while (i < text.size() && is_space(text[i])) ++i;
      if (i < text.size() && text[i] == ':') ++i;
      while (i < text.size() && is_space(text[i])) ++i;
      if (i < text.size() && text[i] == 'v') ++i;
      if (i >= text.size() || !is_digit(text[i])) continue;
      size_t end = i;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
                                   text[end] == '-' || text[end] == '+' || text[end] == '_')) {
        ++end;
      }
      while (end > i && text[end - 1] == '.') --end;
      const bool known = std::any_of(versions.begin(), versions.end(), [&](const ToolVersion& v) { return v.tool == tool; });
      if (!known && end - i <= 40) versions.push_back({std::string(tool), std::string(text.substr(i, end - i))});
      break;
    }
  }
}

// "... Node(name:X, type:Softmax) ..." -> {X, Softmax}.
void find_reasons(const Line& line, std::vector<NodeReason>& reasons) {
  const std::string_view text = line.text;
  static constexpr std::string_view kOpen = "Node(name:";
  static constexpr std::string_view kType = ", type:";
  for (size_t at = text.find(kOpen); at != std::string_view::npos; at = text.find(kOpen, at + 1)) {
    const size_t name_begin = at + kOpen.size();
    const size_t type_at = text.find(kType, name_begin);
    if (type_at == std::string_view::npos) continue;
    const size_t type_begin = type_at + kType.size();
    const size_t close = text.find(')', type_begin);
    if (close == std::string_view::npos) continue;
    NodeReason r;
    r.node = std::string(trim(text.substr(name_begin, type_at - name_begin)));
    r.op_type = std::string(trim(text.substr(type_begin, close - type_begin)));
    r.text = std::string(trim(text));
    r.line = line.number;
    if (!r.node.empty()) reasons.push_back(std::move(r));
  }
}

// Why there is no table, for the one-line error.
std::string no_table_error(std::string_view text, const std::vector<Line>& lines) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return is_space(c) || c == '\n' || c == '\r'; })) {
    return "the log is empty: no per-node placement table";
  }
  const bool mapper = text.find("hb_mapper") != std::string_view::npos || text.find("horizon_nn") != std::string_view::npos;
  const bool compile = text.find("hb_compile") != std::string_view::npos || text.find("hbdk.convert") != std::string_view::npos ||
                       text.find("hmct") != std::string_view::npos;
  if (!mapper && !compile) {
    return "no per-node placement table: not an hb_mapper or hb_compile log (expected an hb_mapper table "
           "'Node  ON  Subgraph  Type ...' framed by '=' and '-' lines, an hb_compile table '| Node | NodeType | ON | ...', "
           "its CSV form 'Node,NodeType,ON,...' or an advice CSV with Device and OpType columns)";
  }
  std::string last;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->prefixed && !trim(it->text).empty()) {
      last = snippet(trim(it->text));
      break;
    }
  }
  return std::string("no per-node placement table in this ") + (compile && !mapper ? "hb_compile" : "hb_mapper") +
         " log: the run stopped before printing it" + (last.empty() ? "" : " (its last message: '" + last + "')");
}

}  // namespace

const char* log_format_name(LogFormat f) {
  switch (f) {
    case LogFormat::HbCompile: return "hb_compile";
    case LogFormat::TableCsv: return "csv";
    case LogFormat::AdviceCsv: return "advice_csv";
    case LogFormat::AdviceJson: return "advice_json";
    case LogFormat::HbMapper: break;
  }
  return "hb_mapper";
}

bool compiler_made_name(std::string_view node) {
  static constexpr std::string_view kPreprocess = "HZ_PREPROCESS_FOR_";
  static constexpr std::string_view kRequantize = "_calibrated_Requantize";
  return (node.size() > kPreprocess.size() && starts_with(node, kPreprocess)) ||
         (node.size() > kRequantize.size() && node.substr(node.size() - kRequantize.size()) == kRequantize);
}

namespace {

// The log and CSV forms: the last placement table of the text.
bool parse_tables(std::string_view text, CompileLog& out, std::string& error) {
  out = CompileLog{};
  const std::vector<Line> lines = split_lines(text);
  Table last;
  std::vector<NodeReason> last_row_reasons;  // an advice file's reasons, per row
  for (size_t i = 0; i < lines.size();) {
    Columns cols;
    CsvColumns csv_cols;
    Table table;
    std::vector<NodeReason> row_reasons;
    bool ok = true;
    size_t next = i + 1;
    if (hb_mapper_header(lines, i, cols)) {
      next = read_hb_mapper_table(lines, i, cols, table, ok, error);
    } else if (hb_compile_header(lines[i], cols)) {
      next = read_hb_compile_table(lines, i, cols, table, ok, error);
    } else if (csv_header(lines[i].text, csv_cols)) {
      next = read_csv_table(lines, i, csv_cols, table, row_reasons, ok, error);
    } else {
      ++i;
      continue;
    }
    if (!ok) return false;
    ++out.tables;
    last = std::move(table);
    last_row_reasons = std::move(row_reasons);
    i = std::max(next, i + 1);
  }
  if (out.tables == 0) {
    error = no_table_error(text, lines);
    return false;
  }
  if (last.rows.empty()) {
    error = "line " + std::to_string(last.header_line) + ": the placement table has no rows (truncated log?)";
    return false;
  }
  out.format = last.format;
  out.table_line = last.header_line;
  out.rows = std::move(last.rows);
  for (const Line& line : lines) {
    find_marches(line.text, out.marches);
    find_versions(line.text, out.versions);
    find_reasons(line, out.reasons);
    find_shape_reasons(line, out.shape_reasons);
  }
  for (auto& r : last_row_reasons) out.reasons.push_back(std::move(r));
  return true;
}

}  // namespace

bool parse_compile_log(std::string_view text, CompileLog& out, std::string& error) {
  out = CompileLog{};
  if (!looks_like_json(text)) return parse_tables(text, out, error);
  // Text opening with '{' or '[' is advice JSON, unless it is not JSON and a
  // table follows (a log whose first line is "[INFO] ...").
  if (parse_advice_json(text, out, error)) return true;
  CompileLog table;
  std::string table_error;
  if (!parse_tables(text, table, table_error)) return false;
  out = std::move(table);
  return true;
}

bool read_compile_log(const std::string& path, CompileLog& out, std::string& error) {
  std::string text;
  if (!read_input_file(path, kCompileLog, text, error)) {
    if (error.rfind("is larger", 0) == 0) error += "; cut it down to the placement table and the lines around it";
    return false;
  }
  return parse_compile_log(text, out, error);
}

}  // namespace bpulint
