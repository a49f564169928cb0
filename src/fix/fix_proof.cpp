#include "bpulint/fix/fix_proof.h"

#include <google/protobuf/util/message_differencer.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <memory>

#include "bpulint/fix/fix_catalog.h"
#include "bpulint/model/guarded_inference.h"
#include "bpulint/fix/quantised_weight.h"
#include "bpulint/fix/reference_kernels.h"
#include "bpulint/model/tensor_values.h"

namespace bpulint {
namespace {

// Along one axis, a proof input longer than this is refused: only absurd pads
// or dilations need it, and the proof must stay small.
constexpr int64_t kMaxProofDim = 64;
// The layout input is dense random while its convolution costs at most this
// many multiply-accumulates; above, one channel per position carries it.
constexpr int64_t kDenseLayoutMacs = int64_t{1} << 24;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}

// ConvTranspose output length along one axis for input length n; -1 on overflow or < 1.
int64_t out_length(const ConvTransposeParams& p, size_t a, int64_t n) {
  const size_t r = p.kernel.size();
  int64_t t = 0, ext = 0, out = 0;
  if (__builtin_mul_overflow(p.strides[a], n - 1, &t) || __builtin_mul_overflow(p.kernel[a] - 1, p.dilations[a], &ext) ||
      __builtin_add_overflow(t, ext, &out) || __builtin_add_overflow(out, p.output_padding[a] + 1, &out) ||
      __builtin_sub_overflow(out, p.pads[a], &out) || __builtin_sub_overflow(out, p.pads[a + r], &out)) {
    return -1;
  }
  return out >= 1 ? out : -1;
}

// Whether every kernel tap along axis a lands on an output for some input
// position when the input is n long: tap k of input i writes i*s + k*dil - pad.
bool every_tap_lands(const ConvTransposeParams& p, size_t a, int64_t n) {
  const int64_t out = out_length(p, a, n);
  if (out < 1) return false;
  const int64_t s = p.strides[a], dil = p.dilations[a], pad = p.pads[a];
  for (int64_t k = 0; k < p.kernel[a]; ++k) {
    // Need 0 <= i < n with pad - k*dil <= i*s <= pad + out - 1 - k*dil. The
    // layer's own output size was computed without overflow, which bounds
    // k*dil and pad + out; i*s is checked.
    const int64_t lo = pad - k * dil, hi = pad + out - 1 - k * dil;
    const int64_t i = lo <= 0 ? 0 : lo / s + (lo % s != 0);
    int64_t at = 0;
    if (i >= n || __builtin_mul_overflow(i, s, &at) || at > hi) return false;
  }
  return true;
}

uint64_t splitmix(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// One random channel per (batch item, position), with a random value that is
// never 0 (multiples of 2^-23 in [-1, 1), as random_tensor's).
Tensor one_channel_per_position(const std::vector<int64_t>& shape, uint64_t seed) {
  Tensor t{shape, {}};
  t.data.assign(static_cast<size_t>(t.size()), 0.0f);
  const int64_t n = shape[0], c = shape[1], plane = t.size() / (n * c);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t q = 0; q < plane; ++q) {
      const uint64_t z = splitmix(seed ^ splitmix(static_cast<uint64_t>(b * plane + q)));
      const int64_t channel = static_cast<int64_t>(z % static_cast<uint64_t>(c));
      int64_t k = static_cast<int64_t>(z >> 40) - (int64_t{1} << 23);
      if (k == 0) k = 1;
      t.data[static_cast<size_t>((b * c + channel) * plane + q)] = static_cast<float>(k) * (1.0f / 8388608.0f);
    }
  }
  return t;
}

bool tensor_of(const onnx::TensorProto& proto, const std::string& bytes, Tensor& out, std::string& error) {
  out.shape.assign(proto.dims().begin(), proto.dims().end());
  if (!decode_tensor_bytes(onnx::TensorProto::FLOAT, bytes, out.size(), out.data, error)) {
    error = "initializer '" + proto.name() + "' holds " + std::to_string(bytes.size()) + " bytes for shape " +
            shape_text(out.shape);
    return false;
  }
  return true;
}

