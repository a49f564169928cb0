// What the node_info fix kinds (src/fix/kinds/node-info-*/) share: the
// node a finding names, as the compile config names it. Internal to the fix stage.
#pragma once

#include <string>

#include "bpulint/fix/config_fix.h"

namespace bpulint {

// The finding's node's name, or false with why node_info cannot name it
// (a model-level finding, an unnamed node, a node inside a subgraph).
bool config_node_name(const ConfigFixInput& in, std::string& name, std::string& why_not);

}  // namespace bpulint
