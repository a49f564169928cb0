#include "bpulint/rules/rule_db.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <dirent.h>
#include <regex>
#include <set>

#include "bpulint/base/input_file.h"
#include "bpulint/rules/builtin_rules.h"
#include "bpulint/rules/embedded_rules.h"
#include "bpulint/rules/fact_names.h"
#include "bpulint/rules/fix_ids.h"
#include "onnx_ops.h"
#include "bpulint/rules/yaml_reader.h"

namespace bpulint {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "error";
}

bool parse_severity(const std::string& text, Severity* out) {
  if (text == "note") *out = Severity::Note;
  else if (text == "warning") *out = Severity::Warning;
  else if (text == "error") *out = Severity::Error;
  else return false;
  return true;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::Verified: return "verified";
    case Status::Derived: return "derived";
    case Status::Inferred: return "inferred";
  }
  return "inferred";
}

const char* effect_name(Effect e) {
  switch (e) {
    case Effect::CpuFallback: return "cpu_fallback";
    case Effect::CompileError: return "compile_error";
    case Effect::PerfWarning: return "perf_warning";
    case Effect::Advice: return "advice";
  }
  return "advice";
}

bool parse_effect(const std::string& text, Effect* out) {
  for (Effect e : {Effect::CpuFallback, Effect::CompileError, Effect::PerfWarning, Effect::Advice}) {
    if (text == effect_name(e)) {
      *out = e;
      return true;
    }
  }
  return false;
}

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::Bpu: return "bpu";
    case OpClass::Folded: return "folded";
    case OpClass::Cpu: return "cpu";
    case OpClass::Lowered: return "lowered";
    case OpClass::Unknown: return "unknown";
  }
  return "unknown";
}

OpClass Platform::effective_class(const std::string& op) const {
  std::string current = op;
  for (int hops = 0; hops < 8; ++hops) {  // bounded: a lowering cycle is a data error, not a hang
    auto it = ops.find(current);
    if (it == ops.end()) return OpClass::Unknown;
    if (it->second.op_class != OpClass::Lowered) return it->second.op_class;
    current = it->second.lowered_to;
  }
  return OpClass::Unknown;
}

const Platform* RuleDatabase::find(const std::string& name) const {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  const std::string key = lower(name);
  for (const auto& p : platforms) {
    if (lower(p.name) == key || lower(p.march) == key) return &p;
    for (const auto& a : p.aliases) {
      if (lower(a) == key) return &p;
    }
  }
  return nullptr;
}

namespace {


void check_identifiers(const FileReader& reader, const YAML::Node& node, const std::vector<std::string>& used,
                       const std::set<std::string>& allowed, const std::string& context) {
  for (const auto& id : used) {
    if (allowed.count(id) == 0) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      reader.fail(node, "unknown fact '" + id + "' for " + context + " (known: " + list + ")");
    }
  }
}

