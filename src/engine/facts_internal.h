// What the walk (fact_walk.cpp) takes from the fact source (fact_source.cpp):
// the main graph's input types as --input-shape pins them, and the model
// record built once the walk is done. Internal to extract_facts.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "bpulint/engine/facts.h"

namespace bpulint {

// Types for the main graph's inputs that options.input_shapes pins (input
// name -> a type on out.arena; the names also go to out.pinned_inputs).
// False with `error` set when a pin does not fit its input.
bool pin_input_shapes(const onnx::GraphProto& graph, const FactOptions& options, ModelFacts& out,
                      std::map<std::string, const onnx::TypeProto*>& pinned, std::string& error);

// The record rules read as `model` (ModelFacts::model): inputs as pinned,
// outputs as the walk inferred them, their dtypes and names, ir_version, opset.
Value model_record(const onnx::ModelProto& model, const ModelFacts& facts,
                   const std::map<std::string, const onnx::TypeProto*>& pinned);

}  // namespace bpulint
