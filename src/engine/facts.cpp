#include "bpulint/facts.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <functional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "bpulint/graph_walk.h"
#include "bpulint/guarded_inference.h"
#include "bpulint/name_table.h"
#include "shape_values.h"

namespace bpulint {
namespace {

// What the walker knows about a value name in the current graph.
struct ValueFacts {
  const onnx::TypeProto* type = nullptr;
  bool is_const = false;       // known before runtime (see TensorFacts::is_const)
  bool shape_derived = false;  // computed from a dynamic dim: runtime shape arithmetic
  bool from_1d_2d_input = false;  // see TensorFacts::from_1d_2d_input
  const onnx::TensorProto* data = nullptr;  // small constant data shape inference may read (Reshape's shape)
  const IntValues* values = nullptr;        // integer values the walk computed
  uint32_t cause = 0;                       // root cause of what is unknown about it
  uint32_t producer = 0;                    // the writing node (see TensorFacts::producer)
  const onnx::TensorProto* initializer = nullptr;  // when it is one (of this graph)
  const onnx::NodeProto* producer_node = nullptr;  // see TensorFacts::producer_node
};

// A node's input or output as the rules see it: what the walk knows of the value.
TensorFacts tensor_facts(std::string_view name, const ValueFacts& v) {
  TensorFacts t;
  t.name = name;
  t.type = v.type;
  t.is_const = v.is_const;
  t.shape_derived = v.shape_derived;
  t.from_1d_2d_input = v.from_1d_2d_input;
  t.data = v.data;
  t.values = v.values;
  t.cause = v.cause;
  t.producer = v.producer;
  t.initializer = v.initializer;
  t.producer_node = v.producer_node;
  return t;
}
// Value name -> facts for one graph.
using Scope = NameTable<ValueFacts>;

// Subgraphs see the values of every enclosing graph; a chain of scopes avoids
// copying the outer graph's (possibly huge) table for each subgraph.
struct ScopeChain {
  const Scope* local;
  const ScopeChain* parent;
  const ValueFacts* find(std::string_view name) const {
    for (const ScopeChain* s = this; s != nullptr; s = s->parent) {
      if (const ValueFacts* v = s->local->find(name)) return v;
    }
    return nullptr;
  }
};


bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

bool rank_1_or_2(const onnx::TypeProto* t) {
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return false;
  const int rank = t->tensor_type().shape().dim_size();
  return rank == 1 || rank == 2;
}

bool has_inline_data(const onnx::TensorProto& t) {
  return t.data_location() != onnx::TensorProto::EXTERNAL && t.external_data_size() == 0;
}

// The InferenceContext ONNX's per-op functions expect, over borrowed data:
// no model copy, no value_info written back.
class NodeContext final : public onnx::InferenceContext {
 public:
  // `outputs`: empty types, one per node output, that inference fills in
  // (the walk's scratch; what it keeps goes to the TypeStore).
  NodeContext(const onnx::NodeProto& node, const std::vector<const ValueFacts*>& inputs,
              const std::vector<onnx::TypeProto*>& outputs)
      : node_(node), inputs_(inputs), outputs_(outputs) {}

  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    for (const auto& a : node_.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  size_t getNumInputs() const override { return inputs_.size(); }
  const onnx::TypeProto* getInputType(size_t i) const override {
    if (i >= inputs_.size()) fail_shape_inference("input ", i, " out of range");
    return inputs_[i] ? inputs_[i]->type : nullptr;
  }
  const onnx::TensorProto* getInputData(size_t i) const override {
    if (i >= inputs_.size()) fail_shape_inference("input ", i, " out of range");
    data_read_ |= i < 64 ? uint64_t{1} << i : ~uint64_t{0};
    return inputs_[i] ? inputs_[i]->data : nullptr;
  }
  size_t getNumOutputs() const override { return outputs_.size(); }
  onnx::TypeProto* getOutputType(size_t i) override {
    if (i >= outputs_.size()) fail_shape_inference("output ", i, " out of range");
    return outputs_[i];
  }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override { return nullptr; }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }

  // Bit i: inference read input i's data (all bits: an input past the 64th).
  uint64_t data_read() const { return data_read_; }

 private:
  const onnx::NodeProto& node_;
  const std::vector<const ValueFacts*>& inputs_;
  const std::vector<onnx::TypeProto*>& outputs_;
  mutable uint64_t data_read_ = 0;
};

// Inference results by everything inference can see of a node: its schema,
// attributes, which inputs and outputs are named, the input types (kept
// types are shared, so equal pointers mean equal types) and the data of the
// inputs whose data it read. A network repeats a few blocks many times, and
// Verify plus an inference function cost more than the rest of a node's walk.
// A hit gives the same kept types a fresh run would (equal types are stored
// once). Only successes are kept: a failure's message is made again.
class InferenceMemo {
 public:
  // The current node's key; false when the node is not memoized (tensor or
  // graph attributes, more than 64 inputs).
  bool make_key(const onnx::OpSchema* schema, const onnx::NodeProto& node,
                const std::vector<const ValueFacts*>& inputs) {
    key_.clear();
    if (inputs.size() > 64) return false;
    put(schema);
    put(static_cast<uint32_t>(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      key_.push_back(node.input(static_cast<int>(i)).empty() ? '\0' : '\1');
      put(inputs[i] != nullptr ? inputs[i]->type : nullptr);
    }
    put(static_cast<uint32_t>(node.output_size()));
    for (const auto& o : node.output()) key_.push_back(o.empty() ? '\0' : '\1');
    for (const auto& a : node.attribute()) {
      if (a.has_t() || a.has_g() || a.has_sparse_tensor() || a.has_tp() || a.tensors_size() > 0 ||
          a.graphs_size() > 0 || a.sparse_tensors_size() > 0 || a.type_protos_size() > 0 || a.has_ref_attr_name()) {
        return false;
      }
      put_text(a.name());
      put(static_cast<int32_t>(a.type()));
      key_.push_back(static_cast<char>((a.has_type() ? 1 : 0) | (a.has_f() ? 2 : 0) | (a.has_i() ? 4 : 0) |
                                       (a.has_s() ? 8 : 0)));
      put(a.f());
      put(a.i());
      put_text(a.s());
      put(static_cast<uint32_t>(a.ints_size()));
      for (int64_t v : a.ints()) put(v);
      put(static_cast<uint32_t>(a.floats_size()));
      for (float v : a.floats()) put(v);
      put(static_cast<uint32_t>(a.strings_size()));
      for (const auto& v : a.strings()) put_text(v);
    }
    return true;
  }

  // The kept output types of an earlier node with this key whose read data
  // are the same objects; false when there is none.
  bool find(const std::vector<const ValueFacts*>& inputs, std::vector<const onnx::TypeProto*>& outputs) const {
    const auto it = entries_.find(key_);
    if (it == entries_.end()) return false;
    for (const Entry& e : it->second) {
      if (same_data(e, inputs)) {
        outputs = e.outputs;
        return true;
      }
    }
    return false;
  }

  void add(uint64_t data_read, const std::vector<const ValueFacts*>& inputs,
           const std::vector<const onnx::TypeProto*>& outputs) {
    auto& list = entries_[key_];
    if (list.size() >= kMaxEntriesPerKey) return;  // data that differs node by node: not worth keeping
    Entry e{data_read, {}, outputs};
    for (size_t i = 0; i < inputs.size(); ++i) e.data.push_back(data_of(inputs[i]));
    list.push_back(std::move(e));
  }

 private:
  static constexpr size_t kMaxEntriesPerKey = 8;
  struct Entry {
    uint64_t data_read;
    std::vector<const onnx::TensorProto*> data;  // per input; compared where read
    std::vector<const onnx::TypeProto*> outputs;
  };
  static const onnx::TensorProto* data_of(const ValueFacts* v) { return v != nullptr ? v->data : nullptr; }
  static bool same_data(const Entry& e, const std::vector<const ValueFacts*>& inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if ((e.data_read >> i & 1) != 0 && e.data[i] != data_of(inputs[i])) return false;
    }
    return true;
  }
  template <class T>
  void put(const T& v) {
    key_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_text(const std::string& text) {
    put(static_cast<uint32_t>(text.size()));
    key_ += text;
  }

  std::string key_;
  std::unordered_map<std::string, std::vector<Entry>> entries_;
};

// Types the walk keeps, each distinct one stored once on the facts' arena: a
// 100k-node graph has a handful of distinct shapes, and a TypeProto per
// value (inferred outputs, initializers) was a fifth of a lint's memory.
// Types are read-only once stored, so values share them.
class TypeStore {
 public:
  explicit TypeStore(google::protobuf::Arena* arena) : arena_(arena) {}

