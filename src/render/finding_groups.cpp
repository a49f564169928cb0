#include "bpulint/render/finding_groups.h"

#include <map>

#include "bpulint/lint/lint.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {
namespace {

// Findings built on different PyTorch lines stay apart: each is its own place to review.
std::string exact_key(const ModelReport& r, const Diagnostic& d) {
  std::string key = d.rule->id;
  if (const SourceLine* s = r.source_for(d.node)) key += '\n' + s->path + ':' + std::to_string(s->line);
  key += '\n' + std::to_string(static_cast<int>(d.severity)) + '\n' + std::to_string(static_cast<int>(d.outcome));
  key += '\n' + d.message + '\n' + d.waiver + '\n' + (d.baselined ? "b" : "");
  for (const auto& t : d.facts) key += '\n' + t.text + '=' + t.value.to_string();
  for (const auto& f : d.fixes) key += "\nfix " + f;
  return key;
}

std::string rule_key(const Diagnostic& d) {
  return d.rule->id + '\n' + std::to_string(static_cast<int>(d.severity)) + '\n' + d.waiver + '\n' +
         (d.baselined ? "b" : "");
}

std::vector<FindingGroup> group(const ModelReport& r, bool show_waived, Severity min_severity, bool by_rule) {
  std::vector<FindingGroup> groups;
  std::map<std::string, size_t> at;  // key -> index into groups
  for (size_t i = 0; i < r.diagnostics.size(); ++i) {
    const Diagnostic& d = r.diagnostics[i];
    if (!listed(d, show_waived, min_severity)) continue;
    const auto it = at.emplace(by_rule ? rule_key(d) : exact_key(r, d), groups.size()).first;
    if (it->second == groups.size()) {
      groups.emplace_back();
      groups.back().by_rule = by_rule;
    }
    groups[it->second].members.push_back(i);
  }
  return groups;
}

}  // namespace

std::vector<std::vector<FindingGroup>> group_findings(const std::vector<const ModelReport*>& reports, bool show_waived,
                                                      Severity min_severity, size_t max_groups) {
  std::vector<std::vector<FindingGroup>> out;
  size_t total = 0;
  for (const ModelReport* r : reports) {
    out.push_back(r != nullptr && r->ok ? group(*r, show_waived, min_severity, false) : std::vector<FindingGroup>{});
    total += out.back().size();
  }
  // Still too many: the models with the most groups go to one group per rule
  // first, until the run fits.
  while (total > max_groups) {
    size_t widest = 0;
    for (size_t k = 1; k < out.size(); ++k) {
      if (out[k].size() > out[widest].size()) widest = k;
    }
    if (out[widest].empty() || out[widest].front().by_rule) break;
    total -= out[widest].size();
    out[widest] = group(*reports[widest], show_waived, min_severity, true);
    total += out[widest].size();
  }
  return out;
}

}  // namespace bpulint
