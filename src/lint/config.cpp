#include "bpulint/lint/config.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bpulint/base/input_file.h"
#include "bpulint/engine/facts.h"
#include "bpulint/rules/yaml_reader.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {

// Reads and parses a YAML file; syntax errors come back as file:line:col.
bool load_yaml_file(const std::string& path, const InputKind& kind, YAML::Node& root, std::string& error) {
  std::string text;
  if (!read_input_file(path, kind, text, error)) {
    error = path + ": " + error;
    return false;
  }
  try {
    root = YAML::Load(text);
    return true;
  } catch (const YAML::Exception& e) {
    error = SourceLocation{path, e.mark.line + 1, e.mark.column + 1}.str() + ": YAML syntax error: " + yaml_message(e.msg);
    return false;
  }
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
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_matches(p, text); });
}

}  // namespace

std::string upper_id(std::string id) {
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return id;
}

bool glob_matches(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
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
  if (!load_yaml_file(path, kConfigFile, root, error)) return false;
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

bool load_baseline(const std::string& path, Baseline& baseline, std::string& error) {
  baseline = Baseline{};
  baseline.path = path;
  YAML::Node root;
  if (!load_yaml_file(path, kBaselineFile, root, error)) return false;
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

}  // namespace bpulint