  const onnx::TypeProto* keep(const onnx::TypeProto& type) {
    key_.clear();
    if (!type.SerializeToString(&key_)) return copy(type);
    auto [it, inserted] = stored_.try_emplace(key_, nullptr);
    if (inserted) it->second = copy(type);
    return it->second;
  }

 private:
  const onnx::TypeProto* copy(const onnx::TypeProto& type) {
    auto* t = google::protobuf::Arena::CreateMessage<onnx::TypeProto>(arena_);
    *t = type;
    return t;
  }

  google::protobuf::Arena* arena_;
  std::string key_;  // the serialized type: equal bytes, equal type
  std::unordered_map<std::string, const onnx::TypeProto*> stored_;
};

// Ops whose outputs differ from run to run: never constant-folded.
bool is_random(std::string_view op) {
  return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
         op == "Multinomial" || op == "Bernoulli";
}

// Every dim of a tensor type known: nothing downstream can be unknown because of it.
bool type_complete(const onnx::TypeProto* t) {
  if (t == nullptr) return false;
  if (!t->has_tensor_type()) return t->value_case() != onnx::TypeProto::VALUE_NOT_SET;  // sequences etc.: as good as it gets
  const auto& tensor = t->tensor_type();
  if (tensor.elem_type() == 0 || !tensor.has_shape()) return false;
  for (const auto& d : tensor.shape().dim()) {
    if (!d.has_dim_value()) return false;
  }
  return true;
}

std::string dims_text(const onnx::TypeProto* t, bool for_pin) {
  std::string out;
  for (const auto& d : t->tensor_type().shape().dim()) {
    if (!out.empty()) out += for_pin ? "x" : ", ";
    if (d.has_dim_value()) out += std::to_string(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty()) out += for_pin ? "<" + d.dim_param() + ">" : d.dim_param();
    else out += for_pin ? "<?>" : "?";
  }
  return for_pin ? out : "[" + out + "]";
}

class Walker {
 public:
  Walker(const onnx::ModelProto& model, ModelFacts& out, FactProgress* progress, bool memoize)
      : out_(out), progress_(progress), types_(out.arena.get()), memoize_(memoize), ir_version_(model.ir_version()) {
    for (const auto& imp : model.opset_import()) {
      opsets_[is_default_domain(imp.domain()) ? "" : imp.domain()] = imp.version();
    }
  }

  // `pinned`: --input-shape types for the main graph's inputs. The order is
  // walk_graph's, shared with every stage that indexes nodes by walk order.
  void walk(const onnx::GraphProto& main, const std::string& path,
            const std::map<std::string, const onnx::TypeProto*>& pinned) {
    walk_graph(
        main,
        [&](const onnx::GraphProto& graph, const GraphSite<const onnx::NodeProto>& site, auto&& nodes) {
          if (site.owner == nullptr) return enter(graph, path, nullptr, site, pinned, -1, nodes);
          // The owner is the node the enclosing graph visited last.
          const Frame& up = frames_.back();
          const std::string owner_path =
              NodeFacts::node_path(up.path, out_.nodes[static_cast<size_t>(up.self)].display_name);
          enter(graph, owner_path + site.suffix(), up.chain, site, {}, up.self, nodes);
        },
        [&](const onnx::NodeProto& node, int i) { visit(node, i); });
  }

  size_t contradictions() const { return contradictions_; }
  const std::string& first_contradiction() const { return first_contradiction_; }

 private:
  // The graph being walked: its values live while its nodes are visited.
  struct Frame {
    const ScopeChain* chain;
    Scope* scope;
    const std::unordered_map<std::string_view, const onnx::TypeProto*>* declared;
    std::string path;
    size_t graph_id;
    long self = -1;  // walk index of the last node visited here (a subgraph's owner)
  };

  // `parent`: walk index of the node owning this subgraph, -1 for the main graph.
  template <class Nodes>
  void enter(const onnx::GraphProto& graph, const std::string& path, const ScopeChain* outer,
             const GraphSite<const onnx::NodeProto>& site, const std::map<std::string, const onnx::TypeProto*>& pinned,
             long parent, Nodes& nodes) {
    if (site.too_deep) {
      out_.notes.push_back("subgraphs nested deeper than " + std::to_string(kMaxSubgraphDepth) + " levels under " +
                           path + " are not analysed");
      return;
    }
    size_t values = static_cast<size_t>(graph.initializer_size() + graph.input_size());
    for (const auto& node : graph.node()) values += static_cast<size_t>(node.output_size());
    Scope scope(values);
    // The main graph's names, as ONNX's checker requires them (see
    // ModelFacts::main_graph_names_valid): hashed here once for both.
    const bool main = parent < 0;
    bool inserted = false;
    for (const auto& vi : graph.input()) {
      auto pin = pinned.find(vi.name());
      scope.get(vi.name(), &inserted).type = pin != pinned.end() ? pin->second : &vi.type();
      if (main && !inserted) names_valid_ = false;  // an input listed twice
    }
    for (const auto& init : graph.initializer()) {
      auto& v = scope.get(init.name(), &inserted);
      // Nameless or repeated; before IR 4, an initializer must be a graph input.
      if (main && (init.name().empty() || v.initializer != nullptr || (ir_version_ <= 3 && inserted))) {
        names_valid_ = false;
      }
      v.is_const = true;
      v.initializer = &init;
      if (has_inline_data(init)) v.data = &init;
      if (v.type == nullptr) v.type = type_of(init);
    }
    for (const auto& vi : graph.input()) {
      auto& v = scope[vi.name()];
      if (!v.is_const) v.cause = input_cause(vi.name(), v.type, parent);
      v.from_1d_2d_input = main && !v.is_const && rank_1_or_2(v.type);
    }
    std::unordered_map<std::string_view, const onnx::TypeProto*> declared;
    for (const auto& vi : graph.value_info()) declared[vi.name()] = &vi.type();
    for (const auto& vi : graph.output()) declared.emplace(vi.name(), &vi.type());

    const ScopeChain chain{&scope, outer};
    frames_.push_back({&chain, &scope, &declared, path, graphs_++});
    nodes();
    frames_.pop_back();
    if (main) out_.main_graph_names_valid = names_valid_;
  }

  void visit(const onnx::NodeProto& node, int i) {
    Frame& frame = frames_.back();
    // Each input name is hashed once: the facts and the inference context share the lookup.
    input_facts_.clear();
    for (const auto& n : node.input()) {
      input_facts_.push_back(n.empty() ? nullptr : frame.chain->find(n));
      if (!n.empty() && input_facts_.back() == nullptr && in_main_graph()) names_valid_ = false;  // used before defined
    }
    add_node(node, frame.path, frame.graph_id, static_cast<size_t>(i));
    infer(node, *frame.scope, *frame.declared);
    if (progress_ != nullptr) progress_->publish(out_.nodes.size());
    frame.self = static_cast<long>(out_.nodes.size() - 1);
  }

  // Visiting a node of the main graph (its names are checked for the ONNX checker).
  bool in_main_graph() const { return frames_.size() == 1; }

  onnx::TypeProto* new_type() { return google::protobuf::Arena::CreateMessage<onnx::TypeProto>(out_.arena.get()); }

  // `n` empty types for inference to fill; the same messages node after node.
  const std::vector<onnx::TypeProto*>& clear_scratch_outputs(size_t n) {
    while (scratch_types_.size() < n) scratch_types_.push_back(std::make_unique<onnx::TypeProto>());
    scratch_outputs_.clear();
    for (size_t i = 0; i < n; ++i) {
      scratch_types_[i]->Clear();
      scratch_outputs_.push_back(scratch_types_[i].get());
    }
    return scratch_outputs_;
  }

  uint32_t add_cause(RootCause c) {
    out_.causes.push_back(std::move(c));
    return static_cast<uint32_t>(out_.causes.size());
  }

  // A graph input whose type leaves something unknown starts a root cause;
  // its symbolic dims lead back to it wherever they travel.
  uint32_t input_cause(const std::string& name, const onnx::TypeProto* type, long parent) {
    if (type_complete(type)) return 0;
    RootCause c;
    c.node = parent;
    c.input = name;
    if (parent >= 0) {
      c.kind = CauseKind::NotInferred;
      c.detail = "the type of subgraph input '" + name + "' is not fully known";
      return add_cause(std::move(c));
    }
    if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape() ||
        type->tensor_type().elem_type() == 0) {
      c.kind = CauseKind::MissingInputType;
      c.detail = "input '" + name + "' has no " +
                 (type == nullptr || !type->has_tensor_type() || type->tensor_type().elem_type() == 0 ? "type" : "shape");
      c.hint = type != nullptr && type->has_tensor_type() && type->tensor_type().elem_type() != 0
                   ? "pin its shape with --input-shape " + name + "=DIMxDIMx..."
                   : "";
      return add_cause(std::move(c));
    }
    c.kind = CauseKind::DynamicInput;
    c.detail = "input '" + name + "' has dynamic dims " + dims_text(type, false);
    c.hint = "pin it with --input-shape " + name + "=" + dims_text(type, true) +
             " (the static shape you deploy; Horizon compiles static shapes)";
    const uint32_t id = add_cause(std::move(c));
    for (const auto& d : type->tensor_type().shape().dim()) {
      if (d.has_dim_param() && !d.dim_param().empty()) symbol_causes_.emplace(d.dim_param(), id);
    }
    return id;
  }

