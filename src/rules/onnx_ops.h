// What the rule loader asks of ONNX's operator schemas, behind a header of
// standard types, so the loader compiles without ONNX or protobuf headers.
#pragma once

#include <set>
#include <string>

namespace bpulint {

// Attribute names any version of `op` declares: what a rule may read besides
// the reserved facts.
std::set<std::string> onnx_attribute_names(const std::string& op, const std::string& domain);
bool onnx_op_exists(const std::string& op, const std::string& domain);

}  // namespace bpulint
