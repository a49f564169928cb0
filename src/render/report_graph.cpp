#include "bpulint/render/report_graph.h"
#include "bpulint/base/disjoint_sets.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "bpulint/base/json_writer.h"
#include "bpulint/render/graph_pieces.h"
#include "bpulint/render/markup.h"

namespace bpulint {
namespace {

// Context does not spread through a node with more neighbours than this (a
// Constant read by every layer would otherwise pull the whole model in).
constexpr size_t kHubDegree = 16;

struct ValueKey {
  size_t graph;
  std::string_view name;
  bool operator==(const ValueKey& o) const { return graph == o.graph && name == o.name; }
};
struct ValueKeyHash {
  size_t operator()(const ValueKey& k) const { return std::hash<std::string_view>{}(k.name) * 31 + k.graph; }
};

// Endpoints of data edges: nodes 0..N-1, then the main graph's inputs, then its outputs.
struct Flow {
  size_t nodes = 0;
  std::vector<std::string_view> inputs, outputs;
  std::vector<const onnx::TypeProto*> input_types, output_types;
  struct Edge {
    size_t from, to;
    const TensorFacts* tensor;
    bool owner;
  };
  std::vector<Edge> edges;
  size_t input_end(size_t k) const { return nodes + k; }
  size_t output_end(size_t k) const { return nodes + inputs.size() + k; }
  // Undirected node-to-node adjacency (CSR), for context and runs.
  std::vector<size_t> adj_start;
  std::vector<uint32_t> adj;
  size_t degree(size_t n) const { return adj_start[n + 1] - adj_start[n]; }
  // Side nodes compute constants or shapes (constant-folded, runtime shape
  // arithmetic), never the data path: no context spreads into them, and the
  // collapsed view leaves out runs made only of them.
  std::vector<char> side;
  std::unordered_map<size_t, long> owners;  // subgraph id -> the node that owns it (-1 = not found)
};

// The node that owns each subgraph: its path is the subgraph's path up to the
// last '.' (fact_walk.cpp names bodies "<owner path>.<attribute>").
std::unordered_map<size_t, long> subgraph_owners(const ModelFacts& facts) {
  std::unordered_map<size_t, long> owner;
  bool nested = false;
  for (const auto& n : facts.nodes) nested = nested || n.graph_id != 0;
  if (!nested) return owner;
  std::unordered_map<std::string, long> by_path;
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    const auto& n = facts.nodes[i];
    if (n.graph_id != 0 && owner.count(n.graph_id) == 0) {
      const size_t dot = n.graph_path.rfind('.');
      auto it = dot == std::string::npos ? by_path.end() : by_path.find(n.graph_path.substr(0, dot));
      owner[n.graph_id] = it == by_path.end() ? -1 : it->second;
    }
    by_path[n.path()] = static_cast<long>(i);
  }
  return owner;
}

Flow data_flow(const ModelReport& r) {
  const auto& nodes = r.facts.nodes;
  Flow f;
  f.nodes = nodes.size();
  f.side.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) f.side[i] = nodes[i].fold != Fold::None;
  const onnx::GraphProto* main = r.loaded && r.loaded->model ? &r.loaded->model->graph() : nullptr;
  std::unordered_set<std::string_view> initializers;
  std::unordered_map<std::string_view, size_t> input_index;
  if (main != nullptr) {
    for (const auto& t : main->initializer()) initializers.insert(t.name());
    for (const auto& v : main->input()) {
      if (initializers.count(v.name()) != 0 || input_index.count(v.name()) != 0) continue;
      input_index.emplace(v.name(), f.inputs.size());
      f.inputs.push_back(v.name());
      f.input_types.push_back(v.has_type() ? &v.type() : nullptr);
    }
    for (const auto& v : main->output()) {
      f.outputs.push_back(v.name());
      f.output_types.push_back(v.has_type() ? &v.type() : nullptr);
    }
  }
  std::unordered_map<ValueKey, uint32_t, ValueKeyHash> producer;
  producer.reserve(nodes.size() * 2);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& o : nodes[i].outputs) {
      if (!o.name.empty()) producer.emplace(ValueKey{nodes[i].graph_id, o.name}, static_cast<uint32_t>(i));
    }
  }
  f.owners = subgraph_owners(r.facts);
  const auto& owners = f.owners;
  auto outer = [&](size_t graph) -> long {
    auto it = owners.find(graph);
    return it == owners.end() || it->second < 0 ? -1 : static_cast<long>(nodes[static_cast<size_t>(it->second)].graph_id);
  };
  std::unordered_set<size_t> bodies_linked;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    if (n.graph_id != 0 && bodies_linked.insert(n.graph_id).second) {
      auto it = owners.find(n.graph_id);
      if (it != owners.end() && it->second >= 0) f.edges.push_back({static_cast<size_t>(it->second), i, nullptr, true});
    }
    for (const auto& in : n.inputs) {
      if (in.name.empty()) continue;
      // A body reads its own values first, then those of the graphs around it.
      long g = static_cast<long>(n.graph_id);
      bool found = false;
      for (int depth = 0; g >= 0 && depth <= kMaxSubgraphDepth && !found; ++depth) {
        auto it = producer.find(ValueKey{static_cast<size_t>(g), in.name});
        if (it != producer.end()) {
          if (it->second != i) f.edges.push_back({it->second, i, &in, false});
          found = true;
        } else if (g == 0) {
          auto k = input_index.find(in.name);
          if (k != input_index.end()) f.edges.push_back({f.input_end(k->second), i, &in, false});
          found = true;
        } else {
          g = outer(static_cast<size_t>(g));
        }
      }
    }
  }
  for (size_t k = 0; k < f.outputs.size(); ++k) {
    auto it = producer.find(ValueKey{0, f.outputs[k]});
    if (it != producer.end()) {
      for (const auto& o : nodes[it->second].outputs) {
        if (o.name == f.outputs[k]) f.edges.push_back({it->second, f.output_end(k), &o, false});
      }
    } else if (auto in = input_index.find(f.outputs[k]); in != input_index.end()) {
      f.edges.push_back({f.input_end(in->second), f.output_end(k), nullptr, false});
    }
  }
  // CSR adjacency between nodes (both directions).
  f.adj_start.assign(nodes.size() + 2, 0);
  for (const auto& e : f.edges) {
    if (e.from < f.nodes && e.to < f.nodes) ++f.adj_start[e.from + 2], ++f.adj_start[e.to + 2];
  }
  for (size_t i = 2; i < f.adj_start.size(); ++i) f.adj_start[i] += f.adj_start[i - 1];
  f.adj.resize(f.adj_start.back());
  for (const auto& e : f.edges) {
    if (e.from < f.nodes && e.to < f.nodes) {
      f.adj[f.adj_start[e.from + 1]++] = static_cast<uint32_t>(e.to);
      f.adj[f.adj_start[e.to + 1]++] = static_cast<uint32_t>(e.from);
    }
  }
  f.adj_start.pop_back();
  return f;
}

