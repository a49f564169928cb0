// The fact walk: one pass over the model in graph order that runs ONNX's own
// per-op inference and records each node's tensors, folds and root causes
// (extract_facts). The records rules read from them are built in fact_source.cpp.
#include "bpulint/engine/facts.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "bpulint/model/graph_walk.h"
#include "bpulint/model/guarded_inference.h"
#include "bpulint/model/model_checker.h"
#include "bpulint/base/name_table.h"
#include "facts_internal.h"
#include "const_fold.h"
#include "shape_values.h"

namespace bpulint {
namespace {

// What the walker knows about a value name in the current graph.
struct ValueFacts {
  const onnx::TypeProto* type = nullptr;
  bool is_const = false;       // known before runtime (see TensorFacts::is_const)
  bool shape_derived = false;  // computed from a dynamic dim: runtime shape arithmetic
  bool data_shape = false;     // computed from a shape that depends on tensor data
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
  t.data_shape = v.data_shape;
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
    else out += for_pin ? "<" + dynamic_dim_text(d.dim_param()) + ">" : dynamic_dim_text(d.dim_param());
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
          if (site.owner == nullptr) return enter(graph, path, path, nullptr, site, pinned, -1, nodes);
          // The owner is the node the enclosing graph visited last.
          const Frame& up = frames_.back();
          const std::string owner_path =
              NodeFacts::node_path(up.path, out_.nodes[static_cast<size_t>(up.self)].display_name);
          enter(graph, owner_path + site.suffix(), out_.node_key(static_cast<size_t>(up.self)) + site.suffix(), up.chain,
                site, {}, up.self, nodes);
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
  void enter(const onnx::GraphProto& graph, const std::string& path, std::string key_path, const ScopeChain* outer,
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
    out_.graph_keys.push_back(std::move(key_path));  // at index graphs_, this graph's id
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
  // dynamic dim in the graph as a runtime shape computation, and shape
  // arithmetic on a shape that depends on tensor data as data-dependent.
  Fold decide_fold(const onnx::NodeProto& node, const NodeFacts& f, const onnx::OpSchema* schema, bool has_subgraph) {
    if (!f.domain.empty() || schema == nullptr || has_subgraph || is_random(f.op_type)) return Fold::None;
    if (f.op_type == "Shape" || f.op_type == "Size") {
      const ValueFacts* x = input_facts_.empty() ? nullptr : input_facts_[0];
      if (x == nullptr || x->type == nullptr || !x->type->has_tensor_type() || !x->type->tensor_type().has_shape()) {
        return Fold::None;
      }
      const Fold unknown = from_dynamic_input(*x) ? Fold::RuntimeShape : Fold::DataShape;
      if (f.op_type == "Shape") {
        IntValues dims;
        const std::vector<const onnx::TypeProto*> types = {x->type};
        if (propagate_values(node, f.opset, {nullptr}, types, dims)) return dims.all_known() ? Fold::Constant : unknown;
        return Fold::None;
      }
      return type_complete(x->type) ? Fold::Constant : unknown;
    }
    bool all_const = true, any_shape = false, any_data = false, all_known_or_shape = true;
    for (int k = 0; k < node.input_size(); ++k) {
      if (node.input(k).empty()) continue;
      const ValueFacts* v = input_facts_[static_cast<size_t>(k)];
      const bool c = v != nullptr && v->is_const;
      const bool s = v != nullptr && v->shape_derived;
      const bool d = v != nullptr && v->data_shape;
      all_const = all_const && c;
      any_shape = any_shape || s;
      any_data = any_data || d;
      all_known_or_shape = all_known_or_shape && (c || s || d);
    }
    if (all_const) return Fold::Constant;
    if (!all_known_or_shape) return Fold::None;
    return any_data ? Fold::DataShape : any_shape ? Fold::RuntimeShape : Fold::None;
  }

  // Whether what is unknown of a value's shape comes from a graph input's
  // dynamic dims or missing shape (pinning the input makes it known), rather
  // than from tensor data or an op that was not inferred.
  bool from_dynamic_input(const ValueFacts& v) const {
    if (v.cause == 0 || v.cause > out_.causes.size()) return true;
    const CauseKind k = out_.causes[v.cause - 1].kind;
    return k == CauseKind::DynamicInput || k == CauseKind::MissingInputType;
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

    // Constant folding: a node whose inputs are all known computes its
    // outputs' values (any rank and dtype, within the folder's bounds); its
    // integer values then come from the folded data (record_folded).
    std::vector<ConstTensor>& folded = scratch_folded_;
    folded.clear();
    // The kernels check what they read themselves, so a form newer than the
    // ONNX library (whose inference then fails) folds too.
    const bool did_fold = traits.fold_op && fold_inputs(node) &&
                          fold_node(node, f.opset, scratch_fold_inputs_, folded) && spend_fold_budget(folded);
    if (did_fold) f.fold = Fold::Constant;

    // Shape arithmetic where the folder could not: symbolic dims, and only
    // where an input carries integer values (or the op reads shapes), which
    // keeps the walk of a big float graph as cheap as before.
    const IntValues* out_values = nullptr;
    const onnx::TypeProto* symbolic_type = nullptr;
    const bool value_op = traits.value_op;
    const bool shaped_by_values = traits.shaped_by_values;
    if (!did_fold && (value_op || shaped_by_values) && failure.empty() && node.output_size() >= 1 &&
        wants_values(f.op_type)) {
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
    if ((f.fold == Fold::RuntimeShape || f.fold == Fold::DataShape) && out_values != nullptr && out_values->all_known() &&
        node.output_size() == 1) {
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
      v.data_shape = f.fold == Fold::DataShape;
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
      if (did_fold) record_folded(folded[i], v);
      v.cause = output_cause(v, node_cause, failure, schema, has_subgraph);
      v.producer = static_cast<uint32_t>(out_.nodes.size());  // this node, pushed by add_node
      v.producer_node = &node;
      v.from_1d_2d_input = from_1d_2d && !v.is_const && rank_1_or_2(v.type);
      add_tensor(tensor_facts(name, v));
    }
    f.outputs = TensorList(out_.tensors.data() + first, out_.tensors.size() - first);
    shared_output_type_ = nullptr;
  }

  // The folder's inputs, decoded once per tensor; false when one is not known.
  bool fold_inputs(const onnx::NodeProto& node) {
    scratch_fold_inputs_.clear();
    for (size_t k = 0; k < input_facts_.size(); ++k) {
      if (node.input(static_cast<int>(k)).empty()) {
        scratch_fold_inputs_.push_back(nullptr);
        continue;
      }
      const ValueFacts* v = input_facts_[k];
      const ConstTensor* c = v != nullptr && v->data != nullptr ? folded_of(*v->data) : nullptr;
      if (c == nullptr) return false;
      scratch_fold_inputs_.push_back(c);
    }
    return true;
  }

  const ConstTensor* folded_of(const onnx::TensorProto& t) {
    auto [it, inserted] = folded_.try_emplace(&t, nullptr);
    if (inserted) {
      ConstTensor c;
      if (fold_budget_ >= 0 && decode_const(t, c)) it->second = &folded_store_.emplace_back(std::move(c));
    }
    return it->second;
  }

  // One walk folds at most kFoldBudget elements: past it, values stay unknown.
  bool spend_fold_budget(const std::vector<ConstTensor>& outputs) {
    for (const ConstTensor& c : outputs) fold_budget_ -= c.size();
    return fold_budget_ >= 0;
  }

  // A folded output: its data (ONNX's inference functions and the rules read
  // it), its integer values for shape arithmetic, and its exact type.
  void record_folded(ConstTensor& c, ValueFacts& v) {
    auto* t = google::protobuf::Arena::CreateMessage<onnx::TensorProto>(out_.arena.get());
    encode_const(c, *t);
    v.data = t;
    folded_.emplace(t, &folded_store_.emplace_back(std::move(c)));
    if (v.values == nullptr) {
      IntValues iv;
      if (values_of_tensor(*t, iv)) {
        out_.int_values.push_back(std::move(iv));
        v.values = &out_.int_values.back();
      }
    }
    if (!type_complete(v.type)) v.type = type_of(*t);
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
    bool fold_op = false;
  };
  const OpTraits& op_traits(const NodeFacts& f) {
    static const OpTraits kNone;
    if (!f.domain.empty()) return kNone;
    bool inserted = false;
    OpTraits& t = op_traits_.get(f.proto->op_type(), &inserted);
    if (inserted) {
      t = {keeps_input_type(f.op_type), is_value_op(f.op_type), is_shaped_by_values(f.op_type), is_fold_op(f.op_type)};
    }
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
  // Folded values by their TensorProto (inline constants and the walk's own
  // folded outputs), and the scratch the folder works in.
  std::unordered_map<const onnx::TensorProto*, const ConstTensor*> folded_;
  std::deque<ConstTensor> folded_store_;
  std::vector<const ConstTensor*> scratch_fold_inputs_;
  std::vector<ConstTensor> scratch_folded_;
  int64_t fold_budget_ = kFoldBudget;
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

// The nodes the compile config keeps in float that this model has (by name, any graph), in model order.
Value config_float_nodes(const ModelFacts& facts, const FactOptions& options) {
  std::vector<Value> out;
  if (options.config_float_nodes.empty()) return Value::of_list(std::move(out));
  for (const auto& n : facts.nodes) {
    if (n.name.empty()) continue;
    const auto it = options.config_float_nodes.find(std::string(n.name));
    if (it != options.config_float_nodes.end()) out.push_back(Value::of_string(it->first + " (" + it->second + ")"));
  }
  return Value::of_list(std::move(out));
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

int64_t max_known_opset() { return onnx_library().opset; }

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
  out.graph_keys.clear();
  out.pinned_inputs.clear();
  out.arena = make_bulk_arena();
  const onnx::ModelProto& model = *loaded.model;
  out.main_graph = &model.graph();  // set before any node is published (Consumers reads it beside the walk)
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
  out.model.set("config_float_nodes", config_float_nodes(out, options));
  for (const auto& fn : model.functions()) {
    out.unanalysed_functions.push_back((fn.domain().empty() ? "" : fn.domain() + ".") + fn.name() + " (" +
                                       std::to_string(fn.node_size()) + " nodes)");
  }
  return true;
}

}  // namespace bpulint
