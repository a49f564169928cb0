// Escaping for the human output (text, concise, github, compare, calibrate,
// explain, rules, every message on stderr) and the graph reports (--format
// html and dot). Every name, value and message in them may come from a model
// file, a file name, a rule file or the command line and may hold any bytes:
// quotes, '<', '&', newlines, escape sequences, bidi overrides, invalid UTF-8.
// These functions turn such bytes into text that cannot change the structure
// of the document, terminal or log it is written into, and that shows what
// the bytes were.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace bpulint {

// The one cleaning function for every string that reaches a terminal or a CI
// log (from a model, a file name, a rule file, a configuration, a compile log
// or the command line), and for the graph reports' labels. Valid UTF-8
// without control characters: invalid sequences become U+FFFD (as
// sanitize_utf8 does), C0 and C1 controls and DEL become visible "\xNN" (so
// a value never breaks a line, a label or a table row: newlines and CRs
// too), the bidi embedding, override and isolate characters (U+202A-U+202E,
// U+2066-U+2069) become visible "\u202E" (they would reorder what is
// shown), Unicode noncharacters become U+FFFD. A value starting with "::"
// (after white space) gets its first ':' as "\x3a", so that no line
// starting with a value is a GitHub Actions workflow command.
std::string printable_text(std::string_view bytes);

// printable_text for HTML text and double- or single-quoted attribute values:
// & < > " ' as character references.
std::string html_escape(std::string_view bytes);

// A double-quoted DOT string (with its quotes) that Graphviz shows as
// printable_text(bytes): backslash and '"' escaped, '&' written as "&amp;"
// (Graphviz decodes character references in labels).
std::string dot_quote(std::string_view bytes);

// Several lines, each shown as dot_quote shows it, joined by DOT line breaks
// (a line's own newlines stay "\x0a").
std::string dot_quote_lines(const std::vector<std::string>& lines);

// printable_text cut to at most `max_chars` code points by keeping the tail
// after "..." (a torch.onnx name ends with the layer: "/encoder/layers.11/mlp/fc1/MatMul").
std::string shorten_tail(std::string_view bytes, size_t max_chars);

}  // namespace bpulint
