// Prints what bpu-lint's fact walk folded for each case model, one JSON line
// per case: every graph output with its dtype, dims and values, or
// "folded": false. compare_fold.js holds these against ONNX Runtime.
//
//   fold_dump CASES_DIR    (reads CASES_DIR/cases.txt)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include "bpulint/engine/facts.h"
#include "bpulint/model/model_loader.h"
#include "bpulint/model/tensor_values.h"

using namespace bpulint;

namespace {

bool is_real(int32_t t) { return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE; }

std::string output_json(const TensorFacts& t) {
  std::string s = "{\"name\":\"" + std::string(t.name) + "\",";
  if (t.data == nullptr) return s + "\"folded\":false}";
  const onnx::TensorProto& d = *t.data;
  s += "\"folded\":true,\"dtype\":" + std::to_string(d.data_type()) + ",\"dims\":[";
  for (int i = 0; i < d.dims_size(); ++i) s += (i ? "," : "") + std::to_string(d.dims(i));
  s += "],\"values\":[";
  std::string error;
  if (is_real(d.data_type())) {
    std::vector<double> v;
    if (!tensor_values(d, v, error)) return s + "],\"error\":\"undecodable\"}";
    for (size_t i = 0; i < v.size(); ++i) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v[i]);
      s += (i ? ",\"" : "\"") + std::string(buf) + "\"";
    }
  } else {
    std::vector<int64_t> v;
    if (!tensor_values(d, v, error)) return s + "],\"error\":\"undecodable\"}";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ",\"" : "\"") + std::to_string(v[i]) + "\"";
  }
  return s + "]}";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fold_dump CASES_DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream list(dir + "/cases.txt");
  if (!list) {
    std::cerr << "fold_dump: " << dir << "/cases.txt: cannot read\n";
    return 2;
  }
  std::string name;
  while (std::getline(list, name)) {
    if (name.empty()) continue;
    LoadedModel loaded;
    ModelFacts facts;
    std::string error;
    if (!load_model(dir + "/" + name + ".onnx", loaded, error) || !extract_facts(loaded, {}, facts, error)) {
      std::cout << "{\"case\":\"" << name << "\",\"error\":\"" << error << "\"}\n";
      continue;
    }
    std::set<std::string> outputs;
    for (const auto& o : loaded.model->graph().output()) outputs.insert(o.name());
    std::string line = "{\"case\":\"" + name + "\",\"outputs\":[";
    bool first = true;
    for (const NodeFacts& n : facts.nodes) {
      for (const TensorFacts& t : n.outputs) {
        if (outputs.count(std::string(t.name)) == 0) continue;
        line += (first ? "" : ",") + output_json(t);
        first = false;
      }
    }
    std::cout << line << "]}\n";
  }
  return 0;
}
