// The root facts every node record provides (everything else a rule reads is
// an attribute). Data only: the rule loader checks names against it without
// the facts engine.
#pragma once

#include <set>
#include <string>

namespace bpulint {

const std::set<std::string>& reserved_node_facts();

}  // namespace bpulint
