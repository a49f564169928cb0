// The one order in which every stage visits a model's nodes. A diagnostic's
// node is an index into that order (ModelFacts::nodes), and the fix engine
// finds the same node in a model copy by walking it again, so the order is
// defined here once: pre-order, each node followed by the subgraphs of its
// attributes (attribute order; a GRAPHS list in list order), graphs nested
// deeper than kMaxSubgraphDepth skipped.
#pragma once

#include <onnx/onnx_pb.h>

#include <limits>
#include <string>
#include <type_traits>

namespace bpulint {

// Subgraph bodies are walked this deep and no deeper (If/Loop/Scan nesting).
constexpr int kMaxSubgraphDepth = 64;

// Where a graph hangs: the main graph (owner == nullptr), or the subgraph in
// attribute `attr` of node `owner` (`index` into a GRAPHS list, -1 for GRAPH).
template <class Node>
struct GraphSite {
  Node* owner = nullptr;
  const std::string* attr = nullptr;
  int index = -1;
  int depth = 0;
  bool too_deep = false;  // nested deeper than the limit: its nodes are not visited
  // What a graph path appends to its owner's: ".then_branch", ".branches[1]".
  std::string suffix() const {
    if (attr == nullptr) return "";
    return "." + *attr + (index >= 0 ? "[" + std::to_string(index) + "]" : "");
  }
};

// Limited: the indexed walk (facts, fix slots). All: stages that must see
// every name or tensor of the model whatever its depth (name reservation,
// uses, payloads); their order is the same, only deeper graphs are added.
enum class WalkDepth { Limited, All };

namespace walk_detail {

template <class G>
using NodeOf = std::conditional_t<std::is_const_v<G>, const onnx::NodeProto, onnx::NodeProto>;

inline const onnx::NodeProto& node_at(const onnx::GraphProto& g, int i) { return g.node(i); }
inline onnx::NodeProto& node_at(onnx::GraphProto& g, int i) { return *g.mutable_node(i); }
inline const onnx::AttributeProto& attr_at(const onnx::NodeProto& n, int i) { return n.attribute(i); }
inline onnx::AttributeProto& attr_at(onnx::NodeProto& n, int i) { return *n.mutable_attribute(i); }
inline const onnx::GraphProto& graph_of(const onnx::AttributeProto& a) { return a.g(); }
inline onnx::GraphProto& graph_of(onnx::AttributeProto& a) { return *a.mutable_g(); }
inline const onnx::GraphProto& graph_of(const onnx::AttributeProto& a, int i) { return a.graphs(i); }
inline onnx::GraphProto& graph_of(onnx::AttributeProto& a, int i) { return *a.mutable_graphs(i); }

template <class Graph, class OnGraph, class OnNode>
void walk(Graph& g, const GraphSite<NodeOf<Graph>>& site, OnGraph& on_graph, OnNode& on_node, int max_depth) {
  on_graph(g, site, [&] {
    if (site.too_deep) return;
    for (int i = 0; i < g.node_size(); ++i) {
      auto& node = node_at(g, i);
      on_node(node, i);
      for (int k = 0; k < node.attribute_size(); ++k) {
        auto& attr = attr_at(node, k);
        const bool one = attr.type() == onnx::AttributeProto::GRAPH;
        if (!one && attr.type() != onnx::AttributeProto::GRAPHS) continue;
        GraphSite<NodeOf<Graph>> sub{&node, &attr.name(), -1, site.depth + 1, site.depth + 1 > max_depth};
        if (one) {
          walk(graph_of(attr), sub, on_graph, on_node, max_depth);
          continue;
        }
        for (int j = 0; j < attr.graphs_size(); ++j) {
          sub.index = j;
          walk(graph_of(attr, j), sub, on_graph, on_node, max_depth);
        }
      }
    }
  });
}

}  // namespace walk_detail

// Walks `root` (a GraphProto, const or not) and its subgraphs in the order
// above. on_graph(graph, site, nodes) is called for every graph, the skipped
// ones too (site.too_deep); it calls nodes() once to visit that graph's nodes,
// so whatever it sets up before (a scope) lives while they are visited.
// on_node(node, index_in_graph) is called for every node visited.
template <class Graph, class OnGraph, class OnNode>
void walk_graph(Graph& root, OnGraph&& on_graph, OnNode&& on_node, WalkDepth limit = WalkDepth::Limited) {
  const int max_depth = limit == WalkDepth::Limited ? kMaxSubgraphDepth : std::numeric_limits<int>::max();
  walk_detail::walk(root, GraphSite<walk_detail::NodeOf<Graph>>{}, on_graph, on_node, max_depth);
}

// The common case: every node, no per-graph setup.
template <class Graph, class OnNode>
void for_each_node(Graph& root, OnNode&& on_node, WalkDepth limit = WalkDepth::Limited) {
  walk_graph(root, [](auto&, const auto&, auto&& nodes) { nodes(); }, on_node, limit);
}

}  // namespace bpulint
