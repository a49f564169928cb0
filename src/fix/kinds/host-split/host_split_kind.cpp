// Fix kind host-split: findings on the trailing CPU region of a model (the
// detection post-processing, an X5 classifier's last Reshape) are settled by
// cutting that region off into a model that runs on the host after the BPU
// model (host_split.h), as users do by hand with onnx.utils.extract_model.
#include <string>
#include <vector>

#include "bpulint/fix/model_fix.h"
#include "fix_kinds_generated.h"
#include "host_split.h"

namespace bpulint {
namespace {

constexpr const char* kId = "host-split";

// Work the host split moves: what the toolchain would run on the CPU.
bool host_work(Placement p) { return p == Placement::Cpu || p == Placement::Unknown || p == Placement::DataShape; }

// For every fact node, the main-graph node it is (or sits inside: subgraph
// nodes follow their parent in ModelFacts::nodes).
std::vector<size_t> main_graph_owner(const ModelFacts& facts) {
  std::vector<size_t> owner(facts.nodes.size(), 0);
  size_t last = 0;
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    if (facts.nodes[i].graph_id == 0) last = facts.nodes[i].index_in_graph;
    owner[i] = last;
  }
  return owner;
}

std::string frontier_text(const std::vector<std::string>& frontier) {
  std::string out;
  const size_t shown = std::min<size_t>(frontier.size(), 4);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + frontier[i];
  if (frontier.size() > shown) out += ", and " + std::to_string(frontier.size() - shown) + " more";
  return out;
}

bool plan(const ModelFixInput& in, ModelFixPlan& plan) {
  // Cheap first: a shown finding on host work; only then the plan, which copies the graph's structure.
  bool any = false;
  for (const Diagnostic& d : in.diagnostics) {
    any = any || (d.shown() && d.node >= 0 && host_work(in.placement[static_cast<size_t>(d.node)]));
  }
  if (!any) return false;
  const HostSplitPlan split = plan_host_split(in.model, in.facts, in.placement);
  // No CPU tail: not offered (the findings keep their own fixes). Without a
  // layer on the BPU, neither: cutting a model that has no BPU work worth
  // the name into two would only move it to the host.
  if (!split.applies || !split.layers_anchor) return false;
  std::vector<bool> in_tail(static_cast<size_t>(in.model.model->graph().node_size()), false);
  for (int n : split.tail_nodes) in_tail[static_cast<size_t>(n)] = true;
  const std::vector<size_t> owner = main_graph_owner(in.facts);
  for (size_t i = 0; i < in.diagnostics.size(); ++i) {
    const Diagnostic& d = in.diagnostics[i];
    if (d.shown() && d.node >= 0 && in_tail[owner[static_cast<size_t>(d.node)]]) plan.settles.push_back(i);
  }
  if (plan.settles.empty()) return false;
  plan.frontier = split.frontier;
  plan.summary = "cut " + std::to_string(split.tail_nodes.size()) + " of the main graph's " +
                 std::to_string(split.tail_nodes.size() + split.head_node_count) +
                 " nodes off into a host model reading " + std::to_string(split.frontier.size()) + " tensor" +
                 (split.frontier.size() == 1 ? "" : "s") + " (" + frontier_text(split.frontier) + ")";
  if (split.head_cpu + split.head_unknown > 0) {
    plan.summary += "; " + std::to_string(split.head_cpu + split.head_unknown) +
                    " CPU or unplaced nodes stay in the BPU part, they feed a layer";
  }
  return true;
}

void apply(const ModelFixInput& in, const ModelFixPlan&, const ModelFixTarget& target, ModelFixOutcome& out) {
  HostSplitPlan split = plan_host_split(in.model, in.facts, in.placement);
  std::string error;
  if (!split.applies) {
    out.refused = true;
    out.error = "the host split does not apply: " + split.reason;
    return;
  }
  if (!prove_host_split(*in.model.model, split, in.model.folder.empty() ? "." : in.model.folder, error)) {
    out.refused = true;
    out.error = "the host split is not proven, so not written: " + error;
    return;
  }
  const HostSplitPaths paths = default_host_split_paths(target.input_path);
  const size_t head = split.head_node_count, tail = split.tail_nodes.size(), frontier = split.frontier.size();
  if (!write_host_split(in.model, split, paths, error, target.external_data)) {
    const bool names_a_part = error.rfind(paths.bpu, 0) == 0 || error.rfind(paths.host, 0) == 0;
    out.error = names_a_part ? error : in.model.path + ": " + error;
    return;
  }
  out.written = true;
  out.files = {{"bpu part", paths.bpu}, {"host part", paths.host}};
  out.relint = paths.bpu;
  out.said = "split into " + std::to_string(head) + " + " + std::to_string(tail) + " nodes, the host part reading " +
             std::to_string(frontier) + " tensor" + (frontier == 1 ? "" : "s") +
             "; proven: every node in one part, each part passes the ONNX checker and strict shape inference";
}

const ModelRemedy kRemedy = {
    plan, apply,
    "<stem>.bpu.onnx (everything up to the last BPU frontier, for the toolchain) and <stem>.host.onnx (the rest, "
    "reading the frontier tensors as inputs, for the host) beside the input",
    false,
    "users cut detection post-processing (TopK, NonZero, NMS, the decode) off with onnx.utils.extract_model and run "
    "it on the host, and remove an X5 classifier's trailing Reshape with hb_model_modifier -r "
    "(platform-constraints.md section 10); the test suite runs both parts in ONNX Runtime against the original"};

}  // namespace

// Safe: the two parts run one after the other compute what the model did;
// the deployment changes (the host runs the second part).
const FixKind fix_kind_host_split = {kId, "Cut the trailing CPU region off into a model that runs on the host",
                                     Applicability::Safe, nullptr, nullptr, &kRemedy};

}  // namespace bpulint