// Per node: its first listed finding, the worst level, the rule ids.
struct Findings {
  std::vector<long> first;
  std::vector<Severity> worst;
  std::unordered_map<size_t, std::vector<std::string>> rules;
};

Findings node_findings(const ModelReport& r, bool show_waived, Severity min_severity) {
  Findings f;
  f.first.assign(r.facts.nodes.size(), -1);
  f.worst.assign(r.facts.nodes.size(), Severity::Note);
  long k = 0;
  for (const auto& d : r.diagnostics) {
    if (!listed(d, show_waived, min_severity)) continue;
    const long index = k++;
    if (d.node < 0 || static_cast<size_t>(d.node) >= r.facts.nodes.size()) continue;
    const auto n = static_cast<size_t>(d.node);
    if (f.first[n] < 0) {
      f.first[n] = index;
      f.worst[n] = d.severity;
    } else {
      f.worst[n] = std::max(f.worst[n], d.severity);
    }
    auto& ids = f.rules[n];
    if (std::find(ids.begin(), ids.end(), d.rule->id) == ids.end()) ids.push_back(d.rule->id);
  }
  return f;
}

// Marks every node within `hops` of a marked one (not spreading through hubs
// or into side nodes).
void spread(const Flow& f, std::vector<char>& visible, int hops) {
  std::vector<uint32_t> frontier;
  for (size_t i = 0; i < visible.size(); ++i) {
    if (visible[i]) frontier.push_back(static_cast<uint32_t>(i));
  }
  for (int h = 0; h < hops && !frontier.empty(); ++h) {
    std::vector<uint32_t> next;
    for (uint32_t n : frontier) {
      if (f.degree(n) > kHubDegree) continue;
      for (size_t a = f.adj_start[n]; a < f.adj_start[n + 1]; ++a) {
        if (!visible[f.adj[a]] && !f.side[f.adj[a]]) {
          visible[f.adj[a]] = 1;
          next.push_back(f.adj[a]);
        }
      }
    }
    frontier.swap(next);
  }
}

// Groups of nodes connected through nodes that share `visible`'s value
// (`want`): the boxes (want = 0) or the regions of interest (want = 1).
DisjointSets groups(const Flow& f, const std::vector<char>& visible, char want) {
  DisjointSets sets(f.nodes);
  for (const auto& e : f.edges) {
    if (e.from < f.nodes && e.to < f.nodes && visible[e.from] == want && visible[e.to] == want) sets.unite(e.from, e.to);
  }
  return sets;
}

// The boxes drawn: runs of hidden nodes with at least one node that is not a side node.
std::vector<char> kept_boxes(const Flow& f, DisjointSets& boxes, const std::vector<char>& visible) {
  std::vector<char> kept(f.nodes, 0);
  for (size_t i = 0; i < f.nodes; ++i) {
    if (!visible[i] && !f.side[i]) kept[boxes.find(i)] = 1;
  }
  return kept;
}

