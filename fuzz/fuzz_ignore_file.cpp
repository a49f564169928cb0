// fuzz_ignore_file: bytes as a .gitignore / .ignore file through
// IgnoreFile::parse and match, and as wildmatch patterns. Must never crash,
// hang or leak (the matcher is a two-row table, so no pattern can make it
// backtrack). Invariants: every pattern is non-empty, one line, from a line
// of the text; printing the patterns back and parsing again gives the same
// patterns; a trailing "*" ignores every name and a "!*" after it re-includes
// it; a path without wildcards matches itself, and "**" matches every path.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bpulint/base/ignore_file.h"
#include "fuzz_util.h"

using namespace bpulint;

namespace {

std::string line_of(const IgnorePattern& p) {
  return std::string(p.negated ? "!" : "") + (p.anchored ? "/" : "") + p.glob + (p.dir_only ? "/" : "");
}

bool plain(const std::string& s) { return s.find_first_of("*?[\\") == std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const IgnoreFile file = IgnoreFile::parse(text);
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  size_t last_line = 0;
  std::string printed;
  bool printable = true;
  for (const auto& p : file.patterns()) {
    FUZZ_CHECK(!p.glob.empty(), "an empty pattern");
    FUZZ_CHECK(p.glob.find('\n') == std::string::npos, "a pattern spans lines");
    FUZZ_CHECK(p.line > last_line && p.line <= lines, "pattern line numbers out of order or range");
    last_line = p.line;
    printable = printable && p.glob.back() != '\r';  // a trailing CR would be read as a CRLF line end
    printed += line_of(p) + "\n";
  }
  if (printable) {
    const IgnoreFile again = IgnoreFile::parse(printed);
    FUZZ_CHECK(again.patterns().size() == file.patterns().size(), "printing the patterns back changes their number");
    for (size_t i = 0; i < again.patterns().size(); ++i) {
      const IgnorePattern& a = again.patterns()[i];
      const IgnorePattern& b = file.patterns()[i];
      FUZZ_CHECK(a.glob == b.glob && a.negated == b.negated && a.anchored == b.anchored && a.dir_only == b.dir_only,
                 "printing a pattern back changes it: " + line_of(b));
    }
  }
  // Paths to match: fixed ones, and each line of the input taken as a path.
  std::vector<std::string> paths = {"a.onnx", "models/a.onnx", "build", "a/b/c/d.onnx", "x"};
  size_t pos = 0;
  while (pos < text.size() && paths.size() < 16) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string path = text.substr(pos, end - pos);
    pos = end + 1;
    while (!path.empty() && path.front() == '/') path.erase(0, 1);
    if (!path.empty() && path.back() != '/') paths.push_back(path);
  }
  const IgnoreFile all = IgnoreFile::parse(text + "\n*\n");
  const IgnoreFile none = IgnoreFile::parse(text + "\n*\n!*\n");
  for (const auto& path : paths) {
    for (bool dir : {false, true}) {
      (void)file.match(path, dir);
      FUZZ_CHECK(all.match(path, dir) == IgnoreVerdict::Ignored, "a final '*' does not ignore " + path);
      FUZZ_CHECK(none.match(path, dir) == IgnoreVerdict::Included, "a final '!*' does not re-include " + path);
    }
    FUZZ_CHECK(wildmatch("**", path), "'**' does not match " + path);
    if (plain(path)) FUZZ_CHECK(wildmatch(path, path), "a plain path does not match itself: " + path);
    for (const auto& p : file.patterns()) (void)wildmatch(p.glob, path);
  }
  return 0;
}
