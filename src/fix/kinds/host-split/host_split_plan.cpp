// Deciding the host split and building its two models (host_split.h).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bpulint/model/graph_walk.h"
#include "host_split.h"

namespace bpulint {
namespace {

// The main graph's data edges, each node's subgraphs folded into it.
struct MainGraph {
  const onnx::GraphProto* g = nullptr;
  std::unordered_map<std::string, int> producer;  // value -> the node writing it
  std::unordered_set<std::string> inputs, initializers, outputs;
  // Per node: the outer values it reads (its inputs, and the names its
  // subgraphs read from the main graph), each once, in order.
  std::vector<std::vector<std::string>> reads;
  std::vector<std::vector<int>> consumers;  // nodes reading a value the node writes
};

void subgraph_reads(const onnx::NodeProto& n, std::vector<std::string>& names) {
  for (const auto& a : n.attribute()) {
    auto visit = [&](const onnx::GraphProto& sub) {
      walk_graph(
          sub, [](const onnx::GraphProto&, const auto&, auto&& nodes) { nodes(); },
          [&](const onnx::NodeProto& inner, int) {
            for (const auto& i : inner.input()) names.push_back(i);
          },
          WalkDepth::All);
      for (const auto& o : sub.output()) names.push_back(o.name());
    };
    if (a.has_g()) visit(a.g());
    for (const auto& sub : a.graphs()) visit(sub);
  }
}

MainGraph index_main_graph(const onnx::GraphProto& g) {
  MainGraph m;
  m.g = &g;
  for (const auto& v : g.input()) m.inputs.insert(v.name());
  for (const auto& t : g.initializer()) m.initializers.insert(t.name());
  for (const auto& s : g.sparse_initializer()) m.initializers.insert(s.values().name());
  for (const auto& v : g.output()) m.outputs.insert(v.name());
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& o : g.node(i).output()) {
      if (!o.empty()) m.producer.emplace(o, i);
    }
  }
  m.reads.resize(static_cast<size_t>(g.node_size()));
  m.consumers.resize(static_cast<size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    std::vector<std::string> names(n.input().begin(), n.input().end());
    subgraph_reads(n, names);  // names a subgraph defines itself are not outer values (SSA)
    std::unordered_set<std::string> seen;
    for (auto& name : names) {
      if (name.empty() || !seen.insert(name).second) continue;
      const auto p = m.producer.find(name);
      const bool outer = (p != m.producer.end() && p->second < i) || m.inputs.count(name) != 0 ||
                         m.initializers.count(name) != 0;
      if (!outer) continue;
      if (p != m.producer.end() && p->second < i) m.consumers[static_cast<size_t>(p->second)].push_back(i);
      m.reads[static_cast<size_t>(i)].push_back(std::move(name));
    }
  }
  for (auto& c : m.consumers) c.erase(std::unique(c.begin(), c.end()), c.end());
  return m;
}

// The layers: what the BPU is there for. A node of these ops on the BPU
// anchors everything it reads; cheaper BPU work downstream of host work
// (a box decode's Mul and Add, a final Concat) moves with it.
bool is_layer_op(const std::string& op) {
  static const std::unordered_set<std::string> layers = {
      "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MatMul", "MatMulInteger", "QLinearMatMul",
      "Gemm", "Einsum", "LSTM", "GRU", "RNN"};
  return layers.count(op) != 0;
}

// Host work: placed on the CPU, or not known to run on the BPU (no public
// source for the op, or shape arithmetic on data-dependent shapes: after
// NonZero, only the host has the data).
bool is_host_placement(Placement p) {
  return p == Placement::Cpu || p == Placement::Unknown || p == Placement::DataShape;
}

// Per main-graph node, its subgraphs' nodes folded in.
struct NodePlaces {
  std::vector<Placement> own;
  std::vector<bool> bpu;    // it or a node of its subgraphs is on the BPU
  std::vector<bool> layer;  // ... and is a layer (is_layer_op)
  std::vector<bool> host;   // it is host work, or a node of its subgraphs is on the CPU
  std::vector<long> facts_index;  // the node's entry in ModelFacts::nodes, -1 when the walk has none
};

