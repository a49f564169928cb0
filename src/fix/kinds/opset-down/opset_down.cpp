#include "opset_down.h"

#include "down_adapters.h"

#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <chrono>
#include <functional>
#include <map>
#include <regex>

#include "bpulint/model/graph_walk.h"
#include "bpulint/model/guarded_inference.h"
#include "bpulint/model/model_checker.h"
#include "bpulint/model/model_writer.h"

namespace bpulint {
namespace {

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

int64_t default_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import()) {
    if (default_domain(o.domain())) return o.version();
  }
  return 0;
}

// The IR version ONNX released with each opset (its versioning table), so a
// model converted down reads as a model exported at that opset does: torch
// writes IR 6 at opset 11, and older toolchains check it.
int64_t ir_version_of_opset(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  return 10;
}

// A tensor the converter must not copy: external (its IR drops the
// reference) or with a payload above the inline limit.
bool set_aside(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return true;
  const size_t typed = static_cast<size_t>(t.float_data_size()) * 4 + static_cast<size_t>(t.int32_data_size()) * 4 +
                       static_cast<size_t>(t.int64_data_size()) * 8 + static_cast<size_t>(t.double_data_size()) * 8 +
                       static_cast<size_t>(t.uint64_data_size()) * 8;
  return t.raw_data().size() + typed > kInlinePayloadLimit;
}

// Same name, type and dims, no data.
onnx::TensorProto stand_in(const onnx::TensorProto& t) {
  onnx::TensorProto s;
  s.set_name(t.name());
  s.set_data_type(t.data_type());
  *s.mutable_dims() = t.dims();
  return s;
}

// The weights of the model, keyed so they are found again after conversion:
// an initializer by its name, an attribute tensor by its node's first output
// and the attribute's name (names are single-assignment across the model).
struct AsideTensors {
  std::map<std::string, onnx::TensorProto> initializers;
  std::map<std::pair<std::string, std::string>, onnx::TensorProto> attributes;
  size_t size() const { return initializers.size() + attributes.size(); }
};

void for_each_graph(onnx::ModelProto& m, const std::function<void(onnx::GraphProto&)>& fn) {
  walk_graph(
      *m.mutable_graph(), [&](onnx::GraphProto& g, const auto&, auto&& nodes) {
        fn(g);
        nodes();
      },
      [](onnx::NodeProto&, int) {}, WalkDepth::All);
}

void swap_out(onnx::ModelProto& m, AsideTensors& aside) {
  for_each_graph(m, [&](onnx::GraphProto& g) {
    for (auto& t : *g.mutable_initializer()) {
      if (!set_aside(t)) continue;
      onnx::TensorProto s = stand_in(t);
      aside.initializers[t.name()].Swap(&t);
      t.Swap(&s);
    }
    for (auto& n : *g.mutable_node()) {
      if (n.output_size() == 0) continue;
      for (auto& a : *n.mutable_attribute()) {
        if (!a.has_t() || !set_aside(a.t())) continue;
        onnx::TensorProto s = stand_in(a.t());
        aside.attributes[{n.output(0), a.name()}].Swap(a.mutable_t());
        a.mutable_t()->Swap(&s);
      }
    }
  });
}

// Puts the weights back; false when one the converted model still reads
// came back changed in type or dims (an adapter rewrote it: not ours to trust).
bool swap_in(onnx::ModelProto& m, AsideTensors& aside, std::string& error) {
  bool ok = true;
  const auto restore = [&](onnx::TensorProto& now, onnx::TensorProto& original, const std::string& what) {
    if (now.data_type() != original.data_type() || now.dims_size() != original.dims_size() ||
        !std::equal(now.dims().begin(), now.dims().end(), original.dims().begin())) {
      if (ok) error = "the converter changed the type or dims of " + what + ", whose values it never saw";
      ok = false;
      return;
    }
    now.Swap(&original);
  };
  for_each_graph(m, [&](onnx::GraphProto& g) {
    for (auto& t : *g.mutable_initializer()) {
      auto it = aside.initializers.find(t.name());
      if (it != aside.initializers.end()) restore(t, it->second, "initializer '" + t.name() + "'");
    }
    for (auto& n : *g.mutable_node()) {
      if (n.output_size() == 0) continue;
      for (auto& a : *n.mutable_attribute()) {
        auto it = aside.attributes.find({n.output(0), a.name()});
        if (it != aside.attributes.end() && a.has_t()) {
          restore(*a.mutable_t(), it->second, "the tensor of node '" + n.name() + "'");
        }
      }
    }
  });
  return ok;
}

