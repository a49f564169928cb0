#include "bpulint/config.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bpulint/evaluate.h"
#include "bpulint/fixes.h"
#include "bpulint/graph_walk.h"
#include "bpulint/yaml_reader.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {

bool read_text(const std::string& path, std::string& text, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    error = path + ": cannot open";
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

// Reads and parses a YAML file; syntax errors come back as file:line:col.
bool load_yaml_file(const std::string& path, YAML::Node& root, std::string& error) {
  std::string text;
  if (!read_text(path, text, error)) return false;
  try {
    root = YAML::Load(text);
    return true;
  } catch (const YAML::Exception& e) {
    error = SourceLocation{path, e.mark.line + 1, e.mark.column + 1}.str() + ": YAML syntax error: " + yaml_message(e.msg);
    return false;
  }
}

bool matches_prefix(const std::string& id, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes) {
    if (id.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

bool glob(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

bool waiver_matches(const Waiver& w, const Diagnostic& d, const ModelReport& r) {
  if (!rule_glob_matches(w.rule, d.rule->id)) return false;
  if (d.node < 0) return glob(w.node, "<model>");
  const NodeFacts& n = r.facts.nodes[static_cast<size_t>(d.node)];
  return glob(w.node, std::string(n.name)) || glob(w.node, std::string(n.display_name)) || glob(w.node, n.path());
}

// A node's identity in a baseline: its graph's path + its name, or, when
// unnamed, its op type and output names (Relu:47). Unlike the display name
// (Relu_3, the index in its graph) it stays put when unrelated nodes are
// added. A subgraph's path is its owner's identity + the attribute (.then_branch).
// In walk order (walk_graph), so entry k is ModelFacts::nodes[k].
std::vector<std::string> baseline_node_keys(const onnx::GraphProto& main) {
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

std::vector<std::string> baseline_node_keys(const ModelReport& r) {
  std::vector<std::string> keys;
  if (r.loaded != nullptr && r.loaded->model != nullptr) keys = baseline_node_keys(r.loaded->model->graph());
  if (keys.size() != r.facts.nodes.size()) {  // not the facts' model: the display paths are all there is
    keys.clear();
    for (const auto& n : r.facts.nodes) keys.push_back(n.path());
  }
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

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::absolute(path).parent_path();
  return parent.string();
}

// {images: 1x3x640x640, state: 5x1024}
InputShapes read_input_shapes(const FileReader& reader, const YAML::Node& node) {
  InputShapes out;
  if (!node) return out;
  if (!node.IsMap()) reader.fail(node, "input_shapes must map input names to shapes like 1x3x640x640");
  for (const auto& kv : node) {
    std::vector<int64_t> dims;
    std::string why;
    if (!parse_dims(reader.scalar(kv.second, "input shape"), dims, why)) {
      reader.fail(kv.second, "input shape of '" + kv.first.Scalar() + "': " + why);
    }
    out[kv.first.Scalar()] = dims;
  }
  return out;
}

std::map<std::string, Severity> read_severity(const FileReader& reader, const YAML::Node& sev) {
  std::map<std::string, Severity> out;
  if (!sev) return out;
  if (!sev.IsMap()) reader.fail(sev, "severity must map rule ids to error, warning or note");
  for (const auto& kv : sev) {
    Severity level;
    if (!parse_severity(reader.scalar(kv.second, "severity"), &level)) {
      reader.fail(kv.second, "severity of " + kv.first.Scalar() + " must be error, warning or note");
    }
    out[upper_id(kv.first.Scalar())] = level;
  }
  return out;
}

std::vector<std::string> upper_ids(std::vector<std::string> ids) {
  for (auto& id : ids) id = upper_id(id);
  return ids;
}

bool glob_any(const std::vector<std::string>& patterns, const std::string& text) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob(p, text); });
}

}  // namespace

std::string upper_id(std::string id) {
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return id;
}

bool rule_glob_matches(const std::string& pattern, const std::string& id) {
  return fnmatch(pattern.c_str(), id.c_str(), FNM_CASEFOLD) == 0;
}

std::string Config::relative_path(const std::string& model_path) const {
  std::error_code ec;
  const fs::path rel = fs::relative(fs::absolute(model_path, ec), folder.empty() ? fs::current_path(ec) : fs::path(folder), ec);
  if (ec || rel.empty() || *rel.begin() == "..") return {};
  return rel.generic_string();
}

ModelSettings Config::settings_for(const std::string& model_path) const {
  ModelSettings m;
  m.platform = platform;
  m.select = select;
  m.ignore = ignore;
  m.severity = severity;
  const std::string where = path.empty() ? "the configuration" : path;
  for (const auto& [name, dims] : input_shapes) {
    m.input_shapes[name] = dims;
    m.input_shape_sources[name] = where + " input_shapes";
  }
  const std::string rel = relative_path(model_path);
  for (const auto& o : overrides) {
    if (rel.empty() || !glob_any(o.models, rel)) continue;
    if (o.platform) m.platform = o.platform;
    if (o.select) m.select = *o.select;
    if (o.ignore) m.ignore = *o.ignore;
    for (const auto& kv : o.severity) m.severity[kv.first] = kv.second;
    for (const auto& [name, dims] : o.input_shapes) {
      m.input_shapes[name] = dims;
      m.input_shape_sources[name] = o.where.str() + " input_shapes";
    }
  }
  return m;
}

std::string find_config(const std::string& model_path) {
  std::error_code ec;
  fs::path dir = fs::absolute(model_path, ec).parent_path();
  while (!dir.empty()) {
    const fs::path candidate = dir / kConfigFileName;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return {};
}

bool load_config(const std::string& path, Config& config, std::string& error) {
  config = Config{};
  config.path = path;
  YAML::Node root;
  if (!load_yaml_file(path, root, error)) return false;
  try {
    FileReader reader(path);
    if (root.IsNull()) return true;  // an empty file is a valid, empty configuration
    reader.check_keys(root, {"platform", "select", "ignore", "severity", "rules", "waivers", "input_shapes", "overrides",
                             "exclude"},
                      {}, "configuration");
    if (root["platform"]) config.platform = reader.scalar(root["platform"], "platform");
    // Rule ids are matched case-insensitively: bpu1101 is BPU1101.
    config.select = upper_ids(reader.string_list(root["select"], "select"));
    config.ignore = upper_ids(reader.string_list(root["ignore"], "ignore"));
    config.severity = read_severity(reader, root["severity"]);
    config.input_shapes = read_input_shapes(reader, root["input_shapes"]);
    const std::string base = folder_of(path);
    config.folder = base;
    for (const auto& p : reader.string_list(root["rules"], "rules")) {
      config.rule_paths.push_back(fs::path(p).is_absolute() ? p : (fs::path(base) / p).lexically_normal().string());
    }
    config.excludes = reader.string_list(root["exclude"], "exclude");
    if (const YAML::Node overrides = root["overrides"]) {
      if (!overrides.IsSequence()) reader.fail(overrides, "overrides must be a list");
      for (const auto& o : overrides) {
        reader.check_keys(o, {"models", "platform", "input_shapes", "select", "ignore", "severity"}, {"models"},
                          "override");
        Override entry;
        entry.where = reader.at(o);
        entry.models = reader.string_list(o["models"], "models");
        if (entry.models.empty()) reader.fail(o["models"], "an override needs at least one models glob");
        if (o["platform"]) entry.platform = reader.scalar(o["platform"], "platform");
        entry.input_shapes = read_input_shapes(reader, o["input_shapes"]);
        if (o["select"]) entry.select = upper_ids(reader.string_list(o["select"], "select"));
        if (o["ignore"]) entry.ignore = upper_ids(reader.string_list(o["ignore"], "ignore"));
        entry.severity = read_severity(reader, o["severity"]);
        config.overrides.push_back(std::move(entry));
      }
    }
    if (const YAML::Node waivers = root["waivers"]) {
      if (!waivers.IsSequence()) reader.fail(waivers, "waivers must be a list");
      for (const auto& w : waivers) {
        reader.check_keys(w, {"rule", "node", "model", "reason"}, {"rule", "reason"}, "waiver");
        Waiver waiver;
        waiver.where = reader.at(w);
        waiver.rule = reader.scalar(w["rule"], "rule");
        waiver.node = w["node"] ? reader.scalar(w["node"], "node") : "*";
        waiver.model = w["model"] ? reader.scalar(w["model"], "model") : "";
        waiver.reason = reader.scalar(w["reason"], "reason");
        if (waiver.reason.find_first_not_of(" \t") == std::string::npos) {
          reader.fail(w["reason"], "a waiver needs a reason");
        }
        config.waivers.push_back(std::move(waiver));
      }
    }
    return true;
  } catch (const LoadError& e) {
    error = e.where.str() + ": " + yaml_message(e.message);
    return false;
  }
}

std::string baseline_model_key(const std::string& model_path, const std::string& baseline_path) {
  std::error_code ec;
  const fs::path rel = fs::relative(fs::absolute(model_path), fs::absolute(baseline_path).parent_path(), ec);
  return ec || rel.empty() ? model_path : rel.generic_string();
}

bool load_baseline(const std::string& path, Baseline& baseline, std::string& error) {
  baseline = Baseline{};
  baseline.path = path;
  YAML::Node root;
  if (!load_yaml_file(path, root, error)) return false;
  try {
    FileReader reader(path);
    reader.check_keys(root, {"schema_version", "findings"}, {"schema_version", "findings"}, "baseline");
    try {
      baseline.schema_version = root["schema_version"].as<int>();
    } catch (const YAML::Exception&) {
      reader.fail(root["schema_version"], "schema_version must be 1 or 2");
    }
    if (baseline.schema_version < 1 || baseline.schema_version > kBaselineSchema) {
      reader.fail(root["schema_version"], "schema_version must be 1 or 2");
    }
    const YAML::Node findings = root["findings"];
    if (!findings.IsSequence()) reader.fail(findings, "findings must be a list");
    for (const auto& f : findings) {
      reader.check_keys(f, {"model", "rule", "node", "op", "count"}, {"model", "rule", "node", "op", "count"}, "finding");
      Baseline::Entry e;
      e.model = reader.scalar(f["model"], "model");
      e.rule = reader.scalar(f["rule"], "rule");
      e.node = reader.scalar(f["node"], "node");
      e.op = f["op"].IsNull() ? "" : reader.scalar(f["op"], "op");
      try {
        e.count = f["count"].as<size_t>();
      } catch (const YAML::Exception&) {
        reader.fail(f["count"], "count must be a positive number");
      }
      baseline.entries.push_back(std::move(e));
    }
    return true;
  } catch (const LoadError& e) {
    error = e.where.str() + ": " + yaml_message(e.message);
    return false;
  }
}

std::string baseline_text(const std::vector<const ModelReport*>& reports, const std::string& baseline_path) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, size_t> counts;
  for (const ModelReport* r : reports) {
    const std::vector<std::string> keys = baseline_node_keys(*r);
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

void apply_config(ModelReport& r, const Platform& platform, Config& config, const ModelSettings& settings,
                  Baseline* baseline, bool show_unverified) {
  if (!r.ok) return;
  const RuleLevel rule_level = [&settings](const Rule& rule, Severity& severity) {
    if (!settings.select.empty() && !matches_prefix(rule.id, settings.select)) return false;
    if (matches_prefix(rule.id, settings.ignore)) return false;
    auto level = settings.severity.find(rule.id);
    if (level != settings.severity.end()) severity = level->second;
    return true;
  };
  // Where a node runs is the database's prediction: select, ignore and
  // severity change what is reported, never that (a rule a team believes
  // wrong is overridden in a rules file); waivers accept a finding, they do
  // not move the node back to the BPU either.
  r.placement = place_nodes(r.facts, platform, r.diagnostics);
  // Kept in place: a fresh vector for 20,000 findings cost more than the test.
  auto& all = r.diagnostics;
  size_t kept = 0;
  for (auto& d : all) {
    Severity severity = d.severity;
    if (!rule_level(*d.rule, severity)) continue;
    if (d.outcome == Outcome::Fail) d.severity = severity;
    if (&d != &all[kept]) all[kept] = std::move(d);
    ++kept;
  }
  all.erase(all.begin() + static_cast<long>(kept), all.end());
  // Root causes count only the checks still selected.
  fold_unverified(r.facts, r.diagnostics, show_unverified);
  // A waiver scoped to other models neither applies here nor counts this model.
  const std::string model_rel = config.relative_path(r.path);
  std::vector<Waiver*> in_scope;
  for (auto& w : config.waivers) {
    if (w.model.empty() || (!model_rel.empty() && glob(w.model, model_rel))) {
      in_scope.push_back(&w);
      ++w.models_in_scope;
    }
  }
  for (auto& d : r.diagnostics) {
    if (d.folded_into_note) continue;
    for (Waiver* wp : in_scope) {
      Waiver& w = *wp;
      if (waiver_matches(w, d, r)) {
        d.waiver = w.reason;
        ++w.matches;
        break;
      }
    }
  }
  if (baseline != nullptr) {
    const std::string model = baseline_model_key(r.path, baseline->path);
    const std::vector<std::string> keys = baseline_node_keys(r);
    for (auto& d : r.diagnostics) {
      if (!d.waiver.empty() || d.folded_into_note) continue;
      const std::string node = baseline->schema_version < 2 ? legacy_node_key(r, d) : node_key(keys, d);
      for (auto& e : baseline->entries) {
        if (e.matched < e.count && e.model == model && e.rule == d.rule->id && e.node == node &&
            e.op == op_key(r, d)) {
          d.baselined = true;
          ++e.matched;
          break;
        }
      }
    }
  }
  r.summary = summarize(r.facts, r.placement, r.diagnostics);
  // Plans follow the findings that remain (plan_fixes skips the ones not
  // shown), judged at this model's levels.
  r.fix_plans = plan_fixes(r.facts, r.diagnostics, platform, rule_level);
}

}  // namespace bpulint
