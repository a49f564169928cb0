// .gitignore and .ignore files, as git reads them, for folder walks (ruff and
// ripgrep honour both): what a team already keeps out of its repository
// (build folders, exported checkpoints) stays out of `bpu-lint .` too.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace bpulint {

// git's wildmatch with the pathname flag, on a '/'-separated path: '*' and '?'
// never cross '/', "[a-z]" / "[!a]" / "[^a]" are classes, '\' escapes the next
// character; "**/" at the start or after '/' matches zero or more folders,
// "/**" at the end everything below, a lone "**" everything. Other "**" are '*'.
bool wildmatch(std::string_view pattern, std::string_view path);

// One line of an ignore file, parsed.
struct IgnorePattern {
  std::string glob;      // without '!', the leading '/' and the trailing '/'
  bool negated = false;  // "!pattern": re-includes what an earlier pattern ignored
  bool dir_only = false; // "pattern/": matches folders only
  bool anchored = false; // had a '/' before its end: matched from the file's folder, else on the name at any depth
  size_t line = 0;       // 1-based, for messages and tests
};

enum class IgnoreVerdict { None, Ignored, Included };

// The patterns of one ignore file. Parsing never fails: as in git, every line
// that is not blank or a comment is a pattern (one that cannot match is inert).
class IgnoreFile {
 public:
  static IgnoreFile parse(std::string_view text);

  // `rel` is the path below the file's folder ('/'-separated, no leading '/').
  // The last matching pattern decides; None when no pattern matches.
  IgnoreVerdict match(std::string_view rel, bool is_dir) const;

  const std::vector<IgnorePattern>& patterns() const { return patterns_; }

 private:
  std::vector<IgnorePattern> patterns_;
};

}  // namespace bpulint
