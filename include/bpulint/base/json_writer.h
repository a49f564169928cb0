// A small streaming JSON writer (for --format json and sarif). Tests read
// what it writes with a real JSON library (nlohmann), never with code here.
//
// Output is deterministic: keys come out in the order they are written,
// 2-space indentation, one member or item per line, "[]" / "{}" for empty
// containers, "\n" line ends, no trailing newline (the caller adds one).
//
// Strings: ONNX names and messages are arbitrary bytes, but JSON text must be
// UTF-8. json_string() therefore
//   - copies valid UTF-8 sequences as they are (no \u escapes for non-ASCII),
//   - escapes '"', '\\', and the control characters U+0000..U+001F (as \b \f
//     \n \r \t or \u00XX) and U+007F (as \u007f),
//   - replaces every invalid byte sequence (stray continuation bytes,
//     truncated sequences, overlong forms, surrogates U+D800..U+DFFF, code
//     points above U+10FFFF, bytes 0xF8..0xFF) with U+FFFD, written as the
//     escape \ufffd: one U+FFFD per maximal invalid subpart, as the Unicode
//     standard recommends (section 3.9, "U+FFFD substitution of maximal
//     subparts"), so "a\xff\xfeb" becomes "a\ufffd\ufffdb".
// Numbers: integers exactly; doubles in the shortest form that round-trips
// (std::to_chars); NaN and infinities, which JSON cannot represent, as null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bpulint {

// The quoted JSON string literal for `bytes` (see above).
std::string json_string(std::string_view bytes);

// `bytes` with each invalid UTF-8 sequence replaced by U+FFFD (as UTF-8,
// EF BF BD), by the same rule as json_string(). For non-JSON outputs.
std::string sanitize_utf8(std::string_view bytes);

// Shortest round-trip text of a finite double, "null" otherwise.
std::string json_number(double v);

class JsonWriter {
 public:
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // Inside an object: the next value's key.
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(int v) { return signed_value(v); }
  JsonWriter& value(long v) { return signed_value(v); }
  JsonWriter& value(long long v) { return signed_value(v); }
  JsonWriter& value(unsigned v) { return unsigned_value(v); }
  JsonWriter& value(unsigned long v) { return unsigned_value(v); }
  JsonWriter& value(unsigned long long v) { return unsigned_value(v); }
  JsonWriter& value(double v);
  JsonWriter& null();

  // Shorthands for key(k).value(v).
  template <typename T>
  JsonWriter& member(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  JsonWriter& member_null(std::string_view k) {
    key(k);
    return null();
  }

  // The text so far (complete once every container is closed).
  const std::string& str() const { return out_; }

 private:
  JsonWriter& signed_value(long long v);
  JsonWriter& unsigned_value(unsigned long long v);
  void before_value();
  void newline();
  JsonWriter& open(char bracket, bool object);
  JsonWriter& close(char bracket);

  struct Level {
    bool object = false;
    bool empty = true;
  };
  int indent_;
  std::string out_;
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace bpulint