  // Initializers without value_info still have a type: synthesised from the
  // dtype and dims, and looked up by them (a big graph has 100,000
  // initializers of a few shapes: a message built per initializer only to
  // find the kept type cost more than the lookup).
  const onnx::TypeProto* type_of(const onnx::TensorProto& init) {
    std::string& key = init_type_key_;
    key.clear();
    const int32_t dtype = init.data_type();
    key.append(reinterpret_cast<const char*>(&dtype), sizeof dtype);
    for (int64_t d : init.dims()) key.append(reinterpret_cast<const char*>(&d), sizeof d);
    auto [it, inserted] = init_types_.try_emplace(key, nullptr);
    if (!inserted) return it->second;
    onnx::TypeProto& t = scratch_init_type_;
    t.Clear();
    t.mutable_tensor_type()->set_elem_type(dtype);
    auto* shape = t.mutable_tensor_type()->mutable_shape();
    for (int64_t d : init.dims()) shape->add_dim()->set_dim_value(d);
    it->second = types_.keep(t);
    return it->second;
  }

  // What the toolchain does with the node before placing it: constant-fold
  // it when every input is known before runtime; leave shape arithmetic on a
  // dynamic dim in the graph as a runtime shape computation.
  Fold decide_fold(const onnx::NodeProto& node, const NodeFacts& f, const onnx::OpSchema* schema, bool has_subgraph) {
    if (!f.domain.empty() || schema == nullptr || has_subgraph || is_random(f.op_type)) return Fold::None;
    if (f.op_type == "Shape" || f.op_type == "Size") {
      const ValueFacts* x = input_facts_.empty() ? nullptr : input_facts_[0];
      if (x == nullptr || x->type == nullptr || !x->type->has_tensor_type() || !x->type->tensor_type().has_shape()) {
        return Fold::None;
      }
      if (f.op_type == "Shape") {
        IntValues dims;
        const std::vector<const onnx::TypeProto*> types = {x->type};
        if (propagate_values(node, f.opset, {nullptr}, types, dims)) return dims.all_known() ? Fold::Constant : Fold::RuntimeShape;
        return Fold::None;
      }
      return type_complete(x->type) ? Fold::Constant : Fold::RuntimeShape;
    }
    bool all_const = true, any_shape = false, const_or_shape = true;
    for (int k = 0; k < node.input_size(); ++k) {
      if (node.input(k).empty()) continue;
      const ValueFacts* v = input_facts_[static_cast<size_t>(k)];
      const bool c = v != nullptr && v->is_const;
      const bool s = v != nullptr && v->shape_derived;
      all_const = all_const && c;
      any_shape = any_shape || s;
      const_or_shape = const_or_shape && (c || s);
    }
    if (all_const) return Fold::Constant;
    return const_or_shape && any_shape ? Fold::RuntimeShape : Fold::None;
  }

  // The values shape arithmetic reads, for every input: computed by the walk,
  // or read from small constant data (decoded once per tensor).
  ValueInputs value_inputs() {
    ValueInputs in;
    in.reserve(input_facts_.size());
    for (const ValueFacts* v : input_facts_) {
      if (v != nullptr && v->values != nullptr) {
        in.push_back(v->values);
      } else if (v != nullptr && v->data != nullptr) {
        in.push_back(decoded(*v->data));
      } else {
        in.push_back(nullptr);
      }
    }
    return in;
  }

  // A constant tensor's integer values, decoded once per tensor (a graph's
  // Reshapes share a few target shapes); nullptr when they are not integers.
  const IntValues* decoded(const onnx::TensorProto& t) {
    auto [it, inserted] = decoded_.try_emplace(&t, nullptr);
    if (inserted) {
      IntValues v;
      if (values_of_tensor(t, v)) it->second = &decoded_store_.emplace_back(std::move(v));
    }
    return it->second;
  }

  std::vector<const onnx::TypeProto*> input_types() const {
    std::vector<const onnx::TypeProto*> types;
    types.reserve(input_facts_.size());
    for (const ValueFacts* v : input_facts_) types.push_back(v != nullptr ? v->type : nullptr);
    return types;
  }

  // A Conv or ConvTranspose whose input type is missing still has an output
  // of the weight's rank, with the output channels the weight gives.
  const onnx::TypeProto* conv_output_from_weight(const NodeFacts& f, const onnx::NodeProto& node) {
    if (!f.domain.empty() || (f.op_type != "Conv" && f.op_type != "ConvTranspose") || input_facts_.size() < 2) {
      return nullptr;
    }
    const ValueFacts* w = input_facts_[1];
    if (w == nullptr || w->type == nullptr || !w->type->has_tensor_type() || !w->type->tensor_type().has_shape()) {
      return nullptr;
    }
    const auto& wshape = w->type->tensor_type().shape();
    if (wshape.dim_size() < 3) return nullptr;
    auto* t = new_type();
    auto* tensor = t->mutable_tensor_type();
    tensor->set_elem_type(w->type->tensor_type().elem_type());
    auto* shape = tensor->mutable_shape();
    const ValueFacts* x = input_facts_[0];
    if (x != nullptr && x->type != nullptr && x->type->has_tensor_type() && x->type->tensor_type().has_shape() &&
        x->type->tensor_type().shape().dim_size() == wshape.dim_size()) {
      *shape->add_dim() = x->type->tensor_type().shape().dim(0);
    } else {
      shape->add_dim();
    }
    int64_t group = 1;
    for (const auto& a : node.attribute()) {
      if (a.name() == "group" && a.type() == onnx::AttributeProto::INT) group = a.i();
    }
    const auto& c = wshape.dim(f.op_type == "Conv" ? 0 : 1);
    int64_t channels = 0;
    if (c.has_dim_value() && group > 0 && !__builtin_mul_overflow(c.dim_value(), f.op_type == "Conv" ? 1 : group, &channels)) {
      shape->add_dim()->set_dim_value(channels);
    } else {
      shape->add_dim();
    }
    for (int d = 2; d < wshape.dim_size(); ++d) shape->add_dim();
    return t;
  }