size_t count_nodes(const onnx::ModelProto& m) {
  size_t n = 0;
  walk_graph(
      m.graph(), [](const onnx::GraphProto&, const auto&, auto&& nodes) { nodes(); },
      [&](const onnx::NodeProto&, int) { ++n; }, WalkDepth::All);
  return n;
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The checker and strict shape inference; never reads a weight.
bool prove(const onnx::ModelProto& model, const std::string& model_dir, std::string& error) {
  if (!check_onnx_model(model, model_dir, error)) {
    error = "fails the ONNX checker: " + error;
    return false;
  }
  try {
    onnx::ModelProto copy = model;  // payloads are external: a structure-sized copy
    onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/false);
    onnx::shape_inference::InferShapes(copy, &guarded_schema_registry(), strict);
  } catch (const std::exception& e) {
    error = "fails strict shape inference: " + one_line(e.what());
    return false;
  }
  return true;
}

}  // namespace

std::string op_in_converter_message(const std::string& message) {
  static const std::regex patterns[] = {
      std::regex(R"(No Previous Version of (\w+) exists)"),
      std::regex(R"(No Adapter (?:To|From) Version \S+ for (\w+))"),
      std::regex(R"(No Adapter For (\w+))"),
      std::regex(R"(cannot take (\w+) below opset)"),
  };
  std::smatch m;
  for (const auto& p : patterns) {
    if (std::regex_search(message, m, p)) return m[1].str();
  }
  return "";
}

OpsetConversion convert_opset(const onnx::ModelProto& model, int64_t target, const std::string& model_dir) {
  const auto start = std::chrono::steady_clock::now();
  OpsetConversion c;
  c.from = default_opset(model);
  c.to = target;
  c.nodes_before = count_nodes(model);
  const auto finish = [&](OpsetConversion& r) -> OpsetConversion& {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  if (c.from == 0) {
    c.reason = "the model imports no default-domain opset";
    return std::move(finish(c));
  }
  if (c.from <= target) {
    c.ok = true;
    c.nodes_after = c.nodes_before;
    return std::move(finish(c));
  }
  onnx::ModelProto input = model;  // a LoadedModel's lean copy: structure, no payloads
  AsideTensors aside;
  swap_out(input, aside);
  c.weights_set_aside = aside.size();
  try {
    int64_initializers_to_constants(input);
    if (c.from >= 13 && target < 13) prepare_resize_inputs(input);
    onnx::version_conversion::DefaultVersionConverter converter;
    register_down_adapters(converter);
    c.model = converter.convert_version(input, onnx::OpSetID(c.from), onnx::OpSetID(target));
  } catch (const std::exception& e) {
    std::string message = one_line(e.what());
    // ONNX's assertions open with their source file and line: the reason follows "failed: ".
    if (const size_t at = message.find("failed: "); at != std::string::npos) message.erase(0, at + 8);
    c.blocking_op = op_in_converter_message(message);
    c.reason = c.blocking_op.empty()
                   ? "ONNX's version converter cannot convert the model from opset " + std::to_string(c.from) +
                         " to " + std::to_string(target) + ": " + message
                   : c.blocking_op + " blocks the conversion from opset " + std::to_string(c.from) + " to " +
                         std::to_string(target) + ": " + message;
    return std::move(finish(c));
  }
  std::string error;
  if (!swap_in(c.model, aside, error)) {
    c.reason = error;
    return std::move(finish(c));
  }
  // What the model says of itself stays: the converter writes its own producer and IR version.
  c.model.set_producer_name(model.producer_name());
  c.model.set_producer_version(model.producer_version());
  c.model.set_domain(model.domain());
  c.model.set_model_version(model.model_version());
  c.model.set_doc_string(model.doc_string());
  *c.model.mutable_metadata_props() = model.metadata_props();
  // The IR version of the target opset, never above the model's own, and
  // never below what its contents need (functions: IR 8; IR 4 dropped
  // initializers from the graph inputs).
  int64_t ir = std::min<int64_t>(model.ir_version(), ir_version_of_opset(target));
  if (model.functions_size() > 0) ir = std::max<int64_t>(ir, 8);
  if (model.ir_version() >= 4) ir = std::max<int64_t>(ir, 4);
  c.model.set_ir_version(ir);
  c.nodes_after = count_nodes(c.model);
  if (default_opset(c.model) != target) {
    c.reason = "the converted model imports opset " + std::to_string(default_opset(c.model)) + ", not " +
               std::to_string(target);
    return std::move(finish(c));
  }
  if (!prove(c.model, model_dir, error)) {
    c.reason = "the converted model " + error;
    return std::move(finish(c));
  }
  c.ok = true;
  c.changed = true;
  return std::move(finish(c));
}

bool write_opset_conversion(const LoadedModel& source, OpsetConversion& conversion, const std::string& out_path,
                            std::string& error, bool external_data) {
  if (!conversion.ok || !conversion.changed) {
    error = conversion.ok ? "nothing to write: the model is at opset " + std::to_string(conversion.from)
                          : "not written: " + conversion.reason;
    return false;
  }
  WriteOptions options;
  options.external_data = external_data;
  WriteResult result;
  return write_model_atomic(source, conversion.model, out_path, options, result, error);
}

}  // namespace bpulint
