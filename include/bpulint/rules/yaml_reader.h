// Strict YAML reading shared by the rule and configuration loaders: every
// error carries file:line:column. Internal to src/.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "bpulint/rules/expr.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

// Every load error carries the YAML position; thrown inside the loader only.
struct LoadError {
  SourceLocation where;
  std::string message;
};

// Every error of one entry (a rule), the first as the LoadError itself, so a
// loader that stops at the first error reports that one.
struct RuleErrors : LoadError {
  std::vector<LoadError> errors;
};

// yaml-cpp's messages may quote the offending bytes (a raw newline or escape
// character): errors are one line, so control characters are spelled out.
inline std::string yaml_message(const std::string& msg) {
  std::string out;
  for (unsigned char c : msg) {
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

class FileReader {
 public:
  explicit FileReader(std::string path) : path_(std::move(path)) {}

  SourceLocation at(const YAML::Node& node, size_t extra_columns = 0) const {
    const YAML::Mark m = node.Mark();
    return {path_, m.line + 1, m.column + 1 + static_cast<int>(extra_columns)};
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) const { throw LoadError{at(node), message}; }

  // Checks that a mapping has only `allowed` keys, no duplicates, and the `required` ones.
  void check_keys(const YAML::Node& map, const std::vector<std::string>& allowed,
                  const std::vector<std::string>& required, const std::string& what) const {
    if (!map.IsMap()) fail(map, what + " must be a mapping");
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(kv.first, "unknown key '" + key + "' in " + what + " (allowed: " + list + ")");
      }
      if (!seen.insert(key).second) fail(kv.first, "duplicate key '" + key + "' in " + what);
    }
    for (const auto& r : required) {
      if (!map[r]) fail(map, what + " is missing required key '" + r + "'");
    }
  }

  std::string scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) fail(node, what + " must be a scalar");
    return node.Scalar();
  }

  std::string text(const YAML::Node& map, const std::string& key, const std::string& what) const {
    const YAML::Node node = map[key];
    if (!node) return {};
    const std::string value = scalar(node, what + " '" + key + "'");
    if (value.empty()) fail(node, what + " '" + key + "' must not be empty");
    return value;
  }

  std::vector<std::string> string_list(const YAML::Node& node, const std::string& what) const {
    std::vector<std::string> out;
    if (!node) return out;
    if (!node.IsSequence()) fail(node, what + " must be a list");
    for (const auto& item : node) out.push_back(scalar(item, what + " entry"));
    return out;
  }

  ExprPtr expression(const YAML::Node& node, const std::string& what) const {
    const std::string source = scalar(node, what);
    ExprError err;
    ExprPtr e = parse_expr(source, &err);
    if (!e) throw LoadError{at(node, quote_shift(node) + err.offset), "bad " + what + " expression: " + err.message};
    return e;
  }

  TemplatePtr message(const YAML::Node& node) const {
    const std::string source = scalar(node, "message");
    ExprError err;
    TemplatePtr t = parse_template(source, &err);
    if (!t) throw LoadError{at(node, quote_shift(node) + err.offset), "bad message template: " + err.message};
    return t;
  }

  Status status(const YAML::Node& node) const {
    const std::string s = scalar(node, "status");
    if (s == "verified") return Status::Verified;
    if (s == "derived") return Status::Derived;
    if (s == "inferred") return Status::Inferred;
    fail(node, "status must be verified, derived or inferred, not '" + s + "'");
  }

  const std::string& path() const { return path_; }

 private:
  // Quoted scalars start one column after their mark.
  static size_t quote_shift(const YAML::Node& node) { return node.Tag() == "!" ? 1 : 0; }
  std::string path_;
};

}  // namespace bpulint