bool same_external_reference(const onnx::TensorProto& a, const onnx::TensorProto& b) {
  if (a.data_location() != onnx::TensorProto::EXTERNAL || b.data_location() != onnx::TensorProto::EXTERNAL ||
      a.external_data_size() != b.external_data_size()) {
    return false;
  }
  for (int i = 0; i < a.external_data_size(); ++i) {
    if (a.external_data(i).key() != b.external_data(i).key() || a.external_data(i).value() != b.external_data(i).value())
      return false;
  }
  return true;
}

// The values of an int64 tensor; none for any other, or a malformed one.
std::vector<int64_t> int64_values(const onnx::TensorProto& t) {
  std::vector<int64_t> out;
  std::string error;
  if (t.data_type() != onnx::TensorProto::INT64 || !tensor_values(t, out, error)) return {};
  return out;
}

const onnx::TensorProto* find_initializer(const Rewrite& r, const std::string& name) {
  for (const auto& t : r.initializers) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

// The Reshape targets of a rewrite, in node order.
std::vector<std::vector<int64_t>> reshape_targets(const Rewrite& r) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& n : r.nodes) {
    if (n.op_type() != "Reshape" || n.input_size() != 2) continue;
    const onnx::TensorProto* t = find_initializer(r, n.input(1));
    out.push_back(t != nullptr ? int64_values(*t) : std::vector<int64_t>{});
  }
  return out;
}

// The layout contract of each fix (FixKind::layout): entries set by a
// spatial dim say which, as a proof input chooses them.
using Entry = LayoutEntry;
std::vector<std::vector<Entry>> contract_entries(const std::string& fix, const ConvTransposeParams& p,
                                                 const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const FixKind* kind = find_fix_kind(fix);
  return kind != nullptr && kind->layer != nullptr ? kind->layer->layout(p, in, out) : LayoutTargets{};
}

std::vector<std::vector<int64_t>> layout_contract(const std::string& fix, const ConvTransposeParams& p,
                                                  const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<std::vector<int64_t>> targets;
  for (const auto& entries : contract_entries(fix, p, in, out)) {
    targets.emplace_back();
    for (const Entry& e : entries) targets.back().push_back(e.value);
  }
  return targets;
}

// Whether the spatial dims have pairwise different values, each also
// different from the fixed entries of its targets: then a construction that
// confused one with another would misplace values, and the proof would see it.
// (An axis whose output is as long as its input, whatever that is, has one
// value for both.)
bool spatial_entries_distinct(const ConvTransposeParams& p, const std::vector<std::vector<Entry>>& targets) {
  auto same_dim = [&](int a, int b) {  // D and Do, H and Ho, W and Wo are 0 and 3, 1 and 4, 2 and 5
    if (a == b) return true;
    if (std::abs(a - b) != 3) return false;
    const size_t axis = static_cast<size_t>(std::min(a, b));
    return p.strides[axis] == 1 && out_length(p, axis, 1) == 1;
  };
  std::map<int64_t, int> dim_of_value;
  for (const auto& t : targets) {
    for (const Entry& e : t) {
      if (e.spatial < 0) continue;
      if (!same_dim(dim_of_value.emplace(e.value, e.spatial).first->second, e.spatial)) return false;
      for (const Entry& other : t) {
        if (other.spatial < 0 && other.value == e.value) return false;
      }
    }
  }
  return true;
}

// The constant operand of each MatMul of a rewrite, in node order (a tensor
// with no dims when it is not a float initializer the interpreter decodes).
std::vector<Tensor> matmul_constants(const Rewrite& r) {
  std::vector<Tensor> out;
  for (const auto& n : r.nodes) {
    if (n.op_type() != "MatMul" || n.input_size() != 2) continue;
    const onnx::TensorProto* t = find_initializer(r, n.input(1));
    std::string ignored;
    out.emplace_back();
    if (t == nullptr || !tensor_from_proto(*t, out.back(), ignored)) out.back() = Tensor{};
  }
  return out;
}

