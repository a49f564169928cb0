#include "bpulint/fact_names.h"

namespace bpulint {

const std::set<std::string>& reserved_node_facts() {
  static const std::set<std::string> names = {"op", "domain", "opset", "name", "op_class", "input", "output", "max_rank"};
  return names;
}

}  // namespace bpulint
