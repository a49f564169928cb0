#include "bpulint/render/markup.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "bpulint/base/json_writer.h"

namespace bpulint {
namespace {

// Decodes one code point of valid UTF-8 at s[i]; returns its byte length.
size_t decode(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  if (i + len > s.size()) len = s.size() - i;  // cannot happen after sanitize_utf8; stay in bounds anyway
  cp = len == 1 ? b : len == 2 ? b & 0x1Fu : len == 3 ? b & 0x0Fu : b & 0x07u;
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
  return len;
}

bool noncharacter(uint32_t cp) { return (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE; }

// The embedding, override and isolate controls of the Unicode bidi algorithm:
// they reorder what a terminal or a log viewer shows ("Trojan Source").
bool bidi_control(uint32_t cp) { return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069); }

// What .NET's char.IsWhiteSpace accepts besides the controls (escaped anyway):
// the GitHub Actions runner trims these before it looks for "::".
bool runner_space(uint32_t cp) {
  return cp == 0x20 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

}  // namespace

std::string printable_text(std::string_view bytes) {
  // GitHub Actions runs a log line that starts with "::" (after white space)
  // as a workflow command: a value's leading "::" is shown as "\x3a:".
  constexpr std::string_view kCommandColon = "\\x3a";
  // Almost every name is plain ASCII: nothing to replace, one copy.
  if (std::all_of(bytes.begin(), bytes.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
    const size_t first = bytes.find_first_not_of(' ');
    if (first == std::string_view::npos || bytes.substr(first, 2) != "::") return std::string(bytes);
    return std::string(bytes.substr(0, first)).append(kCommandColon).append(bytes.substr(first + 1));
  }
  const std::string clean = sanitize_utf8(bytes);
  std::string out;
  out.reserve(clean.size());
  bool line_start = true;  // only runner_space so far
  for (size_t i = 0; i < clean.size();) {
    uint32_t cp = 0;
    const size_t len = decode(clean, i, cp);
    char buf[8];
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {  // C0, DEL, C1: newlines inside a value too
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (bidi_control(cp)) {
      std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(cp));
      out += buf;
    } else if (noncharacter(cp)) {
      out += "\xEF\xBF\xBD";
    } else if (line_start && cp == ':' && i + 1 < clean.size() && clean[i + 1] == ':') {
      out += kCommandColon;
    } else {
      out.append(clean, i, len);
    }
    line_start = line_start && runner_space(cp);
    i += len;
  }
  return out;
}

std::string html_escape(std::string_view bytes) {
  std::string out;
  for (char c : printable_text(bytes)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string dot_quote_lines(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\\n";
    for (char c : printable_text(lines[i])) {
      switch (c) {
        case '\\': out += "\\\\"; break;
        case '"': out += "\\\""; break;
        case '&': out += "&amp;"; break;
        default: out += c;
      }
    }
  }
  return out + "\"";
}

std::string dot_quote(std::string_view bytes) { return dot_quote_lines({std::string(bytes)}); }

std::string shorten_tail(std::string_view bytes, size_t max_chars) {
  const std::string text = printable_text(bytes);
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
  if (chars <= max_chars || max_chars < 4) return text;
  // Skip the code points that do not fit, keeping room for "...".
  size_t drop = chars - (max_chars - 3), i = 0;
  while (drop > 0) {
    uint32_t cp = 0;
    i += decode(text, i, cp);
    --drop;
  }
  return "..." + text.substr(i);
}

}  // namespace bpulint
