// The .gitignore / .ignore matcher against git's documented semantics
// (gitignore(5)); the walk that uses it is tested through the CLI in cli_test.cpp.
#include <doctest/doctest.h>

#include <string>

#include "bpulint/base/ignore_file.h"

using namespace bpulint;

TEST_CASE("wildmatch: '*' and '?' stay inside a folder, classes, escapes") {
  CHECK(wildmatch("*.onnx", "a.onnx"));
  CHECK_FALSE(wildmatch("*.onnx", "d/a.onnx"));
  CHECK(wildmatch("d/*.onnx", "d/a.onnx"));
  CHECK_FALSE(wildmatch("d/*", "d/e/a.onnx"));
  CHECK(wildmatch("a?c", "abc"));
  CHECK_FALSE(wildmatch("a?c", "a/c"));
  CHECK(wildmatch("m[0-9].onnx", "m7.onnx"));
  CHECK_FALSE(wildmatch("m[0-9].onnx", "mx.onnx"));
  CHECK(wildmatch("m[!0-9].onnx", "mx.onnx"));
  CHECK(wildmatch("m[^0-9].onnx", "mx.onnx"));
  CHECK_FALSE(wildmatch("m[!0-9].onnx", "m7.onnx"));
  CHECK(wildmatch("[]x]", "]"));
  CHECK_FALSE(wildmatch("a[/]b", "a/b"));  // a class never matches '/'
  CHECK(wildmatch("[ab", "[ab"));          // unterminated: a literal '['
  CHECK(wildmatch("\\*x", "*x"));
  CHECK_FALSE(wildmatch("\\*x", "ax"));
  CHECK(wildmatch("\\#a", "#a"));
  CHECK(wildmatch("", ""));
  CHECK_FALSE(wildmatch("", "a"));
  CHECK(wildmatch("*a*a*a*a*a*a*a*a*a*a*b", std::string(200, 'a') + "b"));
  CHECK_FALSE(wildmatch("*a*a*a*a*a*a*a*a*a*a*b", std::string(200, 'a')));
}

TEST_CASE("wildmatch: '**' as git reads it") {
  CHECK(wildmatch("**/foo", "foo"));
  CHECK(wildmatch("**/foo", "a/b/foo"));
  CHECK_FALSE(wildmatch("**/foo", "a/b/xfoo"));
  CHECK(wildmatch("**/foo/bar", "x/foo/bar"));
  CHECK(wildmatch("abc/**", "abc/x"));
  CHECK(wildmatch("abc/**", "abc/x/y.onnx"));
  CHECK_FALSE(wildmatch("abc/**", "abc"));
  CHECK(wildmatch("a/**/b", "a/b"));
  CHECK(wildmatch("a/**/b", "a/x/b"));
  CHECK(wildmatch("a/**/b", "a/x/y/b"));
  CHECK_FALSE(wildmatch("a/**/b", "a/xb"));
  CHECK_FALSE(wildmatch("a/**/b", "ab"));
  CHECK(wildmatch("**", "any/thing"));
  CHECK(wildmatch("a**b", "axxb"));       // not at a folder boundary: one '*'
  CHECK_FALSE(wildmatch("a**b", "a/b"));
}

TEST_CASE("ignore files: comments, blanks, trailing spaces, negation, folders only, anchoring") {
  const IgnoreFile f = IgnoreFile::parse(
      "# exported checkpoints\n"
      "\n"
      "*.onnx\n"
      "!keep.onnx\n"
      "build/\n"
      "/top.onnx\n"
      "docs/*.onnx\n"
      "\\#hash.onnx\n"
      "\\!bang.onnx\n"
      "space.onnx   \n"
      "tail\\ \n"
      "crlf.onnx\r\n"
      "/\n"
      "!\n");
  REQUIRE(f.patterns().size() == 10);
  CHECK(f.patterns()[0].line == 3);
  CHECK(f.match("m.onnx", false) == IgnoreVerdict::Ignored);
  CHECK(f.match("sub/m.onnx", false) == IgnoreVerdict::Ignored);  // no '/': any depth
  CHECK(f.match("keep.onnx", false) == IgnoreVerdict::Included);  // the later line wins
  CHECK(f.match("sub/keep.onnx", false) == IgnoreVerdict::Included);
  CHECK(f.match("build", true) == IgnoreVerdict::Ignored);
  CHECK(f.match("a/build", true) == IgnoreVerdict::Ignored);
  CHECK(f.match("build", false) == IgnoreVerdict::None);  // "build/" is for folders only
  CHECK(f.match("top.onnx", false) == IgnoreVerdict::Ignored);
  CHECK(f.match("docs/x.onnx", false) == IgnoreVerdict::Ignored);
  const IgnoreFile anchored = IgnoreFile::parse("/top.onnx\ndocs/*.onnx\n");
  CHECK(anchored.match("top.onnx", false) == IgnoreVerdict::Ignored);
  CHECK(anchored.match("sub/top.onnx", false) == IgnoreVerdict::None);  // leading '/': this folder only
  CHECK(anchored.match("docs/x.onnx", false) == IgnoreVerdict::Ignored);
  CHECK(anchored.match("a/docs/x.onnx", false) == IgnoreVerdict::None);  // a '/' inside anchors too
  CHECK(f.patterns()[5].glob == "\\#hash.onnx");  // the escape stays; wildmatch reads it
  CHECK(f.match("#hash.onnx", false) == IgnoreVerdict::Ignored);
  CHECK(f.patterns()[6].glob == "\\!bang.onnx");
  CHECK(f.match("!bang.onnx", false) == IgnoreVerdict::Ignored);
  CHECK_FALSE(f.patterns()[6].negated);
  CHECK(f.patterns()[7].glob == "space.onnx");
  CHECK(f.patterns()[8].glob == "tail\\ ");
  CHECK(wildmatch(f.patterns()[8].glob, "tail "));
  CHECK(f.patterns()[9].glob == "crlf.onnx");
  CHECK(IgnoreFile::parse("").patterns().empty());
  CHECK(IgnoreFile::parse("# only\n\n   \n").patterns().empty());
}
