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

}  // namespace bpulint