// Whether each MatMul constant is the 0/1 matrix the fix's contract states
// for these shapes (FixKind::matrices): like a Reshape target, it depends on
// the shape, so the real one is checked here rather than against the proven one.
bool check_matrices(const std::string& fix, const ConvTransposeParams& p, const Rewrite& r,
                    const std::vector<int64_t>& in, const std::vector<int64_t>& out, const std::string& where,
                    std::string& error) {
  const FixKind* kind = find_fix_kind(fix);
  const std::vector<SelectionMatrix> contract =
      kind != nullptr && kind->layer != nullptr && kind->layer->matrices != nullptr ? kind->layer->matrices(p, in, out) : std::vector<SelectionMatrix>{};
  const std::vector<Tensor> found = matmul_constants(r);
  const std::string what = "the MatMul constants do not match the D taps of input " + shape_text(in) + " and output " +
                           shape_text(out) + where;
  if (found.size() != contract.size()) {
    error = what + " (" + std::to_string(found.size()) + " MatMul constants, expected " +
            std::to_string(contract.size()) + ")";
    return false;
  }
  for (size_t i = 0; i < found.size(); ++i) {
    const Tensor& t = found[i];
    const SelectionMatrix& m = contract[i];
    if (t.shape != m.dims) {
      error = what + " (matrix " + shape_text(t.shape) + ", expected " + shape_text(m.dims) + ")";
      return false;
    }
    // One pass against the contract's ones (in increasing order), no second matrix.
    if (!std::is_sorted(m.ones.begin(), m.ones.end()) ||
        (!m.ones.empty() && (m.ones.front() < 0 || static_cast<size_t>(m.ones.back()) >= t.data.size()))) {
      error = what + " (the contract's ones are not positions of the matrix in order)";
      return false;
    }
    size_t next = 0;
    for (size_t at = 0; at < t.data.size(); ++at) {
      const bool one = next < m.ones.size() && static_cast<size_t>(m.ones[next]) == at;
      next += one ? 1 : 0;
      if (t.data[at] != (one ? 1.0f : 0.0f)) {
        char value[32];
        std::snprintf(value, sizeof value, "%g", static_cast<double>(t.data[at]));
        error = what + " (entry " + std::to_string(at) + " is " + value + ", expected " + (one ? "1" : "0") + ")";
        return false;
      }
    }
  }
  return true;
}

bool check_contract(const std::string& fix, const ConvTransposeParams& p, const Rewrite& r,
                    const std::vector<int64_t>& in, const std::vector<int64_t>& out, const std::string& where,
                    std::string& error) {
  const auto targets = reshape_targets(r), contract = layout_contract(fix, p, in, out);
  if (targets == contract) return check_matrices(fix, p, r, in, out, where, error);
  error = "the Reshape targets do not match the layout of input " + shape_text(in) + " and output " +
          shape_text(out) + where;
  for (size_t i = 0; i < std::min(targets.size(), contract.size()); ++i) {
    if (targets[i] != contract[i]) {
      error += " (target " + shape_text(targets[i]) + ", expected " + shape_text(contract[i]) + ")";
      break;
    }
  }
  return false;
}

