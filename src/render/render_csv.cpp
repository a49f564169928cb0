// --format csv: one row per node of every readable model, for a spreadsheet,
// Netron side by side, or a join against a compiler's placement table (Vela
// writes such a per-operator CSV, hb_mapper an HTML table).
#include <algorithm>
#include <map>
#include <set>

#include "bpulint/render/markup.h"
#include "bpulint/render/render_machine.h"
#include "bpulint/lint/lint.h"
#include "bpulint/engine/placement.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {
namespace {

// RFC 4180: a field holding a comma, a quote or a line break is quoted, its
// quotes doubled. Model strings are made printable first (no raw control byte
// reaches a terminal or a cell), and a cell a spreadsheet would read as a
// formula (= + - @) starts with a quote mark instead.
std::string field(std::string_view raw) {
  std::string s = printable_text(raw);
  if (!s.empty() && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@')) s.insert(s.begin(), '\'');
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

const char* level_name(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    default: return "note";
  }
}

}  // namespace

std::string render_csv(const RunInfo& run) {
  std::string out = "model,platform,node_index,graph,node,op_type,placement,rules,worst\r\n";
  for (const auto& m : run.models) {
    const ModelReport* r = m.report;
    if (r == nullptr || !r->ok) continue;  // its one-line error is on stderr
    const Platform* platform = m.platform != nullptr ? m.platform : run.platform;
    // The rules that decided each node (listed findings: shown, at or above --min-severity).
    std::map<long, std::set<std::string>> rules;
    std::map<long, Severity> worst;
    for (const auto& d : r->diagnostics) {
      if (d.node < 0 || !listed(d, run.show_waived, run.min_severity)) continue;
      rules[d.node].insert(d.rule->id);
      auto it = worst.emplace(d.node, d.severity).first;
      it->second = std::max(it->second, d.severity);
    }
    for (size_t i = 0; i < r->facts.nodes.size(); ++i) {
      const NodeFacts& n = r->facts.nodes[i];
      const long node = static_cast<long>(i);
      std::string ids;
      for (const auto& id : rules[node]) ids += (ids.empty() ? "" : " ") + id;
      const auto w = worst.find(node);
      out += field(m.path) + ',' + field(platform != nullptr ? platform->name : "") + ',' + std::to_string(i) + ',' +
             field(n.graph_path) + ',' + field(n.display_name) + ',' + field(n.op_type) + ',' +
             (i < r->placement.size() ? placement_name(r->placement[i]) : "") + ',' + ids + ',' +
             (w != worst.end() ? level_name(w->second) : "") + "\r\n";
    }
  }
  return out;
}

}  // namespace bpulint
