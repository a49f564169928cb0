// Facts: what is known about every node of a model. One pass over the lean
// ModelProto runs ONNX's own per-op shape inference functions (no model copy,
// nothing written back) and records, per node, pointers to the types of its
// inputs and outputs. The Value record that rule expressions read is built on
// demand per node, so memory stays proportional to the graph, not to facts x
// nodes. Nothing here is guessed: what cannot be inferred stays unknown.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bpulint/base/bulk_memory.h"
#include "bpulint/rules/expr.h"
#include "bpulint/rules/fact_names.h"
#include "bpulint/model/graph_walk.h"
#include "bpulint/model/model_loader.h"
#include "bpulint/rules/value.h"

namespace onnx {
class OpSchema;
}  // namespace onnx

namespace bpulint {

// The integer values of a small tensor that shape arithmetic computes (Shape,
// Gather, Concat, Slice, Add, ...): a scalar or a short 1-D list whose
// elements are each known, a symbolic dim of a graph input (dim_param, e.g.
// the batch 'N') or unknown. What ONNX 1.12's data propagation does, for every
// opset, and with symbols carried through.
struct IntElement {
  enum class Kind : uint8_t { Known, Symbol, Unknown };
  Kind kind = Kind::Unknown;
  int64_t value = 0;   // Known
  std::string symbol;  // Symbol: the dim_param
  static IntElement known(int64_t v) { return {Kind::Known, v, {}}; }
  static IntElement sym(std::string s) { return {Kind::Symbol, 0, std::move(s)}; }
  static IntElement unknown() { return {}; }
  bool is_known() const { return kind == Kind::Known; }
};

struct IntValues {
  bool scalar = false;  // rank 0; otherwise rank 1
  int32_t elem_type = 7;  // onnx::TensorProto::DataType of the tensor (7 = INT64); values are integral
  std::vector<IntElement> elems;
  bool all_known() const;
};

// Why something about a tensor is unknown: the one place upstream where the
// knowledge stopped. Every "cannot verify" that traces back to it is reported
// once, at the origin, with the count (see fold_unverified in config.h).
enum class CauseKind {
  DynamicInput,     // a graph input has a dynamic dim that was not pinned
  MissingInputType, // a graph input has no type or no shape
  InferenceFailed,  // ONNX shape inference threw on a node
  NotInferred,      // no inference for the op: custom domain, unknown op, If/Loop/Scan outputs
  DataDependent,    // the output shape depends on tensor data (NonZero, a runtime Reshape target, ...)
};
const char* cause_kind_name(CauseKind k);

struct RootCause {
  CauseKind kind = CauseKind::NotInferred;
  long node = -1;      // walk index of the node where it starts; -1 = a graph input
  std::string input;   // the graph input (DynamicInput, MissingInputType)
  std::string detail;  // what happened, one line
  std::string hint;    // how to resolve it, "" when nothing can be done from the command line
};

struct TensorFacts {
  std::string_view name;                  // "" = omitted optional input; views the ModelProto
  const onnx::TypeProto* type = nullptr;  // nullptr = nothing known
  // Known before runtime: an initializer, a Constant, or computed only from
  // those and static dims (the toolchain constant-folds the producer).
  bool is_const = false;
  // Computed from a dynamic dim by shape arithmetic: constant once the input
  // is pinned, so rules see its constness as unknown, not false.
  bool shape_derived = false;
  // Computed from a shape that depends on tensor data (NonZero's hits): no
  // input pin makes it known, and whether the toolchain can take it is not
  // known either, so rules see its constness as unknown, not false.
  bool data_shape = false;
  // A rank-1/2 model input, or rank 1 or 2 and computed from one through
  // rank-1/2 tensors (the rule field `from_1d_2d_input`): the tensors for
  // which Bernoulli2 prints "can not get nhwc info from shape".
  bool from_1d_2d_input = false;
  const onnx::TensorProto* data = nullptr;  // constant integer data: inline, or computed by the walk
  const IntValues* values = nullptr;        // integer values computed by the walk (may hold symbols)
  uint32_t cause = 0;                       // 1-based index into ModelFacts::causes; 0 = fully known
  // The node that writes it: 1-based index into ModelFacts::nodes (in this
  // graph or an enclosing one); 0 = a graph input, an initializer, omitted.
  uint32_t producer = 0;
  const onnx::TensorProto* initializer = nullptr;  // a node input that is an initializer (in its scope)
  // The same writer as `producer`, in the model (the rule field `producer`, its op type):
  // a node's facts do not reach ModelFacts::nodes.
  const onnx::NodeProto* producer_node = nullptr;
};

// A node's inputs or its outputs: a run of ModelFacts::tensors, read-only.
// One array for the whole graph instead of two vectors per node.
class TensorList {
 public:
  TensorList() = default;
  TensorList(const TensorFacts* data, size_t size) : data_(data), size_(size) {}
  const TensorFacts* begin() const { return data_; }
  const TensorFacts* end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const TensorFacts& operator[](size_t i) const { return data_[i]; }

