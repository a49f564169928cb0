// The calls whose signatures differ between ONNX releases, in one place, so
// that the rest of bpu-lint is written once (cmake/onnx.cmake picks the release).
#pragma once

#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>

#include <string>
#include <type_traits>

namespace bpulint::onnx_compat {

// The ONNX release linked in ("1.17.0").
inline const char* library_version() { return onnx::LAST_RELEASE_VERSION; }

// ONNX 1.12 asks for the op type, 1.14 and later for the node.
template <typename Node>
bool is_experimental_op(const Node& node) {
  using Check = decltype(&onnx::checker::check_is_experimental_op);
  if constexpr (std::is_invocable_v<Check, const Node&>) {
    return onnx::checker::check_is_experimental_op(node);
  } else {
    return onnx::checker::check_is_experimental_op(node.op_type());
  }
}

}  // namespace bpulint::onnx_compat