// Each part of a rule is checked on its own, so one mistake never hides
// another: `rules validate` on a rule with an unknown key, a bad expression
// and a bad severity reports all three, each at its place.
Rule parse_rule(const FileReader& reader, const YAML::Node& node) {
  static const std::vector<std::string> kKeys = {"id",     "name",     "summary", "description", "scope",
                                                 "ops",    "domain",   "when",    "require",     "message",
                                                 "severity", "effect", "cpu_node", "source",     "status",
                                                 "ref",    "fixes",    "resolved_by"};
  if (!node.IsMap()) reader.fail(node, "rule must be a mapping");
  std::vector<LoadError> errors;
  auto step = [&errors](auto&& part) {
    try {
      part();
      return true;
    } catch (const LoadError& e) {
      errors.push_back(e);
      return false;
    }
  };
  step([&] {
    reader.check_keys(node, kKeys, {"id", "name", "summary", "require", "message", "severity", "source", "status"},
                      "rule");
  });
  Rule r;
  r.defined_at = reader.at(node);
  step([&] {
    r.id = reader.text(node, "id", "rule");
    static const std::regex kId("[A-Z][A-Z0-9]*[0-9]{4}");
    if (node["id"] && !std::regex_match(r.id, kId)) {
      reader.fail(node["id"], "rule id '" + r.id + "' must be an uppercase letter, then uppercase letters or digits, "
                              "ending in four digits (e.g. BPU1101, TEAM0001)");
    }
  });
  step([&] {
    r.name = reader.text(node, "name", "rule");
    static const std::regex kName("[a-z0-9]+(-[a-z0-9]+)*");
    if (node["name"] && !std::regex_match(r.name, kName)) {
      reader.fail(node["name"], "rule name '" + r.name + "' must be kebab-case");
    }
  });
  step([&] { r.summary = reader.text(node, "summary", "rule"); });
  step([&] { r.description = reader.text(node, "description", "rule"); });
  step([&] { r.source = reader.text(node, "source", "rule"); });
  step([&] { r.ref = reader.text(node, "ref", "rule"); });
  step([&] { r.cpu_node = reader.text(node, "cpu_node", "rule"); });
  step([&] {
    if (!node["resolved_by"]) return;
    if (reader.scalar(node["resolved_by"], "resolved_by") != "config_on_bpu") {
      reader.fail(node["resolved_by"], "resolved_by must be config_on_bpu (a compile config putting the node on the BPU)");
    }
    r.resolved_by_config_on_bpu = true;
  });
  step([&] { r.domain = node["domain"] ? reader.scalar(node["domain"], "domain") : ""; });
  const bool status_ok = step([&] {
    if (node["status"]) r.status = reader.status(node["status"]);
  });

  const bool scope_ok = step([&] {
    const std::string scope = node["scope"] ? reader.scalar(node["scope"], "scope") : "node";
    if (scope == "model") r.scope = RuleScope::Model;
    else if (scope != "node") reader.fail(node["scope"], "scope must be node or model");
  });

  step([&] {
    if (!node["severity"]) return;
    if (!parse_severity(reader.scalar(node["severity"], "severity"), &r.severity)) {
      reader.fail(node["severity"], "severity must be error, warning or note");
    }
    // A number published for another chip is a hint, not grounds for an error
    // or a warning per node (fold_derived reports it once per model).
    if (status_ok && r.status == Status::Derived && r.severity != Severity::Note) {
      reader.fail(node["severity"], "a rule with status derived (another chip's number) may be at most a note");
    }
  });
  step([&] {
    r.effect = Effect::CpuFallback;
    if (node["effect"] && !parse_effect(reader.scalar(node["effect"], "effect"), &r.effect)) {
      reader.fail(node["effect"], "effect must be cpu_fallback, compile_error, perf_warning or advice");
    }
  });

  // The facts an expression may name follow from the scope and the ops; when
  // those are wrong, the names cannot be judged (only the syntax is checked).
  std::set<std::string> allowed;
  bool facts_known = scope_ok;
  if (scope_ok && r.scope == RuleScope::Model) {
    allowed = model_facts();
    step([&] {
      if (node["ops"]) reader.fail(node["ops"], "a model-scope rule has no ops");
    });
  } else if (scope_ok) {
    allowed = reserved_node_facts();
    facts_known = step([&] {
      if (!node["ops"]) reader.fail(node, "rule is missing required key 'ops'");
      r.ops = reader.string_list(node["ops"], "ops");
      if (r.ops.empty()) reader.fail(node["ops"], "ops must not be empty");
    });
    for (const auto& op : r.ops) {
      if (op == "*") continue;
      if (!step([&] {
            if (!onnx_op_exists(op, r.domain)) {
              reader.fail(node["ops"], "unknown op '" + op + "' in domain '" + r.domain + "'");
            }
          })) {
        facts_known = false;
        continue;
      }
      for (const auto& a : onnx_attribute_names(op, r.domain)) allowed.insert(a);
    }
  }

  if (node["when"]) {
    step([&] {
      r.when = reader.expression(node["when"], "when");
      if (facts_known) check_identifiers(reader, node["when"], free_identifiers(*r.when), allowed, "this rule");
    });
  }
  if (node["require"]) {
    step([&] {
      r.require = reader.expression(node["require"], "require");
      if (facts_known) check_identifiers(reader, node["require"], free_identifiers(*r.require), allowed, "this rule");
    });
  }
  if (node["message"]) {
    step([&] {
      r.message = reader.message(node["message"]);
      r.message_text = reader.scalar(node["message"], "message");
      if (facts_known) check_identifiers(reader, node["message"], free_identifiers(*r.message), allowed, "this rule");
    });
  }

  step([&] {
    for (const auto& fix : reader.string_list(node["fixes"], "fixes")) {
      if (!is_fix_id(fix)) reader.fail(node["fixes"], "unknown fix '" + fix + "'");
      r.fixes.push_back(fix);
    }
  });
  if (!errors.empty()) {
    RuleErrors all;
    all.where = errors.front().where;
    all.message = errors.front().message;
    all.errors = std::move(errors);
    throw all;
  }

  std::set<std::string> used;
  for (const auto& id : free_identifiers(*r.require)) used.insert(id);
  if (r.when) {
    for (const auto& id : free_identifiers(*r.when)) used.insert(id);
  }
  for (const auto& id : free_identifiers(*r.message)) used.insert(id);
  r.facts_used.assign(used.begin(), used.end());
  return r;
}

