// The facts a rule expression can name besides a node's attributes: one
// table that the rule loader checks names against, the fact source answers
// (tests check node and tensor records carry exactly these fields) and the
// generated docs (docs/README.md) list. Data only: the rule loader reads it
// without the facts engine.
#pragma once

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

}  // namespace bpulint
