// Facts: what is known about every node of a model, in the shape rule
// expressions read (a Value record per node). Built once per model from the
// lean ModelProto after ONNX shape inference; nothing here is guessed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bpulint/model_loader.h"
#include "bpulint/value.h"

namespace bpulint {

struct NodeFacts {
  std::string graph_path;    // "torch_jit", "torch_jit/If_3.then_branch"
  std::string name;          // the node's name, possibly empty
  std::string display_name;  // name, or "<op_type>_<index>" when unnamed
  size_t index_in_graph = 0;
  size_t file_order = 0;     // position in LoadedModel::node_spans
  std::string op_type;
  std::string domain;        // "" for the default ONNX domain
  int64_t opset = 0;
  std::vector<std::string> inputs;   // value names ("" = omitted optional input)
  std::vector<std::string> outputs;
  Value record;              // {op, domain, opset, <attributes>, input: [...], output: [...]}

  // Stable identity for baselines and fingerprints: graph path + node.
  std::string path() const { return graph_path + "/" + display_name; }
};

struct FactOptions {
  // --input-shape NAME=1x128x2x6x6: pins the dims of a graph input.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

struct ModelFacts {
  std::vector<NodeFacts> nodes;       // main graph, with subgraph nodes after their parent
  Value model;                        // {ir_version, opset, input: [...], output: [...]}
  std::vector<std::string> notes;     // model-level notes (opset too new, inference issues)
  int64_t default_opset = 0;
  std::vector<std::string> unanalysed_functions;  // model-local functions, "domain.name (N nodes)"
};

// Highest default-domain opset the linked ONNX library has schemas for.
int64_t max_known_opset();

// Returns false with a one-line error when --input-shape names no graph input
// or conflicts with a static dim.
bool extract_facts(const LoadedModel& loaded, const FactOptions& options, ModelFacts& out,
                   std::string& error);

// ONNX element type as the rules spell it: "float32", "int8", "bool", ...
std::string dtype_name(int32_t onnx_elem_type);

}  // namespace bpulint