// With a collector, an error in one entry (an op class, a rule) is recorded
// and loading goes on with the next, so `rules validate` reports every error
// of a file at once; without one, the first error ends the load.
using ErrorSink = std::vector<std::string>*;

template <typename F>
void each_entry(const YAML::Node& list, ErrorSink sink, F&& parse) {
  for (const auto& entry : list) {
    if (sink == nullptr) {
      parse(entry);
      continue;
    }
    try {
      parse(entry);
    } catch (const RuleErrors& e) {
      for (const auto& one : e.errors) sink->push_back(one.where.str() + ": " + yaml_message(one.message));
    } catch (const LoadError& e) {
      sink->push_back(e.where.str() + ": " + yaml_message(e.message));
    }
  }
}

void parse_op_classes(const FileReader& reader, const YAML::Node& list, std::map<std::string, OpPlacement>& ops,
                      std::map<std::string, SourceLocation>& where, ErrorSink sink = nullptr) {
  if (!list) return;
  if (!list.IsSequence()) reader.fail(list, "ops must be a list of op classes");
  each_entry(list, sink, [&](const YAML::Node& entry) {
    reader.check_keys(entry, {"class", "ops", "status", "source", "note", "to"}, {"class", "ops", "status", "source"},
                      "op class");
    OpPlacement placement;
    const std::string cls = reader.scalar(entry["class"], "class");
    if (cls == "bpu") placement.op_class = OpClass::Bpu;
    else if (cls == "folded") placement.op_class = OpClass::Folded;
    else if (cls == "cpu") placement.op_class = OpClass::Cpu;
    else if (cls == "lowered") placement.op_class = OpClass::Lowered;
    else if (cls == "unknown") placement.op_class = OpClass::Unknown;
    else reader.fail(entry["class"], "class must be bpu, folded, cpu, lowered or unknown");
    if ((placement.op_class == OpClass::Lowered) != static_cast<bool>(entry["to"])) {
      reader.fail(entry, "class lowered needs `to: <op>` (and only it takes `to`)");
    }
    if (entry["to"]) {
      placement.lowered_to = reader.scalar(entry["to"], "to");
      if (!onnx_op_exists(placement.lowered_to, "")) reader.fail(entry["to"], "unknown op '" + placement.lowered_to + "'");
    }
    placement.status = reader.status(entry["status"]);
    placement.source = reader.text(entry, "source", "op class");
    placement.note = reader.text(entry, "note", "op class");
    for (const auto& op : reader.string_list(entry["ops"], "ops")) {
      if (!onnx_op_exists(op, "")) reader.fail(entry["ops"], "unknown op '" + op + "'");
      auto prev = where.find(op);
      if (prev != where.end()) {
        reader.fail(entry["ops"], "op '" + op + "' is already classified at " + prev->second.str());
      }
      where[op] = reader.at(entry["ops"]);
      ops[op] = placement;
    }
  });
}

struct ParsedFile {
  YAML::Node root;
  const RuleFile* file;
};

YAML::Node parse_yaml(const RuleFile& file) {
  try {
    YAML::Node root = YAML::Load(file.text);
    if (!root.IsMap()) throw LoadError{{file.path, 1, 1}, "a rule file must be a YAML mapping"};
    return root;
  } catch (const YAML::Exception& e) {
    throw LoadError{{file.path, e.mark.line + 1, e.mark.column + 1}, "YAML syntax error: " + yaml_message(e.msg)};
  }
}

// Adds a file's op classes and rules to a platform (files included by it too).
void merge_content(const FileReader& reader, const YAML::Node& root, Platform& platform,
                   std::map<std::string, SourceLocation>& op_where, std::map<std::string, SourceLocation>& rule_where,
                   ErrorSink sink) {
  parse_op_classes(reader, root["ops"], platform.ops, op_where, sink);
  const YAML::Node rules = root["rules"];
  if (!rules) return;
  if (!rules.IsSequence()) reader.fail(rules, "rules must be a list");
  each_entry(rules, sink, [&](const YAML::Node& node) {
    Rule r = parse_rule(reader, node);
    auto prev = rule_where.find(r.id);
    if (prev != rule_where.end()) reader.fail(node["id"], "duplicate rule id '" + r.id + "' (first at " + prev->second.str() + ")");
    rule_where[r.id] = r.defined_at;
    platform.rules.push_back(std::move(r));
  });
}

