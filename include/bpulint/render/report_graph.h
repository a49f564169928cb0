// The picture of a model that --format html and --format dot draw: which
// nodes are shown, which are collapsed into counted boxes, the edges between
// them and the clusters (CPU islands, subgraph bodies). Built once per model,
// emitted as DOT (graph_dot); the HTML report lays that DOT out with Graphviz.
//
// Small models are drawn whole. Above kFullGraphNodes nodes a full layout is
// neither readable nor fast, so the collapsed view keeps what matters (CPU
// islands, nodes that will not compile, nodes with findings, fixed nodes),
// each with a few hops of context along the data path, and draws every
// connected run of the other nodes as one box that counts them by placement.
// Runs made only of constant-folded and shape-arithmetic nodes (the side
// chains that compute weights and Reshape targets) are left out. How the
// limits were chosen: bench/HISTORY.md, "Graph reports".
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "bpulint/lint/lint.h"

namespace bpulint {

// Up to this many nodes, every node is drawn.
constexpr size_t kFullGraphNodes = 500;
// The collapsed view draws at most this many items: dot's layout time grows
// faster than the item count.
constexpr size_t kGraphLayoutBudget = 1200;
// Neighbours kept around each node of interest in the collapsed view.
constexpr int kGraphContextHops = 2;

struct GraphOptions {
  size_t full_nodes = kFullGraphNodes;
  size_t budget = kGraphLayoutBudget;
  int context_hops = kGraphContextHops;
  bool show_waived = false;  // waived and baselined findings flag their nodes too (as in the report)
  Severity min_severity = Severity::Note;  // findings below it flag nothing (--min-severity)
};

struct GraphItem {
  enum class Kind { Node, Collapsed, Input, Output };
  Kind kind = Kind::Node;
  long node = -1;            // Node: index into facts.nodes; Collapsed: the first node it stands for
  std::string_view value;    // Input / Output: the main graph's value (views the model)
  const onnx::TypeProto* type = nullptr;  // Input / Output: its declared type, if any
  int cluster = -1;          // innermost cluster (index into ReportGraph::clusters); -1 = none
  // Collapsed: how many nodes it stands for, by placement (indexed by Placement).
  std::array<size_t, 6> counts{};
  size_t hidden = 0;
  // Node: its findings (those the report lists), the worst level, the first
  // one's position among the model's listed findings, their rule ids.
  long finding = -1;
  Severity worst = Severity::Note;
  std::vector<std::string> rules;
};

struct GraphEdge {
  size_t from = 0, to = 0;
  const TensorFacts* tensor = nullptr;  // the first tensor it carries (null for a subgraph's owner link)
  size_t tensors = 1;        // distinct tensors between the two items
  bool owner = false;        // from a node to the body of its subgraph
};

struct GraphCluster {
  enum class Kind { Island, Subgraph };
  Kind kind = Kind::Island;
  long number = 0;           // Island: its number (0-based, as cpu_islands numbers them)
  std::string path;          // Subgraph: its graph path
  int parent = -1;
  size_t nodes = 0;
};

struct ReportGraph {
  std::vector<GraphItem> items;     // in graph order of their (first) node; inputs first, outputs last
  std::vector<GraphEdge> edges;
  std::vector<GraphCluster> clusters;
  bool collapsed = false;
  int context_hops = 0;             // collapsed: the context actually kept (reduced to fit the budget)
  size_t regions = 0;               // collapsed: connected groups of nodes of interest and their context
  size_t regions_drawn = 0;         // fewer than `regions` when even no context exceeds the budget
  size_t hidden_nodes = 0;          // nodes inside boxes or not drawn
  size_t side_nodes_left_out = 0;   // collapsed: constant and shape-arithmetic runs not drawn at all
  std::vector<long> item_of_node;   // node index -> its item (a box for a collapsed node); -1 = not drawn
};

// The model's graph, whole or collapsed. `fixed_nodes`: nodes --fix rewrote.
ReportGraph build_report_graph(const ModelReport& report, const std::vector<long>& fixed_nodes,
                               const GraphOptions& options);

// Only `centre` and the nodes within `hops` data edges of them, nothing
// collapsed: the before and after pictures of a fix.
ReportGraph neighbourhood_graph(const ModelReport& report, const std::vector<long>& centre, int hops,
                                bool show_waived, Severity min_severity);

// The nodes of `fixed` (the re-lint of the model --fix wrote) that replaced
// `node` of `original`: the producer of the node's first output and, upstream
// of it, every node that produces a value the original model did not have.
std::vector<long> replacement_nodes(const ModelReport& original, long node, const ModelReport& fixed);

// The id of an item ("n12", "c3", "i0", "o1"); with DotStyle::id_prefix in
// the DOT's id attributes.
std::string graph_item_id(const ReportGraph& graph, size_t item);

// Fill, border and text colours of each placement: the graph, the HTML
// legend and its chart use these.
struct PlacementStyle {
  const char* fill;
  const char* border;
  const char* text;
  const char* label;  // "on BPU", "on CPU", ...
};
const PlacementStyle& placement_style(Placement p);
// Border of a node with findings, by the worst level.
const char* severity_colour(Severity s);

struct DotStyle {
  std::string graph_name = "model";
  std::string id_prefix;         // prefixed to every id attribute (unique per model in one HTML file)
  std::string finding_prefix;    // non-empty: nodes with findings link to "#<prefix><finding index>"
  std::vector<long> finding_rows;  // when set, "#<prefix><finding_rows[finding index]>" (the HTML's folded rows)
  bool left_to_right = false;
  std::string comment;           // a "// " line at the top
};

std::string graph_dot(const ModelReport& report, const ReportGraph& graph, const DotStyle& style);

}  // namespace bpulint
