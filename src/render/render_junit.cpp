// --format junit: JUnit XML for the test tabs of Jenkins, GitLab, Azure
// Pipelines and Buildkite (the Ant / Jenkins junit-10.xsd shape: testsuites >
// testsuite > testcase). One testsuite per model (named by its path, with the
// platform when the run mixes platforms), one testcase per node checked
// (named by its node path, classname the suite's name) plus "(model)" for the
// model-level checks. A testcase fails (<failure>) when it has an error-level
// finding that is neither waived nor baselined: the failure's message is the
// first one, its text every finding of the node. A node whose placement the
// lint could not decide (unknown facts) is <skipped>: neither passed nor
// failed. Warnings and notes of a passing node go to its <system-out>. An
// unreadable model is one "(model)" testcase with an <error>. The counts
// (tests, failures, errors, skipped) are per suite and summed on testsuites.
// Every name and message goes through html_escape, whose output is valid XML
// 1.0 too: control bytes spelled out (XML cannot carry them even as
// references), invalid UTF-8 and noncharacters as U+FFFD, & < > " ' as
// references.
#include <string>
#include <vector>

#include "bpulint/engine/placement.h"
#include "bpulint/render/markup.h"
#include "bpulint/render/render_machine.h"

namespace bpulint {
namespace {

std::string xml(std::string_view s) { return html_escape(s); }

struct Case {
  std::string name;
  std::vector<std::string> errors;  // "error BPU1101 rule-name: message", unwaived error-level findings
  std::string failure_type, failure_message;  // the first error's rule id and "BPU1101: message"
  std::vector<std::string> others;  // warnings, notes, waived and baselined findings
  std::string skipped;              // why the node's placement is not decided; "" = decided
};

std::string finding_line(const Diagnostic& d) {
  std::string s = std::string(severity_name(d.severity)) + " " + d.rule->id + " " + d.rule->name + ": " + d.message;
  if (!d.waiver.empty()) s += " (waived: " + d.waiver + ")";
  else if (d.baselined) s += " (baselined)";
  return s;
}

// Each line cleaned on its own, so the findings stay one per line.
std::string lines_text(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += xml(l) + "\n";
  return out;
}

struct Suite {
  std::string name;
  std::string platform, march;
  std::vector<Case> cases;
  std::string error;  // the model could not be read
  size_t failures = 0, skipped = 0;
};

Suite model_suite(const RunInfo& run, const RunInfo::Model& m, bool name_platform) {
  Suite s;
  const Platform* platform = m.platform != nullptr ? m.platform : run.platform;
  s.platform = platform != nullptr ? platform->name : std::string();
  s.march = platform != nullptr ? platform->march : std::string();
  s.name = name_platform ? m.path + " (" + s.platform + ")" : m.path;
  const ModelReport* r = m.report;
  if (r == nullptr || !r->ok) {
    s.error = m.path + ": " + (!m.error.empty() || r == nullptr ? m.error : r->error);
    s.cases.emplace_back();
    s.cases.back().name = "(model)";
    return s;
  }
  // cases[0] is the model; node i is cases[i + 1].
  s.cases.resize(r->facts.nodes.size() + 1);
  s.cases[0].name = "(model)";
  for (size_t i = 0; i < r->facts.nodes.size(); ++i) s.cases[i + 1].name = r->facts.nodes[i].path();
  for (const auto& d : r->diagnostics) {
    if (!listed(d, run.show_waived, run.min_severity)) continue;
    Case& c = s.cases[static_cast<size_t>(d.node + 1)];
    const bool fails = d.severity == Severity::Error && d.shown();
    if (fails && c.errors.empty()) {
      c.failure_type = d.rule->id;
      c.failure_message = d.rule->id + ": " + d.message;
    }
    (fails ? c.errors : c.others).push_back(finding_line(d));
  }
  for (size_t i = 0; i < r->facts.nodes.size() && i < r->placement.size(); ++i) {
    Case& c = s.cases[i + 1];
    if (r->placement[i] != Placement::Unknown || !c.errors.empty()) continue;
    c.skipped = "placement not decided: the lint could not evaluate every rule on this node";
    for (const auto& d : r->diagnostics) {
      if (d.node == static_cast<long>(i) && d.outcome == Outcome::Unknown) {
        c.skipped = "placement not decided: " + d.message;
        break;
      }
    }
  }
  for (const auto& c : s.cases) {
    s.failures += c.errors.empty() ? 0 : 1;
    s.skipped += c.skipped.empty() ? 0 : 1;
  }
  return s;
}

void write_suite(std::string& out, const Suite& s) {
  out += "  <testsuite name=\"" + xml(s.name) + "\" tests=\"" + std::to_string(s.cases.size()) + "\" failures=\"" +
         std::to_string(s.failures) + "\" errors=\"" + (s.error.empty() ? "0" : "1") + "\" skipped=\"" +
         std::to_string(s.skipped) + "\">\n";
  out += "    <properties>\n";
  out += "      <property name=\"platform\" value=\"" + xml(s.platform) + "\"/>\n";
  if (!s.march.empty()) out += "      <property name=\"march\" value=\"" + xml(s.march) + "\"/>\n";
  out += "    </properties>\n";
  const std::string classname = xml(s.name);
  for (const auto& c : s.cases) {
    out += "    <testcase name=\"" + xml(c.name) + "\" classname=\"" + classname + "\"";
    if (s.error.empty() && c.errors.empty() && c.others.empty() && c.skipped.empty()) {
      out += "/>\n";
      continue;
    }
    out += ">\n";
    if (!s.error.empty()) out += "      <error message=\"" + xml(s.error) + "\" type=\"model-error\"/>\n";
    if (!c.errors.empty()) {
      out += "      <failure message=\"" + xml(c.failure_message) + "\" type=\"" + xml(c.failure_type) + "\">" +
             lines_text(c.errors) + "</failure>\n";
    }
    if (!c.skipped.empty()) out += "      <skipped message=\"" + xml(c.skipped) + "\"/>\n";
    if (!c.others.empty()) out += "      <system-out>" + lines_text(c.others) + "</system-out>\n";
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n";
}

}  // namespace

std::string render_junit(const RunInfo& run) {
  bool mixed = false;
  for (const auto& m : run.models) {
    const Platform* p = m.platform != nullptr ? m.platform : run.platform;
    mixed = mixed || p != (run.models.front().platform != nullptr ? run.models.front().platform : run.platform);
  }
  std::vector<Suite> suites;
  size_t tests = 0, failures = 0, errors = 0;
  for (const auto& m : run.models) {
    suites.push_back(model_suite(run, m, mixed));
    tests += suites.back().cases.size();
    failures += suites.back().failures;
    errors += suites.back().error.empty() ? 0 : 1;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"bpu-lint " + xml(run.tool_version) + "\" tests=\"" + std::to_string(tests) +
         "\" failures=\"" + std::to_string(failures) + "\" errors=\"" + std::to_string(errors) + "\">\n";
  for (const auto& s : suites) write_suite(out, s);
  out += "</testsuites>\n";
  return out;
}

}  // namespace bpulint
