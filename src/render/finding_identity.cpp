#include "bpulint/render/finding_identity.h"

#include <cstdio>
#include <filesystem>

#include "bpulint/lint/lint.h"
#include "bpulint/rules/rule_db.h"

namespace fs = std::filesystem;

namespace bpulint {

std::string path_under_root(const std::string& path, const std::string& root) {
  if (root.empty()) return {};
  std::error_code ec;
  const fs::path abs = fs::absolute(fs::path(path), ec).lexically_normal();
  if (ec) return {};
  const fs::path rel = abs.lexically_relative(fs::path(root));
  if (rel.empty() || *rel.begin() == "..") return {};
  return rel.generic_string();
}

std::string finding_key(const ModelReport& r, const Diagnostic& d, const std::string& model_path) {
  if (d.node >= 0) {
    // The node's identity, not its display name: an unnamed node's Relu_3 shifts when a node is added upstream.
    const auto node = static_cast<size_t>(d.node);
    return d.rule->id + ":" + r.facts.node_key(node) + ":" + r.facts.nodes[node].op_type;
  }
  const RootCause* cause = r.facts.cause(d.cause);
  return d.rule->id + ":(model):" + model_path + ":" + (cause != nullptr ? cause->input : std::string());
}

std::string fingerprint_hash(const std::string& key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace bpulint