  // Runs ONNX's inference function for the node and records its output types;
  // where inference gives nothing, a declared value_info is the fallback.
  // Then the walk's own additions: integer values of shape arithmetic,
  // shapes from symbolic values, and where each unknown comes from.
  void infer(const onnx::NodeProto& node, Scope& scope,
             const std::unordered_map<std::string_view, const onnx::TypeProto*>& declared) {
    NodeFacts& f = out_.nodes.back();
    const OpTraits& traits = op_traits(f);
    const bool is_constant = f.domain.empty() && node.op_type() == "Constant";
    // Kept types; nullptr = nothing inferred. One buffer for the walk (infer
    // is not reentrant: subgraphs are walked after their owner's visit).
    std::vector<const onnx::TypeProto*>& inferred = scratch_inferred_;
    inferred.clear();
    const onnx::OpSchema* schema = current_schema_;
    const bool has_subgraph = current_has_subgraph_;
    const ValueFacts* first_input = input_facts_.empty() ? nullptr : input_facts_[0];
    std::string failure;
    if (schema != nullptr && !has_subgraph && node.output_size() == 1 && first_input != nullptr &&
        first_input->type != nullptr && traits.keeps_input_type) {
      // ONNX infers these ops by copying input 0's type; sharing the pointer
      // does the same without a context, a copy or an allocation.
      shared_output_type_ = first_input->type;
    } else if (schema != nullptr && !has_subgraph) {
      const bool memoized = memoize_ && memo_.make_key(schema, node, input_facts_);
      if (!memoized || !memo_.find(input_facts_, inferred)) {
        NodeContext ctx(node, input_facts_, clear_scratch_outputs(static_cast<size_t>(node.output_size())));
        try {
          schema->Verify(node);  // arity and attribute types, which the functions assume
          schema->GetTypeAndShapeInferenceFunction()(ctx);
          for (const onnx::TypeProto* t : scratch_outputs_) {
            inferred.push_back(t->value_case() == onnx::TypeProto::VALUE_NOT_SET ? nullptr : types_.keep(*t));
          }
          if (memoized) memo_.add(ctx.data_read(), input_facts_, inferred);
        } catch (const std::exception& e) {
          failure = first_line(e.what());
        }
      }
    }

    // Shape arithmetic: only where an input carries integer values (or the
    // op reads shapes), which keeps the walk of a big float graph as cheap as before.
    const IntValues* out_values = nullptr;
    const onnx::TypeProto* symbolic_type = nullptr;
    const bool value_op = traits.value_op;
    const bool shaped_by_values = traits.shaped_by_values;
    if ((value_op || shaped_by_values) && failure.empty() && node.output_size() >= 1 && wants_values(f.op_type)) {
      const ValueInputs values = value_inputs();
      const auto types = input_types();
      IntValues computed;
      if (value_op && propagate_values(node, f.opset, values, types, computed)) {
        out_.int_values.push_back(std::move(computed));
        out_values = &out_.int_values.back();
      }
      onnx::TypeProto from_values;
      const bool symbolic = std::any_of(values.begin(), values.end(), [](const IntValues* v) { return v && !v->all_known(); });
      if (shaped_by_values && symbolic && shape_from_values(node, f.opset, values, types, from_values)) {
        auto* t = new_type();
        *t = std::move(from_values);
        symbolic_type = t;
      }
    }

    // Arithmetic on a dynamic dim whose result does not depend on it (the
    // static dims of Shape(x)[1:]) is a constant after all.
    if (f.fold == Fold::RuntimeShape && out_values != nullptr && out_values->all_known() && node.output_size() == 1) {
      f.fold = Fold::Constant;
    }
    const size_t first = out_.tensors.size();
    uint32_t node_cause = 0;  // created at most once per node
    const bool from_1d_2d = feeds_from_1d_2d_input();
    for (int o = 0; o < node.output_size(); ++o) {
      const std::string& name = node.output(o);
      if (name.empty()) {
        add_tensor({});
        continue;
      }
      bool inserted = false;
      ValueFacts& v = scope.get(name, &inserted);
      if (!inserted && in_main_graph()) names_valid_ = false;  // a second writer of the value
      v.is_const = is_constant || f.fold == Fold::Constant;
      v.shape_derived = f.fold == Fold::RuntimeShape;
      if (is_constant && node.attribute_size() == 1 && node.attribute(0).has_t() && has_inline_data(node.attribute(0).t())) {
        v.data = &node.attribute(0).t();
      }
      const size_t i = static_cast<size_t>(o);
      auto d = declared.find(name);
      const bool was_inferred = shared_output_type_ != nullptr || (i < inferred.size() && inferred[i] != nullptr);
      if (o == 0 && symbolic_type != nullptr) {
        v.type = symbolic_type;
      } else if (was_inferred) {
        v.type = shared_output_type_ != nullptr ? shared_output_type_ : inferred[i];
        if (d != declared.end() && contradicts(*d->second, *v.type) && contradictions_++ == 0) {
          first_contradiction_ = "'" + name + "'";
        }
      } else {
        v.type = d == declared.end() ? nullptr : d->second;
      }
      if (o == 0 && (v.type == nullptr || !v.type->has_tensor_type() || !v.type->tensor_type().has_shape())) {
        if (const onnx::TypeProto* t = conv_output_from_weight(f, node)) v.type = t;
      }
      if (o == 0 && out_values != nullptr) {
        v.values = out_values;
        if (out_values->all_known() && v.data == nullptr) {
          auto* t = google::protobuf::Arena::CreateMessage<onnx::TensorProto>(out_.arena.get());
          materialize(*out_values, *t);
          v.data = t;
        }
      }
      v.cause = output_cause(v, node_cause, failure, schema, has_subgraph);
      v.producer = static_cast<uint32_t>(out_.nodes.size());  // this node, pushed by add_node
      v.producer_node = &node;
      v.from_1d_2d_input = from_1d_2d && !v.is_const && rank_1_or_2(v.type);
      add_tensor(tensor_facts(name, v));
    }
    f.outputs = TensorList(out_.tensors.data() + first, out_.tensors.size() - first);
    shared_output_type_ = nullptr;
  }

  // Whether the node's outputs carry from_1d_2d_input on (if rank 1 or 2).
  bool feeds_from_1d_2d_input() const {
    return std::any_of(input_facts_.begin(), input_facts_.end(),
                       [](const ValueFacts* v) { return v != nullptr && v->from_1d_2d_input; });
  }

  bool wants_values(const std::string& op) const {
    if (op == "Shape" || op == "Size" || op == "Constant") return true;
    return std::any_of(input_facts_.begin(), input_facts_.end(),
                       [](const ValueFacts* v) { return v != nullptr && (v->values != nullptr || v->data != nullptr); });
  }

  // Where an output's unknowns come from: an input's cause, the graph input
  // a symbolic dim belongs to, or this node.
  uint32_t output_cause(const ValueFacts& v, uint32_t& node_cause, const std::string& failure,
                        const onnx::OpSchema* schema, bool has_subgraph) {
    if (type_complete(v.type) && (v.values == nullptr || v.values->all_known())) return 0;
    for (const ValueFacts* in : input_facts_) {
      if (in != nullptr && in->cause != 0) return in->cause;
    }
    if (v.type != nullptr && v.type->has_tensor_type()) {
      for (const auto& d : v.type->tensor_type().shape().dim()) {
        auto it = d.has_dim_param() ? symbol_causes_.find(d.dim_param()) : symbol_causes_.end();
        if (it != symbol_causes_.end()) return it->second;
      }
    }
    if (node_cause != 0) return node_cause;
    const NodeFacts& f = out_.nodes.back();
    RootCause c;
    c.node = static_cast<long>(out_.nodes.size() - 1);
    if (!failure.empty()) {
      c.kind = CauseKind::InferenceFailed;
      c.detail = "ONNX shape inference failed: " + failure;
    } else if (has_subgraph) {
      c.kind = CauseKind::NotInferred;
      c.detail = "the outputs of " + f.op_type + " (a subgraph owner) are not inferred";
    } else if (schema == nullptr) {
      c.kind = CauseKind::NotInferred;
      c.detail = f.domain.empty() ? "the ONNX library has no schema for " + f.op_type + " at opset " +
                                        std::to_string(f.opset)
                                  : "custom-domain op " + f.domain + "::" + f.op_type + " has no shape inference";
    } else {
      c.kind = CauseKind::DataDependent;
      c.detail = "its output shape depends on values computed at runtime";
    }
    node_cause = add_cause(std::move(c));
    return node_cause;
  }

  // What infer() asks of a default-domain op type, worked out on its first
  // node instead of by string sets and compares on every node.
  struct OpTraits {
    bool keeps_input_type = false;
    bool value_op = false;
    bool shaped_by_values = false;
  };
  const OpTraits& op_traits(const NodeFacts& f) {
    static const OpTraits kNone;
    if (!f.domain.empty()) return kNone;
    bool inserted = false;
    OpTraits& t = op_traits_.get(f.proto->op_type(), &inserted);
    if (inserted) t = {keeps_input_type(f.op_type), is_value_op(f.op_type), is_shaped_by_values(f.op_type)};
    return t;
  }

  // Default-domain ops whose single output has exactly input 0's type and shape
  // (their ONNX inference is propagateShapeAndTypeFromFirstInput).
  static bool keeps_input_type(std::string_view op) {
    static const std::unordered_set<std::string_view> kOps = {
        "Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish",
        "Softplus", "Softsign", "ThresholdedRelu", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Floor",
        "Ceil", "Round", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
        "Atanh", "Sign", "Identity", "Dropout", "BatchNormalization", "Softmax", "LogSoftmax",
        "InstanceNormalization", "LpNormalization", "Clip", "Shrink", "HardMax", "Hardmax"};
    return kOps.count(op) > 0;
  }

  // A declared shape whose rank or static dims differ from the inferred one.
  static bool contradicts(const onnx::TypeProto& declared, const onnx::TypeProto& inferred) {
    if (!declared.has_tensor_type() || !inferred.has_tensor_type()) return false;
    const auto& a = declared.tensor_type();
    const auto& b = inferred.tensor_type();
    if (!a.has_shape() || !b.has_shape()) return false;
    if (a.shape().dim_size() != b.shape().dim_size()) return true;
    for (int i = 0; i < a.shape().dim_size(); ++i) {
      const auto& x = a.shape().dim(i);
      const auto& y = b.shape().dim(i);
      if (x.has_dim_value() && y.has_dim_value() && x.dim_value() != y.dim_value()) return true;
    }
    return false;
  }

  static std::string first_line(std::string s) {
    if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
    return s;
  }

