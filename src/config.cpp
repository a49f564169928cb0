#include "bpulint/config.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bpulint/evaluate.h"
#include "bpulint/fixes.h"
#include "yaml_reader.h"

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
    error = SourceLocation{path, e.mark.line + 1, e.mark.column + 1}.str() + ": YAML syntax error: " + e.msg;
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
  if (!glob(w.rule, d.rule->id)) return false;
  if (d.node < 0) return glob(w.node, "<model>");
  const NodeFacts& n = r.facts.nodes[static_cast<size_t>(d.node)];
  return glob(w.node, n.name) || glob(w.node, n.display_name) || glob(w.node, n.path());
}

std::string node_key(const ModelReport& r, const Diagnostic& d) {
  return d.node < 0 ? "<model>" : r.facts.nodes[static_cast<size_t>(d.node)].path();
}

std::string op_key(const ModelReport& r, const Diagnostic& d) {
  return d.node < 0 ? "" : r.facts.nodes[static_cast<size_t>(d.node)].op_type;
}

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::absolute(path).parent_path();
  return parent.string();
}

}  // namespace

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
    reader.check_keys(root, {"platform", "select", "ignore", "severity", "rules", "waivers"}, {}, "configuration");
    if (root["platform"]) config.platform = reader.scalar(root["platform"], "platform");
    config.select = reader.string_list(root["select"], "select");
    config.ignore = reader.string_list(root["ignore"], "ignore");
    if (const YAML::Node sev = root["severity"]) {
      if (!sev.IsMap()) reader.fail(sev, "severity must map rule ids to error, warning or note");
      for (const auto& kv : sev) {
        Severity level;
        if (!parse_severity(reader.scalar(kv.second, "severity"), &level)) {
          reader.fail(kv.second, "severity of " + kv.first.Scalar() + " must be error, warning or note");
        }
        config.severity[kv.first.Scalar()] = level;
      }
    }
    const std::string base = folder_of(path);
    for (const auto& p : reader.string_list(root["rules"], "rules")) {
      config.rule_paths.push_back(fs::path(p).is_absolute() ? p : (fs::path(base) / p).string());
    }
    if (const YAML::Node waivers = root["waivers"]) {
      if (!waivers.IsSequence()) reader.fail(waivers, "waivers must be a list");
      for (const auto& w : waivers) {
        reader.check_keys(w, {"rule", "node", "reason"}, {"rule", "reason"}, "waiver");
        Waiver waiver;
        waiver.where = reader.at(w);
        waiver.rule = reader.scalar(w["rule"], "rule");
        waiver.node = w["node"] ? reader.scalar(w["node"], "node") : "*";
        waiver.reason = reader.scalar(w["reason"], "reason");
        if (waiver.reason.find_first_not_of(" \t") == std::string::npos) {
          reader.fail(w["reason"], "a waiver needs a reason");
        }
        config.waivers.push_back(std::move(waiver));
      }
    }
    return true;
  } catch (const LoadError& e) {
    error = e.where.str() + ": " + e.message;
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
    error = e.where.str() + ": " + e.message;
    return false;
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
  out << YAML::BeginMap << YAML::Key << "schema_version" << YAML::Value << 1 << YAML::Key << "findings"
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

void apply_config(ModelReport& r, const Platform& platform, Config& config, Baseline* baseline, bool show_unverified) {
  if (!r.ok) return;
  auto failures_shown = [&r] {
    return std::count_if(r.diagnostics.begin(), r.diagnostics.end(),
                         [](const Diagnostic& d) { return d.outcome == Outcome::Fail && d.shown(); });
  };
  const auto before = failures_shown();
  std::vector<Diagnostic> kept;
  for (auto& d : r.diagnostics) {
    if (!config.select.empty() && !matches_prefix(d.rule->id, config.select)) continue;
    if (matches_prefix(d.rule->id, config.ignore)) continue;
    auto level = config.severity.find(d.rule->id);
    if (level != config.severity.end() && d.outcome == Outcome::Fail) d.severity = level->second;
    kept.push_back(std::move(d));
  }
  r.diagnostics = std::move(kept);
  // Root causes count only the checks still selected.
  fold_unverified(r.facts, r.diagnostics, show_unverified);
  // Where a node runs follows the rules that still apply; waivers accept a
  // finding, they do not move the node back to the BPU.
  r.placement = place_nodes(r.facts, platform, r.diagnostics);
  for (auto& d : r.diagnostics) {
    if (d.folded_into_note) continue;
    for (auto& w : config.waivers) {
      if (waiver_matches(w, d, r)) {
        d.waiver = w.reason;
        ++w.matches;
        break;
      }
    }
  }
  if (baseline != nullptr) {
    const std::string model = baseline_model_key(r.path, baseline->path);
    for (auto& d : r.diagnostics) {
      if (!d.waiver.empty() || d.folded_into_note) continue;
      for (auto& e : baseline->entries) {
        if (e.matched < e.count && e.model == model && e.rule == d.rule->id && e.node == node_key(r, d) &&
            e.op == op_key(r, d)) {
          d.baselined = true;
          ++e.matched;
          break;
        }
      }
    }
  }
  r.summary = summarize(r.facts, r.placement, r.diagnostics);
  // Plans follow the findings that remain; recompute only when some changed.
  const bool changed = failures_shown() != before || !config.severity.empty();
  if (changed) {
    std::vector<Diagnostic> shown;
    for (const auto& d : r.diagnostics) {
      if (d.shown()) shown.push_back(d);
    }
    r.fix_plans = plan_fixes(r.facts, shown, platform);
  }
}

}  // namespace bpulint
