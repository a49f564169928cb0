#include "bpulint/base/ignore_file.h"

#include <bitset>

namespace bpulint {
namespace {

struct Token {
  enum Kind { Literal, One, Class, Star, AnyFolders, AnyAll } kind = Literal;
  char c = 0;
  std::bitset<256> set;  // Class: the bytes it takes (already negated)
};

// "[...]" at pattern[i]; false when unterminated (then '[' is a literal, as in git).
bool parse_class(std::string_view p, size_t& i, Token& t) {
  size_t j = i + 1;
  bool negate = false;
  if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
    negate = true;
    ++j;
  }
  std::bitset<256> set;
  bool first = true;
  for (; j < p.size(); ++j) {
    unsigned char c = static_cast<unsigned char>(p[j]);
    if (c == ']' && !first) break;
    first = false;
    if (c == '\\' && j + 1 < p.size()) c = static_cast<unsigned char>(p[++j]);
    if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
      unsigned char hi = static_cast<unsigned char>(p[j + 2]);
      j += 2;
      if (hi == '\\' && j + 1 < p.size()) hi = static_cast<unsigned char>(p[++j]);
      for (unsigned v = c; v <= hi; ++v) set[v] = true;
    } else {
      set[c] = true;
    }
  }
  if (j >= p.size()) return false;
  t.set = negate ? ~set : set;
  t.set[static_cast<unsigned char>('/')] = false;  // never crosses a folder
  t.kind = Token::Class;
  i = j;
  return true;
}

std::vector<Token> tokenize(std::string_view p) {
  std::vector<Token> out;
  for (size_t i = 0; i < p.size(); ++i) {
    Token t;
    const char c = p[i];
    if (c == '*') {
      size_t run = 1;
      while (i + run < p.size() && p[i + run] == '*') ++run;
      const bool at_folder_start = i == 0 || p[i - 1] == '/';
      const size_t after = i + run;
      if (run >= 2 && at_folder_start && after == p.size()) {
        t.kind = Token::AnyAll;
      } else if (run >= 2 && at_folder_start && p[after] == '/') {
        t.kind = Token::AnyFolders;  // swallows the '/' after it
        ++run;
      } else {
        t.kind = Token::Star;
      }
      i += run - 1;
    } else if (c == '?') {
      t.kind = Token::One;
    } else if (c == '[' && parse_class(p, i, t)) {
      // parsed
    } else if (c == '\\' && i + 1 < p.size()) {
      t.c = p[++i];
    } else {
      t.c = c;
    }
    out.push_back(t);
  }
  return out;
}

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

// Bottom-up over (token, position) pairs, two rows at a time: no recursion and
// no backtracking blow-up whatever the pattern ("*a*a*a*...b").
bool wildmatch(std::string_view pattern, std::string_view path) {
  const std::vector<Token> tokens = tokenize(pattern);
  const size_t n = path.size();
  std::vector<char> next(n + 1, 0), row(n + 1, 0);  // next: tokens[k+1..] matches path[i..]
  next[n] = 1;
  for (size_t k = tokens.size(); k-- > 0;) {
    const Token& t = tokens[k];
    bool after_slash = false;  // AnyFolders: some '/' at or after i is followed by a match of the rest
    for (size_t i = n + 1; i-- > 0;) {
      const bool more = i < n;
      const unsigned char c = more ? static_cast<unsigned char>(path[i]) : 0;
      bool m = false;
      switch (t.kind) {
        case Token::Literal: m = more && path[i] == t.c && next[i + 1]; break;
        case Token::One: m = more && c != '/' && next[i + 1]; break;
        case Token::Class: m = more && t.set[c] && next[i + 1]; break;
        case Token::Star: m = next[i] || (more && c != '/' && row[i + 1]); break;
        case Token::AnyAll: m = next[i] || (more && row[i + 1]); break;
        case Token::AnyFolders:
          // Zero folders, or everything up to and including some '/' at or after i.
          after_slash = after_slash || (more && c == '/' && next[i + 1]);
          m = next[i] || after_slash;
          break;
      }
      row[i] = m;
    }
    next.swap(row);
  }
  return next[0] != 0;
}

IgnoreFile IgnoreFile::parse(std::string_view text) {
  IgnoreFile file;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    // Trailing spaces go unless escaped ("foo\ " keeps one).
    while (!line.empty() && line.back() == ' ' && !(line.size() >= 2 && line[line.size() - 2] == '\\')) line.pop_back();
    IgnorePattern p;
    p.line = line_no;
    if (!line.empty() && line[0] == '!') {
      p.negated = true;
      line.erase(0, 1);
    }
    if (!line.empty() && line.back() == '/' && !(line.size() >= 2 && line[line.size() - 2] == '\\')) {
      p.dir_only = true;
      line.pop_back();
    }
    p.anchored = line.find('/') != std::string::npos;
    if (!line.empty() && line[0] == '/') line.erase(0, 1);
    if (line.empty()) continue;  // "/", "!" or "!/": nothing to match
    p.glob = std::move(line);
    file.patterns_.push_back(std::move(p));
  }
  return file;
}

IgnoreVerdict IgnoreFile::match(std::string_view rel, bool is_dir) const {
  for (auto it = patterns_.rbegin(); it != patterns_.rend(); ++it) {
    if (it->dir_only && !is_dir) continue;
    if (wildmatch(it->glob, it->anchored ? rel : base_name(rel))) {
      return it->negated ? IgnoreVerdict::Included : IgnoreVerdict::Ignored;
    }
  }
  return IgnoreVerdict::None;
}

}  // namespace bpulint