// Both rewrites come from build_rewrite for layers of the same shape: the
// real one must be the proven one with other Reshape targets and other names.
// Names are compared by role: the layer's input (x), the output of node k, or
// an initializer, compared by content except Reshape targets and MatMul
// constants (both shape-dependent, checked by check_contract) and, for a
// proof on stand-in weights, float weights and bias: dims and type only.
struct Ends {
  std::string x, y;  // the layer's input and output names in a rewrite
};
bool same_construction(const Rewrite& proven, const Ends& pe, const Rewrite& real, const Ends& re, bool same_weights,
                       std::string& error) {
  if (proven.nodes.size() != real.nodes.size() || proven.initializers.size() != real.initializers.size()) {
    error = "the real rewrite differs from the proven one in its node or initializer count";
    return false;
  }
  auto producers = [](const Rewrite& r) {
    std::map<std::string, size_t> out;
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      for (const auto& o : r.nodes[i].output()) out[o] = i;
    }
    return out;
  };
  const auto made_p = producers(proven), made_r = producers(real);
  google::protobuf::util::MessageDifferencer same_tensor;  // contents, not names
  same_tensor.IgnoreField(onnx::TensorProto::descriptor()->FindFieldByName("name"));
  auto same_kind = [](const onnx::TensorProto& a, const onnx::TensorProto& b) {  // where the weights went
    return a.data_type() == b.data_type() && std::equal(a.dims().begin(), a.dims().end(), b.dims().begin(), b.dims().end());
  };
  for (size_t i = 0; i < real.nodes.size(); ++i) {
    const onnx::NodeProto &a = proven.nodes[i], &b = real.nodes[i];
    const std::string what = "node " + std::to_string(i) + " (" + b.op_type() + ")";
    bool same = a.op_type() == b.op_type() && a.domain() == b.domain() && a.input_size() == b.input_size() &&
                a.output_size() == b.output_size() && a.attribute_size() == b.attribute_size();
    for (int k = 0; same && k < a.attribute_size(); ++k) {
      same = a.attribute(k).SerializeAsString() == b.attribute(k).SerializeAsString();
    }
    for (int k = 0; same && k < a.input_size(); ++k) {
      const std::string &na = a.input(k), &nb = b.input(k);
      if (na == pe.x || nb == re.x) {
        same = na == pe.x && nb == re.x;
      } else if (made_p.count(na) != 0 || made_r.count(nb) != 0) {
        same = made_p.count(na) != 0 && made_r.count(nb) != 0 && made_p.at(na) == made_r.at(nb);
      } else {
        const onnx::TensorProto *ta = find_initializer(proven, na), *tb = find_initializer(real, nb);
        same = ta != nullptr && tb != nullptr;
        const bool weight = ta->data_type() == onnx::TensorProto::FLOAT;
        if (same && !((a.op_type() == "Reshape" || a.op_type() == "MatMul") && k == 1)) {
          same = same_weights || !weight ? same_tensor.Compare(*ta, *tb) : same_kind(*ta, *tb);
        }
      }
    }
    const bool last = i + 1 == real.nodes.size();
    same = same && a.output_size() == 1 && (a.output(0) == pe.y) == last && (b.output(0) == re.y) == last;
    if (!same) {
      error = "the real rewrite differs from the proven one at " + what;
      return false;
    }
  }
  return true;
}

std::vector<int64_t> static_dims(const onnx::TypeProto* type, bool& ok) {
  std::vector<int64_t> dims;
  ok = type != nullptr && type->has_tensor_type() && type->tensor_type().has_shape();
  if (!ok) return dims;
  for (const auto& d : type->tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return dims;
}

// ONNX strict shape inference over the rewritten nodes alone (weights as
// dims and type): the output's shape, or false with ONNX's reason.
bool infer_rewrite_output(const Rewrite& r, const NodeFacts& node, std::vector<int64_t>& out, std::string& error) {
  onnx::ModelProto mini;
  mini.set_ir_version(8);
  auto* opset = mini.add_opset_import();
  opset->set_domain("");
  opset->set_version(std::max<int64_t>(node.opset, 13));
  auto* g = mini.mutable_graph();
  g->set_name("rewrite");
  auto* x = g->add_input();
  x->set_name(r.nodes.front().input(0));
  *x->mutable_type() = *node.inputs[0].type;
  for (const auto& t : r.initializers) {
    auto* copy = g->add_initializer();
    copy->set_name(t.name());
    copy->set_data_type(t.data_type());
    *copy->mutable_dims() = t.dims();
    if (t.data_type() == onnx::TensorProto::INT64) *copy = t;  // Reshape targets: inference reads them
  }
  for (const auto& n : r.nodes) *g->add_node() = n;
  const std::string& y = r.nodes.back().output(0);
  try {
    onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/false);
    onnx::shape_inference::InferShapes(mini, &guarded_schema_registry(), strict);
  } catch (const std::exception& e) {
    error = e.what();
    if (auto nl = error.find('\n'); nl != std::string::npos) error.resize(nl);
    return false;
  }
  for (const auto& vi : mini.graph().value_info()) {
    if (vi.name() != y) continue;
    bool ok = false;
    out = static_dims(&vi.type(), ok);
    if (ok) return true;
  }
  error = "shape inference gives no shape for the rewrite's output";
  return false;
}

