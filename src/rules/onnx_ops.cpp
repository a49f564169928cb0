#include "onnx_ops.h"

#include <onnx/defs/schema.h>

#include <map>
#include <utility>

namespace bpulint {

// Attribute names any version of `op` declares: what a rule may read besides
// the reserved facts. Catches typos such as `kernal_shape` at load time.
std::set<std::string> onnx_attribute_names(const std::string& op, const std::string& domain) {
  // One pass over every schema version, once per process: rule files name
  // hundreds of ops, and the registry walk is the expensive part of loading.
  static const std::map<std::pair<std::string, std::string>, std::set<std::string>> by_op = [] {
    std::map<std::pair<std::string, std::string>, std::set<std::string>> m;
    for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
      auto& names = m[{schema.Name(), schema.domain()}];
      for (const auto& a : schema.attributes()) names.insert(a.first);
    }
    return m;
  }();
  auto it = by_op.find({op, domain});
  return it == by_op.end() ? std::set<std::string>{} : it->second;
}

bool onnx_op_exists(const std::string& op, const std::string& domain) {
  return onnx::OpSchemaRegistry::Schema(op, domain) != nullptr;
}

}  // namespace bpulint