  void add_node(const onnx::NodeProto& node, const std::string& path, size_t graph_id, size_t index) {
    NodeFacts f;
    f.graph_path = path;
    f.name = node.name();
    if (node.name().empty()) {
      f.display_name = out_.made_names.emplace_back(node.op_type() + "_" + std::to_string(index));
    } else {
      f.display_name = node.name();
    }
    f.index_in_graph = index;
    f.walk_order = out_.nodes.size();
    f.graph_id = graph_id;
    f.op_type = node.op_type();
    f.domain = is_default_domain(node.domain()) ? "" : node.domain();
    auto it = opsets_.find(f.domain);
    f.opset = it == opsets_.end() ? 0 : it->second;
    f.proto = &node;
    current_schema_ = schema_for(f);
    current_has_subgraph_ = std::any_of(node.attribute().begin(), node.attribute().end(), [](const auto& a) {
      return a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS;
    });
    f.fold = decide_fold(node, f, current_schema_, current_has_subgraph_);
    const size_t first = out_.tensors.size();
    for (int k = 0; k < node.input_size(); ++k) {
      const ValueFacts* v = input_facts_[static_cast<size_t>(k)];
      if (v == nullptr) {
        add_tensor(tensor_facts(node.input(k), ValueFacts{}));
      } else {
        add_tensor(tensor_facts(node.input(k), *v));
      }
    }
    f.inputs = TensorList(out_.tensors.data() + first, out_.tensors.size() - first);
    out_.nodes.push_back(std::move(f));
  }

  // Never past the capacity reserved from the node count: the views of
  // earlier nodes (read by the rule checks meanwhile) must not move.
  void add_tensor(TensorFacts t) {
    if (out_.tensors.size() == out_.tensors.capacity()) throw std::logic_error("walk: more tensors than counted");
    out_.tensors.push_back(t);
  }

  // A model's opsets are fixed, so a default-domain op type has one schema
  // throughout: looked up once per op type, not once per node.
  const onnx::OpSchema* schema_for(const NodeFacts& f) {
    if (f.opset <= 0) return nullptr;
    if (!f.domain.empty()) return guarded_schema_registry().GetSchema(f.op_type, static_cast<int>(f.opset), f.domain);
    bool inserted = false;
    const onnx::OpSchema*& schema = default_schemas_.get(f.proto->op_type(), &inserted);
    if (inserted) schema = guarded_schema_registry().GetSchema(f.op_type, static_cast<int>(f.opset), f.domain);
    return schema;
  }

