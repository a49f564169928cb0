#include "bpulint/lint/triage.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <set>

#include "bpulint/rules/builtin_rules.h"
#include <tuple>


namespace bpulint {
namespace fs = std::filesystem;
namespace {

// A node by its name, its path, or its identity. An unnamed node only by its
// identity (torch_jit/Relu:47): its display name (Relu_3) is its position in
// the graph, which a node added upstream gives to another node, and a waiver
// must never move to another node.
bool waiver_matches(const Waiver& w, const Diagnostic& d, const ModelReport& r) {
  if (!rule_glob_matches(w.rule, d.rule->id)) return false;
  if (d.node < 0) return glob_matches(w.node, "<model>");
  const NodeFacts& n = r.facts.nodes[static_cast<size_t>(d.node)];
  if (glob_matches(w.node, r.facts.node_key(static_cast<size_t>(d.node)))) return true;
  if (n.name.empty()) return false;
  return glob_matches(w.node, std::string(n.name)) || glob_matches(w.node, n.path());
}

// The waiver names this unnamed node by its position (exactly, not a glob).
bool names_by_position(const Waiver& w, const Diagnostic& d, const ModelReport& r) {
  if (d.node < 0 || !rule_glob_matches(w.rule, d.rule->id)) return false;
  const NodeFacts& n = r.facts.nodes[static_cast<size_t>(d.node)];
  return n.name.empty() && (w.node == n.display_name || w.node == n.path());
}

std::string node_key(const ModelReport& r, const Diagnostic& d) {
  return d.node < 0 ? "<model>" : r.facts.node_key(static_cast<size_t>(d.node));
}

// Schema 1 baselines keyed unnamed nodes by display path (Relu_3): a named
// node's key is the same in both schemas.
bool unnamed_node(const ModelReport& r, const Diagnostic& d) {
  return d.node >= 0 && r.facts.nodes[static_cast<size_t>(d.node)].name.empty();
}

std::string op_key(const ModelReport& r, const Diagnostic& d) {
  return d.node < 0 ? "" : r.facts.nodes[static_cast<size_t>(d.node)].op_type;
}

}  // namespace

void apply_levels(std::vector<Diagnostic>& all, const RuleLevels& levels) {
  // Kept in place: a fresh vector for 20,000 findings cost more than the test.
  size_t kept = 0;
  for (auto& d : all) {
    Severity severity = d.severity;
    if (!levels.admits(*d.rule, severity)) continue;
    if (d.outcome == Outcome::Fail) d.severity = severity;
    if (&d != &all[kept]) all[kept] = std::move(d);
    ++kept;
  }
  all.erase(all.begin() + static_cast<long>(kept), all.end());
}

void apply_waivers(ModelReport& r, const std::vector<const Waiver*>& waivers) {
  if (waivers.empty()) return;
  for (auto& d : r.diagnostics) {
    if (d.folded_into_note) continue;
    for (const Waiver* w : waivers) {
      if (waiver_matches(*w, d, r)) {
        d.waiver = w->reason;
        ++r.waiver_matches[w];
        break;
      }
      if (names_by_position(*w, d, r)) r.waiver_positions.emplace(w, r.facts.node_key(static_cast<size_t>(d.node)));
    }
  }
}

void apply_compile_config(ModelReport& r, const HbConfig& config) {
  if (config.nodes.empty()) return;
  std::set<std::string> seen;
  std::vector<std::string> planned_cpu;
  // Each node's entry, looked up once: the findings below read it again.
  std::vector<const std::pair<const std::string, HbNodeConfig>*> entry(r.facts.nodes.size(), nullptr);
  for (size_t i = 0; i < r.facts.nodes.size(); ++i) {
    const auto& n = r.facts.nodes[i];
    const auto it = n.name.empty() ? config.nodes.end() : config.nodes.find(std::string(n.name));
    if (it == config.nodes.end()) continue;
    entry[i] = &*it;
    seen.insert(it->first);
    if (it->second.on == "CPU") {
      r.placement[i] = Placement::Cpu;
      planned_cpu.push_back(it->first);
    }
  }
  for (auto& d : r.diagnostics) {
    if (d.node < 0 || !d.waiver.empty() || entry[static_cast<size_t>(d.node)] == nullptr) continue;
    const HbNodeConfig& c = entry[static_cast<size_t>(d.node)]->second;
    if (c.on == "CPU") {
      d.waiver = "on the CPU by the compile config's choice (" + config.path + ": " + c.from + ")";
    } else if (c.on == "BPU" && d.rule->resolved_by_config_on_bpu) {
      d.waiver = "moved to the BPU by the compile config (" + config.path + ": " + c.from + " ON BPU)";
    }
  }
  std::vector<std::string> missing;
  for (const auto& [name, c] : config.nodes) {
    if (seen.count(name) == 0) missing.push_back(name);
  }
  if (planned_cpu.empty() && missing.empty()) return;
  const auto listed = [](const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", '" : "'") + names[i] + "'";
    if (names.size() > 5) s += " and " + std::to_string(names.size() - 5) + " more";
    return s;
  };
  std::string message;
  if (!planned_cpu.empty()) {
    message = std::to_string(planned_cpu.size()) + " node" + (planned_cpu.size() == 1 ? "" : "s") +
              " on the CPU by the choice of " + config.path + " (node_info ON CPU, run_on_cpu): " + listed(planned_cpu) +
              "; counted as CPU nodes, not as violations";
  }
  if (!missing.empty()) {
    message += std::string(message.empty() ? "" : "; ") + config.path + " names " + std::to_string(missing.size()) +
               " node" + (missing.size() == 1 ? "" : "s") + " this model does not have: " + listed(missing);
  }
  Diagnostic note;
  note.rule = &builtin_rule(builtin::kConfigPlacement);
  note.severity = Severity::Note;
  note.outcome = Outcome::Fail;
  note.message = message;
  r.diagnostics.insert(r.diagnostics.begin(), std::move(note));
}

