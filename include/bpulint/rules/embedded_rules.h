// The rules/*.yaml files compiled into the binary (see cmake/embed_rules.cmake).
#pragma once

#include <string>
#include <vector>

namespace bpulint {

struct EmbeddedFile {
  const char* path;     // repository-relative, e.g. "rules/j6p.yaml"
  const char* content;
};

const std::vector<EmbeddedFile>& embedded_rule_files();

// SHA-256 of the compiled-in rules (cmake/embed_rules.cmake says over what),
// printed by --version so a report can be tied to its database.
const char* embedded_rules_sha256();

}  // namespace bpulint