 private:
  const TensorFacts* data_ = nullptr;
  size_t size_ = 0;
};

// What the toolchain does with a node before placing it, decided by the walk.
enum class Fold : uint8_t {
  None,          // placed by its op class and rules
  Constant,      // every input is known before runtime: constant-folded away
  RuntimeShape,  // shape arithmetic on a dynamic dim: stays in the graph until the input is pinned
  DataShape,     // shape arithmetic on a shape that depends on tensor data (NonZero, a data-dependent TopK k)
};

struct NodeFacts {
  std::string graph_path;    // "torch_jit", "torch_jit/If_3.then_branch"
  std::string_view name;     // the node's name, possibly empty; views the ModelProto
  std::string_view display_name;  // name, or "<op_type>_<index>" when unnamed (kept in ModelFacts::made_names)
  size_t index_in_graph = 0;
  size_t walk_order = 0;     // position in walk_graph's order (== index in ModelFacts::nodes)
  size_t graph_id = 0;       // unique per graph walked; 0 = the main graph (display names may repeat)
  std::string op_type;
  std::string domain;        // "" for the default ONNX domain
  int64_t opset = 0;
  const onnx::NodeProto* proto = nullptr;  // into the LoadedModel, which must outlive the facts
  Fold fold = Fold::None;
  TensorList inputs;   // into ModelFacts::tensors
  TensorList outputs;

