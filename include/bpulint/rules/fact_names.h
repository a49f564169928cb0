// The facts a rule expression can name besides a node's attributes: one
// table that the rule loader checks names against, the fact source answers
// (tests check node and tensor records carry exactly these fields) and the
// generated docs (docs/README.md) list. Data only: the rule loader reads it
// without the facts engine.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace bpulint {

enum class FactScope {
  Node,    // a node rule's root facts (`op`, `input`, ...)
  Tensor,  // the fields of each tensor record (`input[0].rank`, `t.dtype`)
  Model,   // a model rule's root facts (`scope: model`)
};
const char* fact_scope_name(FactScope s);  // node | tensor | model

struct FactInfo {
  const char* name;
  FactScope scope;
  const char* type;  // as the expression language sees it: string, int, bool, list, ...
  const char* doc;   // one sentence
};

const std::vector<FactInfo>& fact_vocabulary();

// The names of one scope, from the table.
const std::set<std::string>& reserved_node_facts();  // FactScope::Node
const std::set<std::string>& model_facts();          // FactScope::Model
const std::set<std::string>& tensor_fact_fields();   // FactScope::Tensor

// Attributes an opset moved to an input (ReduceMean `axes` at 18, Pad `pads` at 11, ...): the rules
// read one fact by the attribute's name whichever form the node uses, the input's constant value in
// the input form. Also the few values only ever given as inputs that rules read by name (Slice
// `steps`, Resize `scales`/`sizes`).
enum class InputForm {
  Ints,    // a list of integers (axes, pads, split, starts, ...)
  Int,     // one integer, from a 1-element tensor (TopK k)
  Floats,  // a list of floats (scales)
  Float,   // one float, from a scalar or 1-element tensor (Clip min/max)
};
struct InputAttribute {
  const char* op;
  const char* name;  // the fact, spelled as the attribute was
  int input;         // the input that holds it, from `since` on
  int since;         // the first default-domain opset of the input form
  InputForm form;
  const char* absent;  // what an omitted input means (the docs)
};
const std::vector<InputAttribute>& input_attributes();
// The input form `name` takes on `op` at `opset` (the entry with the highest `since` <= opset), or
// nullptr when the node carries it as an attribute (or the op has no such input).
const InputAttribute* input_attribute(const std::string& op, const std::string& name, int64_t opset);

}  // namespace bpulint
