#include <string_view>
#include "bpulint/compare.h"

#include <map>
#include <unordered_map>

namespace bpulint {
namespace {

// CPU over BPU over NULL: a node the compiler ran on the CPU anywhere is a CPU node.
int strength(const std::string& on) { return on == "CPU" ? 2 : on == "BPU" ? 1 : 0; }

struct Seen {
  const PlacementRow* row = nullptr;
  std::string on;
};

}  // namespace

Comparison compare_placement(const ModelReport& report, const CompileLog& log) {
  Comparison c;
  const auto& nodes = report.facts.nodes;
  std::unordered_map<std::string, std::vector<long>> by_name;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].graph_id != 0) {
      ++c.subgraph_nodes;
      continue;
    }
    if (!nodes[i].name.empty()) by_name[std::string(nodes[i].name)].push_back(static_cast<long>(i));
  }

  std::map<long, Seen> seen;
  auto record = [&](const std::vector<long>& targets, const PlacementRow& row) {
    for (long n : targets) {
      Seen& s = seen[n];
      if (s.row == nullptr || strength(row.on) > strength(s.on)) s = {&row, row.on};
    }
  };
  c.rows = log.rows.size();
  for (const auto& row : log.rows) {
    if (row.on == "--") continue;  // folded before placement: its node stays "not placed"
    if (auto it = by_name.find(row.node); it != by_name.end()) {
      record(it->second, row);
      continue;
    }
    // A name cut to "..." + its tail (long names in J6 tables) matches the one node ending so.
    if (row.node.size() > 3 && row.node.compare(0, 3, "...") == 0) {
      const std::string_view tail = std::string_view(row.node).substr(3);
      std::vector<long> candidates;
      for (const auto& [name, ids] : by_name) {
        if (name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0) {
          candidates.insert(candidates.end(), ids.begin(), ids.end());
        }
      }
      if (candidates.size() == 1) {
        record(candidates, row);
        continue;
      }
      if (candidates.size() > 1) {
        c.unmatched_rows.push_back(row.node + " (cut name: " + std::to_string(candidates.size()) +
                                   " nodes end with it)");
        continue;
      }
    }
    if (row.node.find('+') == std::string::npos) {
      if (compiler_made_name(row.node)) ++c.compiler_made;
      else c.unmatched_rows.push_back(row.node);
      continue;
    }
    size_t begin = 0;
    while (begin <= row.node.size()) {
      size_t end = row.node.find('+', begin);
      if (end == std::string::npos) end = row.node.size();
      const std::string part = row.node.substr(begin, end - begin);
      if (auto it = by_name.find(part); it != by_name.end()) record(it->second, row);
      else if (compiler_made_name(part)) ++c.compiler_made;
      else if (!part.empty()) c.unmatched_rows.push_back(part);
      begin = end + 1;
    }
  }

  std::multimap<long, const NodeReason*> reasons;
  for (const auto& r : log.reasons) {
    if (auto it = by_name.find(r.node); it != by_name.end()) {
      for (long n : it->second) reasons.emplace(n, &r);
    }
  }

  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].graph_id != 0) continue;
    const long n = static_cast<long>(i);
    auto it = seen.find(n);
    if (it == seen.end()) {
      c.not_placed.push_back(n);
      continue;
    }
    ++c.matched;
    NodeComparison nc;
    nc.node = n;
    nc.predicted = report.placement[i];
    nc.compiler = it->second.on;
    nc.compiler_type = it->second.row->type;
    nc.row = it->second.row->node;
    nc.line = it->second.row->line;
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
              (d.rule->effect == "cpu_fallback" || d.rule->effect == "compile_error")) {
            nc.placed_by.push_back(&d);
          }
        }
        c.wrong.push_back(std::move(nc));
        break;
      case Placement::Unknown:
      case Placement::RuntimeShape:
        c.unknown.push_back(std::move(nc));
        break;
    }
  }
  return c;
}

}  // namespace bpulint