// Items, edges and clusters for the nodes marked visible; the others are
// boxes (collapse) or left out.
ReportGraph assemble(const ModelReport& r, const Flow& f, const Findings& findings, const std::vector<char>& visible,
                     bool collapse) {
  const auto& nodes = r.facts.nodes;
  ReportGraph g;
  g.item_of_node.assign(nodes.size(), -1);
  // Endpoint -> item.
  std::vector<long> item_of(f.nodes + f.inputs.size() + f.outputs.size(), -1);
  std::vector<char> input_used(f.inputs.size(), collapse), output_used(f.outputs.size(), collapse);
  if (!collapse) {
    for (const auto& e : f.edges) {
      const bool from_node = e.from < f.nodes, to_node = e.to < f.nodes;
      if (!from_node && to_node && visible[e.to]) input_used[e.from - f.nodes] = 1;
      if (from_node && !to_node && visible[e.from]) output_used[e.to - f.nodes - f.inputs.size()] = 1;
    }
  }
  for (size_t k = 0; k < f.inputs.size(); ++k) {
    if (!input_used[k]) continue;
    item_of[f.input_end(k)] = static_cast<long>(g.items.size());
    GraphItem item;
    item.kind = GraphItem::Kind::Input;
    item.value = f.inputs[k];
    item.type = f.input_types[k];
    g.items.push_back(item);
  }

  // Clusters: subgraph bodies (nested as their graphs are), CPU islands inside them.
  const auto& owners = f.owners;
  std::unordered_map<size_t, size_t> first_of_graph;
  if (!owners.empty()) {
    for (size_t i = 0; i < nodes.size(); ++i) first_of_graph.emplace(nodes[i].graph_id, i);
  }
  std::unordered_map<size_t, int> body_cluster;
  std::unordered_map<long, int> island_cluster;
  std::function<int(size_t)> cluster_of_graph = [&](size_t graph) -> int {
    if (graph == 0) return -1;
    auto it = body_cluster.find(graph);
    if (it != body_cluster.end()) return it->second;
    body_cluster[graph] = -1;  // a hostile owner chain that loops ends here
    auto o = owners.find(graph);
    const int parent = o == owners.end() || o->second < 0
                           ? -1
                           : cluster_of_graph(nodes[static_cast<size_t>(o->second)].graph_id);
    GraphCluster c;
    c.kind = GraphCluster::Kind::Subgraph;
    c.parent = parent;
    auto first = first_of_graph.find(graph);
    if (first != first_of_graph.end()) c.path = nodes[first->second].graph_path;
    g.clusters.push_back(c);
    return body_cluster[graph] = static_cast<int>(g.clusters.size() - 1);
  };
  const std::vector<long> islands = cpu_islands(r.facts, r.placement);

  DisjointSets boxes = collapse ? groups(f, visible, 0) : DisjointSets(0);
  const std::vector<char> kept = collapse ? kept_boxes(f, boxes, visible) : std::vector<char>{};
  std::unordered_map<size_t, size_t> box_of_root;
  std::vector<char> box_mixed;  // a box whose nodes span several graphs sits outside every body
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    const auto placement = static_cast<size_t>(r.placement[i]);
    if (!visible[i]) {
      ++g.hidden_nodes;
      if (!collapse) continue;
      const size_t root = boxes.find(i);
      if (!kept[root]) {
        ++g.side_nodes_left_out;
        continue;
      }
      auto [it, fresh] = box_of_root.emplace(root, g.items.size());
      if (fresh) {
        GraphItem item;
        item.kind = GraphItem::Kind::Collapsed;
        item.node = static_cast<long>(i);
        item.cluster = cluster_of_graph(n.graph_id);
        g.items.push_back(item);
      }
      GraphItem& box = g.items[it->second];
      ++box.counts[placement];
      ++box.hidden;
      if (nodes[static_cast<size_t>(box.node)].graph_id != n.graph_id) box.cluster = -1;
      g.item_of_node[i] = static_cast<long>(it->second);
      item_of[i] = static_cast<long>(it->second);
      continue;
    }
    GraphItem item;
    item.node = static_cast<long>(i);
    item.cluster = cluster_of_graph(n.graph_id);
    if (islands[i] >= 0) {
      auto [it, fresh] = island_cluster.emplace(islands[i], static_cast<int>(g.clusters.size()));
      if (fresh) {
        GraphCluster c;
        c.kind = GraphCluster::Kind::Island;
        c.number = islands[i];
        c.parent = item.cluster;
        g.clusters.push_back(c);
      }
      item.cluster = it->second;
      ++g.clusters[static_cast<size_t>(it->second)].nodes;
    }
    item.finding = findings.first[i];
    if (item.finding >= 0) {
      item.worst = findings.worst[i];
      item.rules = findings.rules.at(i);
    }
    g.item_of_node[i] = static_cast<long>(g.items.size());
    item_of[i] = static_cast<long>(g.items.size());
    g.items.push_back(std::move(item));
  }
  for (size_t k = 0; k < f.outputs.size(); ++k) {
    if (!output_used[k]) continue;
    item_of[f.output_end(k)] = static_cast<long>(g.items.size());
    GraphItem item;
    item.kind = GraphItem::Kind::Output;
    item.value = f.outputs[k];
    item.type = f.output_types[k];
    g.items.push_back(item);
  }
  for (auto& c : g.clusters) {
    if (c.kind == GraphCluster::Kind::Subgraph) c.nodes = 0;
  }
  for (const auto& item : g.items) {
    for (int c = item.cluster; c >= 0; c = g.clusters[static_cast<size_t>(c)].parent) {
      if (g.clusters[static_cast<size_t>(c)].kind == GraphCluster::Kind::Subgraph) ++g.clusters[static_cast<size_t>(c)].nodes;
    }
  }

  // One edge per pair of items, in the order the model first links them.
  std::unordered_map<uint64_t, size_t> edge_of_pair;
  for (const auto& e : f.edges) {
    const long a = item_of[e.from], b = item_of[e.to];
    if (a < 0 || b < 0 || a == b) continue;
    const uint64_t key = static_cast<uint64_t>(a) << 32 | static_cast<uint64_t>(b);
    auto [it, fresh] = edge_of_pair.emplace(key, g.edges.size());
    if (fresh) {
      GraphEdge edge;
      edge.from = static_cast<size_t>(a);
      edge.to = static_cast<size_t>(b);
      edge.tensor = e.tensor;
      edge.owner = e.owner;
      g.edges.push_back(edge);
    } else if (!e.owner) {
      GraphEdge& edge = g.edges[it->second];
      if (edge.tensor == nullptr) edge.tensor = e.tensor;
      else if (e.tensor == nullptr || e.tensor->name != edge.tensor->name) ++edge.tensors;
    }
  }
  return g;
}