// Inside a catch block of a loader: the one-line error, and false.
bool describe_load_failure(std::string& error) {
  try {
    throw;
  } catch (const LoadError& e) {
    error = e.where.str() + ": " + yaml_message(e.message);
  } catch (const YAML::Exception& e) {
    error = "rule file: " + std::string(e.what());
  } catch (const std::exception& e) {
    error = "rule file: " + std::string(e.what());
  }
  return false;
}

std::string base_name(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Node rules a same-family chip has and this one lacks (no rule with the same
// id, nor one with the same `ref`, i.e. its own version of that limit).
// Derived rules are hints already and are not passed on, nor are notes: a
// note states no limit (BPU2381 says a placement is not known).
void link_siblings(RuleDatabase& db) {
  for (auto& p : db.platforms) {
    p.sibling_rules.clear();
    if (p.family.empty()) continue;
    std::set<std::string> ids, refs;
    for (const auto& r : p.rules) {
      ids.insert(r.id);
      if (!r.ref.empty()) refs.insert(r.ref);
    }
    for (const auto& s : db.platforms) {
      if (&s == &p || s.family != p.family) continue;
      for (const auto& r : s.rules) {
        if (r.scope != RuleScope::Node || r.builtin || r.status == Status::Derived || r.severity == Severity::Note ||
            ids.count(r.id) > 0 ||
            (!r.ref.empty() && refs.count(r.ref) > 0)) {
          continue;
        }
        auto known = std::find_if(p.sibling_rules.begin(), p.sibling_rules.end(),
                                  [&](const SiblingRule& x) { return x.rule.id == r.id; });
        if (known == p.sibling_rules.end()) p.sibling_rules.push_back({r, {s.name}});
        else known->platforms.push_back(s.name);
      }
    }
  }
}

}  // namespace

bool load_rule_database(const std::vector<RuleFile>& files, RuleDatabase& db, std::string& error,
                        std::vector<std::string>* all_errors) {
  db = RuleDatabase{};
  // An included file is merged into every platform that includes it: its
  // entry errors are collected once.
  std::vector<std::string> collected;
  ErrorSink sink = all_errors != nullptr ? &collected : nullptr;
  try {
    std::map<std::string, ParsedFile> shared;  // by base name, for include:
    std::vector<ParsedFile> platforms;
    for (const auto& f : files) {
      ParsedFile parsed{parse_yaml(f), &f};
      FileReader reader(f.path);
      const YAML::Node version = parsed.root["schema_version"];
      if (!version) reader.fail(parsed.root, "missing 'schema_version: 1'");
      if (reader.scalar(version, "schema_version") != "1") reader.fail(version, "unsupported schema_version (this bpu-lint reads 1)");
      if (parsed.root["platform"]) {
        reader.check_keys(parsed.root,
                          {"schema_version", "platform", "march", "family", "aliases", "description", "include", "ops", "rules"},
                          {"platform", "march", "description"}, "platform file");
        platforms.push_back(parsed);
      } else {
        reader.check_keys(parsed.root, {"schema_version", "shared", "description", "ops", "rules"}, {"shared", "description"},
                          "shared rule file");
        shared[base_name(f.path)] = parsed;
      }
    }
    std::set<std::string> names;
    for (const auto& pf : platforms) {
      FileReader reader(pf.file->path);
      Platform p;
      p.file = pf.file->path;
      p.name = reader.text(pf.root, "platform", "platform file");
      p.march = reader.text(pf.root, "march", "platform file");
      p.description = reader.text(pf.root, "description", "platform file");
      p.family = reader.text(pf.root, "family", "platform file");
      p.aliases = reader.string_list(pf.root["aliases"], "aliases");
      if (!names.insert(p.name).second) reader.fail(pf.root["platform"], "platform '" + p.name + "' is defined twice");
      std::map<std::string, SourceLocation> op_where, rule_where;
      for (const auto& b : builtin_rules()) rule_where[b.id] = b.defined_at;
      for (const auto& inc : reader.string_list(pf.root["include"], "include")) {
        auto it = shared.find(inc);
        if (it == shared.end()) reader.fail(pf.root["include"], "included file '" + inc + "' not found among the rule files");
        merge_content(FileReader(it->second.file->path), it->second.root, p, op_where, rule_where, sink);
      }
      merge_content(reader, pf.root, p, op_where, rule_where, sink);
      db.platforms.push_back(std::move(p));
    }
    std::sort(db.platforms.begin(), db.platforms.end(),
              [](const Platform& a, const Platform& b) { return a.name < b.name; });
    link_siblings(db);
  } catch (...) {
    describe_load_failure(error);
    if (all_errors != nullptr) collected.push_back(error);
    else return false;
  }
  if (all_errors == nullptr) return true;
  for (const auto& e : collected) {
    if (std::find(all_errors->begin(), all_errors->end(), e) == all_errors->end()) all_errors->push_back(e);
  }
  if (!all_errors->empty()) error = all_errors->front();
  return all_errors->empty();
}

bool read_rule_paths(const std::vector<std::string>& paths, std::vector<RuleFile>& files, std::string& error) {
  for (const auto& path : paths) {
    std::vector<std::string> names;
    DIR* d = opendir(path.c_str());
    if (d != nullptr) {
      while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 5 && n.compare(n.size() - 5, 5, ".yaml") == 0) names.push_back(path + "/" + n);
      }
      closedir(d);
      std::sort(names.begin(), names.end());
      if (names.empty()) {
        error = path + ": no *.yaml rule files";
        return false;
      }
    } else {
      names.push_back(path);
    }
    for (const auto& n : names) {
      std::string text;
      if (!read_input_file(n, kRuleFile, text, error)) {
        error = n + ": " + error;
        return false;
      }
      files.push_back({n, std::move(text)});
    }
  }
  return true;
}