  ModelFacts& out_;
  FactProgress* progress_;
  TypeStore types_;
  InferenceMemo memo_;
  bool memoize_;
  std::vector<std::unique_ptr<onnx::TypeProto>> scratch_types_;  // inference output, reused per node
  std::vector<onnx::TypeProto*> scratch_outputs_;
  std::vector<const onnx::TypeProto*> scratch_inferred_;  // infer()'s kept output types
  onnx::TypeProto scratch_init_type_;
  std::unordered_map<const onnx::TensorProto*, const IntValues*> decoded_;  // see decoded()
  std::deque<IntValues> decoded_store_;
  std::string init_type_key_;                                           // type_of's scratch
  std::unordered_map<std::string, const onnx::TypeProto*> init_types_;  // dtype + dims -> kept type
  NameTable<const onnx::OpSchema*> default_schemas_{64};  // by op type (views into the model)
  NameTable<OpTraits> op_traits_{64};                      // default-domain op types, as above
  std::map<std::string, int64_t> opsets_;
  size_t graphs_ = 0;
  std::vector<Frame> frames_;  // the graphs being walked, innermost last
  const onnx::TypeProto* shared_output_type_ = nullptr;  // set by infer() for type-keeping ops
  const onnx::OpSchema* current_schema_ = nullptr;       // the current node's, set by add_node
  bool current_has_subgraph_ = false;
  std::vector<const ValueFacts*> input_facts_;            // the current node's inputs, looked up once
  std::unordered_map<std::string, uint32_t> symbol_causes_;  // dim_param -> the graph input's cause
  size_t contradictions_ = 0;
  std::string first_contradiction_;
  const int64_t ir_version_;
  bool names_valid_ = true;  // the main graph's, so far
};

// ---- the on-demand record -------------------------------------------------

Value shape_value(const onnx::TypeProto* type, Value* rank) {
  if (type == nullptr || !type->has_tensor_type()) {
    *rank = Value::unknown("no type information");
    return Value::unknown("no type information");
  }
  const auto& tensor = type->tensor_type();
  if (!tensor.has_shape()) {
    *rank = Value::unknown("shape not inferred");
    return Value::unknown("shape not inferred");
  }
  std::vector<Value> dims;
  dims.reserve(static_cast<size_t>(tensor.shape().dim_size()));
  for (const auto& dim : tensor.shape().dim()) {
    if (dim.has_dim_value()) {
      dims.push_back(Value::of_int(dim.dim_value()));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      dims.push_back(Value::unknown("dynamic dim '" + dim.dim_param() + "'"));
    } else {
      dims.push_back(Value::unknown("dim not inferred"));
    }
  }
  *rank = Value::of_int(static_cast<int64_t>(dims.size()));
  return Value::of_list(std::move(dims));
}

// Small integer constants (axes, shapes, pads given as inputs) as a list.
Value constant_value(const TensorFacts& t) {
  constexpr int kMaxElements = 64;
  const onnx::TensorProto* d = t.data;
  // Short reasons: this runs for every input of every checked node, and a
  // reason that fits the small-string buffer costs no allocation.
  if (d == nullptr && t.values != nullptr) {  // shape arithmetic with symbolic or unknown elements
    std::vector<Value> items;
    for (const auto& e : t.values->elems) {
      if (e.is_known()) items.push_back(Value::of_int(e.value));
      else if (e.kind == IntElement::Kind::Symbol) items.push_back(Value::unknown("dynamic dim '" + e.symbol + "'"));
      else items.push_back(Value::unknown("not computed"));
    }
    return Value::of_list(std::move(items));
  }
  if (d == nullptr) return Value::unknown("not a constant");
  std::vector<Value> items;
  if (d->data_type() == onnx::TensorProto::INT64) {
    if (!d->raw_data().empty()) {
      if (d->raw_data().size() % 8 != 0 || d->raw_data().size() / 8 > kMaxElements) return Value::unknown("constant too large");
      for (size_t i = 0; i < d->raw_data().size(); i += 8) {
        int64_t v = 0;
        for (int b = 7; b >= 0; --b) v = static_cast<int64_t>((static_cast<uint64_t>(v) << 8) | static_cast<unsigned char>(d->raw_data()[i + static_cast<size_t>(b)]));
        items.push_back(Value::of_int(v));
      }
    } else {
      if (d->int64_data_size() > kMaxElements) return Value::unknown("constant too large");
      for (int64_t v : d->int64_data()) items.push_back(Value::of_int(v));
    }
  } else if (d->data_type() == onnx::TensorProto::INT32 && d->raw_data().empty()) {
    if (d->int32_data_size() > kMaxElements) return Value::unknown("constant too large");
    for (int32_t v : d->int32_data()) items.push_back(Value::of_int(v));
  } else {
    return Value::unknown("not int const");
  }
  return Value::of_list(std::move(items));
}

// The fields of a tensor's record (`input[k].dtype`...): one list for the record and the typed reads.
enum class TensorField { Name, Present, Const, Dtype, Shape, Rank, Value, From1d2dInput, Producer };
const std::vector<std::pair<std::string, TensorField>>& tensor_fields() {
  static const std::vector<std::pair<std::string, TensorField>> kFields = {
      {"name", TensorField::Name},   {"present", TensorField::Present}, {"const", TensorField::Const},
      {"dtype", TensorField::Dtype}, {"shape", TensorField::Shape},     {"rank", TensorField::Rank},
      {"value", TensorField::Value}, {"from_1d_2d_input", TensorField::From1d2dInput},
      {"producer", TensorField::Producer}};
  return kFields;
}

// The facts NodeFactSource answers itself, by interned id: the names
// node_record reserves (reserved_node_facts; a test checks both agree) and
// the attributes convolution defaults resolve together.
enum ReservedFact { kOp, kDomain, kOpset, kName, kOpClass, kMaxRank, kInput, kOutput, kKernelShape, kStrides,
                    kDilations, kOutputPadding, kPads, kNotReserved };
ReservedFact reserved_fact(FactId id) {
  static const std::vector<FactId> kIds = [] {
    std::vector<FactId> ids;
    for (const char* s : {"op", "domain", "opset", "name", "op_class", "max_rank", "input", "output", "kernel_shape",
                          "strides", "dilations", "output_padding", "pads"}) {
      ids.push_back(intern_fact(s));
    }
    return ids;
  }();
  return static_cast<ReservedFact>(std::find(kIds.begin(), kIds.end(), id) - kIds.begin());
}

// One field of a tensor's record; tensor_record is these fields together.
Value tensor_field(const TensorFacts& t, TensorField field) {
  switch (field) {
    case TensorField::Name: return Value::of_string(std::string(t.name));
    case TensorField::Present: return Value::of_bool(!t.name.empty());
    case TensorField::Producer:
      // The op type of the node that writes it; "" for a model input or an initializer.
      return Value::of_string(t.producer_node != nullptr ? t.producer_node->op_type() : std::string());
    case TensorField::Const:
      return t.shape_derived ? Value::unknown("computed from a dynamic dim: constant once the input is pinned")
                             : Value::of_bool(t.is_const);
    default: break;
  }
  if (t.name.empty()) return Value::unknown("optional input not present");
  Value rank;
  switch (field) {
    case TensorField::Dtype:
      if (t.type != nullptr && t.type->has_tensor_type() && t.type->tensor_type().elem_type() != 0) {
        return Value::of_string(dtype_name(t.type->tensor_type().elem_type()));
      }
      return Value::unknown("type of '" + std::string(t.name) + "' not known");
    case TensorField::Shape: return shape_value(t.type, &rank);
    case TensorField::Rank: shape_value(t.type, &rank); return rank;
    case TensorField::From1d2dInput: return Value::of_bool(t.from_1d_2d_input);
    default: return constant_value(t);
  }
}

Value tensor_record(const TensorFacts& t) {
  // Filled in name order, as a record keeps its fields: no search, no shifting.
  static const std::vector<std::pair<std::string, TensorField>> kSorted = [] {
    auto fields = tensor_fields();
    std::sort(fields.begin(), fields.end());
    return fields;
  }();
  Value record = Value::of_record({});
  Value::Fields& fields = record.fields();
  for (const auto& [name, field] : kSorted) fields.emplace_back(name, tensor_field(t, field));
  return record;
}

// Highest rank among the node's present tensors; unknown if any rank is.
// A known rank is a lower bound of the maximum even when others are unknown,
// so it is returned when the rules' limit is exceeded anyway (> 10).
Value max_rank(const NodeFacts& n) {
  int64_t best = 0;
  std::string unknown;
  for (const auto* list : {&n.inputs, &n.outputs}) {
    for (const auto& t : *list) {
      if (t.name.empty()) continue;
      if (t.type == nullptr || !t.type->has_tensor_type() || !t.type->tensor_type().has_shape()) {
        if (unknown.empty()) unknown = t.name;
        continue;
      }
      best = std::max<int64_t>(best, t.type->tensor_type().shape().dim_size());
    }
  }
  if (!unknown.empty() && best <= 10) return Value::unknown("rank of '" + unknown + "' unknown");
  return Value::of_int(best);
}

Value attribute_value(const onnx::AttributeProto& attr) {
  using A = onnx::AttributeProto;
  switch (attr.type()) {
    case A::INT: return Value::of_int(attr.i());
    case A::FLOAT: return Value::of_float(attr.f());
    case A::STRING: return Value::of_string(attr.s());
    case A::INTS: {
      std::vector<Value> items;
      for (int64_t v : attr.ints()) items.push_back(Value::of_int(v));
      return Value::of_list(std::move(items));
    }
    case A::FLOATS: {
      std::vector<Value> items;
      for (float v : attr.floats()) items.push_back(Value::of_float(v));
      return Value::of_list(std::move(items));
    }
    case A::STRINGS: {
      std::vector<Value> items;
      for (const auto& v : attr.strings()) items.push_back(Value::of_string(v));
      return Value::of_list(std::move(items));
    }
    case A::TENSOR: {
      Value t = Value::of_record({});
      t.set("dtype", Value::of_string(dtype_name(attr.t().data_type())));
      std::vector<Value> dims;
      for (int64_t d : attr.t().dims()) dims.push_back(Value::of_int(d));
      t.set("shape", Value::of_list(std::move(dims)));
      return t;
    }
    default:
      return Value::unknown("attribute '" + attr.name() + "' has a type rules cannot read");
  }
}

Value repeat_int(int64_t v, int64_t n) {
  return Value::of_list(std::vector<Value>(static_cast<size_t>(n), Value::of_int(v)));
}

bool is_unset(const Value& rec, const char* name) {
  const Value* v = rec.field(name);
  return v == nullptr || v->is_unknown();
}

// ONNX leaves strides/pads/dilations/kernel_shape of convolution-like ops
// without schema defaults ("defaults to 1 along each axis"); resolve them here
// so rules read the values the operator actually uses.
enum class ConvKind { None, Weighted, Pooling };

ConvKind conv_kind(std::string_view op) {
  static const std::unordered_set<std::string_view> kWeighted = {"Conv", "ConvTranspose", "ConvInteger"};
  static const std::unordered_set<std::string_view> kPooling = {"MaxPool", "AveragePool", "LpPool"};
  if (kWeighted.count(op) > 0) return ConvKind::Weighted;
  return kPooling.count(op) > 0 ? ConvKind::Pooling : ConvKind::None;
}

void resolve_conv_defaults(const std::string& op, Value& rec) {
  const ConvKind kind = conv_kind(op);
  if (kind == ConvKind::None) return;
  const bool weighted = kind == ConvKind::Weighted;

  Value kernel = *rec.field("kernel_shape");
  if (weighted && kernel.is_unknown()) {
    const Value* input = rec.field("input");
    static const std::vector<Value> none;
    const auto& inputs = input != nullptr ? input->items() : none;
    if (inputs.size() > 1) {
      const Value* wshape = inputs[1].field("shape");
      if (wshape != nullptr && wshape->kind() == Value::Kind::List && wshape->items().size() >= 3) {
        kernel = Value::of_list({wshape->items().begin() + 2, wshape->items().end()});
      }
    }
    rec.set("kernel_shape",
            kernel.is_unknown() ? Value::unknown("kernel_shape not set and the weight shape is unknown") : kernel);
  }
  if (kernel.kind() != Value::Kind::List) return;  // spatial rank unknown: leave the rest unknown
  const auto rank = static_cast<int64_t>(kernel.items().size());

  if (is_unset(rec, "strides")) rec.set("strides", repeat_int(1, rank));
  if (op != "AveragePool" && is_unset(rec, "dilations")) rec.set("dilations", repeat_int(1, rank));
  if (op == "ConvTranspose" && is_unset(rec, "output_padding")) rec.set("output_padding", repeat_int(0, rank));
  if (is_unset(rec, "pads")) {
    const Value* auto_pad = rec.field("auto_pad");
    const std::string mode = auto_pad && auto_pad->kind() == Value::Kind::String ? auto_pad->as_string() : "NOTSET";
    if (mode == "NOTSET" || mode == "VALID") {
      if (op == "ConvTranspose" && !is_unset(rec, "output_shape")) {
        rec.set("pads", Value::unknown("pads derived from output_shape"));
      } else {
        rec.set("pads", repeat_int(0, 2 * rank));
      }
    } else {
      rec.set("pads", Value::unknown("pads derived from auto_pad " + mode));
    }
  }
}

bool pin_input_shapes(const onnx::GraphProto& graph, const FactOptions& options, ModelFacts& out,
                      std::map<std::string, const onnx::TypeProto*>& pinned, std::string& error) {
  if (options.input_shapes.empty()) return true;
  // Graph inputs that are initializers are not pinned. Only the few input
  // names are hashed, never the (many) initializers'.
  std::unordered_set<std::string_view> initializers;
  std::unordered_set<std::string_view> input_names;
  for (const auto& vi : graph.input()) input_names.insert(vi.name());
  for (const auto& init : graph.initializer()) {
    if (input_names.count(init.name()) != 0) initializers.insert(init.name());
  }
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& vi : graph.input()) {
    if (initializers.count(vi.name()) == 0) inputs.push_back(&vi);
  }
  for (const auto& pin : options.input_shapes) {
    auto source = options.pin_sources.find(pin.first);
    const std::string from = source != options.pin_sources.end() ? source->second : "--input-shape";
    const onnx::ValueInfoProto* target = nullptr;
    for (const auto* vi : inputs) {
      if (vi->name() == pin.first) target = vi;
    }
    if (pin.first.empty()) {  // "the model's only input"
      if (inputs.size() != 1) {
        error = from + ": an input shape without an input name needs a model with one input (this one has " +
                std::to_string(inputs.size()) + ")";
        return false;
      }
      target = inputs[0];
    }
    if (target == nullptr) continue;  // pins for other models' inputs
    const std::string name = target->name();
    onnx::TypeProto type = target->type();
    auto* shape = type.mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != 0 && shape->dim_size() != static_cast<int>(pin.second.size())) {
      error = from + " " + name + ": rank " + std::to_string(pin.second.size()) + " does not match the model's rank " +
              std::to_string(shape->dim_size());
      return false;
    }
    for (size_t i = 0; i < pin.second.size(); ++i) {
      const int d = static_cast<int>(i);
      if (d < shape->dim_size() && shape->dim(d).has_dim_value() && shape->dim(d).dim_value() != pin.second[i]) {
        error = from + " " + name + ": dim " + std::to_string(i) + " is " + std::to_string(pin.second[i]) +
                " but the model fixes it to " + std::to_string(shape->dim(d).dim_value());
        return false;
      }
    }
    shape->clear_dim();
    for (int64_t d : pin.second) shape->add_dim()->set_dim_value(d);
    auto* owned = google::protobuf::Arena::CreateMessage<onnx::TypeProto>(out.arena.get());
    *owned = std::move(type);
    pinned[name] = owned;
    out.pinned_inputs.push_back(name);
  }
  return true;
}

