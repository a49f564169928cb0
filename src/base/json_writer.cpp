#include "bpulint/base/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace bpulint {
namespace {

// Length of the UTF-8 sequence at p (n bytes left). *valid = a complete,
// well-formed sequence; otherwise the length is that of the maximal subpart
// to replace with one U+FFFD (at least 1).
size_t utf8_sequence(const unsigned char* p, size_t n, bool* valid) {
  const unsigned char b = p[0];
  *valid = false;
  if (b < 0x80) {
    *valid = true;
    return 1;
  }
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the first continuation byte
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    need = 2;
  } else if (b == 0xED) {
    need = 2, hi = 0x9F;  // no surrogates
  } else if (b == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 3;
  } else if (b == 0xF4) {
    need = 3, hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 1;  // 0x80..0xC1, 0xF5..0xFF: never a lead byte
  }
  size_t i = 1;
  for (; i <= need; ++i) {
    if (i >= n) return i;
    const unsigned char c = p[i];
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (c < l || c > h) return i;
  }
  *valid = true;
  return i;
}

void append_escape_u(std::string& out, unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", v);
  out += buf;
}

}  // namespace

std::string json_string(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 2);
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || c == 0x7F) append_escape_u(out, c);
          else out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    bool valid = false;
    const size_t len = utf8_sequence(p + i, n - i, &valid);
    // C1 controls (U+0080..U+009F, C2 80..C2 9F) are valid JSON but act like
    // ESC sequences on some terminals that show the report: escaped too.
    if (valid && len == 2 && c == 0xC2 && p[i + 1] <= 0x9F) append_escape_u(out, p[i + 1]);
    else if (valid) out.append(bytes.data() + i, len);
    else out += "\\ufffd";
    i += len;
  }
  out += '"';
  return out;
}

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < bytes.size();) {
    bool valid = false;
    const size_t len = utf8_sequence(p + i, bytes.size() - i, &valid);
    if (valid) out.append(bytes.data() + i, len);
    else out += "\xEF\xBF\xBD";
    i += len;
  }
  return out;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // to_chars may print "1e+20"; JSON allows the '+', and "-0" is valid too.
  return s;
}

// --- writer -------------------------------------------------------------

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(stack_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!stack_.empty()) {
    if (!stack_.back().empty) out_ += ',';
    stack_.back().empty = false;
    newline();
  }
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (!stack_.empty()) {
    if (!stack_.back().empty) out_ += ',';
    stack_.back().empty = false;
    newline();
  }
  out_ += json_string(k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::open(char bracket, bool object) {
  before_value();
  out_ += bracket;
  stack_.push_back({object, true});
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  const bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();  // an empty container stays on one line: [] or {}
  out_ += bracket;
  return *this;
}

JsonWriter& JsonWriter::begin_object() { return open('{', true); }
JsonWriter& JsonWriter::begin_array() { return open('[', false); }
JsonWriter& JsonWriter::end_object() { return close('}'); }
JsonWriter& JsonWriter::end_array() { return close(']'); }

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  out_ += json_string(s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::signed_value(long long v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::unsigned_value(unsigned long long v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  before_value();
  out_ += json_number(v);
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace bpulint
