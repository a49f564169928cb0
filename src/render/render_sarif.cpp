// --format sarif: SARIF 2.1.0, one run, two profiles (see render_machine.h and
// shared/docs/output-and-integration.md section 1):
//   github (default): artifact URI and no region (a byteOffset region on a
//                     binary file is not shown by GitHub, a startLine would be
//                     wrong), the node path at the front of message.text;
//   spec:             the binary region (byteOffset/byteLength) of the node's
//                     NodeProto, or of the whole file for model-level results.
// A node whose PyTorch stack trace names a file under --source-root has that
// file and startLine as its primary location (both profiles) and the .onnx
// node as relatedLocations[0]; the .py files are artifacts after the models.
// Both: rules that fired (sorted by id), cached logicalLocations (graph ->
// module, node -> node), own partialFingerprints, invocations with exit code
// and notifications, artifacts, automationDetails "bpu-lint/<platform>/".
// Fix options live in result.properties.fixes; SARIF `fixes` is never written
// (no byte patch is computed, and an empty one is rejected by GitHub).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "bpulint/base/exit_codes.h"
#include "bpulint/render/finding_groups.h"
#include "bpulint/render/finding_identity.h"
#include "bpulint/render/render_machine.h"
#include "bpulint/render/rule_docs.h"
#include "bpulint/base/strings.h"
#include "render_json_shared.h"

namespace fs = std::filesystem;

