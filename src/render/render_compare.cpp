#include "bpulint/render/render_compare.h"

#include <algorithm>
#include <cstdio>

#include "bpulint/base/json_writer.h"
#include "bpulint/render/markup.h"
#include "bpulint/compare/rule_stub.h"

namespace bpulint {
namespace {


const NodeFacts& node_of(const CompareView& v, const NodeComparison& n) {
  return v.report->facts.nodes[static_cast<size_t>(n.node)];
}

std::string versions_text(const CompileLog& log) {
  std::string out;
  for (const auto& t : log.versions) out += (out.empty() ? "" : ", ") + t.tool + " " + t.version;
  return out;
}

// Where a CPU prediction came from when no rule failed: the op's class.
std::string class_origin(const Platform& p, const NodeFacts& n) {
  const OpClass cls = p.effective_class(n.op_type);
  std::string out = n.op_type + " is classified " + op_class_name(cls) + " on " + p.name;
  auto it = p.ops.find(n.op_type);
  if (it != p.ops.end() && !it->second.source.empty()) out += " (source: " + it->second.source + ")";
  return out;
}

std::string compiler_text(const CompareView& v, const NodeComparison& n) {
  std::string out = n.compiler == "CPU"   ? "ran it on the CPU"
                    : n.compiler == "BPU" ? "ran it on the BPU"
                                          : "printed NULL (fused, not on the CPU)";
  out += " (line " + std::to_string(n.line);
  if (!n.compiler_type.empty()) out += ", " + n.compiler_type;
  const bool piece = std::any_of(n.pieces.begin(), n.pieces.end(), [&](const NodePiece& p) { return p.row->line == n.line; });
  if (n.row != node_of(v, n).name) out += (piece ? ", its piece " : ", fused row ") + n.row;
  return out + ")";
}

// "/MatMul_reshape_in (layout, CPU, line 80), /MatMul_gemm (compute, BPU, line 81)".
std::string pieces_text(const NodeComparison& n) {
  std::string out;
  for (const auto& p : n.pieces) {
    out += (out.empty() ? "" : ", ") + p.row->node + " (" + piece_role_name(p.role) + ", " + p.row->on + ", line " +
           std::to_string(p.row->line) + ")";
  }
  return out;
}

void node_heading(std::ostream& out, const CompareView& v, const char* verdict, const NodeComparison& n) {
  const NodeFacts& f = node_of(v, n);
  out << verdict << ": " << printable_text(f.name) << " (" << printable_text(f.op_type) << "): predicted "
      << placement_name(n.predicted) << " on " << printable_text(v.platform->name) << ", the compiler "
      << printable_text(compiler_text(v, n)) << "\n";
  if (!n.pieces.empty()) out << "    the compiler split it: " << printable_text(pieces_text(n)) << "\n";
  for (const NodeReason* r : n.reasons) {
    out << "    reason (line " << r->line << (r->node.empty() ? ", printed once for the model inputs of that shape" : "")
        << "): " << printable_text(r->text) << "\n";
  }
}

void write_reason(JsonWriter& w, const NodeComparison& n) {
  if (n.reasons.empty()) w.member_null("reason");
  else w.member("reason", n.reasons.front()->text);
}

// The five keys every node entry starts with, then where the row is.
void write_node_head(JsonWriter& w, const CompareView& v, const NodeComparison& n) {
  const NodeFacts& f = node_of(v, n);
  w.member("node", f.name).member("op_type", f.op_type).member("predicted", placement_name(n.predicted));
  w.member("compiler", n.compiler);
  write_reason(w, n);
  w.member("line", n.line).member("compiler_type", n.compiler_type).member("row", n.row);
  w.key("pieces").begin_array();
  for (const auto& p : n.pieces) {
    w.begin_object();
    w.member("row", p.row->node).member("role", piece_role_name(p.role)).member("compiler", p.row->on);
    w.member("compiler_type", p.row->type).member("line", p.row->line);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::vector<std::string> missed_rule_stubs(const CompareView& view) {
  std::vector<std::string> stubs;
  int number = 0;
  for (const auto& n : view.comparison->missed) {
    StubInput in;
    in.node = &node_of(view, n);
    in.platform = view.platform;
    in.number = ++number;
    in.model = view.model;
    in.log = view.log;
    in.compile_log = view.compile_log;
    in.row_line = n.line;
    in.reason = n.reasons.empty() ? nullptr : n.reasons.front();
    stubs.push_back(rule_stub(in));
  }
  return stubs;
}

void render_compare_text(std::ostream& out, const CompareView& v) {
  const CompileLog& log = *v.compile_log;
  const Comparison& c = *v.comparison;
  const std::string versions = versions_text(log);
  out << "bpu-lint compare: " << printable_text(v.model) << " against " << printable_text(v.log) << "\n"
      << "  log: " << log_format_name(log.format) << " placement table at line " << log.table_line;
  if (!versions.empty()) out << " (" << printable_text(versions) << ")";
  out << ", march " << (log.marches.empty() ? "not printed" : printable_text(log.marches.front())) << "; predictions for "
      << printable_text(v.platform->name) << " (march " << printable_text(v.platform->march) << ")\n";
  if (!log.marches.empty() && log.marches.front() != v.platform->march) {
    out << "  note: the log is for march " << printable_text(log.marches.front()) << ", the predictions for "
        << printable_text(v.platform->march) << " (--platform)\n";
  }
  if (log.tables > 1) out << "  note: the log holds " << log.tables << " placement tables; the last one is compared\n";
  out << "  " << c.rows << " rows (" << c.compiler_made << " compiler-made, " << c.node_pieces
      << " pieces of split nodes or added next to them, " << c.unmatched_rows.size() << " unmatched); " << c.matched << " nodes matched, " << c.not_placed.size()
      << " not placed (no row: removed or fused by the optimiser)";
  if (c.subgraph_nodes > 0) out << ", " << c.subgraph_nodes << " subgraph nodes not compared";
  out << "\n";

  for (size_t i = 0; i < c.missed.size(); ++i) {
    const NodeComparison& n = c.missed[i];
    node_heading(out, v, "missed", n);
    out << "    a rule that would have caught it, with the node's facts (save it as a file; see README, \"Calibrating "
           "against your compiler\"):\n";
    const std::string& stub = v.stubs[i];
    for (size_t at = 0; at < stub.size();) {
      size_t end = stub.find('\n', at);
      if (end == std::string::npos) end = stub.size();
      out << "      " << printable_text(stub.substr(at, end - at)) << "\n";
      at = end + 1;
    }
  }
  for (const auto& n : c.wrong) {
    node_heading(out, v, "wrong", n);
    const NodeFacts& f = node_of(v, n);
    if (n.predicted == Placement::NoCompile) {
      out << "    the model compiled: a compile_error rule that fails on this node is wrong for this toolchain\n";
    }
    if (n.placed_by.empty()) out << "    class to fix: " << printable_text(class_origin(*v.platform, f)) << "\n";
    for (const Diagnostic* d : n.placed_by) {
      out << "    rule to fix: " << printable_text(d->rule->id + " " + d->rule->name) << " (" << printable_text(d->rule->defined_at.str())
          << "): " << printable_text(d->message) << "\n";
    }
  }
  for (const auto& n : c.unknown) {
    node_heading(out, v, "unknown", n);
    out << "    bpu-lint cannot place " << printable_text(node_of(v, n).op_type) << " on " << printable_text(v.platform->name)
        << (n.predicted == Placement::RuntimeShape ? " (shape arithmetic on a dynamic dim: pin the input with --input-shape)"
            : n.predicted == Placement::DataShape  ? " (shape arithmetic on a shape that depends on tensor data)"
                                                   : ": classify the op in a rule file (ops: - class: ...)")
        << "\n";
  }
  for (const auto& t : c.round_trips) {
    const NodeFacts& f = v.report->facts.nodes[static_cast<size_t>(t.node)];
    out << "round trip: " << printable_text(t.row->node) << " (line " << t.row->line
        << (t.row->type.empty() ? "" : ", " + printable_text(t.row->type)) << ") ran on the CPU, a layout op the compiler added for "
        << printable_text(f.name) << " (" << printable_text(f.op_type) << ")\n";
  }
  for (const auto& name : c.unmatched_rows) {
    auto amb = std::find_if(c.ambiguous_rows.begin(), c.ambiguous_rows.end(), [&](const AmbiguousRow& a) { return a.row == name; });
    out << "unmatched row: " << printable_text(name)
        << (amb != c.ambiguous_rows.end() ? " (cut name: " + std::to_string(amb->nodes) + " nodes end with it)"
                                          : std::string(" (no node of that name in the model)"))
        << "\n";
  }
  if (c.matched == 0) {
    out << "note: no row names a node of this model; is the log from a compile of this very export (same node names)?\n";
  }
  out << printable_text(v.model) << ": " << c.matched << " matched nodes: " << c.agree.size() << " agree, " << c.missed.size()
      << " missed, " << c.wrong.size() << " wrong, " << c.unknown.size() << " unknown; " << c.unmatched_rows.size()
      << " unmatched rows\n";
}

std::string compare_json(const CompareView& v) {
  const CompileLog& log = *v.compile_log;
  const Comparison& c = *v.comparison;
  JsonWriter w;
  w.begin_object();
  w.member("version", 1).member("model", v.model).member("log", v.log).member("log_format", log_format_name(log.format));
  if (log.marches.empty()) w.member_null("march");
  else w.member("march", log.marches.front());
  w.member("platform", v.platform->name).member("rows", c.rows).member("matched", c.matched);
  w.key("unmatched_rows").begin_array();
  for (const auto& name : c.unmatched_rows) w.value(name);
  w.end_array();
  w.member("agree", c.agree.size());

  w.key("missed").begin_array();
  for (size_t i = 0; i < c.missed.size(); ++i) {
    const NodeComparison& n = c.missed[i];
    w.begin_object();
    write_node_head(w, v, n);
    w.key("facts").begin_array();
    for (const auto& line : readable_facts(node_of(v, n), *v.platform)) w.value(line);
    w.end_array();
    w.member("rule_stub", v.stubs[i]);
    w.end_object();
  }
  w.end_array();

  w.key("wrong").begin_array();
  for (const auto& n : c.wrong) {
    w.begin_object();
    write_node_head(w, v, n);
    w.key("rules").begin_array();
    for (const Diagnostic* d : n.placed_by) {
      w.begin_object();
      w.member("id", d->rule->id).member("name", d->rule->name).member("effect", effect_name(d->rule->effect));
      w.member("defined_at", d->rule->defined_at.str()).member("message", d->message);
      w.end_object();
    }
    w.end_array();
    const NodeFacts& f = node_of(v, n);
    w.member("op_class", f.domain.empty() ? op_class_name(v.platform->effective_class(f.op_type)) : "unknown");
    w.end_object();
  }
  w.end_array();

  w.key("unknown").begin_array();
  for (const auto& n : c.unknown) {
    w.begin_object();
    write_node_head(w, v, n);
    w.end_object();
  }
  w.end_array();
  w.key("not_placed").begin_array();
  for (long n : c.not_placed) w.value(std::string(v.report->facts.nodes[static_cast<size_t>(n)].display_name));
  w.end_array();
  w.member("compiler_made_rows", c.compiler_made).member("node_piece_rows", c.node_pieces);
  w.key("round_trips").begin_array();
  for (const auto& t : c.round_trips) {
    w.begin_object();
    w.member("node", v.report->facts.nodes[static_cast<size_t>(t.node)].name).member("row", t.row->node);
    w.member("compiler_type", t.row->type).member("line", t.row->line);
    w.end_object();
  }
  w.end_array();
  w.key("ambiguous_rows").begin_array();
  for (const auto& a : c.ambiguous_rows) {
    w.begin_object();
    w.member("row", a.row).member("nodes", a.nodes);
    w.end_object();
  }
  w.end_array();
  w.member("table_line", log.table_line).member("tables", log.tables);
  w.key("versions").begin_object();
  for (const auto& t : log.versions) w.member(t.tool, t.version);
  w.end_object();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace bpulint