// Reads the layer's weight and bias once; the rewrites' copies of them (the
// same external reference) are served from here too.
class WeightCache {
 public:
  WeightCache(const RewriteInputs& in, const TensorBytesReader& reader) : in_(in), reader_(reader) {}
  // The bytes of t, or nullptr with the error.
  const std::string* bytes(const onnx::TensorProto& t, std::string& error) {
    const std::pair<const onnx::TensorProto*, std::string*> cached[] = {{in_.weight, &weight_}, {in_.bias, &bias_}};
    for (const auto& [proto, data] : cached) {
      if (proto == nullptr || !(&t == proto || same_external_reference(t, *proto))) continue;
      if (data->empty() && !reader_(*proto, *data, error)) return nullptr;
      return data;
    }
    return reader_(t, other_, error) ? &other_ : nullptr;
  }
  bool read(const onnx::TensorProto& t, std::string& out, std::string& error) {
    const std::string* b = bytes(t, error);
    if (b != nullptr) out = *b;
    return b != nullptr;
  }

 private:
  const RewriteInputs& in_;
  const TensorBytesReader& reader_;
  std::string weight_, bias_, other_;
};

struct SmallRun {
  Rewrite rewrite;
  double diff = 0;
};

// Builds the rewrite for input x's shape and compares it with the reference
// ConvTranspose on x.
bool run_small(const std::string& fix, const RewriteInputs& in, const Tensor& x, const Tensor& weight,
               const Tensor* bias, WeightCache& cache, SmallRun& run, std::string& error) {
  RewriteInputs small = in;
  small.params.input_shape = x.shape;
  NameAllocator names;  // fresh: this rewrite is never spliced in
  for (const auto& n : {in.node->input(0), in.node->output(0), in.weight->name()}) names.reserve(n);
  if (in.bias != nullptr) names.reserve(in.bias->name());
  const TensorBytesReader reader = [&](const onnx::TensorProto& t, std::string& bytes, std::string& e) {
    return cache.read(t, bytes, e);
  };
  if (!build_rewrite(fix, small, names, &reader, run.rewrite, error)) return false;

  const ConvTransposeParams& p = in.params;
  ConvAttrs attrs;
  attrs.strides = p.strides;
  attrs.pads = p.pads;
  attrs.dilations = p.dilations;
  attrs.output_padding = p.output_padding;
  attrs.group = p.group;
  Tensor expected;
  if (!conv_transpose(x, weight, bias, attrs, expected, error)) return false;
  if (!check_contract(fix, p, run.rewrite, x.shape, expected.shape, " on the proof input " + shape_text(x.shape), error))
    return false;

  // Float initializers go to the interpreter as values (external ones from the
  // bytes already read); it reads only the Reshape targets from the protos.
  std::map<std::string, const onnx::TensorProto*> initializers;
  std::map<std::string, Tensor> values;
  for (const auto& t : run.rewrite.initializers) {
    if (t.data_type() != onnx::TensorProto::FLOAT) {
      initializers[t.name()] = &t;
      continue;
    }
    Tensor& v = values[t.name()];
    if (same_external_reference(t, *in.weight)) {  // the layer's weight, new dims: reuse what is decoded
      v.shape.assign(t.dims().begin(), t.dims().end());
      v.data = weight.data;
      if (v.size() != weight.size()) {
        error = "initializer '" + t.name() + "' has " + std::to_string(weight.size()) + " values for shape " +
                shape_text(v.shape);
        return false;
      }
    } else if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      const std::string* bytes = cache.bytes(t, error);
      if (bytes == nullptr || !tensor_of(t, *bytes, v, error)) return false;
    } else if (!tensor_from_proto(t, v, error)) {
      return false;
    }
  }
  std::vector<const onnx::NodeProto*> nodes;
  for (const auto& n : run.rewrite.nodes) nodes.push_back(&n);
  values[in.node->input(0)] = x;
  if (!run_nodes(nodes, initializers, values, error)) return false;
  auto it = values.find(in.node->output(0));
  if (it == values.end()) {
    error = "the rewrite does not produce '" + in.node->output(0) + "'";
    return false;
  }
  run.diff = max_abs_diff(expected, it->second);
  float scale = 1.0f;
  for (float v : expected.data) scale = std::max(scale, std::fabs(v));
  // The rewrites are exact up to float summation order.
  if (!(run.diff <= 1e-5 * scale)) {
    error = "outputs differ by " + std::to_string(run.diff) + " on the random input " + shape_text(x.shape);
    return false;
  }
  return true;
}

}  // namespace

