#include "bpulint/fix/config_fix.h"
#include "config_remedies.h"

#include <algorithm>

#include "bpulint/rules/rule_db.h"

namespace bpulint {

std::vector<ConfigFixPlan> plan_config_fixes(const ModelFacts& facts, const std::vector<Diagnostic>& diagnostics,
                                             const ConfigNodes& config) {
  std::vector<ConfigFixPlan> plans;
  for (const auto& d : diagnostics) {
    if (d.outcome != Outcome::Fail || d.severity == Severity::Note || !d.shown()) continue;
    for (const auto& id : d.rule->fixes) {
      const FixKind* kind = find_fix_kind(id);
      if (kind == nullptr || kind->config == nullptr) continue;
      ConfigFixPlan plan;
      plan.kind = id;
      plan.rule = d.rule->id;
      plan.node = d.node;
      if (!kind->config->plan(ConfigFixInput{facts, d, config}, plan.edits, plan.why_not) && plan.why_not.empty()) {
        plan.why_not = "no config entry settles it";
      }
      if (!plan.why_not.empty()) plan.edits.clear();
      plans.push_back(std::move(plan));
    }
  }
  return plans;
}

std::vector<const ConfigFixPlan*> choose_config_fixes(const std::vector<ConfigFixPlan>& plans,
                                                      const std::string& strategy) {
  std::vector<const ConfigFixPlan*> chosen;
  for (size_t i = 0; i < plans.size();) {
    // One finding's plans are adjacent (same rule and node).
    size_t end = i;
    while (end < plans.size() && plans[end].rule == plans[i].rule && plans[end].node == plans[i].node) ++end;
    for (size_t k = i; k < end; ++k) {
      const ConfigFixPlan& p = plans[k];
      if (!p.why_not.empty() || (strategy != "auto" && strategy != p.kind)) continue;
      chosen.push_back(&p);
      break;
    }
    i = end;
  }
  return chosen;
}

void merge_config_edit(std::vector<ConfigEdit>& entries, const ConfigEdit& edit) {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const ConfigEdit& e) { return e.node == edit.node; });
  if (it == entries.end()) {
    entries.push_back(edit);
    return;
  }
  for (const auto& field : edit.fields) {
    auto f = std::find_if(it->fields.begin(), it->fields.end(), [&](const auto& kv) { return kv.first == field.first; });
    if (f == it->fields.end()) it->fields.push_back(field);
    else f->second = field.second;
  }
}

std::vector<ConfigEdit> merge_config_edits(const std::vector<const ConfigFixPlan*>& chosen) {
  std::vector<ConfigEdit> merged;
  for (const ConfigFixPlan* p : chosen) {
    for (const ConfigEdit& e : p->edits) merge_config_edit(merged, e);
  }
  return merged;
}

std::string yaml_double_quoted(const std::string& s) {
  static const char* const kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string config_edit_text(const ConfigEdit& edit) {
  std::string fields;
  for (const auto& [key, value] : edit.fields) {
    fields += (fields.empty() ? "'" : ", '") + key + "': '" + value + "'";
  }
  return yaml_double_quoted(edit.node) + ": {" + fields + "}";
}

ConfigEdit node_on_bpu_edit(const std::string& node, const std::string& type) {
  return {node, {{"ON", "BPU"}, {"InputType", type}, {"OutputType", type}}};
}

}  // namespace bpulint

namespace bpulint {

bool config_node_name(const ConfigFixInput& in, std::string& name, std::string& why_not) {
  if (in.finding.node < 0) {
    why_not = "the finding names no node";
    return false;
  }
  const NodeFacts& n = in.facts.nodes[static_cast<size_t>(in.finding.node)];
  if (n.name.empty()) {
    why_not = "the node has no name, and node_info names nodes (re-export with names)";
    return false;
  }
  if (n.graph_id != 0) {
    why_not = "the node is inside a subgraph (" + n.graph_path + "); node_info names nodes of the main graph";
    return false;
  }
  name = std::string(n.name);
  return true;
}

}  // namespace bpulint