namespace bpulint {
namespace {

constexpr size_t kGitHubTextLimit = 1024;  // shortDescription / fullDescription

const char* problem_severity(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "recommendation";
  }
  return "recommendation";
}

const char* precision(Status s) {
  switch (s) {
    case Status::Verified: return "high";
    case Status::Derived: return "medium";
    case Status::Inferred: return "low";
  }
  return "low";
}

// "convtranspose3d-kernel-d-range" -> "Convtranspose3dKernelDRange".
std::string pascal_case(const std::string& kebab) {
  std::string out;
  bool upper = true;
  for (char c : kebab) {
    if (c == '-' || c == '_' || c == ' ' || c == '.') {
      upper = true;
      continue;
    }
    out += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out;
}

// At most `limit` bytes, cut at a UTF-8 character boundary, "..." when cut.
std::string limit_text(const std::string& text, size_t limit) {
  std::string s = sanitize_utf8(text);
  if (s.size() <= limit) return s;
  size_t cut = limit - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string percent_encode(const std::string& path, bool keep_colon = false) {
  std::string out;
  for (unsigned char c : path) {
    if (is_unreserved(c) || c == '/' || (keep_colon && c == ':')) {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// Kept relative when relative (GitHub resolves it against the checkout);
// absolute paths become file:// URIs. '\' -> '/', every byte outside the URI
// "unreserved" set and '/' percent-encoded (UTF-8 bytes included), so even a
// non-UTF-8 file name gives a valid URI.
std::string sarif_uri(const std::string& path) {
  std::string p = path;
  for (char& c : p) {
    if (c == '\\') c = '/';
  }
  if (!p.empty() && p[0] == '/') return "file://" + percent_encode(p);
  if (p.size() >= 3 && ((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z')) && p[1] == ':' && p[2] == '/') {
    return "file:///" + p.substr(0, 2) + percent_encode(p.substr(2));
  }
  return percent_encode(p);
}

std::string code(const std::string& s) {
  const bool tick = s.find('`') != std::string::npos;
  return tick ? "`` " + s + " ``" : "`" + s + "`";
}

struct HelpText {
  std::string text, markdown;
};

// The rule's card (rule_docs.h), as SARIF's help text and markdown.
HelpText rule_help(const Rule& r, const Platform* platform) {
  std::vector<std::pair<std::string, std::string>> rows;  // label, plain value
  std::vector<std::string> md;
  const std::vector<std::string> platforms =
      platform != nullptr && !r.builtin ? std::vector<std::string>{platform->name} : std::vector<std::string>{};
  for (const auto& field : rule_card(r, platforms, /*defined_at=*/false)) {
    rows.emplace_back(field.label, field.text());
    md.push_back("- **" + field.label + ":** " + (field.code ? code(field.value) : field.value) + field.detail);
  }
  HelpText h;
  h.text = r.summary + "\n\n";
  h.markdown = "**" + r.summary + "**\n\n";
  if (!r.description.empty()) {
    h.text += r.description + "\n\n";
    h.markdown += r.description + "\n\n";
  }
  for (const auto& row : rows) h.text += row.first + ": " + row.second + "\n";
  h.markdown += join(md, "\n") + "\n";
  h.text += "\nMore: bpu-lint explain " + r.id + "\n";
  h.markdown += "\nMore: " + code("bpu-lint explain " + r.id) + "\n";
  return h;
}

struct LogicalLocation {
  std::string kind, name, fqn;
  long parent = -1;
  const NodeFacts* node = nullptr;
};

struct Builder {
  const RunInfo& run;
  SarifProfile profile;
  std::map<std::string, const Rule*> rules;  // id -> rule, sorted
  std::map<std::string, size_t> rule_index;
  std::vector<LogicalLocation> logical;
  std::map<std::tuple<std::string, std::string, std::string, size_t>, size_t> logical_index;
  std::vector<long> artifact_of;  // per model: artifact index or -1
  // PyTorch files that results point at (after the models' artifacts), by path.
  std::map<std::string, size_t> source_artifact;
  std::vector<std::string> source_paths;
  // Per model: its listed findings folded (finding_groups.h); one result per group.
  std::vector<std::vector<FindingGroup>> groups;

  // An artifactLocation's uri: under the source root, relative to %SRCROOT%
  // (normalised: "./a//b.onnx" and "../m.onnx" from a subfolder name the same
  // file the same way); elsewhere, as given.
  void write_uri(JsonWriter& w, const std::string& path) const {
    const std::string rel = path_under_root(path, run.sarif_root);
    if (rel.empty()) {
      w.member("uri", sarif_uri(path));
    } else {
      w.member("uri", percent_encode(rel)).member("uriBaseId", "%SRCROOT%");
    }
  }
  // What a model-level fingerprint names the model by: the same file from any folder.
  std::string stable_path(const std::string& path) const {
    const std::string rel = path_under_root(path, run.sarif_root);
    return rel.empty() ? path : rel;
  }

  Builder(const RunInfo& r, SarifProfile p) : run(r), profile(p) {
    std::vector<const ModelReport*> reports;
    for (const auto& m : run.models) reports.push_back(m.report);
    groups = group_findings(reports, run.show_waived, run.min_severity);
    size_t artifacts = 0;
    for (const auto& m : run.models) {
      const bool ok = m.report != nullptr && m.report->ok;
      artifact_of.push_back(ok ? static_cast<long>(artifacts++) : -1);
      if (!ok) continue;
      for (const auto& d : m.report->diagnostics) {
        if (listed(d, run.show_waived, run.min_severity)) rules.emplace(d.rule->id, d.rule);
      }
    }
    for (const auto& m : run.models) {
      if (m.report == nullptr || !m.report->ok) continue;
      for (const auto& d : m.report->diagnostics) {
        const SourceLine* s = listed(d, run.show_waived, run.min_severity) ? m.report->source_for(d.node) : nullptr;
        if (s == nullptr || s->path.empty() || source_artifact.count(s->path) != 0) continue;
        source_artifact.emplace(s->path, artifacts + source_paths.size());
        source_paths.push_back(s->path);
      }
    }
    size_t i = 0;
    for (const auto& kv : rules) rule_index[kv.first] = i++;
  }

  size_t intern(const std::string& kind, const std::string& name, const std::string& fqn, long parent,
                const NodeFacts* node) {
    const auto key = std::make_tuple(kind, fqn, node != nullptr ? node->op_type : std::string(),
                                     node != nullptr ? node->index_in_graph : size_t(0));
    auto it = logical_index.find(key);
    if (it != logical_index.end()) return it->second;
    logical.push_back({kind, name, fqn, parent, node});
    logical_index[key] = logical.size() - 1;
    return logical.size() - 1;
  }

  // Logical location of a node (its graph first), returns the node's index.
  size_t node_location(const NodeFacts& n) {
    const long graph = static_cast<long>(intern("module", n.graph_path, n.graph_path, -1, nullptr));
    return intern("node", std::string(n.display_name), n.path(), graph, &n);
  }

  void write_rules(JsonWriter& w) {
    w.key("rules").begin_array();
    for (const auto& kv : rules) {
      const Rule& r = *kv.second;
      std::string name = pascal_case(r.name);
      if (name.empty() || name == r.id) name = pascal_case(r.id) + "Rule";
      Severity effective = r.severity;
      auto ov = run.severity_overrides.find(r.id);
      if (ov != run.severity_overrides.end()) effective = ov->second;
      const HelpText help = rule_help(r, run.platform);
      w.begin_object();
      w.member("id", r.id).member("name", name);
      w.key("shortDescription").begin_object().member("text", limit_text(r.summary, kGitHubTextLimit)).end_object();
      w.key("fullDescription").begin_object();
      w.member("text", limit_text(r.description.empty() ? r.summary : r.description, kGitHubTextLimit));
      w.end_object();
      w.key("help").begin_object().member("text", help.text).member("markdown", help.markdown).end_object();
      w.key("defaultConfiguration").begin_object().member("level", severity_name(r.severity)).end_object();
      w.key("properties").begin_object();
      w.member("platform", run.platform != nullptr ? run.platform->name : std::string());
      w.member("status", status_name(r.status)).member("source", r.source).member("effect", effect_name(r.effect));
      if (!r.ref.empty()) w.member("ref", r.ref);
      w.key("tags").begin_array().value("bpu");
      if (run.platform != nullptr && run.platform->name != "bpu") w.value(run.platform->name);
      w.value(status_name(r.status)).end_array();
      w.member("precision", precision(r.status)).member("problem.severity", problem_severity(effective));
      w.end_object();
      w.end_object();
    }
    w.end_array();
  }

  void write_invocations(JsonWriter& w) {
    w.key("invocations").begin_array().begin_object();
    w.member("executionSuccessful", run.exit_code != kExitError).member("exitCode", run.exit_code);
    const char* description = run.exit_code == kExitClean      ? "No error-level findings."
                              : run.exit_code == kExitFindings ? "Error-level findings."
                              : run.exit_code == kExitError    ? "Usage error, unreadable or invalid model, or invalid rule file."
                                                   : "";
    if (*description != '\0') w.member("exitCodeDescription", description);
    bool any_override = false;
    for (const auto& kv : run.severity_overrides) any_override = any_override || rule_index.count(kv.first) > 0;
    if (any_override) {
      w.key("ruleConfigurationOverrides").begin_array();
      for (const auto& kv : run.severity_overrides) {
        auto it = rule_index.find(kv.first);
        if (it == rule_index.end()) continue;
        w.begin_object();
        w.key("descriptor").begin_object().member("id", kv.first).member("index", it->second).end_object();
        w.key("configuration").begin_object().member("level", severity_name(kv.second)).end_object();
        w.end_object();
      }
      w.end_array();
    }
    bool any_failure = false;
    for (const auto& m : run.models) {
      const bool unreadable = m.report == nullptr || !m.report->ok;
      any_failure = any_failure || unreadable || (m.fix_run != nullptr && !m.fix_run->error.empty());
    }
    if (any_failure) {
      w.key("toolExecutionNotifications").begin_array();
      for (const auto& m : run.models) {
        std::string text;
        if (m.report == nullptr || !m.report->ok) {
          text = m.path + ": " + (!m.error.empty() || m.report == nullptr ? m.error : m.report->error);
        } else if (m.fix_run != nullptr && !m.fix_run->error.empty()) {
          text = m.path + ": --fix failed: " + m.fix_run->error;
        } else {
          continue;
        }
        w.begin_object();
        w.key("locations").begin_array().begin_object();
        w.key("physicalLocation").begin_object();
        w.key("artifactLocation").begin_object();
        write_uri(w, m.path);
        w.end_object();
        w.end_object().end_object().end_array();
        w.key("message").begin_object().member("text", text).end_object();
        w.member("level", "error");
        w.end_object();
      }
      w.end_array();
    }
    if (!run.configuration_notes.empty()) {
      w.key("toolConfigurationNotifications").begin_array();
      for (const auto& note : run.configuration_notes) {
        w.begin_object();
        w.key("message").begin_object().member("text", note).end_object();
        w.member("level", "warning");
        w.end_object();
      }
      w.end_array();
    }
    w.end_object().end_array();
  }

  void write_artifacts(JsonWriter& w) {
    w.key("artifacts").begin_array();
    for (size_t i = 0; i < run.models.size(); ++i) {
      if (artifact_of[i] < 0) continue;
      const auto& m = run.models[i];
      const ModelReport& r = *m.report;
      w.begin_object();
      w.key("location").begin_object();
      write_uri(w, m.path);
      w.end_object();
      w.member("length", r.loaded != nullptr ? r.loaded->file_size : 0);
      w.key("roles").begin_array().value("analysisTarget").end_array();
      w.member("mimeType", "application/octet-stream");
      if (m.fix_run != nullptr) {
        const FixRun& f = *m.fix_run;
        w.key("properties").begin_object().key("fixedModel").begin_object();
        w.member("path", f.output_path).member("written", f.written);
        if (!f.error.empty()) w.member("error", f.error);
        w.member("nodesFixed", f.applied()).member("nodesAttempted", f.results.size());
        if (m.fixed != nullptr && m.fixed->ok) {
          const Summary& c = m.fixed->summary;
          w.key("remaining").begin_object();
          w.member("errors", c.errors).member("warnings", c.warnings).member("notes", c.notes);
          w.end_object();
        }
        w.end_object().end_object();
      }
      w.end_object();
    }
    for (const auto& path : source_paths) {
      w.begin_object();
      w.key("location").begin_object();
      write_uri(w, path);
      w.end_object();
      w.key("roles").begin_array().value("resultFile").end_array();
      w.member("mimeType", "text/x-python").member("sourceLanguage", "python");
      w.end_object();
    }
    w.end_array();
  }

  void write_region(JsonWriter& w, uint64_t offset, uint64_t length) {
    w.key("region").begin_object();
    w.member("byteOffset", static_cast<unsigned long long>(offset));
    w.member("byteLength", static_cast<unsigned long long>(length));
    w.end_object();
  }

  void write_node_logical(JsonWriter& w, const NodeFacts& n) {
    const size_t index = node_location(n);
    w.key("logicalLocations").begin_array().begin_object();
    w.member("index", index).member("fullyQualifiedName", logical[index].fqn);
    w.end_object().end_array();
  }

  // GitHub keeps at most 1,000 related locations per result.
  static constexpr size_t kMaxRelated = 1000;

  static std::string node_name(const ModelReport& r, const Diagnostic& d) {
    return d.node >= 0 ? r.facts.nodes[static_cast<size_t>(d.node)].path() : std::string("(model)");
  }

  void write_result(JsonWriter& w, const RunInfo::Model& m, size_t artifact, const FindingGroup& g) {
    const ModelReport& r = *m.report;
    const Diagnostic& d = r.diagnostics[g.members.front()];
    const size_t count = g.members.size();
    const NodeFacts* n = d.node >= 0 ? &r.facts.nodes[static_cast<size_t>(d.node)] : nullptr;
    w.begin_object();
    w.member("ruleId", d.rule->id).member("ruleIndex", rule_index.at(d.rule->id));
    w.member("level", severity_name(d.severity));
    // A node with a PyTorch stack trace is reported on the line that built it,
    // with the node in the model as the related location.
    const SourceLine* source = n != nullptr ? r.source_for(d.node) : nullptr;
    if (source != nullptr && source->path.empty()) source = nullptr;
    std::string text = d.message;
    if (profile == SarifProfile::GitHub && n != nullptr) text = n->path() + ": " + text;
    if (source != nullptr) text = m.path + ": " + (profile == SarifProfile::GitHub ? text : n->path() + ": " + text);
    if (count > 1) {
      text += " (" + std::to_string(count) + " nodes with this finding" +
              (g.by_rule ? ", their messages differ" : "") + "; properties.nodes lists them)";
    }
    w.key("message").begin_object().member("text", text).end_object();

    w.key("locations").begin_array();
    if (source != nullptr) {
      w.begin_object().key("physicalLocation").begin_object();
      w.key("artifactLocation").begin_object();
      write_uri(w, source->path);
      w.member("index", source_artifact.at(source->path));
      w.end_object();
      w.key("region").begin_object().member("startLine", source->line);
      if (!source->code.empty()) w.key("snippet").begin_object().member("text", source->code).end_object();
      w.end_object();
      w.end_object();
      write_node_logical(w, *n);
      w.end_object().end_array();
      w.key("relatedLocations").begin_array().begin_object().member("id", 0);
      w.key("message").begin_object().member("text", "node " + n->path() + " in " + m.path).end_object();
    } else {
      w.begin_object();
    }
    w.key("physicalLocation").begin_object();
    w.key("artifactLocation").begin_object();
    write_uri(w, m.path);
    w.member("index", artifact).end_object();
    if (profile == SarifProfile::Spec) {
      const LoadedModel* lm = r.loaded.get();
      const uint64_t size = lm != nullptr ? lm->file_size : 0;
      if (n != nullptr && lm != nullptr && lm->node_spans.size() == r.facts.nodes.size() &&
          n->walk_order < lm->node_spans.size()) {
        const ByteSpan& s = lm->node_spans[n->walk_order];
        write_region(w, s.offset, s.length);
      } else {
        write_region(w, 0, size);
      }
    }
    w.end_object();
    if (n != nullptr) write_node_logical(w, *n);
    w.end_object();
    if (count > 1) {  // the other nodes of the group, after the model node of a source location
      size_t id = 0;
      if (source == nullptr) {
        w.end_array().key("relatedLocations").begin_array();
      } else {
        id = 1;
      }
      for (size_t k = 1; k < count && id < kMaxRelated; ++k, ++id) {
        const Diagnostic& other = r.diagnostics[g.members[k]];
        w.begin_object().member("id", id);
        w.key("message").begin_object().member("text", "node " + node_name(r, other)).end_object();
        w.key("physicalLocation").begin_object().key("artifactLocation").begin_object();
        write_uri(w, m.path);
        w.member("index", artifact).end_object().end_object();
        w.end_object();
      }
    }
    w.end_array();

    // Never the message: a model-level message holds counts, which change
    // when an unrelated node is added (finding_identity.h).
    const std::string key = finding_key(r, d, stable_path(m.path));
    w.key("partialFingerprints").begin_object();
    w.member("bpuLintNode/v1", key).member("primaryLocationLineHash", fingerprint_hash(key));
    w.end_object();
    if (run.show_waived) {
      w.member("baselineState", d.baselined ? "unchanged" : "new");
      if (!d.waiver.empty()) {
        w.key("suppressions").begin_array().begin_object();
        w.member("kind", "external").member("status", "accepted").member("justification", d.waiver);
        w.end_object().end_array();
      }
    }
    w.key("properties").begin_object();
    w.member("count", count);
    if (count > 1) {
      w.key("nodes").begin_array();
      for (size_t i : g.members) w.value(node_name(r, r.diagnostics[i]));
      w.end_array();
    }
    w.key("facts");
    write_facts(w, d.facts);
    w.key("fixes");
    write_fix_options(w, n != nullptr && !d.fixes.empty() ? r.plan_for(d.node) : nullptr);
    // The whole-model fixes that settle the finding (no artifact change can
    // say them: they rewrite or split the binary model).
    bool model_fixes = false;
    for (const ModelFixPlan& plan : r.model_fix_plans) {
      const bool settles = std::any_of(g.members.begin(), g.members.end(), [&](size_t i) {
        return std::binary_search(plan.settles.begin(), plan.settles.end(), i);
      });
      if (!settles) continue;
      if (!model_fixes) w.key("modelFixes").begin_array();
      model_fixes = true;
      w.begin_object().member("id", plan.kind).member("applicable", plan.why_not.empty());
      w.member(plan.why_not.empty() ? "summary" : "why_not", plan.why_not.empty() ? plan.summary : plan.why_not);
      w.end_object();
    }
    if (model_fixes) w.end_array();
    w.member("outcome", d.outcome == Outcome::Fail ? "fail" : "unknown");
    w.end_object();
    w.end_object();
  }

  void write_logical_locations(JsonWriter& w) {
    w.key("logicalLocations").begin_array();
    for (size_t i = 0; i < logical.size(); ++i) {
      const LogicalLocation& l = logical[i];
      w.begin_object();
      w.member("name", l.name).member("fullyQualifiedName", l.fqn).member("kind", l.kind);
      if (l.parent >= 0) w.member("parentIndex", l.parent);
      w.member("index", i);
      if (l.node != nullptr) {
        w.key("properties").begin_object();
        w.member("opType", l.node->op_type);
        if (!l.node->domain.empty()) w.member("domain", l.node->domain);
        w.member("graphPath", l.node->graph_path).member("nodeIndex", l.node->index_in_graph);
        w.end_object();
      }
      w.end_object();
    }
    w.end_array();
  }

  // One run object: this builder's models (one platform's).
  void write_run(JsonWriter& w) {
    // Logical locations are interned in result order before anything is
    // written, so run.logicalLocations can precede the results.
    for (size_t i = 0; i < run.models.size(); ++i) {
      if (artifact_of[i] < 0) continue;
      const ModelReport& r = *run.models[i].report;
      for (const auto& g : groups[i]) {
        const Diagnostic& d = r.diagnostics[g.members.front()];
        if (d.node >= 0) node_location(r.facts.nodes[static_cast<size_t>(d.node)]);
      }
    }
    w.begin_object();
    w.key("tool").begin_object().key("driver").begin_object();
    w.member("name", "bpu-lint").member("version", run.tool_version);
    write_rules(w);
    w.end_object().end_object();
    write_invocations(w);
    if (!run.sarif_root.empty()) {
      w.key("originalUriBaseIds").begin_object().key("%SRCROOT%").begin_object();
      w.member("uri", sarif_uri(run.sarif_root + "/")).end_object().end_object();
    }
    w.key("automationDetails").begin_object();
    w.member("id", "bpu-lint/" + (run.platform != nullptr ? run.platform->name : std::string()) + "/");
    w.end_object();
    write_artifacts(w);
    write_logical_locations(w);
    w.key("results").begin_array();
    for (size_t i = 0; i < run.models.size(); ++i) {
      if (artifact_of[i] < 0) continue;
      for (const auto& g : groups[i]) write_result(w, run.models[i], static_cast<size_t>(artifact_of[i]), g);
    }
    w.end_array();
    w.key("properties").begin_object();
    w.member("profile", profile == SarifProfile::GitHub ? "github" : "spec");
    w.key("platform").begin_object();
    w.member("name", run.platform != nullptr ? run.platform->name : std::string());
    w.member("march", run.platform != nullptr ? run.platform->march : std::string());
    w.end_object();
    w.end_object();
    w.end_object();
  }
};

}  // namespace

// One run per platform, in the order the models name them: a run's rules,
// automationDetails.id (bpu-lint/<platform>/) and tags are that platform's,
// as GitHub code scanning keeps one analysis per category.
std::string render_sarif(const RunInfo& run, SarifProfile profile) {
  std::vector<const Platform*> platforms;
  for (const auto& m : run.models) {
    const Platform* p = m.platform != nullptr ? m.platform : run.platform;
    if (std::find(platforms.begin(), platforms.end(), p) == platforms.end()) platforms.push_back(p);
  }
  if (platforms.empty()) platforms.push_back(run.platform);
  JsonWriter w;
  w.begin_object();
  w.member("$schema", "https://json.schemastore.org/sarif-2.1.0.json").member("version", "2.1.0");
  w.key("runs").begin_array();
  for (const Platform* p : platforms) {
    RunInfo part = run;
    part.platform = p;
    part.models.clear();
    for (const auto& m : run.models) {
      if ((m.platform != nullptr ? m.platform : run.platform) == p) part.models.push_back(m);
    }
    Builder(part, profile).write_run(w);
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

std::string sarif_source_root() {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec).lexically_normal();
  if (ec) return {};
  for (fs::path dir = cwd;; dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) return dir.string();
    if (dir == dir.root_path() || dir.empty()) break;
  }
  return cwd.string();
}

}  // namespace bpulint