void apply_baseline(ModelReport& r, const Baseline& baseline) {
  const std::string model = baseline_model_key(r.path, baseline.path);
  for (auto& d : r.diagnostics) {
    if (!d.waiver.empty() || d.folded_into_note) continue;
    const bool legacy = baseline.schema_version < 2;
    const std::string node = legacy && d.node >= 0 ? r.facts.nodes[static_cast<size_t>(d.node)].path() : node_key(r, d);
    const bool by_position = legacy && unnamed_node(r, d);
    for (const auto& e : baseline.entries) {
      if (e.model != model || e.rule != d.rule->id || e.op != op_key(r, d)) continue;
      if (by_position) {
        if (e.node == node) r.baseline_positions.emplace(&e, node_key(r, d));
        continue;
      }
      if (e.node != node) continue;
      size_t& matched = r.baseline_matches[&e];
      if (matched < e.count) {
        d.baselined = true;
        ++matched;
        break;
      }
    }
  }
}

std::string baseline_text(const std::vector<const ModelReport*>& reports, const std::string& baseline_path) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, size_t> counts;
  for (const ModelReport* r : reports) {
    for (const auto& d : r->diagnostics) {
      if (!d.shown()) continue;
      ++counts[{baseline_model_key(r->path, baseline_path), d.rule->id, node_key(*r, d), op_key(*r, d)}];
    }
  }
  YAML::Emitter out;
  out << YAML::Comment("bpu-lint baseline: known findings. `bpu-lint --baseline FILE` reports only new ones.");
  out << YAML::BeginMap << YAML::Key << "schema_version" << YAML::Value << kBaselineSchema << YAML::Key << "findings"
      << YAML::Value << YAML::BeginSeq;
  for (const auto& [key, count] : counts) {
    out << YAML::BeginMap << YAML::Key << "model" << YAML::Value << YAML::DoubleQuoted << std::get<0>(key)
        << YAML::Key << "rule" << YAML::Value << std::get<1>(key) << YAML::Key << "node" << YAML::Value
        << YAML::DoubleQuoted << std::get<2>(key) << YAML::Key << "op" << YAML::Value << std::get<3>(key)
        << YAML::Key << "count" << YAML::Value << count << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string baseline_model_key(const std::string& model_path, const std::string& baseline_path) {
  std::error_code ec;
  const fs::path rel = fs::relative(fs::absolute(model_path), fs::absolute(baseline_path).parent_path(), ec);
  return ec || rel.empty() ? model_path : rel.generic_string();
}

}  // namespace bpulint
