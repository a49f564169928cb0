// fuzz_shape_values: the fact walk's shape arithmetic (src/engine/shape_values.cpp)
// on graphs of shape ops built from the input: one or two graph inputs of
// rank 1-5 whose dims are known, symbolic or unknown, then up to 32 nodes
// drawn from the ops the walk propagates through or shapes from values
// (Shape, Size, Gather, Slice, Concat, Squeeze, Unsqueeze, Cast, arithmetic,
// comparisons, Where, ConstantOfShape, Range, Reshape, Expand, Tile, Resize,
// and Einsum, whose dims the walk takes from its equation),
// wired to earlier values or to small constants (negative, zero, huge),
// at opset 11, 13 or 17. Graphs may be invalid: the walk runs below the
// checker and must cope. Invariants:
//   - extract_facts and evaluate never crash, hang or leak;
//   - tracked values hold at most kMaxTrackedValues elements, causes index
//     ModelFacts::causes, a constant-folded node reads only constants;
//   - computed data handed to ONNX round-trips to the same values;
//   - on a fully static graph, every dim the walk knows equals the one ONNX's
//     own InferShapes (with data propagation) derives, where both know it
//     (ONNX runs in a child process: it crashes on some of these graphs).
#include <fuzzer/FuzzedDataProvider.h>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <unordered_map>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bpulint/engine/evaluate.h"
#include "bpulint/engine/facts.h"
#include "bpulint/model/guarded_inference.h"
#include "../src/engine/shape_values.h"
#include "fuzz_util.h"

using namespace bpulint;

namespace {

const char* const kOps[] = {"Shape", "Size", "Gather", "Slice", "Concat", "Squeeze", "Unsqueeze", "Cast",
                            "Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Neg", "Equal", "Less",
                            "Greater", "Where", "ConstantOfShape", "Range", "Reshape", "Expand", "Tile",
                            "Resize", "Identity", "Abs", "Einsum"};

int64_t fuzz_int(FuzzedDataProvider& fdp) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: return -1;
    case 1: return 0;
    case 2: return INT64_MAX;
    case 3: return INT64_MIN;
    case 4: return fdp.ConsumeIntegral<int64_t>();
    default: return fdp.ConsumeIntegralInRange<int64_t>(-4, 16);
  }
}

struct Builder {
  FuzzedDataProvider& fdp;
  onnx::GraphProto* g;
  std::vector<std::string> values;  // names defined so far
  int next = 0;

  std::string fresh() { return "v" + std::to_string(next++); }

  // A small int64 constant (scalar or 1-D), as a Constant node.
  std::string constant() {
    const std::string name = fresh();
    auto* n = g->add_node();
    n->set_op_type("Constant");
    n->add_output(name);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(fdp.ConsumeBool() ? onnx::TensorProto::INT64 : onnx::TensorProto::INT32);
    const bool scalar = fdp.ConsumeBool();
    const int count = scalar ? 1 : fdp.ConsumeIntegralInRange<int>(0, 6);
    if (!scalar) t->add_dims(count);
    for (int i = 0; i < count; ++i) {
      const int64_t v = fuzz_int(fdp);
      if (t->data_type() == onnx::TensorProto::INT64) t->add_int64_data(v);
      else t->add_int32_data(static_cast<int32_t>(v));
    }
    values.push_back(name);
    return name;
  }

  std::string operand() {
    if (values.empty() || fdp.ConsumeIntegralInRange<int>(0, 3) == 0) return constant();
    return values[fdp.ConsumeIntegralInRange<size_t>(0, values.size() - 1)];
  }

  void ints(onnx::NodeProto* n, const char* name, int count) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < count; ++i) a->add_ints(fdp.ConsumeIntegralInRange<int64_t>(-3, 3));
  }

  void int_attr(onnx::NodeProto* n, const char* name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
};