NodePlaces place_main_nodes(const ModelFacts& facts, const std::vector<Placement>& placement, size_t count) {
  NodePlaces p;
  p.own.assign(count, Placement::Unknown);
  p.bpu.assign(count, false);
  p.layer.assign(count, false);
  p.host.assign(count, false);
  p.facts_index.assign(count, -1);
  long top = -1;  // pre-order: a subgraph's nodes follow their main-graph node
  for (size_t k = 0; k < facts.nodes.size() && k < placement.size(); ++k) {
    const NodeFacts& n = facts.nodes[k];
    const bool own = n.graph_id == 0;
    if (own) {
      top = n.index_in_graph < count ? static_cast<long>(n.index_in_graph) : -1;
      if (top >= 0) {
        p.own[static_cast<size_t>(top)] = placement[k];
        p.facts_index[static_cast<size_t>(top)] = static_cast<long>(k);
        p.host[static_cast<size_t>(top)] = is_host_placement(placement[k]);
      }
    }
    if (top < 0) continue;
    const auto t = static_cast<size_t>(top);
    if (placement[k] == Placement::Bpu) {
      p.bpu[t] = true;
      p.layer[t] = p.layer[t] || is_layer_op(n.op_type);
    }
    if (!own && placement[k] == Placement::Cpu) p.host[t] = true;
  }
  return p;
}

// What the lint knows of `name`, written by main-graph node `node`.
const TensorFacts* output_facts(const ModelFacts& facts, const NodePlaces& places, int node, const std::string& name) {
  const long k = places.facts_index[static_cast<size_t>(node)];
  if (k < 0) return nullptr;
  for (const auto& t : facts.nodes[static_cast<size_t>(k)].outputs) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool has_elem_type(const onnx::TypeProto* t) {
  return t != nullptr && t->has_tensor_type() && t->tensor_type().elem_type() != 0;
}

// Which main-graph nodes go to the tail (the rules in host_split.h).
std::vector<bool> choose_tail(const MainGraph& m, const NodePlaces& places, size_t& anchors, size_t& seeds,
                              bool& layers_anchor) {
  const size_t n = places.own.size();
  std::vector<bool> anchored(n, false), tail(n, false);
  std::vector<int> stack;
  for (size_t i = 0; i < n; ++i) {
    if (places.layer[i]) stack.push_back(static_cast<int>(i));
  }
  layers_anchor = !stack.empty();
  if (stack.empty()) {  // no layer on the BPU: every BPU node anchors
    for (size_t i = 0; i < n; ++i) {
      if (places.bpu[i]) stack.push_back(static_cast<int>(i));
    }
  }
  anchors = stack.size();
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (anchored[static_cast<size_t>(i)]) continue;
    anchored[static_cast<size_t>(i)] = true;
    for (const auto& v : m.reads[static_cast<size_t>(i)]) {
      const auto p = m.producer.find(v);
      if (p != m.producer.end() && !anchored[static_cast<size_t>(p->second)]) stack.push_back(p->second);
    }
  }
  seeds = 0;
  for (size_t i = 0; i < n; ++i) {  // graph order: a node's producers come first
    if (anchored[i]) continue;
    if (places.host[i]) {
      tail[i] = true;
      ++seeds;
      continue;
    }
    for (const auto& v : m.reads[i]) {
      const auto p = m.producer.find(v);
      if (p != m.producer.end() && tail[static_cast<size_t>(p->second)]) {
        tail[i] = true;
        break;
      }
    }
  }
  if (seeds == 0) return tail;
  // Constant-only nodes: every value read is an initializer or written by one.
  std::vector<bool> constant(n, false);
  for (size_t i = 0; i < n; ++i) {
    constant[i] = std::all_of(m.reads[i].begin(), m.reads[i].end(), [&](const std::string& v) {
      if (m.initializers.count(v) != 0 && m.inputs.count(v) == 0) return true;
      const auto p = m.producer.find(v);
      return p != m.producer.end() && constant[static_cast<size_t>(p->second)];
    });
  }
  std::unordered_set<std::string> tail_reads;
  for (size_t i = 0; i < n; ++i) {
    if (tail[i]) tail_reads.insert(m.reads[i].begin(), m.reads[i].end());
  }
  const auto writes_output = [&](size_t i) {
    const auto& outs = m.g->node(static_cast<int>(i)).output();
    return std::any_of(outs.begin(), outs.end(), [&](const std::string& o) { return m.outputs.count(o) != 0; });
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = n; i-- > 0;) {
      if (tail[i] || anchored[i] || m.consumers[i].empty() || writes_output(i)) continue;
      const bool feeds_tail_only = std::all_of(m.consumers[i].begin(), m.consumers[i].end(),
                                               [&](int c) { return tail[static_cast<size_t>(c)]; });
      const bool adds_no_frontier = std::all_of(m.reads[i].begin(), m.reads[i].end(), [&](const std::string& v) {
        if (tail_reads.count(v) != 0 || (m.initializers.count(v) != 0 && m.inputs.count(v) == 0)) return true;
        const auto p = m.producer.find(v);
        return p != m.producer.end() && constant[static_cast<size_t>(p->second)];
      });
      if (!feeds_tail_only || !adds_no_frontier) continue;
      tail[i] = true;
      tail_reads.insert(m.reads[i].begin(), m.reads[i].end());
      changed = true;
    }
  }
  return tail;
}

