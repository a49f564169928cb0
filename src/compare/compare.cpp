#include "bpulint/compare/compare.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace bpulint {
namespace {

// CPU over BPU over NULL: a node the compiler ran on the CPU anywhere is a CPU node.
int strength(const std::string& on) { return on == "CPU" ? 2 : on == "BPU" ? 1 : 0; }

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool is_cut(std::string_view name) { return name.size() > 3 && name.substr(0, 3) == "..."; }

// The pieces a node is split into, by the suffix the compiler appends to the
// node's name (compile-logs.md), and the ops whose nodes it splits that way.
struct SplitSuffix {
  std::string_view suffix;
  PieceRole role;
  std::initializer_list<std::string_view> ops;
};
const SplitSuffix kSplitSuffixes[] = {
    // Longest first where one ends another (_reshape_in / _transpose_in_reshape are distinct).
    {"_reducemax_FROM_QUANTIZED_SOFTMAX", PieceRole::Compute, {"Softmax"}},
    {"_sub_FROM_QUANTIZED_SOFTMAX", PieceRole::Compute, {"Softmax"}},
    {"_exp_FROM_QUANTIZED_SOFTMAX", PieceRole::Compute, {"Softmax"}},
    {"_reducesum_FROM_QUANTIZED_SOFTMAX", PieceRole::Compute, {"Softmax"}},
    {"_reciprocal_FROM_QUANTIZED_SOFTMAX", PieceRole::Compute, {"Softmax"}},
    {"_mul_FROM_QUANTIZED_SOFTMAX", PieceRole::Compute, {"Softmax"}},
    // A LayerNormalization run as 8 ops (hb_compile 3.3.22, opset 17+).
    {"_mean1", PieceRole::Compute, {"LayerNormalization"}},
    {"_sub1", PieceRole::Compute, {"LayerNormalization"}},
    {"_mul1", PieceRole::Compute, {"LayerNormalization"}},
    {"_mean2", PieceRole::Compute, {"LayerNormalization"}},
    {"_hzrsqrt", PieceRole::Compute, {"LayerNormalization"}},
    {"_mul2", PieceRole::Compute, {"LayerNormalization"}},
    {"_mul3", PieceRole::Compute, {"LayerNormalization"}},
    {"_add", PieceRole::Compute, {"LayerNormalization"}},
    {"_transpose_output_reshape", PieceRole::Layout, {"Gemm", "MatMul"}},
    {"_transpose_in_reshape", PieceRole::Layout, {"Gemm", "MatMul"}},
    {"_reshape_output", PieceRole::Layout, {"Gemm", "MatMul"}},
    // A Linear lowered to a Conv (hb_compile 3.3.22).
    {"_reshape_to_4dim", PieceRole::Layout, {"MatMul", "Gemm"}},
    {"_transpose_in", PieceRole::Layout, {"MatMul", "Gemm"}},
    {"_reshape_in", PieceRole::Layout, {"MatMul", "Gemm"}},
    {"_gemm", PieceRole::Compute, {"MatMul", "Gemm"}},
    {"_reciprocal", PieceRole::Helper, {"Div"}},
    {"_mul", PieceRole::Compute, {"Div"}},
};

// The rows hb_mapper (X5) prints at a Softmax's scope instead of the Softmax.
const std::string_view kSoftmaxScopePieces[] = {"ReduceMax", "Sub", "Exp", "ReduceSum", "Div_reciprocal", "Div_mul"};

bool has_op(const std::initializer_list<std::string_view>& ops, const std::string& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Of the nodes a cut piece's tail fits, the one the table is at: the first
// at or after `after` (the node of the last row matched; tables follow the
// graph's order), when the tail fits several (a cut keeps the last 37
// characters, so a piece suffix leaves only a few of its node's name).
// `found` is sorted.
std::vector<long> in_table_order(std::vector<long> found, long after) {
  if (found.size() <= 1 || after < 0) return found;
  for (long n : found) {
    if (n >= after) return {n};
  }
  return found;
}

// Names matched against rows: the main graph's nodes and tensors.
class Names {
 public:
  explicit Names(const ModelFacts& facts) : facts_(facts) {
    for (size_t i = 0; i < facts.nodes.size(); ++i) {
      const NodeFacts& n = facts.nodes[i];
      if (n.graph_id != 0) continue;
      if (!n.name.empty()) nodes_[std::string(n.name)].push_back(static_cast<long>(i));
      if (!n.outputs.empty() && !n.outputs[0].name.empty()) first_output_.emplace(std::string(n.outputs[0].name), static_cast<long>(i));
      for (const auto& t : n.inputs) {
        if (!t.name.empty()) consumers_[std::string(t.name)].push_back(static_cast<long>(i));
      }
      for (const auto& t : n.outputs) {
        if (!t.name.empty()) producer_.emplace(std::string(t.name), static_cast<long>(i));
      }
      for (const auto& t : n.inputs) {
        if (!t.name.empty() && t.producer == 0 && t.initializer == nullptr) consumer_.emplace(std::string(t.name), static_cast<long>(i));
      }
    }
  }

  const std::vector<long>* exact(const std::string& name) const {
    auto it = nodes_.find(name);
    return it == nodes_.end() ? nullptr : &it->second;
  }

  // The node whose first output is `tensor` (hbdk4's advice is keyed by the
  // tensor, also as <tensor>_quantized / <tensor>_calibrated); -1 when none.
  long by_first_output(std::string_view tensor) const {
    for (std::string_view tail : {"", "_quantized", "_calibrated"}) {
      if (!tail.empty() && !ends_with(tensor, tail)) continue;
      auto it = first_output_.find(std::string(tensor.substr(0, tensor.size() - tail.size())));
      if (it != first_output_.end()) return it->second;
    }
    return -1;
  }

  // The one node reading `node`'s outputs, when it is a single node of `op`; -1 otherwise.
  long single_consumer(long node, std::string_view op) const {
    long found = -1;
    for (const auto& t : facts_.nodes[static_cast<size_t>(node)].outputs) {
      auto it = consumers_.find(std::string(t.name));
      if (t.name.empty() || it == consumers_.end()) continue;
      for (long c : it->second) {
        if (found >= 0 && c != found) return -1;
        found = c;
      }
    }
    return found >= 0 && facts_.nodes[static_cast<size_t>(found)].op_type == op ? found : -1;
  }

  // The nodes `name` stands for: exactly, or, cut to "...<tail>", every node
  // ending with the tail; only nodes of `ops` when it is not empty.
  std::vector<long> resolve(std::string_view name, std::initializer_list<std::string_view> ops = {}) const {
    std::vector<long> out;
    auto keep = [&](long n) { return ops.size() == 0 || has_op(ops, facts_.nodes[static_cast<size_t>(n)].op_type); };
    if (!is_cut(name)) {
      if (const auto* ids = exact(std::string(name))) {
        for (long n : *ids) {
          if (keep(n)) out.push_back(n);
        }
      }
      return out;
    }
    const std::string_view tail = name.substr(3);
    for (const auto& [node, ids] : nodes_) {
      if (!ends_with(node, tail)) continue;
      for (long n : ids) {
        if (keep(n)) out.push_back(n);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The Softmax nodes directly in `scope` ("/model.10/m/m.0/attn"; cut:
  // "...0/attn", a scope ending so).
  std::vector<long> softmax_in_scope(std::string_view scope) const {
    std::vector<long> out;
    const bool cut = is_cut(scope);
    const std::string_view tail = cut ? scope.substr(3) : scope;
    for (const auto& [node, ids] : nodes_) {
      const size_t slash = node.rfind('/');
      if (slash == std::string::npos) continue;
      const std::string_view node_scope = std::string_view(node).substr(0, slash);
      if (cut ? !ends_with(node_scope, tail) : node_scope != tail) continue;
      for (long n : ids) {
        if (facts_.nodes[static_cast<size_t>(n)].op_type == "Softmax") out.push_back(n);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // A Reshape or Transpose the compiler inserted, named after a node or a
  // tensor ("/Gather_1_reshape", "/Mul_2/Mul_2_output_0_Reshape_0",
  // "/Concatstate_out_Reshape_0", "<node>_<graph output>_Reshape"): the node
  // of the longest name (or the producer, else a consumer, of the longest
  // tensor name) the row starts with, when the rest says reshape or
  // transpose. -1 when there is none.
  long inserted_for(std::string_view row, long after) const {
    // A '+' joins a fused group, each part matched alone.
    if (row.size() < 2 || row.size() > 1024 || row.find('+') != std::string_view::npos) return -1;
    if (is_cut(row)) return cut_inserted_for(row.substr(3), after);
    const std::string low = lower(row);
    const size_t reshape = low.rfind("reshape"), transpose = low.rfind("transpose");
    const size_t last = std::max(reshape == std::string::npos ? 0 : reshape, transpose == std::string::npos ? 0 : transpose);
    for (size_t len = std::min(last, row.size() - 1); len > 0; --len) {  // the rest from len on says reshape or transpose
      const std::string prefix(row.substr(0, len));
      if (auto it = nodes_.find(prefix); it != nodes_.end() && it->second.size() == 1) return it->second.front();
      if (auto it = producer_.find(prefix); it != producer_.end()) return it->second;
      if (auto it = consumer_.find(prefix); it != consumer_.end()) return it->second;
    }
    return -1;
  }

 private:
  const ModelFacts& facts_;
  std::unordered_map<std::string, std::vector<long>> nodes_;
  std::unordered_map<std::string, long> producer_;
  std::unordered_map<std::string, long> consumer_;  // first consumer of a graph input
  // inserted_for of a name cut to "...<tail>": the node (or tensor producer)
  // whose name ends with the longest start of the tail followed by '_' and
  // a rest saying reshape or transpose; several such nodes are told apart
  // by the table's order.
  long cut_inserted_for(std::string_view tail, long after) const {
    constexpr size_t kMinimum = 8;  // shorter starts fit too many names to mean one
    const std::string low = lower(tail);
    const size_t reshape = low.rfind("reshape"), transpose = low.rfind("transpose");
    const size_t last = std::max(reshape == std::string::npos ? 0 : reshape, transpose == std::string::npos ? 0 : transpose);
    for (size_t len = last; len >= kMinimum; --len) {
      if (tail[len] != '_') continue;
      const std::string_view start = tail.substr(0, len);
      std::vector<long> found;
      for (const auto& [name, ids] : nodes_) {
        if (ends_with(name, start)) found.insert(found.end(), ids.begin(), ids.end());
      }
      for (const auto& [tensor, node] : producer_) {
        if (ends_with(tensor, start)) found.push_back(node);
      }
      if (found.empty()) continue;
      std::sort(found.begin(), found.end());
      found.erase(std::unique(found.begin(), found.end()), found.end());
      found = in_table_order(std::move(found), after);
      return found.size() == 1 ? found.front() : -1;
    }
    return -1;
  }

  std::unordered_map<std::string, long> first_output_;
  std::unordered_map<std::string, std::vector<long>> consumers_;  // every reader of a tensor
};

// What a row (or a fused part) names.
struct Match {
  enum Kind { None, Own, Piece, CompilerMade, Ambiguous } kind = None;
  std::vector<long> nodes;
  PieceRole role = PieceRole::Compute;
  size_t candidates = 0;  // Ambiguous: how many nodes end with the cut tail
};

// `after`: the node of the last row matched, to place cut pieces; `tensors`:
// names may be a node's first output (hbdk4's advice file).
Match match_name(const Names& names, const std::string& name, long after = -1, bool tensors = false) {
  Match m;
  // The node itself, by its name or a tail of it.
  m.nodes = names.resolve(name);
  if (m.nodes.size() == 1 || (!m.nodes.empty() && !is_cut(name))) {
    m.kind = Match::Own;
    return m;
  }
  if (tensors && m.nodes.empty()) {
    if (const long n = names.by_first_output(name); n >= 0) {
      m.kind = Match::Own;
      m.nodes = {n};
      return m;
    }
  }
  const size_t own_candidates = m.nodes.size();
  m.nodes.clear();
  // A piece of a split node: <node><suffix>.
  for (const auto& s : kSplitSuffixes) {
    if (!ends_with(name, s.suffix) || name.size() == s.suffix.size()) continue;
    const std::string base = name.substr(0, name.size() - s.suffix.size());
    if (base == "...") continue;
    std::vector<long> found = is_cut(base) ? in_table_order(names.resolve(base, s.ops), after) : names.resolve(base, s.ops);
    if (found.size() == 1) {
      m.kind = Match::Piece;
      m.nodes = std::move(found);
      m.role = s.role;
      return m;
    }
  }
  // A decomposed Softmax's rows at its scope (X5): <scope>/ReduceMax, ...
  if (const size_t slash = name.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string_view last = std::string_view(name).substr(slash + 1);
    if (std::find(std::begin(kSoftmaxScopePieces), std::end(kSoftmaxScopePieces), last) != std::end(kSoftmaxScopePieces)) {
      std::vector<long> found = names.softmax_in_scope(std::string_view(name).substr(0, slash));
      if (found.size() == 1) {
        m.kind = Match::Piece;
        m.nodes = std::move(found);
        m.role = PieceRole::Compute;
        return m;
      }
    }
  }
  // A Reshape inserted for a node or a tensor.
  if (const long n = names.inserted_for(name, after); n >= 0) {
    m.kind = Match::Piece;
    m.nodes = {n};
    m.role = PieceRole::Layout;
    return m;
  }
  if (compiler_made_name(name)) {
    m.kind = Match::CompilerMade;
  } else if (own_candidates > 1) {
    m.kind = Match::Ambiguous;
    m.candidates = own_candidates;
  }
  return m;
}

// Graph inputs of a reason's shape, then every node fed by them through
// tensors of rank below 4: hb_mapper's "can not get nhwc info" concerns
// feature maps without an NHWC layout.
std::vector<long> fed_by_shape(const ModelFacts& facts, const std::vector<long long>& shape) {
  auto dims_of = [](const TensorFacts& t, std::vector<long long>& dims) {
    dims.clear();
    if (t.type == nullptr || !t.type->has_tensor_type() || !t.type->tensor_type().has_shape()) return false;
    for (const auto& d : t.type->tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return false;
      dims.push_back(d.dim_value());
    }
    return true;
  };
  std::unordered_set<std::string_view> reached;
  std::vector<long> out;
  std::vector<long long> dims;
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    const NodeFacts& n = facts.nodes[i];
    if (n.graph_id != 0) continue;
    bool fed = false;
    for (const auto& t : n.inputs) {
      if (t.name.empty()) continue;
      const bool graph_input = t.producer == 0 && t.initializer == nullptr && !t.is_const;
      if (reached.count(t.name) > 0 || (graph_input && dims_of(t, dims) && dims == shape)) {
        reached.insert(t.name);
        fed = true;
      }
    }
    if (!fed) continue;
    out.push_back(static_cast<long>(i));
    for (const auto& t : n.outputs) {
      if (!t.name.empty() && dims_of(t, dims) && dims.size() < 4) reached.insert(t.name);
    }
  }
  return out;
}

struct NodeRows {
  const PlacementRow* own = nullptr;  // the strongest own row
  std::vector<NodePiece> pieces;
};

const PlacementRow* strongest(const NodeRows& r) {
  if (r.own != nullptr) return r.own;
  for (PieceRole role : {PieceRole::Compute, PieceRole::Helper}) {
    const PlacementRow* best = nullptr;
    for (const auto& p : r.pieces) {
      if (p.role == role && (best == nullptr || strength(p.row->on) > strength(best->on))) best = p.row;
    }
    if (best != nullptr) return best;
  }
  return nullptr;  // layout pieces only: they say nothing about where the node's work ran
}

// The nodes a fused row placed besides its first node `first`, from its
// NodeType (`Conv+Add`, `Conv+Add+Relu`): each next part is the single
// consumer of the node before, when its op is that part. Empty when the
// type has no '+' or the graph does not follow it.
std::vector<long> fused_followers(const Names& names, long first, const std::string& type) {
  std::vector<long> out;
  const size_t plus = type.find('+');
  if (plus == std::string::npos) return out;
  long at = first;
  size_t begin = plus + 1;
  while (begin <= type.size()) {
    size_t end = type.find('+', begin);
    if (end == std::string::npos) end = type.size();
    at = names.single_consumer(at, std::string_view(type).substr(begin, end - begin));
    if (at < 0) break;
    out.push_back(at);
    begin = end + 1;
  }
  return out;
}

}  // namespace

const char* piece_role_name(PieceRole r) {
  return r == PieceRole::Compute ? "compute" : r == PieceRole::Helper ? "helper" : "layout";
}

Comparison compare_placement(const ModelReport& report, const CompileLog& log) {
  Comparison c;
  const auto& nodes = report.facts.nodes;
  for (const auto& n : nodes) c.subgraph_nodes += n.graph_id != 0 ? 1 : 0;
  const Names names(report.facts);

  std::map<long, NodeRows> seen;
  c.rows = log.rows.size();
  const bool by_tensor = log.format == LogFormat::AdviceJson;
  long after = -1;  // the node of the last row matched: where the table is
  auto own = [&](long n, const PlacementRow& row) {
    NodeRows& s = seen[n];
    if (s.own == nullptr || strength(row.on) > strength(s.own->on)) s.own = &row;
  };
  auto take = [&](const std::string& name, const PlacementRow& row) {
    const Match m = match_name(names, name, after, by_tensor);
    if ((m.kind == Match::Own || m.kind == Match::Piece) && !m.nodes.empty()) after = m.nodes.front();
    switch (m.kind) {
      case Match::Own:
        for (long n : m.nodes) own(n, row);
        // A fused row named after its first node only (NodeType `Conv+Add`):
        // the next parts are that node's single consumer of the next op, and so on.
        if (m.nodes.size() == 1 && row.node.find('+') == std::string::npos) {
          for (long n : fused_followers(names, m.nodes.front(), row.type)) own(n, row);
        }
        break;
      case Match::Piece:
        ++c.node_pieces;
        for (long n : m.nodes) {
          seen[n].pieces.push_back({&row, m.role});
          if (m.role == PieceRole::Layout && row.on == "CPU") c.round_trips.push_back({n, &row});
        }
        break;
      case Match::CompilerMade:
        ++c.compiler_made;
        break;
      case Match::Ambiguous:
        c.unmatched_rows.push_back(name);
        c.ambiguous_rows.push_back({name, m.candidates});
        break;
      case Match::None:
        if (!name.empty()) c.unmatched_rows.push_back(name);
        break;
    }
  };
  for (const auto& row : log.rows) {
    if (row.on == "--") continue;  // folded before placement: its node stays "not placed"
    // A fused group joins names with '+'; a node whose own name holds '+' is tried whole first.
    if (row.node.find('+') == std::string::npos || match_name(names, row.node, after, by_tensor).kind == Match::Own) {
      take(row.node, row);
      continue;
    }
    size_t begin = 0;
    while (begin <= row.node.size()) {
      size_t end = row.node.find('+', begin);
      if (end == std::string::npos) end = row.node.size();
      take(row.node.substr(begin, end - begin), row);
      begin = end + 1;
    }
  }

  std::multimap<long, const NodeReason*> reasons;
  for (const auto& r : log.reasons) {
    if (const auto* ids = names.exact(r.node)) {
      for (long n : *ids) reasons.emplace(n, &r);
    }
  }
  for (const auto& r : log.shape_reasons) {
    for (long n : fed_by_shape(report.facts, r.shape)) reasons.emplace(n, &r);
  }

  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].graph_id != 0) continue;
    const long n = static_cast<long>(i);
    auto it = seen.find(n);
    const PlacementRow* row = it == seen.end() ? nullptr : strongest(it->second);
    if (row == nullptr) {
      c.not_placed.push_back(n);
      continue;
    }
    ++c.matched;
    NodeComparison nc;
    nc.node = n;
    nc.predicted = report.placement[i];
    nc.compiler = row->on;
    nc.compiler_type = row->type;
    nc.row = row->node;
    nc.line = row->line;
    nc.pieces = it->second.pieces;
    for (auto [r, end] = reasons.equal_range(n); r != end; ++r) nc.reasons.push_back(r->second);
    const bool on_cpu = nc.compiler == "CPU";
    switch (nc.predicted) {
      case Placement::Bpu:
      case Placement::Folded:
        (on_cpu ? c.missed : c.agree).push_back(std::move(nc));
        break;
      case Placement::Cpu:
      case Placement::NoCompile:
        if (nc.predicted == Placement::Cpu && on_cpu) {
          c.agree.push_back(std::move(nc));
          break;
        }
        for (const auto& d : report.diagnostics) {
          if (d.node == n && d.outcome == Outcome::Fail && d.severity == Severity::Error &&
              (d.rule->effect == Effect::CpuFallback || d.rule->effect == Effect::CompileError)) {
            nc.placed_by.push_back(&d);
          }
        }
        c.wrong.push_back(std::move(nc));
        break;
      case Placement::Unknown:
      case Placement::RuntimeShape:
      case Placement::DataShape:
        c.unknown.push_back(std::move(nc));
        break;
    }
  }
  return c;
}

}  // namespace bpulint
