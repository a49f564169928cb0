#include "bpulint/json_writer.h"

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
    if (valid) out.append(bytes.data() + i, len);
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

// --- checker ------------------------------------------------------------

namespace {

class Checker {
 public:
  explicit Checker(std::string_view t) : t_(t) {}

  bool document(std::string* error) {
    ws();
    bool ok = value(0);
    if (ok) {
      ws();
      if (i_ != t_.size()) ok = fail("trailing characters");
    }
    if (!ok && error != nullptr) *error = "offset " + std::to_string(fail_at_) + ": " + problem_;
    return ok;
  }

 private:
  bool fail(const char* what) {
    if (problem_.empty()) {
      problem_ = what;
      fail_at_ = i_;
    }
    return false;
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool literal(std::string_view word) {
    if (t_.substr(i_, word.size()) != word) return fail("invalid literal");
    i_ += word.size();
    return true;
  }
  bool value(int depth) {
    if (depth > 512) return fail("nesting too deep");
    if (i_ >= t_.size()) return fail("unexpected end");
    switch (t_[i_]) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }
  bool object(int depth) {
    ++i_;
    ws();
    if (i_ < t_.size() && t_[i_] == '}') return ++i_, true;
    for (;;) {
      ws();
      if (i_ >= t_.size() || t_[i_] != '"') return fail("expected a key");
      if (!string()) return false;
      ws();
      if (i_ >= t_.size() || t_[i_] != ':') return fail("expected ':'");
      ++i_;
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < t_.size() && t_[i_] == '}') return ++i_, true;
      return fail("expected ',' or '}'");
    }
  }
  bool array(int depth) {
    ++i_;
    ws();
    if (i_ < t_.size() && t_[i_] == ']') return ++i_, true;
    for (;;) {
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < t_.size() && t_[i_] == ']') return ++i_, true;
      return fail("expected ',' or ']'");
    }
  }
  bool hex4(unsigned* v) {
    if (i_ + 4 > t_.size()) return fail("truncated \\u escape");
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = t_[i_++];
      *v <<= 4;
      if (c >= '0' && c <= '9') *v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') *v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') *v |= static_cast<unsigned>(c - 'A' + 10);
      else return fail("bad hex digit in \\u escape");
    }
    return true;
  }
  bool string() {
    ++i_;
    const auto* p = reinterpret_cast<const unsigned char*>(t_.data());
    while (i_ < t_.size()) {
      const unsigned char c = p[i_];
      if (c == '"') return ++i_, true;
      if (c < 0x20) return fail("raw control character in string");
      if (c == '\\') {
        if (++i_ >= t_.size()) return fail("truncated escape");
        const char e = t_[i_++];
        if (e == 'u') {
          unsigned v = 0;
          if (!hex4(&v)) return false;
          if (v >= 0xDC00 && v <= 0xDFFF) return fail("lone low surrogate");
          if (v >= 0xD800 && v <= 0xDBFF) {
            if (t_.substr(i_, 2) != "\\u") return fail("lone high surrogate");
            i_ += 2;
            unsigned w = 0;
            if (!hex4(&w)) return false;
            if (w < 0xDC00 || w > 0xDFFF) return fail("high surrogate without low surrogate");
          }
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return fail("invalid escape");
        }
        continue;
      }
      if (c < 0x80) {
        ++i_;
        continue;
      }
      bool valid = false;
      const size_t len = utf8_sequence(p + i_, t_.size() - i_, &valid);
      if (!valid) return fail("invalid UTF-8 in string");
      i_ += len;
    }
    return fail("unterminated string");
  }
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  bool number() {
    const size_t start = i_;
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    if (i_ >= t_.size() || !digit(t_[i_])) return i_ = start, fail("invalid value");
    if (t_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < t_.size() && digit(t_[i_])) ++i_;
    }
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (i_ >= t_.size() || !digit(t_[i_])) return fail("digit expected after '.'");
      while (i_ < t_.size() && digit(t_[i_])) ++i_;
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (i_ >= t_.size() || !digit(t_[i_])) return fail("digit expected in exponent");
      while (i_ < t_.size() && digit(t_[i_])) ++i_;
    }
    return true;
  }

  std::string_view t_;
  size_t i_ = 0;
  std::string problem_;
  size_t fail_at_ = 0;
};

}  // namespace

bool json_valid(std::string_view text, std::string* error) {
  return Checker(text).document(error);
}

}  // namespace bpulint