Value io_list(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values,
              const std::set<std::string>& skip, const std::map<std::string, const onnx::TypeProto*>& known) {
  std::vector<Value> items;
  for (const auto& vi : values) {
    if (skip.count(vi.name()) != 0) continue;
    auto it = known.find(vi.name());
    items.push_back(tensor_record({vi.name(), it != known.end() ? it->second : &vi.type(), false}));
  }
  return Value::of_list(std::move(items));
}

Value model_record(const onnx::ModelProto& model, const ModelFacts& facts,
                   const std::map<std::string, const onnx::TypeProto*>& pinned) {
  const auto& graph = model.graph();
  // Graph inputs that are initializers (older exporters list weights as
  // inputs) are not model inputs. A graph has a few inputs and outputs but
  // may have 100,000 initializers and values: a name whose length matches
  // none of the few is never hashed.
  const auto lengths_of = [](const auto& list) {
    std::set<size_t> lengths;
    for (const auto& vi : list) lengths.insert(vi.name().size());
    return lengths;
  };
  std::unordered_set<std::string_view> input_names;
  for (const auto& vi : graph.input()) input_names.insert(vi.name());
  const std::set<size_t> input_lengths = lengths_of(graph.input());
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) {
    if (input_lengths.count(init.name().size()) != 0 && input_names.count(init.name()) != 0) {
      initializers.insert(init.name());
    }
  }
  Value inputs = io_list(graph.input(), initializers, pinned);
  // Outputs: prefer what inference found for the producing node.
  std::unordered_set<std::string_view> output_names;
  for (const auto& vi : graph.output()) output_names.insert(vi.name());
  const std::set<size_t> output_lengths = lengths_of(graph.output());
  std::map<std::string, const onnx::TypeProto*> produced;
  for (const auto& n : facts.nodes) {
    if (n.graph_id != 0) continue;
    for (const auto& o : n.outputs) {
      if (o.type != nullptr && output_lengths.count(o.name.size()) != 0 && output_names.count(o.name) != 0) {
        produced[std::string(o.name)] = o.type;
      }
    }
  }
  Value outputs = io_list(graph.output(), {}, produced);
  std::set<std::string> dtypes, names, duplicates;
  bool dtype_unknown = false;
  for (const auto* list : {&inputs, &outputs}) {
    for (const auto& t : list->items()) {
      const Value* d = t.field("dtype");
      if (d->is_unknown()) dtype_unknown = true;
      else dtypes.insert(d->as_string());
      if (!names.insert(t.field("name")->as_string()).second) duplicates.insert(t.field("name")->as_string());
    }
  }
  std::vector<Value> dtype_list, duplicate_list;
  for (const auto& d : dtypes) dtype_list.push_back(Value::of_string(d));
  for (const auto& d : duplicates) duplicate_list.push_back(Value::of_string(d));
  Value rec = Value::of_record({});
  rec.set("ir_version", Value::of_int(model.ir_version()));
  rec.set("opset", Value::of_int(facts.default_opset));
  rec.set("io_dtypes", dtype_unknown ? Value::unknown("a model input/output has no element type")
                                     : Value::of_list(std::move(dtype_list)));
  rec.set("duplicate_io_names", Value::of_list(std::move(duplicate_list)));
  // Inputs whose shape is not fully static, e.g. "voxels [?, 128, 2, 6, 6]".
  std::vector<Value> dynamic;
  for (const auto& t : inputs.items()) {
    const Value* shape = t.field("shape");
    bool is_static = shape->kind() == Value::Kind::List;
    for (const auto& d : is_static ? shape->items() : std::vector<Value>{}) is_static = is_static && !d.is_unknown();
    if (!is_static) dynamic.push_back(Value::of_string(t.field("name")->as_string() + " " + shape->to_string()));
  }
  rec.set("dynamic_inputs", Value::of_list(std::move(dynamic)));
  rec.set("input", std::move(inputs));
  rec.set("output", std::move(outputs));
  return rec;
}

}  // namespace

bool parse_dims(const std::string& text, std::vector<int64_t>& dims, std::string& error) {
  dims.clear();
  if (text.empty() || text.back() == 'x') {
    error = "'" + text + "' is not DIMxDIMx... (e.g. 1x3x224x224)";
    return false;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('x', start), text.size());
    const std::string part = text.substr(start, end - start);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || v <= 0) {
      error = "'" + part + "' is not a positive dimension";
      return false;
    }
    dims.push_back(v);
    start = end + 1;
  }
  return true;
}

const char* cause_kind_name(CauseKind k) {
  switch (k) {
    case CauseKind::DynamicInput: return "dynamic_input";
    case CauseKind::MissingInputType: return "missing_input_type";
    case CauseKind::InferenceFailed: return "inference_failed";
    case CauseKind::NotInferred: return "not_inferred";
    case CauseKind::DataDependent: return "data_dependent";
  }
  return "unknown";
}

int64_t max_known_opset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 0 : it->second.second;
}

void FactProgress::publish(size_t nodes) {
  published_.store(nodes, std::memory_order_release);
  if (nodes % kBatch == 0) wake();
}

void FactProgress::finish() {
  finished_.store(true, std::memory_order_release);
  wake();
}

// Taking the lock orders the store above before a waiter's check of it, so
// no wake-up is lost between its check and its sleep.
void FactProgress::wake() {
  { std::lock_guard<std::mutex> lock(mutex_); }
  changed_.notify_all();
}

bool FactProgress::wait_for(size_t i) {
  if (published() > i) return true;
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return published() > i || finished_.load(std::memory_order_acquire); });
  return published() > i;
}

bool extract_facts(const LoadedModel& loaded, const FactOptions& options, ModelFacts& out, std::string& error,
                   FactProgress* progress) {
  // Whatever happens, a waiting evaluator learns the walk is over.
  struct Finish {
    FactProgress* p;
    ~Finish() {
      if (p != nullptr) p->finish();
    }
  } finish{progress};
  out.nodes.clear();
  out.notes.clear();
  out.unanalysed_functions.clear();
  out.causes.clear();
  out.int_values.clear();
  out.made_names.clear();
  out.pinned_inputs.clear();
  out.arena = make_bulk_arena();
  const onnx::ModelProto& model = *loaded.model;
  std::map<std::string, const onnx::TypeProto*> pinned;
  if (!pin_input_shapes(model.graph(), options, out, pinned, error)) return false;

  out.default_opset = 0;
  for (const auto& imp : model.opset_import()) {
    if (is_default_domain(imp.domain())) out.default_opset = imp.version();
  }
  if (out.default_opset > max_known_opset()) {
    out.notes.push_back("model opset " + std::to_string(out.default_opset) + " is newer than the ONNX library (" +
                        std::to_string(max_known_opset()) +
                        "): ops and shapes it cannot infer are reported as unknown");
  }

  const auto& graph = model.graph();
  // NodeFacts are large; growing the vector 100k times would copy them over and over.
  size_t count = 0, tensors = 0;
  for_each_node(graph, [&](const onnx::NodeProto& node, int) {
    ++count;
    tensors += static_cast<size_t>(node.input_size() + node.output_size());
  });
  out.nodes.reserve(count);
  out.tensors.clear();
  out.tensors.reserve(tensors);
  Walker walker(model, out, progress, options.memoize_inference);
  walker.walk(graph, graph.name().empty() ? "main_graph" : graph.name(), pinned);
  if (walker.contradictions() > 0) {
    out.notes.push_back("declared shapes contradict shape inference for " + std::to_string(walker.contradictions()) +
                        " value" + (walker.contradictions() == 1 ? "" : "s") + " (first: " +
                        walker.first_contradiction() + "); the inferred shapes are used");
  }
  out.model = model_record(model, out, pinned);
  for (const auto& fn : model.functions()) {
    out.unanalysed_functions.push_back((fn.domain().empty() ? "" : fn.domain() + ".") + fn.name() + " (" +
                                       std::to_string(fn.node_size()) + " nodes)");
  }
  return true;
}