bool extend_rule_database(RuleDatabase& db, const std::vector<RuleFile>& files, std::string& error,
                          std::vector<std::string>* all_errors) {
  ErrorSink sink = all_errors;
  const size_t errors_before = all_errors != nullptr ? all_errors->size() : 0;
  for (const auto& f : files) {
    try {
      const YAML::Node root = parse_yaml(f);
      FileReader reader(f.path);
      reader.check_keys(root, {"schema_version", "extends", "description", "ops", "rules"}, {"schema_version", "extends"},
                        "user rule file");
      if (reader.scalar(root["schema_version"], "schema_version") != "1") {
        reader.fail(root["schema_version"], "unsupported schema_version (this bpu-lint reads 1)");
      }
      const std::string target = reader.scalar(root["extends"], "extends");
      Platform* platform = nullptr;
      for (auto& p : db.platforms) {
        if (&p == db.find(target)) platform = &p;
      }
      if (platform == nullptr) reader.fail(root["extends"], "unknown platform '" + target + "'");
      // Op classes: a user file may reclassify an op it lists.
      std::map<std::string, OpPlacement> ops;
      std::map<std::string, SourceLocation> op_where;
      parse_op_classes(reader, root["ops"], ops, op_where, sink);
      for (auto& kv : ops) platform->ops[kv.first] = kv.second;
      // A user's rule that covers a sibling's limit (same id) replaces the hint.
      const YAML::Node rules = root["rules"];
      if (!rules) continue;
      if (!rules.IsSequence()) reader.fail(rules, "rules must be a list");
      std::set<std::string> seen;
      each_entry(rules, sink, [&](const YAML::Node& node) {
        Rule r = parse_rule(reader, node);
        if (!seen.insert(r.id).second) reader.fail(node["id"], "duplicate rule id '" + r.id + "' in this file");
        for (const auto& b : builtin_rules()) {
          if (b.id == r.id) reader.fail(node["id"], "rule id '" + r.id + "' belongs to a built-in engine rule");
        }
        auto same = std::find_if(platform->rules.begin(), platform->rules.end(),
                                 [&](const Rule& existing) { return existing.id == r.id; });
        platform->sibling_rules.erase(
            std::remove_if(platform->sibling_rules.begin(), platform->sibling_rules.end(),
                           [&](const SiblingRule& x) { return x.rule.id == r.id || (!r.ref.empty() && x.rule.ref == r.ref); }),
            platform->sibling_rules.end());
        if (same != platform->rules.end()) *same = std::move(r);  // override by id
        else platform->rules.push_back(std::move(r));
      });
    } catch (...) {
      describe_load_failure(error);
      if (all_errors == nullptr) return false;
      all_errors->push_back(error);
    }
  }
  if (all_errors == nullptr) return true;
  if (all_errors->size() > errors_before) error = (*all_errors)[errors_before];
  return all_errors->size() == errors_before;
}

bool load_default_rule_database(const std::string& dir, RuleDatabase& db, std::string& error) {
  std::vector<RuleFile> files;
  if (dir.empty()) {
    for (const auto& f : embedded_rule_files()) files.push_back({f.path, f.content});
  } else if (!read_rule_paths({dir}, files, error)) {
    return false;
  }
  return load_rule_database(files, db, error);
}

}  // namespace bpulint