std::string type_text(const onnx::TypeProto* type) {
  if (type == nullptr || !type->has_tensor_type()) return "";
  const auto& t = type->tensor_type();
  std::string out = t.elem_type() != 0 ? dtype_name(t.elem_type()) : "";
  if (!t.has_shape()) return out;
  out += out.empty() ? "[" : " [";
  for (int d = 0; d < t.shape().dim_size(); ++d) {
    const auto& dim = t.shape().dim(d);
    if (d > 0) out += ", ";
    out += dim.has_dim_value() ? std::to_string(dim.dim_value()) : dynamic_dim_text(dim.dim_param());
  }
  return out + "]";
}

std::string tensor_text(const TensorFacts& t) {
  const std::string type = type_text(t.type);
  return std::string(t.name) + (type.empty() ? "" : ": " + type);
}

}  // namespace

ReportGraph build_report_graph(const ModelReport& r, const std::vector<long>& fixed_nodes, const GraphOptions& o) {
  const Flow f = data_flow(r);
  const Findings findings = node_findings(r, o.show_waived, o.min_severity);
  const size_t n = r.facts.nodes.size();
  if (n <= o.full_nodes) {
    ReportGraph g = assemble(r, f, findings, std::vector<char>(n, 1), true);
    return g;
  }
  // What the collapsed view keeps: CPU nodes, nodes that will not compile, nodes with findings, fixed nodes.
  std::vector<char> interest(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Placement p = r.placement[i];
    interest[i] = p == Placement::Cpu || p == Placement::NoCompile || findings.first[i] >= 0;
  }
  for (long i : fixed_nodes) {
    if (i >= 0 && static_cast<size_t>(i) < n) interest[static_cast<size_t>(i)] = 1;
  }
  const size_t terminals = f.inputs.size() + f.outputs.size();
  auto items_for = [&](const std::vector<char>& visible) {
    DisjointSets boxes = groups(f, visible, 0);
    const std::vector<char> kept = kept_boxes(f, boxes, visible);
    return terminals + static_cast<size_t>(std::count(visible.begin(), visible.end(), 1)) +
           static_cast<size_t>(std::count(kept.begin(), kept.end(), 1));
  };
  std::vector<char> visible;
  int hops = std::max(0, o.context_hops);
  for (;; --hops) {
    visible = interest;
    spread(f, visible, hops);
    if (hops == 0 || items_for(visible) <= o.budget) break;
  }
  // Regions: connected groups of kept nodes, in graph order of their first node.
  DisjointSets region_sets = groups(f, visible, 1);
  std::vector<size_t> region_roots;
  std::unordered_map<size_t, size_t> region_rank;
  for (size_t i = 0; i < n; ++i) {
    if (visible[i] && region_rank.emplace(region_sets.find(i), region_roots.size()).second) {
      region_roots.push_back(region_sets.find(i));
    }
  }
  size_t drawn = region_roots.size();
  std::vector<char> shown = visible;
  // Still over the budget without context: draw the first regions only.
  for (size_t items = items_for(shown); items > o.budget && drawn > 0; items = items_for(shown)) {
    drawn = std::min(drawn - 1, drawn * o.budget / std::max<size_t>(items, 1));
    for (size_t i = 0; i < n; ++i) shown[i] = visible[i] && region_rank[region_sets.find(i)] < drawn;
  }
  ReportGraph g = assemble(r, f, findings, shown, true);
  g.collapsed = true;
  g.context_hops = hops;
  g.regions = region_roots.size();
  g.regions_drawn = drawn;
  return g;
}

