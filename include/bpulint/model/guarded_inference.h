// ONNX 1.12's shape-inference functions trust their inputs: a ConvTranspose
// whose weight rank does not match its input rank reads past the end of a
// vector and crashes, and Reshape/Expand/ConstantOfShape create as many dims
// as a shape input is long (2^62 of them exhaust memory). bpu-lint lints
// hostile models, so inference runs through
// a schema registry that wraps the fragile functions with rank checks; a node
// that fails them is simply not inferred (its outputs stay unknown).
#pragma once

#include <onnx/defs/schema.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace bpulint {

class GuardedSchemaRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_inclusive_version,
                                  const std::string& domain) const override;

 private:
  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> wrapped_;
};

// The process-wide instance used by fact extraction.
const GuardedSchemaRegistry& guarded_schema_registry();

}  // namespace bpulint