onnx::ValueInfoProto value_info(const std::string& name, const onnx::TypeProto& type) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  *v.mutable_type() = type;
  return v;
}

// The model without its graph: what it says of itself (IR version, opset
// imports, producer, metadata) and its functions, field by field, so the
// graph is not copied.
onnx::ModelProto model_shell(const onnx::ModelProto& model) {
  onnx::ModelProto shell;
  if (model.has_ir_version()) shell.set_ir_version(model.ir_version());
  *shell.mutable_opset_import() = model.opset_import();
  if (model.has_producer_name()) shell.set_producer_name(model.producer_name());
  if (model.has_producer_version()) shell.set_producer_version(model.producer_version());
  if (model.has_domain()) shell.set_domain(model.domain());
  if (model.has_model_version()) shell.set_model_version(model.model_version());
  if (model.has_doc_string()) shell.set_doc_string(model.doc_string());
  *shell.mutable_metadata_props() = model.metadata_props();
  *shell.mutable_training_info() = model.training_info();
  *shell.mutable_functions() = model.functions();
  return shell;
}

// One part: `nodes` of the original graph (in order), the initializers they
// read (plus `extra_initializers`), and the given inputs and outputs.
void build_part(const MainGraph& m, const std::vector<int>& nodes, const std::vector<onnx::ValueInfoProto>& inputs,
                const std::vector<onnx::ValueInfoProto>& outputs, const std::unordered_set<std::string>& extra_initializers,
                onnx::GraphProto& out) {
  const onnx::GraphProto& g = *m.g;
  out.set_name(g.name());
  if (g.has_doc_string()) out.set_doc_string(g.doc_string());
  std::unordered_set<std::string> reads(extra_initializers), written, io;
  for (int i : nodes) {
    *out.add_node() = g.node(i);
    reads.insert(m.reads[static_cast<size_t>(i)].begin(), m.reads[static_cast<size_t>(i)].end());
    for (const auto& o : g.node(i).output()) written.insert(o);
  }
  for (const auto& v : inputs) io.insert(v.name());
  for (const auto& v : outputs) {
    io.insert(v.name());
    reads.insert(v.name());  // an initializer passed straight through
  }
  std::unordered_set<std::string> kept_initializers;
  for (const auto& t : g.initializer()) {
    if (reads.count(t.name()) != 0) {
      *out.add_initializer() = t;
      kept_initializers.insert(t.name());
    }
  }
  for (const auto& s : g.sparse_initializer()) {
    if (reads.count(s.values().name()) != 0) {
      *out.add_sparse_initializer() = s;
      kept_initializers.insert(s.values().name());
    }
  }
  // Before IR 4 an initializer is also a graph input: it stays one where it goes.
  for (const auto& v : g.input()) {
    if (kept_initializers.count(v.name()) != 0 && io.count(v.name()) == 0 &&
        std::none_of(inputs.begin(), inputs.end(), [&](const onnx::ValueInfoProto& x) { return x.name() == v.name(); })) {
      *out.add_input() = v;
    }
  }
  for (const auto& v : inputs) *out.add_input() = v;
  for (const auto& v : outputs) *out.add_output() = v;
  for (const auto& v : g.value_info()) {
    if (written.count(v.name()) != 0 && io.count(v.name()) == 0) *out.add_value_info() = v;
  }
}

}  // namespace