  // Graph path + display name, one '/' between them (torch names start with
  // one: torch_jit/up1/ConvTranspose): what messages show. A node's identity,
  // which stays put when nodes are added, is ModelFacts::node_key.
  std::string path() const { return node_path(graph_path, display_name); }
  static std::string node_path(std::string_view graph, std::string_view node) {
    std::string path(graph);
    if (node.empty() || node[0] != '/') path += '/';
    return path.append(node);
  }
};

struct FactOptions {
  // Pins the dims of graph inputs (--input-shape, input_shapes in the
  // configuration, a Horizon compile config): name -> dims. A pin applies to
  // the model if it has that input and is ignored otherwise; the name ""
  // pins the model's only input (a Horizon config without input_name).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Where each pin came from, to name it in errors ("--input-shape", "cfg.yaml").
  std::map<std::string, std::string> pin_sources;
  // Nodes that look alike to shape inference share its result (the walk's
  // InferenceMemo). Off only where a test compares with a fresh run per node.
  bool memoize_inference = true;
  // Nodes a compile config (--hb-config) keeps in float: name -> "float16".
  // The model fact `config_float_nodes` lists those the model has.
  std::map<std::string, std::string> config_float_nodes;
};

// "1x3x224x224" -> {1, 3, 224, 224}: positive dims joined by 'x'. False with
// a reason otherwise.
bool parse_dims(const std::string& text, std::vector<int64_t>& dims, std::string& error);

struct ModelFacts {
  // Main graph, with subgraph nodes after their parent (bulk memory: 20 MiB on a 100k-node graph).
  std::vector<NodeFacts, BulkAllocator<NodeFacts>> nodes;
  // Every node's inputs then outputs, in walk order; reserved before the walk,
  // so the views in NodeFacts stay valid (and other threads may read them).
  std::vector<TensorFacts, BulkAllocator<TensorFacts>> tensors;
  Value model;                        // {ir_version, opset, input, output, io_dtypes, duplicate_io_names}
  std::vector<std::string> notes;     // model-level notes (opset too new, inference issues)
  int64_t default_opset = 0;
  std::vector<std::string> unanalysed_functions;  // model-local functions, "domain.name (N nodes)"
  std::vector<RootCause> causes;      // TensorFacts::cause - 1 indexes this
  std::vector<std::string> pinned_inputs;  // the pins that applied (graph input names)
  std::deque<IntValues> int_values;   // TensorFacts::values points here (a deque: addresses stay put)
  std::deque<std::string> made_names; // display names of unnamed nodes ("Relu_3"), viewed by NodeFacts
  // Per NodeFacts::graph_id: the graph's identity path, its name for the main
  // graph, its owner's node_key + the attribute (.then_branch) for a subgraph.
  std::vector<std::string> graph_keys;
  // A node's identity: its graph's identity path + its name, or, unnamed, its
  // op type and output names (torch_jit/Relu:47). Unlike the display name
  // (Relu_3, the index in its graph) it stays put when unrelated nodes are
  // added. Waivers, baselines, SARIF fingerprints, JSON and HTML name nodes by it.
  std::string node_key(size_t node) const;
  // The walk saw the main graph's names as ONNX's checker requires them: graph
  // inputs and initializers listed once (initializers named, and graph inputs
  // before IR 4), every node input defined before the node, every output
  // written once. False also when the walk did not finish. The checker then
  // need not hash every name again (check_onnx_model, NameCheck::ByCaller).
  bool main_graph_names_valid = false;
  const RootCause* cause(uint32_t id) const { return id == 0 || id > causes.size() ? nullptr : &causes[id - 1]; }
  // Inferred and pinned types live on an arena: one allocation per block,
  // not per message, and stable addresses for the pointers above.
  std::unique_ptr<google::protobuf::Arena> arena;
  const onnx::GraphProto* main_graph = nullptr;  // the loaded model's; read-only (Consumers reads it)
};

// Highest default-domain opset the linked ONNX library has schemas for.
int64_t max_known_opset();

// Lets another thread work on nodes while the walk goes on: nodes below
// `published` are complete and never move (the node vector is reserved).
// A reader that catches up sleeps until the next batch of nodes (or the
// end): spinning would take a core from the walk on a 2-core machine.
class FactProgress {
 public:
  static constexpr size_t kBatch = 64;  // nodes per wake-up of a waiting reader

  void publish(size_t nodes);  // the walk: nodes [0, nodes) are complete
  void finish();               // the walk is over, whether it succeeded or not
  // Blocks until node `i` is published (true) or the walk is over without it (false).
  bool wait_for(size_t i);
  size_t published() const { return published_.load(std::memory_order_acquire); }

 private:
  void wake();
  std::atomic<size_t> published_{0};
  std::atomic<bool> finished_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
};

// Who reads each tensor (the rule field `consumers`): readers come later in
// the graph than the walk may be, so they are read from the model itself
// (ModelFacts::main_graph, set before the walk starts), built on first need,
// once, from any thread: rule checks beside the walk never wait for it.
class ConsumerIndex;
class Consumers {
 public:
  explicit Consumers(const ModelFacts& facts);
  ~Consumers();
  Consumers(const Consumers&) = delete;
  Consumers& operator=(const Consumers&) = delete;
  // The op types of the nodes that read `t`, in walk order, one per node; '' for a graph output.
  Value of(const TensorFacts& t) const;

