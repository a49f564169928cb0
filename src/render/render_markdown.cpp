// --format markdown: a short report for a CI job summary or a merge-request
// comment (GitHub's $GITHUB_STEP_SUMMARY, which holds at most 1 MiB per step):
// a table of the models (platform, where the nodes run, findings by level,
// nodes --fix can rewrite), the top findings (errors first, then the largest
// groups of identical findings), and the fixes available with the command.
// Every value from a model, a file name or a rule goes through md(): made
// printable, then each character that could start markup backslash-escaped
// (CommonMark allows it for any ASCII punctuation), so no value opens a
// link, an HTML tag, a table cell, code, emphasis, math or an @mention. A
// value never starts a line (it is inside a table row or a list item), so
// '-', '+', '.' and '=' stay as they are.
#include <algorithm>
#include <map>

#include "bpulint/render/finding_groups.h"
#include "bpulint/render/markup.h"
#include "bpulint/render/render_machine.h"
#include "summary_format.h"

namespace bpulint {
namespace {

constexpr size_t kMaxModelRows = 100;
constexpr size_t kMaxTopFindings = 10;
constexpr size_t kMaxCellChars = 300;

std::string md(std::string_view s) {
  std::string out;
  for (char c : shorten_tail(s, kMaxCellChars)) {
    if (std::string_view("\\`*_[]()<>|!~&@#$").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

const char* level_icon(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "note";
}

// Nodes whose recommended fix `bpu-lint --fix` applies, by fix id.
std::map<std::string, size_t> fixable(const ModelReport& r) {
  std::map<std::string, size_t> by_fix;
  for (const auto& plan : r.fix_plans) {
    const FixOption* o = plan.recommended();
    if (o != nullptr && plan.fix_blocked().empty()) ++by_fix[o->id + ": " + o->title];
  }
  return by_fix;
}

struct Top {
  const RunInfo::Model* model;
  const Diagnostic* d;
  size_t count;
};

}  // namespace

std::string render_markdown(const RunInfo& run) {
  std::vector<const ModelReport*> reports;
  for (const auto& m : run.models) reports.push_back(m.report);
  const auto groups = group_findings(reports, run.show_waived, run.min_severity);

  std::vector<std::string> platforms;
  for (const auto& m : run.models) {
    const Platform* p = m.platform != nullptr ? m.platform : run.platform;
    if (p != nullptr && std::find(platforms.begin(), platforms.end(), p->name) == platforms.end()) {
      platforms.push_back(p->name);
    }
  }
  std::string out = "### bpu-lint " + md(run.tool_version);
  for (size_t i = 0; i < platforms.size(); ++i) out += (i == 0 ? ": " : ", ") + md(platforms[i]);
  out += "\n\n";
  out += "| Model | Platform | Nodes | On BPU | On CPU | Errors | Warnings | Notes | Fixable nodes |\n";
  out += "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  size_t rows = 0, models_with_errors = 0, broken = 0;
  std::vector<Top> top;
  for (size_t k = 0; k < run.models.size(); ++k) {
    const auto& m = run.models[k];
    const ModelReport* r = m.report;
    const Platform* platform = m.platform != nullptr ? m.platform : run.platform;
    const std::string platform_name = platform != nullptr ? platform->name : std::string();
    const bool ok = r != nullptr && r->ok;
    broken += ok ? 0 : 1;
    if (ok && r->summary.errors > 0) ++models_with_errors;
    if (rows++ < kMaxModelRows) {
      if (!ok) {
        out += "| " + md(m.path) + " | " + md(platform_name) + " | unreadable: " +
               md(!m.error.empty() || r == nullptr ? m.error : r->error) + " |  |  |  |  |  |  |\n";
      } else {
        const Summary& s = r->summary;
        size_t fixes = 0;
        for (const auto& kv : fixable(*r)) fixes += kv.second;
        out += "| " + md(m.path) + " | " + md(platform_name) + " | " + std::to_string(s.nodes) + " | " +
               std::to_string(s.bpu) + " | " + std::to_string(s.cpu) + " | " + std::to_string(s.errors) + " | " +
               std::to_string(s.warnings) + " | " + std::to_string(s.notes) + " | " + std::to_string(fixes) + " |\n";
      }
    }
    if (!ok) continue;
    for (const auto& g : groups[k]) top.push_back({&m, &r->diagnostics[g.members.front()], g.members.size()});
  }
  if (rows > kMaxModelRows) out += "\n" + std::to_string(rows - kMaxModelRows) + " more models are not listed.\n";
  out += "\n" + std::to_string(run.models.size()) + " model" + (run.models.size() == 1 ? "" : "s") + ", " +
         std::to_string(models_with_errors) + " with errors" +
         (broken > 0 ? ", " + std::to_string(broken) + " unreadable" : std::string()) +
         ". Counts are findings (Errors, Warnings, Notes) and nodes (the others).\n";

  if (!top.empty()) {
    std::stable_sort(top.begin(), top.end(), [](const Top& a, const Top& b) {
      if (a.d->severity != b.d->severity) return a.d->severity > b.d->severity;
      return a.count > b.count;
    });
    out += "\n#### Top findings\n\n| Level | Rule | Nodes | Model | Finding |\n|---|---|---:|---|---|\n";
    for (size_t i = 0; i < top.size() && i < kMaxTopFindings; ++i) {
      const Top& t = top[i];
      const ModelReport& r = *t.model->report;
      std::string where = t.d->node >= 0 ? r.facts.nodes[static_cast<size_t>(t.d->node)].path() + ": " : "";
      out += std::string("| ") + level_icon(t.d->severity) + " | " + md(t.d->rule->id) + " " + md(t.d->rule->name) +
             " | " + std::to_string(t.count) + " | " + md(t.model->path) + " | " + md(where + t.d->message) + " |\n";
    }
    if (top.size() > kMaxTopFindings) {
      out += "\n" + std::to_string(top.size() - kMaxTopFindings) + " more (groups of) findings: see the SARIF or JSON report.\n";
    }
  }

  std::string fixes;
  for (const auto& m : run.models) {
    if (m.report == nullptr || !m.report->ok) continue;
    const auto by_fix = fixable(*m.report);
    if (by_fix.empty()) continue;
    fixes += "- " + md(m.path) + ":";
    bool first = true;
    for (const auto& kv : by_fix) {
      fixes += std::string(first ? " " : "; ") + md(kv.first) + " (" + std::to_string(kv.second) + " node" +
               (kv.second == 1 ? "" : "s") + ")";
      first = false;
    }
    fixes += "\n";
  }
  if (!fixes.empty()) {
    out += "\n#### Fixes available\n\n" + fixes +
           "\nRun `bpu-lint MODEL --fix` to rewrite these nodes (each rewrite is proved numerically; "
           "`bpu-lint explain RULE` says why a node fails).\n";
  }
  return out;
}

}  // namespace bpulint
