// fuzz_const_fold: the constant folder (src/engine/const_fold.cpp and its
// kernels) on random op chains built from the input: up to four initializers
// of any foldable dtype and rank 0-3 (dims 0-4, values small, zero, negative
// or huge), then up to 16 nodes drawn from the folder's table, wired to
// earlier values, with attributes in range and out of range, at opset 9, 11,
// 13, 17 or 18. Graphs may be invalid. Invariants:
//   - extract_facts never crashes, hangs or leaks, whatever the chain;
//   - the reference: the same chain evaluated node by node with fold_node
//     directly. Every value the fact walk holds as data (folded by the walk,
//     or computed by the integer shape arithmetic of shape_values.cpp) equals
//     the reference's, element for element, dtype and dims included;
//   - a folded tensor round-trips through encode_const / decode_const.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../src/engine/const_fold.h"
#include "bpulint/engine/facts.h"
#include "fuzz_util.h"

using namespace bpulint;

namespace {

using T = onnx::TensorProto;

const char* const kOps[] = {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Neg", "Abs", "Sign", "Floor", "Ceil", "Round",
                            "Reciprocal", "Sqrt", "Equal", "Less", "Greater", "And", "Not", "Where", "Min", "Max",
                            "Sum", "Cast", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd",
                            "ArgMax", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Slice", "Gather",
                            "GatherElements", "GatherND", "ScatterND", "ScatterElements", "Concat", "Split", "Expand",
                            "Tile", "Range", "CumSum", "ConstantOfShape", "Shape", "Size", "Identity", "Pad", "TopK",
                            "NonZero"};
const int32_t kTypes[] = {T::FLOAT, T::DOUBLE, T::INT8, T::UINT8, T::INT32, T::INT64, T::BOOL, T::UINT32, T::INT16};

int64_t small_int(FuzzedDataProvider& fdp) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return INT64_MAX;
    case 3: return fdp.ConsumeIntegral<int64_t>();
    default: return fdp.ConsumeIntegralInRange<int64_t>(-5, 5);
  }
}

void add_initializer(FuzzedDataProvider& fdp, onnx::GraphProto& g, const std::string& name) {
  auto* t = g.add_initializer();
  t->set_name(name);
  const int32_t type = kTypes[fdp.ConsumeIntegralInRange<size_t>(0, sizeof(kTypes) / sizeof(kTypes[0]) - 1)];
  t->set_data_type(type);
  int64_t count = 1;
  for (int r = fdp.ConsumeIntegralInRange<int>(0, 3); r > 0; --r) {
    const int64_t d = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
    t->add_dims(d);
    count *= d;
  }
  for (int64_t i = 0; i < count; ++i) {
    switch (type) {
      case T::FLOAT: t->add_float_data(static_cast<float>(small_int(fdp)) / (fdp.ConsumeBool() ? 1.0F : 4.0F)); break;
      case T::DOUBLE: t->add_double_data(static_cast<double>(small_int(fdp)) / (fdp.ConsumeBool() ? 1.0 : 3.0)); break;
      case T::INT64: t->add_int64_data(small_int(fdp)); break;
      case T::UINT32: t->add_uint64_data(static_cast<uint32_t>(small_int(fdp))); break;
      case T::BOOL: t->add_int32_data(fdp.ConsumeBool() ? 1 : 0); break;
      case T::UINT8: t->add_int32_data(static_cast<uint8_t>(small_int(fdp))); break;
      case T::INT8: t->add_int32_data(static_cast<int8_t>(small_int(fdp))); break;
      case T::INT16: t->add_int32_data(static_cast<int16_t>(small_int(fdp))); break;
      default: t->add_int32_data(static_cast<int32_t>(small_int(fdp))); break;
    }
  }
}

void int_attr(onnx::NodeProto* n, const char* name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void ints_attr(FuzzedDataProvider& fdp, onnx::NodeProto* n, const char* name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int k = fdp.ConsumeIntegralInRange<int>(0, 4); k > 0; --k) a->add_ints(fdp.ConsumeIntegralInRange<int64_t>(-4, 4));
}

// Attributes each op may read, some of the time, in range or not.
void add_attributes(FuzzedDataProvider& fdp, const std::string& op, onnx::NodeProto* n) {
  if (!fdp.ConsumeBool()) return;
  if (op == "Cast") int_attr(n, "to", kTypes[fdp.ConsumeIntegralInRange<size_t>(0, 8)]);
  if (op == "Mod") int_attr(n, "fmod", fdp.ConsumeIntegralInRange<int64_t>(0, 1));
  if (op.rfind("Reduce", 0) == 0 || op == "ArgMax") int_attr(n, "keepdims", fdp.ConsumeIntegralInRange<int64_t>(0, 1));
  if (op.rfind("Reduce", 0) == 0 || op == "Squeeze" || op == "Unsqueeze") ints_attr(fdp, n, "axes");
  if (op == "Transpose") ints_attr(fdp, n, "perm");
  if (op == "Split") ints_attr(fdp, n, "split");
  if (op == "Slice") { ints_attr(fdp, n, "starts"); ints_attr(fdp, n, "ends"); }
  if (op == "Pad") ints_attr(fdp, n, "pads");
  if (op == "TopK") int_attr(n, "k", fdp.ConsumeIntegralInRange<int64_t>(-1, 5));
  if (op == "ArgMax" || op == "Gather" || op == "GatherElements" || op == "ScatterElements" || op == "Concat" ||
      op == "Split" || op == "Flatten" || op == "TopK") {
    int_attr(n, "axis", fdp.ConsumeIntegralInRange<int64_t>(-4, 4));
  }
  if (op == "CumSum") { int_attr(n, "exclusive", fdp.ConsumeBool()); int_attr(n, "reverse", fdp.ConsumeBool()); }
  if (op == "Pad" && fdp.ConsumeBool()) {
    auto* a = n->add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    static const char* const kModes[] = {"constant", "reflect", "edge", "wrap", "bogus"};
    a->set_s(kModes[fdp.ConsumeIntegralInRange<int>(0, 4)]);
  }
}

