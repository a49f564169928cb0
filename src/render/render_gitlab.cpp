// --format gitlab: GitLab Code Quality JSON (the merge-request widget and the
// pipeline's Code Quality tab read it as `artifacts: reports: codequality`).
// An array of issues, one per group of identical findings (finding_groups.h),
// each with the fields GitLab reads: description, check_name (the rule id),
// fingerprint, severity and location.path / location.lines.begin, plus
// Code Climate's type and categories (GitLab ignores them, Code Climate tools
// need them). GitLab matches issues between the base and head pipelines by
// fingerprint: finding_identity.h's key (rule + node identity + op type), with
// the model's repository path and the platform added, so that the same layer
// in two models, or one model linted for two platforms, stays two issues.
// Severity: note -> info, warning -> minor, error -> major (as ESLint's and
// mypy's GitLab formatters map them); an unreadable model -> blocker.
// A model has no lines: lines.begin is 1, or the line of the PyTorch source
// that built the node when its stack trace names a file under --source-root.
#include "bpulint/base/json_writer.h"
#include "bpulint/render/finding_groups.h"
#include "bpulint/render/finding_identity.h"
#include "bpulint/render/render_machine.h"

namespace bpulint {
namespace {

const char* gitlab_severity(Severity s) {
  switch (s) {
    case Severity::Error: return "major";
    case Severity::Warning: return "minor";
    case Severity::Note: return "info";
  }
  return "info";
}

// GitLab links location.path into the repository: relative to its root when under it.
std::string repository_path(const RunInfo& run, const std::string& path) {
  const std::string rel = path_under_root(path, run.sarif_root);
  return rel.empty() ? path : rel;
}

void write_issue(JsonWriter& w, const std::string& description, const std::string& check_name,
                 const std::string& fingerprint_key, const char* severity, const std::string& path, long line) {
  w.begin_object();
  w.member("type", "issue");
  w.member("description", description).member("check_name", check_name);
  w.member("fingerprint", fingerprint_hash(fingerprint_key)).member("severity", severity);
  w.key("categories").begin_array().value("Compatibility").end_array();
  w.key("location").begin_object().member("path", path);
  w.key("lines").begin_object().member("begin", line).end_object();
  w.end_object();
  w.end_object();
}

}  // namespace

std::string render_gitlab(const RunInfo& run) {
  std::vector<const ModelReport*> reports;
  for (const auto& m : run.models) reports.push_back(m.report);
  const auto groups = group_findings(reports, run.show_waived, run.min_severity);
  JsonWriter w;
  w.begin_array();
  for (size_t k = 0; k < run.models.size(); ++k) {
    const auto& m = run.models[k];
    const ModelReport* r = m.report;
    const Platform* platform = m.platform != nullptr ? m.platform : run.platform;
    const std::string platform_name = platform != nullptr ? platform->name : std::string();
    const std::string model_path = repository_path(run, m.path);
    if (r == nullptr || !r->ok) {
      write_issue(w, m.path + ": " + (!m.error.empty() || r == nullptr ? m.error : r->error), "bpu-lint/model-error",
                  "model-error:" + model_path, "blocker", model_path, 1);
      continue;
    }
    for (const auto& g : groups[k]) {
      const Diagnostic& d = r->diagnostics[g.members.front()];
      std::string text = "[" + platform_name + "] ";
      if (d.node >= 0) text += r->facts.nodes[static_cast<size_t>(d.node)].path() + ": ";
      text += d.message;
      if (g.members.size() > 1) {
        const size_t more = g.members.size() - 1;
        text += " (and " + std::to_string(more) + " more node" + (more == 1 ? "" : "s") + " with this finding)";
      }
      // What `bpu-lint --fix` would apply here (its recommended, applicable fix).
      const NodeFixPlan* plan = d.node >= 0 && !d.fixes.empty() ? r->plan_for(d.node) : nullptr;
      const FixOption* fix = plan != nullptr && plan->fix_blocked().empty() ? plan->recommended() : nullptr;
      if (fix != nullptr) text += "; fix available (bpu-lint --fix): " + fix->title + " [" + fix->id + "]";
      if (!d.waiver.empty()) text += " (waived: " + d.waiver + ")";
      else if (d.baselined) text += " (baselined)";
      std::string path = model_path;
      long line = 1;
      const SourceLine* source = r->source_for(d.node);
      if (source != nullptr && !source->path.empty()) {
        path = repository_path(run, source->path);
        line = source->line > 0 ? source->line : 1;
        text = m.path + ": " + text;
      }
      write_issue(w, text, d.rule->id, platform_name + "\n" + model_path + "\n" + finding_key(*r, d, model_path),
                  gitlab_severity(d.severity), path, line);
    }
  }
  w.end_array();
  return w.str() + "\n";
}

}  // namespace bpulint
