// The host split's in-binary proof (host_split.h): structure only, no weight read.
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bpulint/model/guarded_inference.h"
#include "bpulint/model/model_checker.h"
#include "host_split.h"

namespace bpulint {
namespace {

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool check_part(const onnx::ModelProto& part, const char* which, const std::string& model_dir, std::string& error) {
  if (!check_onnx_model(part, model_dir, error)) {
    error = std::string("the ") + which + " part fails the ONNX checker: " + error;
    return false;
  }
  try {
    onnx::ModelProto copy = part;  // payloads are external references: a structure-sized copy
    onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/false);
    onnx::shape_inference::InferShapes(copy, &guarded_schema_registry(), strict);
  } catch (const std::exception& e) {
    error = std::string("the ") + which + " part fails strict shape inference: " + one_line(e.what());
    return false;
  }
  return true;
}

}  // namespace

bool prove_host_split(const onnx::ModelProto& original, const HostSplitPlan& plan, const std::string& model_dir,
                      std::string& error) {
  if (!plan.applies) {
    error = "the split does not apply: " + plan.reason;
    return false;
  }
  const onnx::GraphProto& g = original.graph();
  const onnx::GraphProto& head = plan.head.graph();
  const onnx::GraphProto& tail = plan.tail.graph();
  // Every node in exactly one part, unchanged: the multisets of node bytes agree.
  std::map<std::string, long> nodes;
  for (const auto& n : g.node()) ++nodes[n.SerializeAsString()];
  for (const auto* part : {&head, &tail}) {
    for (const auto& n : part->node()) {
      if (--nodes[n.SerializeAsString()] < 0) {
        error = "node '" + n.name() + "' (" + n.op_type() + ") is in the parts more often than in the model";
        return false;
      }
    }
  }
  for (const auto& [bytes, left] : nodes) {
    if (left != 0) {
      onnx::NodeProto n;
      n.ParseFromString(bytes);
      error = "node '" + n.name() + "' (" + n.op_type() + ") is in neither part";
      return false;
    }
  }
  // Every tail input is a head output (same type) or an original graph input.
  std::map<std::string, const onnx::ValueInfoProto*> head_outputs, original_inputs;
  for (const auto& v : head.output()) head_outputs[v.name()] = &v;
  for (const auto& v : g.input()) original_inputs[v.name()] = &v;
  // Tail initializers: the original's, or the constants the plan folded in.
  std::set<std::string> original_initializers(plan.constants.begin(), plan.constants.end());
  for (const auto& t : g.initializer()) original_initializers.insert(t.name());
  std::set<std::string> tail_initializers;
  for (const auto& t : tail.initializer()) {
    if (original_initializers.count(t.name()) == 0) {
      error = "tail initializer '" + t.name() + "' is neither the model's nor a folded constant";
      return false;
    }
    tail_initializers.insert(t.name());
  }
  for (const auto& v : tail.input()) {
    if (tail_initializers.count(v.name()) != 0) continue;
    const auto h = head_outputs.find(v.name());
    if (h != head_outputs.end()) {
      if (h->second->type().SerializeAsString() != v.type().SerializeAsString()) {
        error = "tail input '" + v.name() + "' is declared with another type than the head's output";
        return false;
      }
    } else if (original_inputs.count(v.name()) == 0) {
      error = "tail input '" + v.name() + "' is neither a head output nor a graph input";
      return false;
    }
  }
  // The original outputs, each computed by one part.
  std::set<std::string> tail_outputs;
  for (const auto& v : tail.output()) tail_outputs.insert(v.name());
  for (const auto& v : g.output()) {
    const bool in_head = head_outputs.count(v.name()) != 0, in_tail = tail_outputs.count(v.name()) != 0;
    if (in_head == in_tail) {
      error = "graph output '" + v.name() + "' is an output of " + (in_head ? "both parts" : "neither part");
      return false;
    }
  }
  return check_part(plan.head, "BPU", model_dir, error) && check_part(plan.tail, "host", model_dir, error);
}

}  // namespace bpulint
