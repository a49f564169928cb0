// ONNX's own checker, as the gate every model passes before it is linted
// and every rewritten model passes before it is written.
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

namespace bpulint {

// Runs the C++ ONNX checker (graph, nodes against their schemas, topological
// order, SSA, opset imports, model-local functions). `model_dir` resolves
// external data references, which are checked to exist but never read, so
// the lean model of a big file is checked without its weights. Returns false
// with the checker's reason on one line.
//
// `names`: ByCaller leaves the main graph's names (single assignment, defined
// before use, initializers and inputs listed once) to a caller that has
// checked them already (the fact walk hashes every name anyway); a caller
// whose check fails asks again with Here, for ONNX's verdict and reason.
// Graphs the fast path does not cover are checked whole by ONNX either way.
enum class NameCheck { Here, ByCaller };
bool check_onnx_model(const onnx::ModelProto& model, const std::string& model_dir, std::string& error,
                      NameCheck names = NameCheck::Here);

// The ONNX library linked in: its release ("1.17.0") and the highest
// default-domain opset and IR version it has schemas and checks for.
struct OnnxLibrary {
  std::string version;
  int64_t opset = 0;
  int64_t ir_version = 0;
};
const OnnxLibrary& onnx_library();

// Why the linked ONNX library cannot judge the model (an IR version or a
// default-domain opset newer than it knows), or "" when it can.
std::string checker_cannot_judge(const onnx::ModelProto& model);

// The checks that hold whatever the opset, for a model the ONNX checker
// cannot judge: in every graph (subgraphs see their outer scopes' names),
// each name is assigned once (SSA), each node reads only names defined
// before it (no dangling reference, topological order), and each graph
// output names a defined value. False with the first failure on one line.
bool check_structure(const onnx::ModelProto& model, std::string& error);

}  // namespace bpulint