bool proof_inputs(const std::string& fix, const ConvTransposeParams& p, ProofInputs& out, std::string& why_not) {
  static const char* const kAxis[3] = {"D", "H", "W"};
  if (p.kernel.size() != 3 || p.input_shape.size() != 5) {
    why_not = "not a 3-D ConvTranspose with a known input shape";
    return false;
  }
  out.weights = {2, p.c_in};
  int64_t least[3];  // the layout input's minimum per axis
  for (size_t a = 0; a < 3; ++a) {
    int64_t n = 1;
    while (n <= kMaxProofDim && !every_tap_lands(p, a, n)) ++n;
    // An output is reached by at most ceil(((K-1)*dil + 1) / s) inputs: this
    // many more give an interior output every overlapping tap lands on.
    const int64_t extent = (p.kernel[a] - 1) * p.dilations[a] + 1;  // bounded: the layer's output size exists
    const int64_t span = extent / p.strides[a] + (extent % p.strides[a] != 0);
    least[a] = span > kMaxProofDim ? kMaxProofDim + 1 : std::max<int64_t>(2, n + span);
    if (n > kMaxProofDim || least[a] > kMaxProofDim) {
      why_not = std::string("a proof input along ") + kAxis[a] + " would need more than " +
                std::to_string(kMaxProofDim) + " positions to reach every kernel tap";
      return false;
    }
    out.weights.push_back(n);
  }
  // The layout input: the smallest (fewest positions) at or above those
  // minimums whose Reshape targets give each spatial entry a value no other
  // entry has, so that dims the construction confused would misplace values.
  constexpr int64_t kSearch = 12;
  int64_t best = -1;
  for (int64_t d = least[0]; d < least[0] + kSearch && d <= kMaxProofDim; ++d) {
    for (int64_t h = least[1]; h < least[1] + kSearch && h <= kMaxProofDim; ++h) {
      for (int64_t w = least[2]; w < least[2] + kSearch && w <= kMaxProofDim; ++w) {
        if (best > 0 && d * h * w >= best) continue;
        const std::vector<int64_t> in = {2, p.c_in, d, h, w};
        const std::vector<int64_t> y = {2, p.c_out, out_length(p, 0, d), out_length(p, 1, h), out_length(p, 2, w)};
        if (!spatial_entries_distinct(p, contract_entries(fix, p, in, y))) continue;
        best = d * h * w;
        out.layout = in;
      }
    }
  }
  if (best < 0) {
    why_not = "no small proof input gives the spatial entries of the Reshape targets distinct values";
    return false;
  }
  return true;
}

namespace {

constexpr uint64_t kLayoutSeed = 0x5eed1a70u;

// Seeded random stand-in for a weight or bias: the real tensor with its data replaced.
onnx::TensorProto stand_in(const onnx::TensorProto& real, uint64_t seed, Tensor& values) {
  onnx::TensorProto t = real;
  t.clear_raw_data();
  t.clear_float_data();
  t.clear_external_data();
  t.clear_data_location();
  values = random_tensor({real.dims().begin(), real.dims().end()}, seed);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data.data()), values.data.size() * 4));
  return t;
}

}  // namespace

struct LayoutProofs::Proof {
  bool ok = false;
  std::string error;
  std::vector<int64_t> shape;
  bool sparse = false;
  double max_abs_error = 0;
  Rewrite rewrite;  // the construction it proved
  Ends ends;
};

struct LayoutProofs::Slot {
  std::once_flag once;
  Proof proof;
};

LayoutProofs::LayoutProofs() = default;
LayoutProofs::~LayoutProofs() = default;

