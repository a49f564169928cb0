// --format github: GitHub Actions workflow commands, one annotation per shown
// diagnostic and a summary notice per model:
//   ::error file=models/m.onnx,title=BPU1101 convtranspose3d-kernel-d-range::torch_jit/x/ConvTranspose: ...
// A node whose PyTorch stack trace names a file under --source-root is
// annotated there instead: file=models/dec.py,line=12, the model in the text.
// Escaping follows the Actions toolkit (@actions/core command.ts): in data
// % -> %25, CR -> %0D, LF -> %0A; in property values also : -> %3A and
// , -> %2C. Invalid UTF-8 is replaced with U+FFFD.
#include <algorithm>
#include <string_view>

#include "bpulint/base/json_writer.h"
#include "bpulint/render/markup.h"
#include "summary_format.h"
#include "bpulint/render/finding_groups.h"
#include "bpulint/render/render_machine.h"

namespace bpulint {
namespace {

// Every value (names, paths, messages, rule text) goes through here or
// escape_property. CR and LF are the annotation's own line breaks (%0D, %0A:
// the runner decodes them inside the one annotation, so a value can never
// begin a line of the log, nor a workflow command); every other control byte
// (ESC, BEL, BS, C1) and the bidi controls are spelled out by printable_text,
// since the Actions log viewer and a terminal would act on them.
std::string escape_data(const std::string& s) {
  std::string out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find_first_of("\r\n", start), s.size());
    for (char c : printable_text(std::string_view(s).substr(start, end - start))) {
      if (c == '%') out += "%25";
      else out += c;
    }
    if (end == s.size()) break;
    out += s[end] == '\r' ? "%0D" : "%0A";
    start = end + 1;
  }
  return out;
}

std::string escape_property(const std::string& s) {
  std::string out;
  for (char c : escape_data(s)) {
    switch (c) {
      case ':': out += "%3A"; break;
      case ',': out += "%2C"; break;
      default: out += c;
    }
  }
  return out;
}

const char* command(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "notice";
  }
  return "notice";
}

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

void line(std::string& out, const char* cmd, const std::string& file, const std::string& title,
          const std::string& message, long file_line = 0) {
  out += "::";
  out += cmd;
  std::string props;
  if (!file.empty()) props += "file=" + escape_property(file);
  if (!file.empty() && file_line > 0) props += ",line=" + std::to_string(file_line);
  if (!title.empty()) props += std::string(props.empty() ? "" : ",") + "title=" + escape_property(title);
  if (!props.empty()) out += " " + props;
  out += "::" + escape_data(message) + "\n";
}

}  // namespace

std::string render_github(const RunInfo& run) {
  std::string out;
  for (const auto& note : run.configuration_notes) line(out, "warning", "", "bpu-lint configuration", note);
  // One annotation per group of identical findings (finding_groups.h): GitHub shows few per step.
  std::vector<const ModelReport*> reports;
  for (const auto& m : run.models) reports.push_back(m.report);
  const auto groups = group_findings(reports, run.show_waived, run.min_severity);
  for (size_t k = 0; k < run.models.size(); ++k) {
    const auto& m = run.models[k];
    const ModelReport* r = m.report;
    if (r == nullptr || !r->ok) {
      line(out, "error", m.path, "bpu-lint error",
           m.path + ": " + (!m.error.empty() || r == nullptr ? m.error : r->error));
      continue;
    }
    for (const auto& g : groups[k]) {
      const Diagnostic& d = r->diagnostics[g.members.front()];
      std::string message = d.message;
      if (d.node >= 0) message = r->facts.nodes[static_cast<size_t>(d.node)].path() + ": " + message;
      if (g.members.size() > 1) message += " (and " + plural(g.members.size() - 1, "more node") + " with this finding)";
      if (!d.waiver.empty()) message += " (waived: " + d.waiver + ")";
      else if (d.baselined) message += " (baselined)";
      // On the PyTorch line that built the node, when its stack trace names a file of this tree.
      const SourceLine* source = r->source_for(d.node);
      if (source != nullptr && !source->path.empty()) {
        line(out, command(d.severity), source->path, d.rule->id + " " + d.rule->name, m.path + ": " + message,
             source->line);
      } else {
        line(out, command(d.severity), m.path, d.rule->id + " " + d.rule->name, message);
      }
    }
    if (m.fix_run != nullptr) {
      const FixRun& f = *m.fix_run;
      if (!f.error.empty()) {
        line(out, "error", m.path, "bpu-lint fix", "--fix failed: " + f.error);
      } else if (f.written) {
        std::string text = "fixed " + std::to_string(f.applied()) + " of " + plural(f.results.size(), "node") +
                           "; wrote " + f.output_path;
        if (m.fixed != nullptr && m.fixed->ok) text += "; re-lint: " + summary_text(m.fixed->summary);
        line(out, "notice", m.path, "bpu-lint fix", text);
      } else {
        line(out, "notice", m.path, "bpu-lint fix", "nothing was fixed; no file written");
      }
    }
    line(out, "notice", m.path, "bpu-lint summary", summary_text(r->summary));
  }
  return out;
}

}  // namespace bpulint
