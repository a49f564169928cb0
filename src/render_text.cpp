#include "bpulint/render_text.h"

#include <sstream>

namespace bpulint {
namespace {

struct Palette {
  bool on;
  std::string paint(const std::string& text, const char* code) const {
    return on ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
  }
  std::string severity(Severity s) const {
    switch (s) {
      case Severity::Error: return paint("error", "1;31");
      case Severity::Warning: return paint("warning", "1;35");
      case Severity::Note: return paint("note", "1;36");
    }
    return "";
  }
};

std::string where(const ModelReport& r, const Diagnostic& d) {
  if (d.node < 0) return r.path;
  const auto& n = r.facts.nodes[static_cast<size_t>(d.node)];
  return r.path + ": " + n.op_type + " '" + n.display_name + "'";
}

std::string facts_text(const Trace& trace) {
  std::string out;
  for (const auto& t : trace) out += (out.empty() ? "" : ", ") + t.text + " = " + t.value.to_string();
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

std::string summary_line(const ModelReport& r) {
  const Summary& s = r.summary;
  std::ostringstream out;
  out << r.path << ": " << s.nodes << " nodes: " << s.bpu << " on BPU, " << s.cpu << " on CPU, " << s.folded
      << " folded";
  if (s.unknown > 0) out << ", " << s.unknown << " unknown";
  out << "; " << s.cpu_islands << " CPU island" << (s.cpu_islands == 1 ? "" : "s")
      << " (BPU<->CPU round trips); " << s.errors << " error" << (s.errors == 1 ? "" : "s") << ", " << s.warnings
      << " warning" << (s.warnings == 1 ? "" : "s") << ", " << s.notes << " note" << (s.notes == 1 ? "" : "s");
  return out.str();
}

void render_text(std::ostream& out, const ModelReport& r, const Platform& platform, const TextOptions& options) {
  const Palette p{options.color};
  if (!r.ok) {
    out << r.path << ": " << p.severity(Severity::Error) << ": " << r.error << "\n";
    return;
  }
  for (const auto& d : r.diagnostics) {
    if (options.concise) {
      std::string loc = r.path;
      if (d.node >= 0) loc += ":" + r.facts.nodes[static_cast<size_t>(d.node)].path();
      out << loc << ": " << p.severity(d.severity) << ": " << d.message << " [" << d.rule->id << "]\n";
      continue;
    }
    out << p.paint(where(r, d), "1") << ": " << p.severity(d.severity) << ": " << d.message << " "
        << p.paint("[" + d.rule->id + "]", "2") << "\n";
    if (d.node >= 0) {
      const auto& n = r.facts.nodes[static_cast<size_t>(d.node)];
      out << "    node #" << n.index_in_graph << " of graph " << n.graph_path << ", opset " << n.opset << "\n";
    }
    if (!d.facts.empty()) out << "    facts: " << facts_text(d.facts) << "\n";
    if (d.outcome == Outcome::Fail && !d.rule->builtin) {
      out << "    rule " << d.rule->name << " (" << status_name(d.rule->status) << ", " << platform.name << ")";
      if (d.rule->effect == "cpu_fallback" && d.severity == Severity::Error) {
        out << "; on the CPU" << (d.rule->cpu_node.empty() ? "" : " as " + d.rule->cpu_node);
      }
      out << "\n";
    }
    if (!d.fixes.empty()) out << "    fixes: " << join(d.fixes) << " (see: bpu-lint explain " << d.rule->id << ")\n";
  }
  out << p.paint(summary_line(r), "1") << "\n";
}

}  // namespace bpulint
