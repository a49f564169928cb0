#include "bpulint/triage.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <tuple>

#include "bpulint/graph_walk.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {

bool glob(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

bool waiver_matches(const Waiver& w, const Diagnostic& d, const ModelReport& r) {
  if (!rule_glob_matches(w.rule, d.rule->id)) return false;
  if (d.node < 0) return glob(w.node, "<model>");
  const NodeFacts& n = r.facts.nodes[static_cast<size_t>(d.node)];
  return glob(w.node, std::string(n.name)) || glob(w.node, std::string(n.display_name)) || glob(w.node, n.path());
}

// In walk order (walk_graph), so entry k is ModelFacts::nodes[k].
std::vector<std::string> node_identities(const onnx::GraphProto& main) {
  std::vector<std::string> keys;
  struct Frame {
    std::string path;
    size_t last = 0;  // the node visited last in this graph: a subgraph's owner
  };
  std::vector<Frame> frames;
  walk_graph(
      main,
      [&](const onnx::GraphProto& g, const GraphSite<const onnx::NodeProto>& site, auto&& nodes) {
        frames.push_back({site.owner == nullptr ? (g.name().empty() ? "main_graph" : g.name())
                                                : keys[frames.back().last] + site.suffix()});
        nodes();
        frames.pop_back();
      },
      [&](const onnx::NodeProto& n, int index) {
        std::string node = n.name();
        if (node.empty()) {
          std::string outputs;
          for (const auto& o : n.output()) {
            if (!o.empty()) outputs += (outputs.empty() ? "" : ",") + o;
          }
          node = n.op_type() + (outputs.empty() ? "_" + std::to_string(index) : ":" + outputs);
        }
        frames.back().last = keys.size();
        keys.push_back(NodeFacts::node_path(frames.back().path, node));
      });
  return keys;
}

std::string node_key(const std::vector<std::string>& keys, const Diagnostic& d) {
  return d.node < 0 ? "<model>" : keys[static_cast<size_t>(d.node)];
}

// Schema 1 baselines keyed unnamed nodes by display path (Relu_3).
std::string legacy_node_key(const ModelReport& r, const Diagnostic& d) {
  return d.node < 0 ? "<model>" : r.facts.nodes[static_cast<size_t>(d.node)].path();
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
    }
  }
}

void apply_baseline(ModelReport& r, const Baseline& baseline) {
  const std::string model = baseline_model_key(r.path, baseline.path);
  const std::vector<std::string> keys = node_identities(r);
  for (auto& d : r.diagnostics) {
    if (!d.waiver.empty() || d.folded_into_note) continue;
    const std::string node = baseline.schema_version < 2 ? legacy_node_key(r, d) : node_key(keys, d);
    for (const auto& e : baseline.entries) {
      if (e.model != model || e.rule != d.rule->id || e.node != node || e.op != op_key(r, d)) continue;
      size_t& matched = r.baseline_matches[&e];
      if (matched < e.count) {
        d.baselined = true;
        ++matched;
        break;
      }
    }
  }
}

std::vector<std::string> node_identities(const ModelReport& r) {
  std::vector<std::string> keys;
  if (r.loaded != nullptr && r.loaded->model != nullptr) keys = node_identities(r.loaded->model->graph());
  if (keys.size() != r.facts.nodes.size()) {  // not the facts' model: the display paths are all there is
    keys.clear();
    for (const auto& n : r.facts.nodes) keys.push_back(n.path());
  }
  return keys;
}

std::string baseline_text(const std::vector<const ModelReport*>& reports, const std::string& baseline_path) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, size_t> counts;
  for (const ModelReport* r : reports) {
    const std::vector<std::string> keys = node_identities(*r);
    for (const auto& d : r->diagnostics) {
      if (!d.shown()) continue;
      ++counts[{baseline_model_key(r->path, baseline_path), d.rule->id, node_key(keys, d), op_key(*r, d)}];
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