namespace {

LayoutProofs::Proof prove_layout(const std::string& fix, const RewriteInputs& in) {
  LayoutProofs::Proof out;
  const ConvTransposeParams& p = in.params;
  ProofInputs shapes;
  if (!proof_inputs(fix, p, shapes, out.error)) return out;
  Tensor weight, bias;
  const onnx::TensorProto w = stand_in(*in.weight, kLayoutSeed + 1, weight);
  const onnx::TensorProto b = p.has_bias ? stand_in(*in.bias, kLayoutSeed + 2, bias) : onnx::TensorProto();
  RewriteInputs layer = in;
  layer.weight = &w;
  layer.bias = p.has_bias ? &b : nullptr;
  const TensorBytesReader inline_bytes = [](const onnx::TensorProto& t, std::string& bytes, std::string&) {
    bytes = t.raw_data();
    return true;
  };
  WeightCache cache(layer, inline_bytes);
  const int64_t macs = (shapes.layout[2] * shapes.layout[3] * shapes.layout[4]) * 2 * weight.size();
  out.sparse = macs > kDenseLayoutMacs;
  const Tensor x = out.sparse ? one_channel_per_position(shapes.layout, kLayoutSeed)
                              : random_tensor(shapes.layout, kLayoutSeed);
  SmallRun run;
  if (!run_small(fix, layer, x, weight, p.has_bias ? &bias : nullptr, cache, run, out.error)) {
    out.error += " (stand-in weights)";
    return out;
  }
  out.ok = true;
  out.shape = x.shape;
  out.max_abs_error = run.diff;
  out.rewrite = std::move(run.rewrite);
  out.ends = {in.node->input(0), in.node->output(0)};
  return out;
}

// Layers whose rewrites share a layout: everything the construction and the
// layout input follow, but not the weights or the real input shape.
std::string layout_key(const std::string& fix, const ConvTransposeParams& p) {
  std::string key = fix + "|" + std::to_string(p.c_in) + "," + std::to_string(p.c_out) + "," +
                    std::to_string(p.group) + "," + (p.has_bias ? "b" : "-");
  for (const auto* v : {&p.kernel, &p.strides, &p.pads, &p.dilations, &p.output_padding}) {
    key += "|";
    for (int64_t x : *v) key += std::to_string(x) + ",";
  }
  return key;
}

}  // namespace

const LayoutProofs::Proof& LayoutProofs::get(const std::string& fix, const RewriteInputs& in) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& s = slots_[layout_key(fix, in.params)];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::call_once(slot->once, [&] { slot->proof = prove_layout(fix, in); });
  return slot->proof;
}

namespace {

bool prove(const std::string& fix, const RewriteInputs& in, const Rewrite& rewrite, const TensorBytesReader& reader,
           const NodeFacts& node, uint64_t seed, LayoutProofs& layouts, ProofRecord& record, std::string& error) {
  const ConvTransposeParams& p = in.params;
  ProofInputs shapes;
  if (!proof_inputs(fix, p, shapes, error)) return false;
  WeightCache cache(in, reader);
  Tensor weight, bias;
  const std::string* bytes = cache.bytes(*in.weight, error);
  if (bytes == nullptr || !tensor_of(*in.weight, *bytes, weight, error)) {
    error = "cannot read the weight: " + error;
    return false;
  }
  if (p.has_bias && ((bytes = cache.bytes(*in.bias, error)) == nullptr || !tensor_of(*in.bias, *bytes, bias, error))) {
    error = "cannot read the bias: " + error;
    return false;
  }

  // 1. Numerically: the real weights on the weights input; the layout input
  // once per layer shape, on stand-in weights.
  SmallRun weights_run;
  if (!run_small(fix, in, random_tensor(shapes.weights, seed), weight, p.has_bias ? &bias : nullptr, cache,
                 weights_run, error)) {
    return false;
  }
  const LayoutProofs::Proof& layout = layouts.get(fix, in);
  if (!layout.ok) {
    error = layout.error;
    return false;
  }
  record.input_shapes = {shapes.weights, layout.shape};
  record.sparse_layout = layout.sparse;
  record.max_abs_error = std::max(weights_run.diff, layout.max_abs_error);

  // 2. The real rewrite is the proven construction, with the proven weights.
  const Ends ends{in.node->input(0), in.node->output(0)};
  if (!same_construction(weights_run.rewrite, ends, rewrite, ends, true, error) ||
      !same_construction(layout.rewrite, layout.ends, rewrite, ends, false, error)) {
    return false;
  }

  // 3. Its shapes at the real size are the node's own.
  bool in_ok = false, out_ok = false;
  const std::vector<int64_t> real_in = static_dims(node.inputs.empty() ? nullptr : node.inputs[0].type, in_ok);
  const std::vector<int64_t> real_out = static_dims(node.outputs.empty() ? nullptr : node.outputs[0].type, out_ok);
  in_ok = in_ok && real_in.size() == 5 && std::all_of(real_in.begin() + 1, real_in.end(), [](int64_t d) { return d > 0; });
  out_ok = out_ok && real_out.size() == 5 && std::all_of(real_out.begin() + 1, real_out.end(), [](int64_t d) { return d > 0; });
  if (!in_ok || !out_ok) {
    error = "the node's input or output shape is not known, so the real rewrite cannot be checked";
    return false;
  }
  if (!check_contract(fix, p, rewrite, real_in, real_out, "", error)) return false;
  std::vector<int64_t> inferred;
  if (!infer_rewrite_output(rewrite, node, inferred, error)) {
    error = "shape inference fails on the rewrite: " + error;
    return false;
  }
  const bool static_batch = real_out[0] > 0;
  if (inferred.size() != 5 || !std::equal(real_out.begin() + 1, real_out.end(), inferred.begin() + 1) ||
      (static_batch && inferred[0] != real_out[0])) {
    error = "shape inference gives the rewrite output " + shape_text(inferred) + ", the node's is " +
            shape_text(real_out);
    return false;
  }
  return true;
}

}  // namespace

