// Fix kind node-info-float-to-int16: node_info types float16/float32 send
// their nodes to the CPU on J6P (BPU9007); int16 keeps them on the BPU. Only
// the float fields change; the entry's other fields stay as written.
#include "../../config_remedies.h"
#include "fix_kinds_generated.h"

namespace bpulint {
namespace {

bool is_float(const std::string& type) { return type == "float16" || type == "float32" || type == "float"; }

bool plan(const ConfigFixInput& in, std::vector<ConfigEdit>& edits, std::string& why_not) {
  // The model's nodes (as BPU9007's fact config_float_nodes lists them), in node order.
  for (const NodeFacts& n : in.facts.nodes) {
    if (n.graph_id != 0 || n.name.empty()) continue;
    auto it = in.config.find(std::string(n.name));
    if (it == in.config.end()) continue;
    ConfigEdit e{it->first, {}};
    if (is_float(it->second.input_type)) e.fields.emplace_back("InputType", "int16");
    if (is_float(it->second.output_type)) e.fields.emplace_back("OutputType", "int16");
    if (!e.fields.empty()) edits.push_back(std::move(e));
  }
  if (edits.empty()) why_not = "the compile config types no node of the model as float";
  return !edits.empty();
}

const ConfigRemedy kRemedy = {
    plan, "public project reports on nash-p (platform-constraints.md section 10): an all-float16 head ran 1,779 ms "
          "against 1.34 ms at int16 (GraspGen on S600); FoundationPose compiled all-BPU at int16"};

}  // namespace

// Unsafe: int16 quantises what the config kept in float.
const FixKind fix_kind_node_info_float_to_int16 = {"node-info-float-to-int16",
                                                   "Type the compile config's float nodes int16 (node_info)",
                                                   Applicability::Unsafe, nullptr, &kRemedy};

}  // namespace bpulint