void set_input(onnx::ValueInfoProto* vi, const std::string& name, FuzzedDataProvider& fdp, bool& is_static) {
  vi->set_name(name);
  auto* tensor = vi->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tensor->mutable_shape();
  const int rank = fdp.ConsumeIntegralInRange<int>(1, 5);
  for (int i = 0; i < rank; ++i) {
    auto* d = shape->add_dim();
    switch (fdp.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: d->set_dim_param(fdp.ConsumeBool() ? "N" : "H"), is_static = false; break;
      case 1: is_static = false; break;  // unknown
      default: d->set_dim_value(fdp.ConsumeIntegralInRange<int64_t>(1, 8));
    }
  }
}

// The dims of a tensor type: value, -1 for anything else; empty when no shape.
std::vector<int64_t> dims_of(const onnx::TypeProto* t) {
  std::vector<int64_t> out;
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return out;
  for (const auto& d : t->tensor_type().shape().dim()) out.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return out;
}

// ONNX 1.12's own inference crashes on some hostile graphs (Gather's data
// propagation reads out of range for an axis it does not check), so the
// reference runs in a child process; a child that dies gives no reference.
// It returns the inferred model and the values ONNX propagated (as a graph
// whose value_info shapes hold each value's elements).
bool onnx_reference(const onnx::ModelProto& model, onnx::ModelProto& inferred, onnx::GraphProto& data) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT}) signal(sig, SIG_DFL);  // die quietly
    onnx::ModelProto copy = model;
    std::unordered_map<std::string, onnx::TensorShapeProto> values;
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
      onnx::shape_inference::InferShapes(copy, &guarded_schema_registry(), options, &values);
    } catch (...) {
      _exit(1);
    }
    onnx::GraphProto g;
    for (const auto& [name, shape] : values) {
      auto* vi = g.add_value_info();
      vi->set_name(name);
      *vi->mutable_type()->mutable_tensor_type()->mutable_shape() = shape;
    }
    for (const std::string& bytes : {copy.SerializeAsString(), g.SerializeAsString()}) {
      const uint64_t size = bytes.size();
      if (write(fds[1], &size, sizeof size) != sizeof size) _exit(1);
      for (size_t done = 0; done < bytes.size();) {
        const ssize_t n = write(fds[1], bytes.data() + done, bytes.size() - done);
        if (n <= 0) _exit(1);
        done += static_cast<size_t>(n);
      }
    }
    _exit(0);
  }
  close(fds[1]);
  std::string bytes;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) bytes.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
  size_t at = 0;
  auto next = [&](std::string& out) {
    uint64_t size = 0;
    if (bytes.size() - at < sizeof size) return false;
    std::memcpy(&size, bytes.data() + at, sizeof size);
    at += sizeof size;
    if (bytes.size() - at < size) return false;
    out = bytes.substr(at, size);
    at += size;
    return true;
  };
  std::string a, b;
  return next(a) && next(b) && inferred.ParseFromString(a) && data.ParseFromString(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  static const int64_t kOpsets[] = {11, 13, 17};
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpsets[fdp.ConsumeIntegralInRange<int>(0, 2)]);
  auto* g = model.mutable_graph();
  g->set_name("fuzz");
  Builder b{fdp, g, {}, 0};
  bool is_static = true;
  const int inputs = fdp.ConsumeIntegralInRange<int>(1, 2);
  for (int i = 0; i < inputs; ++i) {
    set_input(g->add_input(), "x" + std::to_string(i), fdp, is_static);
    b.values.push_back("x" + std::to_string(i));
  }
  const int nodes = fdp.ConsumeIntegralInRange<int>(1, 32);
  for (int i = 0; i < nodes && fdp.remaining_bytes() > 0; ++i) {
    const std::string op = kOps[fdp.ConsumeIntegralInRange<size_t>(0, sizeof(kOps) / sizeof(kOps[0]) - 1)];
    std::vector<std::string> in;
    const int arity = op == "Where" || op == "Range" ? 3 : op == "Slice" ? fdp.ConsumeIntegralInRange<int>(3, 5)
                      : op == "Resize" ? 4
                      : op == "Concat" ? fdp.ConsumeIntegralInRange<int>(1, 4)
                      : op == "Einsum" ? fdp.ConsumeIntegralInRange<int>(1, 2)
                      : (op == "Shape" || op == "Size" || op == "Cast" || op == "Neg" || op == "Abs" ||
                         op == "Identity" || op == "ConstantOfShape")
                          ? 1
                      : (op == "Squeeze" || op == "Unsqueeze") ? fdp.ConsumeIntegralInRange<int>(1, 2)
                                                                 : 2;
    for (int k = 0; k < arity; ++k) in.push_back(op == "Resize" && (k == 1 || k == 2) && fdp.ConsumeBool() ? "" : b.operand());
    auto* n = g->add_node();
    n->set_op_type(op);
    for (const auto& s : in) n->add_input(s);
    const std::string out = b.fresh();
    n->add_output(out);
    if (op == "Gather" || op == "Concat") b.int_attr(n, "axis", fdp.ConsumeIntegralInRange<int64_t>(-2, 1));
    if (op == "Cast") b.int_attr(n, "to", fdp.ConsumeBool() ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    if (op == "Shape" && fdp.ConsumeBool()) b.int_attr(n, "start", fdp.ConsumeIntegralInRange<int64_t>(-6, 6));
    if ((op == "Squeeze" || op == "Unsqueeze") && fdp.ConsumeBool()) b.ints(n, "axes", 1);
    if (op == "Einsum") {  // equations from a small alphabet: labels, ellipses, commas, arrows, junk
      static const char* const kPieces[] = {"a", "b", "c", "i", "j", "...", ",", "->", " ", "A", "1", "."};
      std::string eq;
      for (int k = fdp.ConsumeIntegralInRange<int>(0, 10); k > 0; --k) {
        eq += kPieces[fdp.ConsumeIntegralInRange<size_t>(0, sizeof(kPieces) / sizeof(kPieces[0]) - 1)];
      }
      auto* a = n->add_attribute();
      a->set_name("equation");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(eq);
    }
    b.values.push_back(out);
  }
  auto* y = g->add_output();
  y->set_name(b.values.back());

  LoadedModel loaded;
  loaded.path = "<fuzz>";
  loaded.model = &model;
  ModelFacts facts;
  std::string error;
  if (std::getenv("FUZZ_DUMP") != nullptr) {  // to look at a failing input
    const std::string bytes = model.SerializeAsString();
    fuzz::write_bytes(std::getenv("FUZZ_DUMP"), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  if (!extract_facts(loaded, {}, facts, error)) return 0;
  auto diagnostics = evaluate(facts, fuzz::j6p());
  fold_unverified(facts, diagnostics, false);

  std::map<std::string, const onnx::TypeProto*> ours;
  std::map<std::string, const IntValues*> our_values;
  for (const auto& n : facts.nodes) {
    // Shape and Size fold on their input's static shape; everything else on
    // constant inputs, or on shape arithmetic whose result does not depend on
    // the dynamic dims (the static dims of Shape(x)[1:]; a dynamic dim
    // compared with -1, since a dim is never negative): never on a runtime
    // activation.
    if (n.fold == Fold::Constant && n.op_type != "Shape" && n.op_type != "Size") {
      bool reads_shape_arithmetic = false;
      for (const auto& t : n.inputs) {
        FUZZ_CHECK(t.name.empty() || t.is_const || t.shape_derived, "a folded node reads a runtime value");
        reads_shape_arithmetic = reads_shape_arithmetic || (!t.name.empty() && !t.is_const);
      }
      // ... and then only because its result is known whatever the dims are.
      if (reads_shape_arithmetic) {
        FUZZ_CHECK(n.outputs.size() == 1 && n.outputs[0].values != nullptr && n.outputs[0].values->all_known(),
                   "a node folded on shape arithmetic has no known result");
      }
    }
    for (const auto* list : {&n.inputs, &n.outputs}) {
      for (const auto& t : *list) {
        FUZZ_CHECK(t.cause <= facts.causes.size(), "cause index out of range");
        if (t.values != nullptr) FUZZ_CHECK(t.values->elems.size() <= kMaxTrackedValues, "too many tracked values");
        if (t.values != nullptr && t.data != nullptr && t.values->all_known()) {
          IntValues back;
          FUZZ_CHECK(values_of_tensor(*t.data, back) && back.elems.size() == t.values->elems.size(),
                     "computed data does not round-trip");
          for (size_t i = 0; i < back.elems.size(); ++i) {
            FUZZ_CHECK(back.elems[i].value == t.values->elems[i].value || t.values->elem_type != back.elem_type ||
                           t.values->elem_type != onnx::TensorProto::INT64,
                       "computed data differs from the values");
          }
        }
      }
    }
    for (const auto& t : n.outputs) {
      if (!t.name.empty()) ours[std::string(t.name)] = t.type;
      if (!t.name.empty() && t.values != nullptr) our_values[std::string(t.name)] = t.values;
    }
  }

  // Differential: ONNX's own inference with data propagation, on static graphs.
  if (!is_static) return 0;
  onnx::ModelProto copy;
  onnx::GraphProto onnx_values;
  if (!onnx_reference(model, copy, onnx_values)) return 0;
  // The values ONNX propagated, element by element, where both know them.
  // ONNX 1.17 propagates a Cast's data as the integers it was given (no
  // rounding through a float, no wrap-around into a narrower integer), so a
  // graph that casts to anything but int64 is left out of this comparison.
  const bool narrowing_cast =
      std::any_of(model.graph().node().begin(), model.graph().node().end(), [](const onnx::NodeProto& node) {
        if (node.op_type() == "CastLike") return true;
        if (node.op_type() != "Cast") return false;
        return std::any_of(node.attribute().begin(), node.attribute().end(), [](const onnx::AttributeProto& a) {
          return a.name() == "to" && a.i() != onnx::TensorProto::INT64;
        });
      });
  for (const auto& vi : onnx_values.value_info()) {
    if (narrowing_cast) break;
    auto it = our_values.find(vi.name());
    if (it == our_values.end()) continue;
    const auto& theirs = vi.type().tensor_type().shape();
    const IntValues& mine = *it->second;
    if (static_cast<size_t>(theirs.dim_size()) != mine.elems.size()) continue;  // ONNX drops scalar-ness
    for (int i = 0; i < theirs.dim_size(); ++i) {
      const auto& d = theirs.dim(i);
      const auto& e = mine.elems[static_cast<size_t>(i)];
      // ONNX 1.12 does Add/Sub/Mul propagation in `int` (MathOpTwoIntegers): beyond int32 it is wrong.
      auto in_int32 = [](int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; };
      if (!d.has_dim_value() || !e.is_known() || !in_int32(d.dim_value()) || !in_int32(e.value)) continue;
      FUZZ_CHECK(d.dim_value() == e.value,
                 "value of '" + vi.name() + "'[" + std::to_string(i) + "] is " + std::to_string(e.value) + ", ONNX's " +
                     std::to_string(d.dim_value()));
    }
  }
  for (const auto& vi : copy.graph().value_info()) {
    auto it = ours.find(vi.name());
    if (it == ours.end()) continue;
    const auto theirs = dims_of(&vi.type());
    const auto mine = dims_of(it->second);
    if (theirs.empty() || mine.empty()) continue;
    FUZZ_CHECK(theirs.size() == mine.size(), "rank of '" + vi.name() + "' differs from ONNX's");
    for (size_t i = 0; i < mine.size(); ++i) {
      FUZZ_CHECK(mine[i] < 0 || theirs[i] < 0 || mine[i] == theirs[i], "dim of '" + vi.name() + "' differs from ONNX's");
    }
  }
  return 0;
}
