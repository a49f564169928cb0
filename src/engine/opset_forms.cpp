#include "opset_forms.h"

#include "bpulint/rules/fact_names.h"

namespace bpulint {

bool reduced_axes(const onnx::NodeProto& node, int64_t opset, int64_t rank, const std::vector<int64_t>* input_axes,
                  std::vector<bool>& reduced, bool& noop) {
  const bool input_form = input_attribute(node.op_type(), "axes", opset) != nullptr;
  std::vector<int64_t> axes;
  int64_t noop_with_empty_axes = 0;
  for (const auto& a : node.attribute()) {
    if (!input_form && a.name() == "axes") axes.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "noop_with_empty_axes") noop_with_empty_axes = a.i();
  }
  if (input_form && input_axes != nullptr) axes = *input_axes;
  noop = axes.empty() && input_form && noop_with_empty_axes != 0;
  reduced.assign(static_cast<size_t>(rank), axes.empty() && !noop);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return false;
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  return true;
}

}  // namespace bpulint