 private:
  const ModelFacts& facts_;
  mutable std::once_flag once_;
  mutable std::unique_ptr<ConsumerIndex> index_;
};

// Returns false with a one-line error when --input-shape names no graph input
// or conflicts with a static dim. `loaded` must outlive `out`.
bool extract_facts(const LoadedModel& loaded, const FactOptions& options, ModelFacts& out, std::string& error,
                   FactProgress* progress = nullptr);

// The record rule expressions read for one node:
// {op, domain, opset, name, op_class, <attributes with ONNX defaults resolved>, input: [...], output: [...],
// max_rank} where each tensor is {name, present, dtype, shape, rank, const, value}; `value` is the data
// of a small integer constant (axes, shapes), unknown otherwise. Attributes never shadow these names.
// Which root facts to build. Rules name the facts they read (Rule::facts_used);
// building only those keeps evaluation of big graphs cheap.
struct FactSelection {
  bool op = true, domain = true, opset = true, name = true, op_class = true;
  bool max_rank = true, input = true, output = true, attributes = true;
  static FactSelection all() { return {}; }
  static FactSelection of(const std::set<std::string>& names);
};

// `consumers`: where the tensors' `consumers` come from; without it they are unknown.
Value node_record(const NodeFacts& node, const std::string& op_class,
                  const FactSelection& select = FactSelection::all(), const Consumers* consumers = nullptr);

// reserved_node_facts(): the root facts node_record always provides (fact_names.h).

// A grow-only list whose elements never move: the first N in place, the
// rest in a deque made on first need. A node's rules read a handful of facts,
// and an empty std::deque already costs two allocations, per node and list.
template <class T, size_t N>
class StableList {
 public:
  template <class Pred>
  const T* find(Pred&& pred) const {
    for (size_t i = 0; i < size_ && i < N; ++i) {
      if (pred(first_[i])) return &first_[i];
    }
    if (rest_) {
      for (const T& e : *rest_) {
        if (pred(e)) return &e;
      }
    }
    return nullptr;
  }
  const T& push_back(T value) {
    if (size_ < N) {
      first_[size_] = std::move(value);
      return first_[size_++];
    }
    if (!rest_) rest_ = std::make_unique<std::deque<T>>();
    rest_->push_back(std::move(value));
    ++size_;
    return rest_->back();
  }

 private:
  T first_[N];
  size_t size_ = 0;
  std::unique_ptr<std::deque<T>> rest_;
};

// The facts of node_record(node, op_class), each built only when an
// expression first reads it and kept for the node's other rules: a node's
// rules read a handful of facts, while its record would hold every schema
// attribute. Reads the NodeFacts directly; one source per node, one thread.
class NodeFactSource final : public FactSource {
 public:
  NodeFactSource(const NodeFacts& node, const std::string& op_class, const Consumers* consumers = nullptr)
      : node_(node), op_class_(op_class), consumers_(consumers) {}
  const Value* fact(FactId id, const std::string& name) const override;
  const Value* element_field(FactId list, size_t index, FactId field) const override;
  long list_size(FactId list) const override;

 private:
  bool compute(FactId id, const std::string& name, Value& out) const;
  bool attribute(const std::string& name, Value& out) const;  // the node's, else the schema default; input forms
  bool plain_attribute(const std::string& name, Value& out) const;  // the node's, else the schema default
  const onnx::OpSchema* schema() const;

  const NodeFacts& node_;
  const std::string& op_class_;
  const Consumers* consumers_;
  struct Entry {
    FactId id{};
    bool present = false;
    Value value;
  };
  mutable StableList<Entry, 8> cache_;  // facts handed out stay put as others are added
  struct Element {
    FactId list{};
    size_t index = 0;
    FactId field{};
    Value value;
  };
  mutable StableList<Element, 8> elements_;  // input[k].field read through element_field
  mutable const onnx::OpSchema* schema_ = nullptr;
  mutable bool schema_known_ = false;
  mutable std::unique_ptr<Value> conv_;  // convolution attributes with their defaults resolved
};

// ONNX element type as the rules spell it: "float32", "int8", "bool", ...
std::string dtype_name(int32_t onnx_elem_type);

}  // namespace bpulint