HostSplitPlan plan_host_split(const LoadedModel& loaded, const ModelFacts& facts,
                              const std::vector<Placement>& placement) {
  HostSplitPlan plan;
  if (loaded.model == nullptr || !loaded.model->has_graph()) {
    plan.reason = "no model";
    return plan;
  }
  const onnx::GraphProto& g = loaded.model->graph();
  const MainGraph m = index_main_graph(g);
  const size_t n = static_cast<size_t>(g.node_size());
  const NodePlaces places = place_main_nodes(facts, placement, n);
  size_t anchors = 0, seeds = 0;
  const std::vector<bool> tail = choose_tail(m, places, anchors, seeds, plan.layers_anchor);
  if (anchors == 0) {
    plan.reason = "no node is on the BPU: there is no BPU part to split off";
    return plan;
  }
  if (seeds == 0) {
    const bool any_host = std::any_of(places.host.begin(), places.host.end(), [](bool c) { return c; });
    plan.reason = any_host ? "every CPU node feeds a layer on the BPU: there is no CPU tail after the last BPU layer"
                           : "no node is on the CPU";
    return plan;
  }

  // The frontier, in order: graph inputs the tail reads, then head values.
  std::vector<std::string> head_values;
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < n; ++i) {
    if (!tail[i]) continue;
    plan.tail_nodes.push_back(static_cast<int>(i));
    plan.tail_cpu += places.own[i] == Placement::Cpu ? 1 : 0;
    plan.tail_unknown += places.own[i] == Placement::Unknown || places.own[i] == Placement::DataShape ? 1 : 0;
    plan.tail_bpu += places.own[i] == Placement::Bpu ? 1 : 0;
    for (const auto& v : m.reads[i]) {
      const auto p = m.producer.find(v);
      if (p != m.producer.end() && !tail[static_cast<size_t>(p->second)] && seen.insert(v).second) head_values.push_back(v);
    }
  }
  std::unordered_set<std::string> tail_reads;
  for (int i : plan.tail_nodes) tail_reads.insert(m.reads[static_cast<size_t>(i)].begin(), m.reads[static_cast<size_t>(i)].end());
  std::vector<onnx::ValueInfoProto> tail_inputs;
  for (const auto& v : g.input()) {
    if (tail_reads.count(v.name()) != 0 && m.initializers.count(v.name()) == 0) {
      plan.frontier.push_back(v.name());
      tail_inputs.push_back(v);
    }
  }
  plan.frontier_graph_inputs = plan.frontier.size();
  std::vector<onnx::ValueInfoProto> frontier_values;
  std::vector<onnx::TensorProto> constants;  // head values known before runtime, as tail initializers
  for (const auto& v : head_values) {
    const int producer = m.producer.at(v);
    const TensorFacts* t = output_facts(facts, places, producer, v);
    if (t != nullptr && t->is_const && t->data != nullptr) {
      // The toolchain folds it (a Constant, shape arithmetic on static dims):
      // the tail gets the value the lint folded, not a BPU output that is a constant.
      constants.push_back(*t->data);
      constants.back().set_name(v);
      plan.constants.push_back(v);
      continue;
    }
    const onnx::TypeProto* type = t != nullptr ? t->type : nullptr;
    if (!has_elem_type(type)) {
      for (const auto& vi : g.value_info()) {
        if (vi.name() == v && vi.has_type()) type = &vi.type();
      }
    }
    if (!has_elem_type(type)) {
      plan.reason = "the type of frontier tensor '" + v + "' (written by " + g.node(producer).op_type() + " '" +
                    g.node(producer).name() + "') is not known, so the host part cannot declare it as an input";
      plan.tail_nodes.clear();
      plan.frontier.clear();
      return plan;
    }
    plan.frontier.push_back(v);
    frontier_values.push_back(value_info(v, *type));
  }
  tail_inputs.insert(tail_inputs.end(), frontier_values.begin(), frontier_values.end());

  // Outputs: each original output where it is computed; the head also passes the frontier on.
  std::vector<onnx::ValueInfoProto> head_outputs, tail_outputs;
  for (const auto& v : g.output()) {
    const auto p = m.producer.find(v.name());
    const bool in_tail = p != m.producer.end() && tail[static_cast<size_t>(p->second)];
    (in_tail ? tail_outputs : head_outputs).push_back(v);
    (in_tail ? plan.tail_outputs : plan.head_outputs).push_back(v.name());
  }
  if (plan.tail_outputs.empty()) {
    plan.reason = "the CPU nodes after the last BPU node compute no graph output";
    plan.tail_nodes.clear();
    plan.frontier.clear();
    return plan;
  }
  std::unordered_set<std::string> head_output_names(plan.head_outputs.begin(), plan.head_outputs.end());
  for (const auto& v : frontier_values) {
    if (head_output_names.insert(v.name()).second) {
      head_outputs.push_back(v);
      plan.head_outputs.push_back(v.name());
    }
  }

  std::vector<int> head_nodes;
  for (size_t i = 0; i < n; ++i) {
    if (tail[i]) continue;
    head_nodes.push_back(static_cast<int>(i));
    plan.head_bpu += places.own[i] == Placement::Bpu ? 1 : 0;
    plan.head_cpu += places.own[i] == Placement::Cpu ? 1 : 0;
    plan.head_unknown += places.own[i] == Placement::Unknown || places.own[i] == Placement::DataShape ? 1 : 0;
  }
  plan.head_node_count = head_nodes.size();
  // The head's inputs: the original ones it reads or passes through.
  std::unordered_set<std::string> head_reads(head_output_names);
  for (int i : head_nodes) head_reads.insert(m.reads[static_cast<size_t>(i)].begin(), m.reads[static_cast<size_t>(i)].end());
  std::vector<onnx::ValueInfoProto> head_inputs;
  for (const auto& v : g.input()) {
    if (head_reads.count(v.name()) != 0 && m.initializers.count(v.name()) == 0) head_inputs.push_back(v);
  }
  // Initializers no node reads stay with the head, as in the original.
  std::unordered_set<std::string> unread;
  {
    std::unordered_set<std::string> read_anywhere(tail_reads.begin(), tail_reads.end());
    read_anywhere.insert(head_reads.begin(), head_reads.end());
    for (const auto& t : g.initializer()) {
      if (read_anywhere.count(t.name()) == 0) unread.insert(t.name());
    }
  }
  plan.head = model_shell(*loaded.model);
  plan.tail = model_shell(*loaded.model);
  build_part(m, head_nodes, head_inputs, head_outputs, unread, *plan.head.mutable_graph());
  build_part(m, plan.tail_nodes, tail_inputs, tail_outputs, {}, *plan.tail.mutable_graph());
  for (auto& c : constants) *plan.tail.mutable_graph()->add_initializer() = std::move(c);
  plan.applies = true;
  return plan;
}

}  // namespace bpulint
