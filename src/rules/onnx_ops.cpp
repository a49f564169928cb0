#include "onnx_ops.h"

#include <onnx/defs/schema.h>

#include "bpulint/rules/fact_names.h"


namespace bpulint {

// Attribute names any version of `op` declares: what a rule may read besides
// the reserved facts. Catches typos such as `kernal_shape` at load time.
// Schema(op, v, domain) is the newest version at or below v, so stepping
// below each one's since-version visits every version, with a lookup each
// (copying the registry's history, as get_all_schemas_with_history does,
// cost every run about 10 ms).
std::set<std::string> onnx_attribute_names(const std::string& op, const std::string& domain) {
  std::set<std::string> names;
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto range = ranges.find(domain);
  if (range == ranges.end()) return names;
  for (int v = range->second.second; v >= range->second.first;) {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, v, domain);
    if (schema == nullptr) break;
    for (const auto& a : schema->attributes()) names.insert(a.first);
    v = schema->SinceVersion() - 1;
  }
  // What later opsets give as an input is read by the attribute's name (fact_names.h), and Split's
  // opset-18 `num_outputs` (newer than the ONNX library) too.
  if (domain.empty()) {
    for (const auto& a : input_attributes()) {
      if (op == a.op) names.insert(a.name);
    }
    if (op == "Split") names.insert("num_outputs");
  }
  return names;
}

bool onnx_op_exists(const std::string& op, const std::string& domain) {
  return onnx::OpSchemaRegistry::Schema(op, domain) != nullptr;
}

}  // namespace bpulint
