#include "bpulint/engine/placement.h"
#include "bpulint/base/disjoint_sets.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace bpulint {

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::Bpu: return "bpu";
    case Placement::Cpu: return "cpu";
    case Placement::Folded: return "folded";
    case Placement::Unknown: return "unknown";
    case Placement::RuntimeShape: return "runtime_shape";
    case Placement::DataShape: return "data_shape";
    case Placement::NoCompile: return "no_compile";
  }
  return "unknown";
}

std::vector<Placement> place_nodes(const ModelFacts& facts, const Platform& platform,
                                   const std::vector<Diagnostic>& diagnostics) {
  std::vector<Placement> out(facts.nodes.size(), Placement::Unknown);
  // A graph has a few dozen op types: each is looked up in the platform once.
  std::unordered_map<std::string_view, OpClass> classes;
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    const auto& n = facts.nodes[i];
    if (n.fold == Fold::Constant) {
      out[i] = Placement::Folded;
      continue;
    }
    if (n.fold == Fold::RuntimeShape || n.fold == Fold::DataShape) {
      out[i] = n.fold == Fold::RuntimeShape ? Placement::RuntimeShape : Placement::DataShape;
      continue;
    }
    if (!n.domain.empty()) continue;
    auto cls = classes.find(n.op_type);
    if (cls == classes.end()) cls = classes.emplace(n.op_type, platform.effective_class(n.op_type)).first;
    switch (cls->second) {
      case OpClass::Bpu: out[i] = Placement::Bpu; break;
      case OpClass::Folded: out[i] = Placement::Folded; break;
      case OpClass::Cpu: out[i] = Placement::Cpu; break;
      case OpClass::Lowered:
      case OpClass::Unknown: break;
    }
  }
  for (const auto& d : diagnostics) {
    if (d.node < 0 || d.outcome != Outcome::Fail || d.severity != Severity::Error) continue;
    Placement& p = out[static_cast<size_t>(d.node)];
    if (d.rule->effect == Effect::CompileError) p = Placement::NoCompile;
    else if (d.rule->effect == Effect::CpuFallback && p != Placement::NoCompile) p = Placement::Cpu;
  }
  return out;
}


std::vector<long> cpu_islands(const ModelFacts& facts, const std::vector<Placement>& placement) {
  std::vector<long> island(facts.nodes.size(), -1);
  // A CPU node joins the island of each CPU producer of its inputs, in the
  // same graph: a subgraph's values never join an island of its parent graph
  // (the parent node itself does that). The walk recorded the producers.
  DisjointSets sets(facts.nodes.size());
  bool any = false;
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    if (placement[i] != Placement::Cpu) continue;
    any = true;
    for (const auto& in : facts.nodes[i].inputs) {
      if (in.producer == 0) continue;
      const size_t from = in.producer - 1;
      if (placement[from] == Placement::Cpu && facts.nodes[from].graph_id == facts.nodes[i].graph_id) {
        sets.unite(i, from);
      }
    }
  }
  if (!any) return island;
  // Numbered in graph order of each island's first node.
  std::vector<long> number(facts.nodes.size(), -1);
  long next = 0;
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    if (placement[i] != Placement::Cpu) continue;
    long& n = number[sets.find(i)];
    if (n < 0) n = next++;
    island[i] = n;
  }
  return island;
}

size_t count_cpu_islands(const ModelFacts& facts, const std::vector<Placement>& placement) {
  long islands = 0;
  for (long n : cpu_islands(facts, placement)) islands = std::max(islands, n + 1);
  return static_cast<size_t>(islands);
}

Summary summarize(const ModelFacts& facts, const std::vector<Placement>& placement,
                  const std::vector<Diagnostic>& diagnostics) {
  Summary s;
  s.nodes = facts.nodes.size();
  for (Placement p : placement) {
    switch (p) {
      case Placement::Bpu: ++s.bpu; break;
      case Placement::Cpu: ++s.cpu; break;
      case Placement::Folded: ++s.folded; break;
      case Placement::Unknown: ++s.unknown; break;
      case Placement::RuntimeShape: ++s.runtime_shape; break;
      case Placement::DataShape: ++s.data_shape; break;
      case Placement::NoCompile: ++s.no_compile; break;
    }
  }
  s.cpu_islands = count_cpu_islands(facts, placement);
  // Per node, the levels it has a finding of (bit per Severity).
  std::vector<unsigned char> levels(facts.nodes.size(), 0);
  for (const auto& d : diagnostics) {
    if (d.outcome == Outcome::Unknown && !d.rule->builtin) ++s.unverified;
    if (d.folded_into_note) continue;
    if (!d.waiver.empty()) {
      ++s.waived;
      continue;
    }
    if (d.baselined) {
      ++s.baselined;
      continue;
    }
    switch (d.severity) {
      case Severity::Error: ++s.errors; break;
      case Severity::Warning: ++s.warnings; break;
      case Severity::Note: ++s.notes; break;
    }
    const bool on_node = d.node >= 0 && static_cast<size_t>(d.node) < levels.size();
    if (!on_node) {
      ++(d.severity == Severity::Error ? s.model_errors : d.severity == Severity::Warning ? s.model_warnings : s.model_notes);
      continue;
    }
    auto& seen = levels[static_cast<size_t>(d.node)];
    const auto bit = static_cast<unsigned char>(1u << static_cast<unsigned>(d.severity));
    if ((seen & bit) != 0) continue;
    seen |= bit;
    ++(d.severity == Severity::Error ? s.error_nodes : d.severity == Severity::Warning ? s.warning_nodes : s.note_nodes);
  }
  return s;
}

}  // namespace bpulint
