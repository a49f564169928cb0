// Fix kind node-info-bpu-int16: a Softmax the Bayes chips keep on the CPU by
// default (BPU3401) moves onto the BPU with one node_info line of the compile
// config, at int16 in and out. D-Robotics' model zoo documents the line for X5.
#include "../../config_remedies.h"
#include "fix_kinds_generated.h"

namespace bpulint {
namespace {

bool plan(const ConfigFixInput& in, std::vector<ConfigEdit>& edits, std::string& why_not) {
  std::string name;
  if (!config_node_name(in, name, why_not)) return false;
  edits.push_back(node_on_bpu_edit(name, "int16"));
  return true;
}

const ConfigRemedy kRemedy = {
    plan, "D-Robotics model-zoo READMEs (platform-constraints.md section 10): YOLO11n on X5 runs 23.3 ms with its Softmax on the CPU, 8.0 ms with it on the BPU at int16 (int16 where int8 loses accuracy)"};

}  // namespace

// Unsafe: the Softmax is quantised (int16) where the CPU ran it in float.
const FixKind fix_kind_node_info_bpu_int16 = {"node-info-bpu-int16",
                                           "Add node_info ON BPU, int16 in and out, to the compile config",
                                           Applicability::Unsafe, nullptr, &kRemedy};

}  // namespace bpulint