namespace {

// A quantised weight: the old and the new QuantizeLinear/DequantizeLinear run
// on their constants; the rewrite with the new weight's value in their place
// must be the float rewrite of the old weight's value (same_construction
// compares those weights bit for bit), and that float rewrite is proven as
// any other, on the dequantised weights.
bool prove_quantised(const std::string& fix, const RewriteInputs& in, const Rewrite& rewrite,
                     const TensorBytesReader& reader, const NodeFacts& node, uint64_t seed, LayoutProofs& layouts,
                     ProofRecord& record, std::string& error) {
  Tensor old_weight;
  Rewrite float_rewrite;
  if (!dequantised_weight(*in.quantised, reader, old_weight, error) ||
      !dequantised_rewrite(rewrite, reader, float_rewrite, error)) {
    error = "cannot dequantise the weight: " + error;
    return false;
  }
  onnx::TensorProto weight;
  weight.set_name(in.quantised->dequantize->output(0));
  weight.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : old_weight.shape) weight.add_dims(d);
  weight.set_raw_data(std::string(reinterpret_cast<const char*>(old_weight.data.data()), old_weight.data.size() * 4));
  RewriteInputs float_in = in;
  float_in.weight = &weight;
  float_in.quantised = nullptr;
  const TensorBytesReader float_reader = [&](const onnx::TensorProto& t, std::string& bytes, std::string& e) {
    if (&t != &weight) return reader(t, bytes, e);
    bytes = weight.raw_data();
    return true;
  };
  return prove(fix, float_in, float_rewrite, float_reader, node, seed, layouts, record, error);
}

}  // namespace

bool prove_rewrite(const std::string& fix, const RewriteInputs& in, const Rewrite& rewrite,
                   const TensorBytesReader& reader, const NodeFacts& node, uint64_t seed, ProofRecord& record,
                   std::string& error, LayoutProofs* layouts) {
  record = ProofRecord{};
  record.seed = seed;
  try {
    if (!rewrite.computed.empty()) {  // proven on its bytes, held while it is proven
      Rewrite whole = rewrite;
      if (!compute_weights(whole, reader, error)) {
        error = "cannot lay out the new weight: " + error;
        return false;
      }
      return prove_rewrite(fix, in, whole, reader, node, seed, record, error, layouts);
    }
    LayoutProofs own;
    LayoutProofs& shared = layouts != nullptr ? *layouts : own;
    if (in.quantised != nullptr) return prove_quantised(fix, in, rewrite, reader, node, seed, shared, record, error);
    return prove(fix, in, rewrite, reader, node, seed, shared, record, error);
  } catch (const std::exception& e) {  // out of memory, an oversized proof input: not proven
    error = std::string("internal error: ") + e.what();
    return false;
  }
}





}  // namespace bpulint