ReportGraph neighbourhood_graph(const ModelReport& r, const std::vector<long>& centre, int hops, bool show_waived,
                                Severity min_severity) {
  const Flow f = data_flow(r);
  std::vector<char> visible(r.facts.nodes.size(), 0);
  for (long i : centre) {
    if (i >= 0 && static_cast<size_t>(i) < visible.size()) visible[static_cast<size_t>(i)] = 1;
  }
  spread(f, visible, hops);
  return assemble(r, f, node_findings(r, show_waived, min_severity), visible, false);
}

std::vector<long> replacement_nodes(const ModelReport& original, long node, const ModelReport& fixed) {
  std::vector<long> out;
  if (node < 0 || static_cast<size_t>(node) >= original.facts.nodes.size()) return out;
  const NodeFacts& old = original.facts.nodes[static_cast<size_t>(node)];
  if (old.outputs.empty() || old.outputs[0].name.empty()) return out;
  std::unordered_set<std::string_view> known;  // every value the original model had
  for (const auto& n : original.facts.nodes) {
    for (const auto& t : n.inputs) known.insert(t.name);
    for (const auto& t : n.outputs) known.insert(t.name);
  }
  std::unordered_map<std::string_view, long> producer;
  for (size_t i = 0; i < fixed.facts.nodes.size(); ++i) {
    const auto& n = fixed.facts.nodes[i];
    if (n.graph_path != old.graph_path) continue;
    for (const auto& t : n.outputs) {
      if (!t.name.empty()) producer.emplace(t.name, static_cast<long>(i));
    }
  }
  auto last = producer.find(old.outputs[0].name);
  if (last == producer.end()) return out;
  // A rewrite is a handful of nodes; the bound only guards against a surprise.
  constexpr size_t kMaxReplacement = 64;
  std::unordered_set<long> seen{last->second};
  std::vector<long> todo{last->second};
  while (!todo.empty() && out.size() < kMaxReplacement) {
    const long n = todo.back();
    todo.pop_back();
    out.push_back(n);
    for (const auto& in : fixed.facts.nodes[static_cast<size_t>(n)].inputs) {
      if (in.name.empty() || known.count(in.name) != 0) continue;
      auto p = producer.find(in.name);
      if (p != producer.end() && seen.insert(p->second).second) todo.push_back(p->second);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string graph_item_id(const ReportGraph& g, size_t item) {
  const GraphItem& it = g.items[item];
  switch (it.kind) {
    case GraphItem::Kind::Node: return "n" + std::to_string(it.node);
    case GraphItem::Kind::Collapsed: return "c" + std::to_string(it.node);
    case GraphItem::Kind::Input: return "i" + std::to_string(item);
    case GraphItem::Kind::Output: return "o" + std::to_string(item);
  }
  return "x" + std::to_string(item);
}

const PlacementStyle& placement_style(Placement p) {
  static const PlacementStyle styles[] = {
      {"#d3f0dc", "#2e8b57", "#123d26", "on BPU"},
      {"#fdd5cf", "#c0392b", "#5c130c", "on CPU"},
      {"#f1f3f5", "#a5acb5", "#5f6873", "folded"},
      {"#fdf0c2", "#b8860b", "#4d3800", "unknown"},
      {"#e4e0fb", "#6a5acd", "#2b2163", "runtime shape"},
      {"#3b3f45", "#111315", "#ffffff", "will not compile"},
      {"#dceefb", "#4682b4", "#173a57", "data-dependent shape"},
  };
  return styles[static_cast<size_t>(p)];
}

const char* severity_colour(Severity s) {
  switch (s) {
    case Severity::Error: return "#b3001b";
    case Severity::Warning: return "#c76a00";
    case Severity::Note: return "#1f5fbf";
  }
  return "#1f5fbf";
}

namespace {

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

class DotWriter {
 public:
  DotWriter(const ModelReport& r, const ReportGraph& g, const DotStyle& s) : r_(r), g_(g), s_(s) {}
  // Only one piece of the graph (graph_pieces.h): its items, their clusters, its stubs.
  DotWriter(const ModelReport& r, const ReportGraph& g, const DotStyle& s, const GraphPieces& pieces, size_t piece)
      : r_(r), g_(g), s_(s), pieces_(&pieces), piece_(piece) {}

  std::string write() {
    if (!s_.comment.empty()) out_ << "// " << printable_text(s_.comment) << "\n";
    out_ << "digraph " << dot_quote(s_.graph_name) << " {\n"
         << "  graph [rankdir=" << (s_.left_to_right ? "LR" : "TB")
         << ", nodesep=0.18, ranksep=0.28, fontname=\"Helvetica\", fontsize=10, bgcolor=\"transparent\", pad=0.12"
         << ", outputorder=edgesfirst, id=" << dot_quote(s_.id_prefix + "graph" + part_suffix(0)) << "];\n"
         << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10, height=0.3, "
            "margin=\"0.09,0.03\", penwidth=1.2];\n"
         << "  edge [color=\"#8c96a3\", arrowsize=0.55, penwidth=1];\n";
    std::vector<std::vector<size_t>> members(g_.clusters.size()), children(g_.clusters.size());
    std::vector<size_t> top;
    std::vector<char> used(g_.clusters.size(), pieces_ == nullptr);  // a piece draws only its items' clusters
    for (size_t i : drawn_items()) {
      long c = g_.items[i].cluster;
      if (c >= 0) members[static_cast<size_t>(c)].push_back(i);
      else top.push_back(i);
      for (; c >= 0 && !used[static_cast<size_t>(c)]; c = g_.clusters[static_cast<size_t>(c)].parent) {
        used[static_cast<size_t>(c)] = 1;
      }
    }
    std::vector<size_t> roots;
    for (size_t c = 0; c < g_.clusters.size(); ++c) {
      if (!used[c]) continue;
      if (g_.clusters[c].parent >= 0) children[static_cast<size_t>(g_.clusters[c].parent)].push_back(c);
      else roots.push_back(c);
    }
    if (pieces_ != nullptr) first_piece_of_clusters();
    for (size_t c : roots) cluster(c, members, children, 1);
    for (size_t i : top) item(i, 1);
    for (size_t e = 0; e < g_.edges.size(); ++e) {
      if (pieces_ == nullptr || (in_piece(g_.edges[e].from) && in_piece(g_.edges[e].to))) edge(e);
    }
    if (pieces_ != nullptr) stubs();
    out_ << "}\n";
    return out_.str();
  }

 private:
  std::vector<size_t> drawn_items() const {
    if (pieces_ != nullptr) return pieces_->pieces[piece_].items;
    std::vector<size_t> all(g_.items.size());
    std::iota(all.begin(), all.end(), size_t{0});
    return all;
  }

  bool in_piece(size_t item) const { return pieces_->piece_of_item[item] == static_cast<long>(piece_); }

  // Ids stay unique across the pieces: the graph's and a cluster's id name
  // the part when the cluster began in an earlier one.
  std::string part_suffix(long first_piece) const {
    return pieces_ == nullptr || static_cast<long>(piece_) == first_piece ? "" : "_part" + std::to_string(piece_ + 1);
  }

  void first_piece_of_clusters() {
    first_piece_.assign(g_.clusters.size(), static_cast<long>(pieces_->pieces.size()));
    for (size_t i = 0; i < g_.items.size(); ++i) {
      const long p = pieces_->piece_of_item[i];
      for (long c = g_.items[i].cluster; c >= 0; c = g_.clusters[static_cast<size_t>(c)].parent) {
        auto& first = first_piece_[static_cast<size_t>(c)];
        first = std::min(first, p);
      }
    }
  }

  std::string cluster_suffix(size_t c) const {
    return pieces_ == nullptr ? "" : part_suffix(first_piece_[c]);
  }

  // What a stub shows of the item at the edge's far end.
  std::string far_text(size_t item) const {
    const GraphItem& it = g_.items[item];
    switch (it.kind) {
      case GraphItem::Kind::Node: {
        const NodeFacts& n = r_.facts.nodes[static_cast<size_t>(it.node)];
        return n.op_type + " '" + shorten_tail(n.display_name, 30) + "'";
      }
      case GraphItem::Kind::Collapsed: return plural(it.hidden, "collapsed node", "collapsed nodes");
      case GraphItem::Kind::Input: return "input " + shorten_tail(it.value, 30);
      case GraphItem::Kind::Output: return "output " + shorten_tail(it.value, 30);
    }
    return "";
  }

  static std::string parts_text(const std::vector<size_t>& pieces) {
    std::string out = pieces.size() == 1 ? "part " : "parts ";
    for (size_t k = 0; k < pieces.size(); ++k) out += (k == 0 ? "" : ", ") + std::to_string(pieces[k] + 1);
    return out;
  }

  // Each edge to or from another piece ends at a stub naming (and linking to) its far end.
  void stubs() {
    const auto& list = pieces_->pieces[piece_].stubs;
    const std::string piece_id = "p" + std::to_string(piece_ + 1) + "s";
    for (size_t k = 0; k < list.size(); ++k) {
      const GraphStub& st = list[k];
      const std::string id = piece_id + std::to_string(k);
      const std::string where = std::string(st.incoming ? "from " : "to ") + parts_text(st.pieces);
      const std::string what = st.other >= 0 ? far_text(static_cast<size_t>(st.other))
                                             : plural(st.far_items, "item", "items");
      out_ << "  " << id << " [id=" << dot_quote(s_.id_prefix + id)
           << ", class=\"stub\", shape=box, style=\"rounded,dashed\", color=\"#8c96a3\", fontcolor=\"#4a525c\", "
              "fontsize=8, height=0.2, label="
           << dot_quote_lines({where, what}) << ", tooltip="
           << dot_quote(std::string(st.incoming ? "fed by " : "feeds ") + what + ", drawn in " + parts_text(st.pieces));
      if (st.other >= 0) out_ << ", URL=" << dot_quote("#" + s_.id_prefix + graph_item_id(g_, static_cast<size_t>(st.other)));
      out_ << "];\n";
      std::vector<size_t> ends;  // one edge per item of this piece
      for (size_t e : st.edges) {
        const GraphEdge& ed = g_.edges[e];
        const size_t end = st.incoming ? ed.to : ed.from;
        if (std::find(ends.begin(), ends.end(), end) != ends.end()) continue;
        ends.push_back(end);
        out_ << "  " << (st.incoming ? id : this->id(end)) << " -> " << (st.incoming ? this->id(end) : id)
             << " [id=" << dot_quote(s_.id_prefix + id + "_" + std::to_string(ends.size() - 1))
             << ", style=dashed";
        if (ed.tensor != nullptr) out_ << ", tooltip=" << dot_quote(shorten_tail(tensor_text(*ed.tensor), 160));
        out_ << "];\n";
      }
    }
  }

  void indent(int depth) {
    for (int d = 0; d < depth; ++d) out_ << "  ";
  }

  void cluster(size_t c, const std::vector<std::vector<size_t>>& members, const std::vector<std::vector<size_t>>& children,
               int depth) {
    const GraphCluster& cl = g_.clusters[c];
    indent(depth);
    out_ << "subgraph cluster_" << c << " {\n";
    indent(depth + 1);
    if (cl.kind == GraphCluster::Kind::Island) {
      const std::string label = "CPU island " + std::to_string(cl.number + 1);
      out_ << "id=" << dot_quote(s_.id_prefix + "island" + std::to_string(cl.number) + cluster_suffix(c)) << "; class=\"island\"; label="
           << dot_quote(label) << "; tooltip="
           << dot_quote(label + ": " + plural(cl.nodes, "node", "nodes") + " on the CPU, one BPU<->CPU round trip")
           << "; style=\"rounded,dashed,filled\"; color=\"#c0392b\"; fillcolor=\"#fff5f3\"; penwidth=1.6; "
              "fontcolor=\"#a93226\"; fontsize=9; labeljust=l;\n";
    } else {
      out_ << "id=" << dot_quote(s_.id_prefix + "body" + std::to_string(c) + cluster_suffix(c)) << "; class=\"body\"; label="
           << dot_quote("subgraph " + shorten_tail(cl.path, 60)) << "; tooltip=" << dot_quote("subgraph " + cl.path)
           << "; style=\"rounded,dashed\"; color=\"#7d8793\"; fontcolor=\"#4a525c\"; fontsize=9; labeljust=l;\n";
    }
    for (size_t k : children[c]) cluster(k, members, children, depth + 1);
    for (size_t i : members[c]) item(i, depth + 1);
    indent(depth);
    out_ << "}\n";
  }

  std::string id(size_t i) const { return graph_item_id(g_, i); }

  void item(size_t i, int depth) {
    const GraphItem& it = g_.items[i];
    indent(depth);
    out_ << id(i) << " [id=" << dot_quote(s_.id_prefix + id(i));
    switch (it.kind) {
      case GraphItem::Kind::Node: node(it); break;
      case GraphItem::Kind::Collapsed: box(it); break;
      case GraphItem::Kind::Input:
      case GraphItem::Kind::Output: terminal(it); break;
    }
    out_ << "];\n";
  }

  void node(const GraphItem& it) {
    const auto index = static_cast<size_t>(it.node);
    const NodeFacts& n = r_.facts.nodes[index];
    const Placement p = r_.placement[index];
    const PlacementStyle& st = placement_style(p);
    const std::string op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    std::vector<std::string> label = {shorten_tail(op, 28)};
    if (!n.name.empty() && p != Placement::Folded) label.push_back(shorten_tail(n.name, 34));
    if (!it.rules.empty()) {
      label.push_back(it.rules[0] + (it.rules.size() > 1 ? " +" + std::to_string(it.rules.size() - 1) : ""));
    }
    std::vector<std::string> tip = {op + " '" + std::string(n.display_name) + "': " + st.label,
                                    "graph " + n.graph_path + ", node #" + std::to_string(n.index_in_graph)};
    for (const auto& o : n.outputs) {
      if (!o.name.empty()) tip.push_back("out " + shorten_tail(tensor_text(o), 120));
    }
    if (!it.rules.empty()) tip.push_back("findings: " + join_ids(it.rules));
    out_ << ", class=" << dot_quote(std::string("node-") + placement_name(p) + (it.rules.empty() ? "" : " flagged"))
         << ", label=" << dot_quote_lines(label) << ", tooltip=" << dot_quote_lines(tip) << ", fillcolor=\"" << st.fill
         << "\", fontcolor=\"" << st.text << "\"";
    if (!it.rules.empty()) {
      out_ << ", color=\"" << severity_colour(it.worst) << "\", penwidth=2.6";
      if (!s_.finding_prefix.empty() && it.finding >= 0) {
        const size_t k = static_cast<size_t>(it.finding);
        const long row = k < s_.finding_rows.size() ? s_.finding_rows[k] : it.finding;
        out_ << ", URL=" << dot_quote("#" + s_.finding_prefix + std::to_string(row));
      }
    } else {
      out_ << ", color=\"" << st.border << "\"";
    }
    if (p == Placement::Folded) out_ << ", style=\"rounded,filled,dashed\", fontsize=8, height=0.2";
  }

  void box(const GraphItem& it) {
    std::string counts;
    for (size_t p = 0; p < it.counts.size(); ++p) {
      if (it.counts[p] == 0) continue;
      counts += (counts.empty() ? "" : ", ") + std::to_string(it.counts[p]) + " " +
                placement_style(static_cast<Placement>(p)).label;
    }
    const NodeFacts& first = r_.facts.nodes[static_cast<size_t>(it.node)];
    const std::vector<std::string> label = {plural(it.hidden, "node", "nodes"), counts};
    const std::string tip = plural(it.hidden, "node", "nodes") + " collapsed (" + counts + "), from " + first.op_type +
                            " '" + std::string(first.display_name) + "'";
    out_ << ", class=\"collapsed\", shape=box3d, style=\"filled\", fillcolor=\"#eef4f0\", color=\"#7fae8f\", "
            "fontcolor=\"#2f4f3a\", fontsize=9, label="
         << dot_quote_lines(label) << ", tooltip=" << dot_quote(tip);
  }

  void terminal(const GraphItem& it) {
    const bool input = it.kind == GraphItem::Kind::Input;
    const std::string type = type_text(it.type);
    std::vector<std::string> label = {std::string(input ? "input " : "output ") + shorten_tail(it.value, 30)};
    if (!type.empty()) label.push_back(type);
    out_ << ", class=\"" << (input ? "graph-input" : "graph-output")
         << "\", shape=box, style=\"rounded,filled,bold\", fillcolor=\"#e7eefb\", color=\"#4267b2\", "
            "fontcolor=\"#1d3461\", label="
         << dot_quote_lines(label) << ", tooltip="
         << dot_quote(std::string(input ? "graph input " : "graph output ") + std::string(it.value) +
                      (type.empty() ? "" : ": " + type));
  }

  void edge(size_t e) {
    const GraphEdge& ed = g_.edges[e];
    out_ << "  " << id(ed.from) << " -> " << id(ed.to) << " [id=" << dot_quote(s_.id_prefix + "e" + std::to_string(e));
    if (ed.owner) {
      out_ << ", style=dashed, arrowhead=odot, tooltip=\"subgraph body\"";
    } else if (ed.tensor != nullptr) {
      std::string tip = shorten_tail(tensor_text(*ed.tensor), 160);
      if (ed.tensors > 1) tip += " (and " + plural(ed.tensors - 1, "other tensor", "other tensors") + ")";
      out_ << ", tooltip=" << dot_quote(tip);
    }
    if (ed.tensors > 1) out_ << ", penwidth=1.6";
    out_ << "];\n";
  }

  static std::string join_ids(const std::vector<std::string>& ids) {
    std::string out;
    for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
    return out;
  }

  const ModelReport& r_;
  const ReportGraph& g_;
  const DotStyle& s_;
  const GraphPieces* pieces_ = nullptr;
  size_t piece_ = 0;
  std::vector<long> first_piece_;  // cluster -> the first piece drawing it
  std::ostringstream out_;
};

}  // namespace

std::string graph_dot(const ModelReport& report, const ReportGraph& graph, const DotStyle& style) {
  return DotWriter(report, graph, style).write();
}

std::string piece_dot(const ModelReport& report, const ReportGraph& graph, const GraphPieces& pieces, size_t piece,
                      const DotStyle& style) {
  return DotWriter(report, graph, style, pieces, piece).write();
}

}  // namespace bpulint