bool same(const ConstTensor& a, const ConstTensor& b) {
  if (a.dtype != b.dtype || a.dims != b.dims || a.ints != b.ints || a.reals.size() != b.reals.size()) return false;
  for (size_t i = 0; i < a.reals.size(); ++i) {
    if (a.reals[i] != b.reals[i] && !(std::isnan(a.reals[i]) && std::isnan(b.reals[i]))) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  static const int64_t kOpsets[] = {9, 11, 13, 17, 18};
  const int64_t opset = kOpsets[fdp.ConsumeIntegralInRange<int>(0, 4)];
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* imp = model.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  auto* g = model.mutable_graph();
  g->set_name("fuzz");
  std::vector<std::string> values;
  for (int i = fdp.ConsumeIntegralInRange<int>(1, 4); i > 0; --i) {
    values.push_back("c" + std::to_string(values.size()));
    add_initializer(fdp, *g, values.back());
  }
  int next = 0;
  for (int i = fdp.ConsumeIntegralInRange<int>(1, 16); i > 0 && fdp.remaining_bytes() > 0; --i) {
    const std::string op = kOps[fdp.ConsumeIntegralInRange<size_t>(0, sizeof(kOps) / sizeof(kOps[0]) - 1)];
    auto* n = g->add_node();
    n->set_op_type(op);
    for (int k = fdp.ConsumeIntegralInRange<int>(op == "Range" || op == "Where" ? 3 : 1, 4); k > 0; --k) {
      n->add_input(fdp.ConsumeIntegralInRange<int>(0, 9) == 0 ? "" : values[fdp.ConsumeIntegralInRange<size_t>(0, values.size() - 1)]);
    }
    const int outputs = op == "Split" || op == "TopK" ? fdp.ConsumeIntegralInRange<int>(1, 3) : 1;
    for (int o = 0; o < outputs; ++o) {
      n->add_output("v" + std::to_string(next++));
      values.push_back(n->output(o));
    }
    add_attributes(fdp, op, n);
  }
  g->add_output()->set_name(values.back());

  // The reference: each node folded directly from the values before it.
  std::map<std::string, ConstTensor> reference;
  for (const auto& init : g->initializer()) {
    ConstTensor c;
    if (decode_const(init, c)) reference[init.name()] = c;
  }
  for (const auto& n : g->node()) {
    std::vector<const ConstTensor*> in;
    bool known = true;
    for (const auto& name : n.input()) {
      auto it = reference.find(name);
      if (!name.empty() && it == reference.end()) known = false;
      in.push_back(name.empty() || it == reference.end() ? nullptr : &it->second);
    }
    std::vector<ConstTensor> out;
    if (!known || !fold_node(n, opset, in, out)) continue;
    for (int o = 0; o < n.output_size(); ++o) {
      // A value written twice (the fuzzer reuses no names, but be safe) keeps its first writer.
      reference.emplace(n.output(o), out[static_cast<size_t>(o)]);
      onnx::TensorProto encoded;
      encode_const(out[static_cast<size_t>(o)], encoded);
      ConstTensor back;
      FUZZ_CHECK(decode_const(encoded, back) && same(back, out[static_cast<size_t>(o)]), "encode/decode round trip");
    }
  }

  LoadedModel loaded;
  loaded.path = "<fuzz>";
  loaded.model = &model;
  ModelFacts facts;
  std::string error;
  if (!extract_facts(loaded, {}, facts, error)) return 0;
  for (const auto& n : facts.nodes) {
    for (const auto& t : n.outputs) {
      if (t.name.empty() || t.data == nullptr) continue;
      ConstTensor walked;
      if (!decode_const(*t.data, walked)) continue;  // a dtype the folder does not handle
      // The integer shape arithmetic (shape_values.cpp, fuzzed by
      // fuzz_shape_values) also computes some values of invalid nodes the
      // kernels refuse (Ceil of an int64): only values both know are compared.
      auto it = reference.find(std::string(t.name));
      if (it == reference.end()) continue;
      FUZZ_CHECK(same(walked, it->second), "the walk and the reference differ on '" + std::string(t.name) + "' (" +
                                               n.op_type + ")");
    }
  }
  return 0;
}