FactSelection FactSelection::of(const std::set<std::string>& names) {
  FactSelection f;
  f.op = names.count("op") > 0;
  f.domain = names.count("domain") > 0;
  f.opset = names.count("opset") > 0;
  f.name = names.count("name") > 0;
  f.op_class = names.count("op_class") > 0;
  f.max_rank = names.count("max_rank") > 0;
  f.input = names.count("input") > 0;
  f.output = names.count("output") > 0;
  f.attributes = false;
  for (const auto& n : names) f.attributes = f.attributes || reserved_node_facts().count(n) == 0;
  return f;
}

Value node_record(const NodeFacts& n, const std::string& op_class, const FactSelection& select) {
  // Conv-like defaults read the weight shape, so their attributes need the inputs.
  const bool conv_like = n.domain.empty() && conv_kind(n.op_type) != ConvKind::None;

  Value rec = Value::of_record({});
  if (select.op) rec.set("op", Value::of_string(n.op_type));
  if (select.domain) rec.set("domain", Value::of_string(n.domain));
  if (select.opset || select.attributes) rec.set("opset", Value::of_int(n.opset));
  if (select.name) rec.set("name", Value::of_string(std::string(n.name)));
  if (select.op_class) rec.set("op_class", Value::of_string(op_class));
  if (select.max_rank) rec.set("max_rank", max_rank(n));
  if (select.input || (conv_like && select.attributes)) {
    std::vector<Value> ins;
    ins.reserve(n.inputs.size());
    for (const auto& t : n.inputs) ins.push_back(tensor_record(t));
    rec.set("input", Value::of_list(std::move(ins)));
  }
  if (select.output) {
    std::vector<Value> outs;
    outs.reserve(n.outputs.size());
    for (const auto& t : n.outputs) outs.push_back(tensor_record(t));
    rec.set("output", Value::of_list(std::move(outs)));
  }
  if (!select.attributes) return rec;

  // Schema defaults first, then what the node says.
  const onnx::OpSchema* schema =
      n.opset > 0 ? onnx::OpSchemaRegistry::Schema(n.op_type, static_cast<int>(n.opset), n.domain) : nullptr;
  if (schema != nullptr) {
    for (const auto& entry : schema->attributes()) {
      const auto& attr = entry.second;
      if (reserved_node_facts().count(attr.name) != 0) continue;
      if (attr.default_value.type() != onnx::AttributeProto::UNDEFINED) {
        rec.set(attr.name, attribute_value(attr.default_value));
      } else {
        rec.set(attr.name, Value::unknown("attribute '" + attr.name + "' not set"));
      }
    }
  }
  if (n.proto != nullptr) {
    // A hostile node may carry an attribute named `input` or `max_rank`: it
    // must never replace the facts the engine computed.
    for (const auto& attr : n.proto->attribute()) {
      if (reserved_node_facts().count(attr.name()) == 0) rec.set(attr.name(), attribute_value(attr));
    }
  }
  if (conv_like && schema != nullptr) resolve_conv_defaults(n.op_type, rec);
  return rec;
}

const onnx::OpSchema* NodeFactSource::schema() const {
  if (!schema_known_) {
    schema_known_ = true;
    schema_ = node_.opset > 0
                  ? onnx::OpSchemaRegistry::Schema(node_.op_type, static_cast<int>(node_.opset), node_.domain)
                  : nullptr;
  }
  return schema_;
}

const Value* NodeFactSource::element_field(FactId list, size_t index, FactId field) const {
  static const std::vector<std::pair<FactId, TensorField>> kFields = [] {
    std::vector<std::pair<FactId, TensorField>> ids;
    for (const auto& [name, f] : tensor_fields()) ids.emplace_back(intern_fact(name), f);
    return ids;
  }();
  const ReservedFact which = reserved_fact(list);
  if (which != kInput && which != kOutput) return nullptr;
  const auto& tensors = which == kInput ? node_.inputs : node_.outputs;
  if (index >= tensors.size()) return nullptr;  // the general path says "out of range"
  auto f = std::find_if(kFields.begin(), kFields.end(), [&](const auto& e) { return e.first == field; });
  if (f == kFields.end()) return nullptr;  // ... and "has no field"
  const Element* seen =
      elements_.find([&](const Element& e) { return e.list == list && e.index == index && e.field == field; });
  if (seen != nullptr) return &seen->value;
  return &elements_.push_back({list, index, field, tensor_field(tensors[index], f->second)}).value;
}

long NodeFactSource::list_size(FactId list) const {
  switch (reserved_fact(list)) {
    case kInput: return static_cast<long>(node_.inputs.size());
    case kOutput: return static_cast<long>(node_.outputs.size());
    default: return -1;
  }
}

const Value* NodeFactSource::fact(FactId id, const std::string& name) const {
  if (const Entry* seen = cache_.find([id](const Entry& e) { return e.id == id; })) {
    return seen->present ? &seen->value : nullptr;
  }
  Value v;
  const bool present = compute(id, name, v);
  const Entry& e = cache_.push_back({id, present, std::move(v)});
  return present ? &e.value : nullptr;
}

// As node_record: the node's attribute (the last of that name) over the
// schema's default, an unset schema attribute unknown.
bool NodeFactSource::attribute(const std::string& name, Value& out) const {
  const onnx::AttributeProto* found = nullptr;
  if (node_.proto != nullptr) {
    for (const auto& a : node_.proto->attribute()) {
      if (a.name() == name) found = &a;
    }
  }
  if (found != nullptr) {
    out = attribute_value(*found);
    return true;
  }
  const onnx::OpSchema* s = schema();
  if (s == nullptr) return false;
  auto it = s->attributes().find(name);
  if (it == s->attributes().end()) return false;
  out = it->second.default_value.type() != onnx::AttributeProto::UNDEFINED
            ? attribute_value(it->second.default_value)
            : Value::unknown("attribute '" + name + "' not set");
  return true;
}

bool NodeFactSource::compute(FactId id, const std::string& name, Value& out) const {
  const ReservedFact which = reserved_fact(id);
  const NodeFacts& n = node_;
  switch (which) {
    case kOp: out = Value::of_string(n.op_type); return true;
    case kDomain: out = Value::of_string(n.domain); return true;
    case kOpset: out = Value::of_int(n.opset); return true;
    case kName: out = Value::of_string(std::string(n.name)); return true;
    case kOpClass: out = Value::of_string(op_class_); return true;
    case kMaxRank: out = max_rank(n); return true;
    case kInput:
    case kOutput: {
      const auto& tensors = which == kInput ? n.inputs : n.outputs;
      std::vector<Value> items;
      items.reserve(tensors.size());
      for (const auto& t : tensors) items.push_back(tensor_record(t));
      out = Value::of_list(std::move(items));
      return true;
    }
    default: break;
  }
  // A kernel_shape the node sets is never changed by the defaults below, and
  // it is all most convolutions' rules read (their 2-D rules' `when`).
  if (which == kKernelShape && !conv_) {
    if (attribute(name, out) && !out.is_unknown()) return true;
  }
  // Convolution defaults depend on each other and on the weight's shape:
  // resolved together, once, on a record of just what they read.
  if (which >= kKernelShape && which < kNotReserved && n.domain.empty() && conv_kind(n.op_type) != ConvKind::None &&
      schema() != nullptr) {
    if (!conv_) {
      conv_ = std::make_unique<Value>(Value::of_record({}));
      for (const char* a : {"kernel_shape", "strides", "dilations", "output_padding", "pads", "auto_pad", "output_shape"}) {
        Value v;
        if (attribute(a, v)) conv_->set(a, std::move(v));
      }
      // The weight's shape is read only when the kernel is not set.
      const Value* kernel = conv_->field("kernel_shape");
      if (kernel == nullptr || kernel->is_unknown()) {
        std::vector<Value> ins;
        ins.reserve(n.inputs.size());
        for (const auto& t : n.inputs) ins.push_back(tensor_record(t));
        conv_->set("input", Value::of_list(std::move(ins)));
      }
      resolve_conv_defaults(n.op_type, *conv_);
    }
    const Value* v = conv_->field(name);
    if (v == nullptr) return false;
    out = *v;
    return true;
  }
  return attribute(name, out);
}

std::string dtype_name(int32_t t) {
  using T = onnx::TensorProto;
  switch (t) {
    case T::FLOAT: return "float32";
    case T::UINT8: return "uint8";
    case T::INT8: return "int8";
    case T::UINT16: return "uint16";
    case T::INT16: return "int16";
    case T::INT32: return "int32";
    case T::INT64: return "int64";
    case T::STRING: return "string";
    case T::BOOL: return "bool";
    case T::FLOAT16: return "float16";
    case T::DOUBLE: return "float64";
    case T::UINT32: return "uint32";
    case T::UINT64: return "uint64";
    case T::COMPLEX64: return "complex64";
    case T::COMPLEX128: return "complex128";
    case T::BFLOAT16: return "bfloat16";
    default: return "type" + std::to_string(t);
  }
}

}  // namespace bpulint
