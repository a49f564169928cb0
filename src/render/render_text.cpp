#include "bpulint/render/render_text.h"

#include "bpulint/base/json_writer.h"
#include "bpulint/render/markup.h"
#include "summary_format.h"

#include <cstdio>
#include <set>
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
  if (d.node < 0) return printable_text(r.path);
  const auto& n = r.facts.nodes[static_cast<size_t>(d.node)];
  return printable_text(r.path + ": " + n.op_type + " '" + std::string(n.display_name) + "'");
}

std::string facts_text(const Trace& trace) {
  std::string out;
  for (const auto& t : trace) out += (out.empty() ? "" : ", ") + t.text + " = " + t.value.to_string();
  return out;
}

void render_plan(std::ostream& out, const NodeFixPlan& plan, const Palette& p) {
  out << "    fixes (bpu-lint --fix):\n";
  for (const auto& o : plan.options) {
    out << "      " << (o.recommended ? p.paint("* " + o.id, "1;32") : "- " + o.id);
    if (!o.applicable) {
      out << ": not applicable: " << printable_text(o.why_not) << "\n";
      continue;
    }
    out << " (" << (o.recommended ? "recommended, " : "") << applicability_name(o.applicability) << "): " << cost_text(o.cost) << "\n";
    // The check names the rewritten node ("... on node 'NAME'"): model text, cleaned like the rest.
    for (const auto& v : o.new_violations) out << "        its nodes would break " << printable_text(v) << "\n";
  }
  const std::string blocked = plan.fix_blocked();
  if (!blocked.empty()) out << "      --fix leaves this node as it is: " << printable_text(blocked) << "\n";
}

}  // namespace

std::string human(int64_t v) {
  if (v < 0) return "?";
  char buf[32];
  if (v >= 1000000000) std::snprintf(buf, sizeof buf, "%.1fG", static_cast<double>(v) / 1e9);
  else if (v >= 1000000) std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(v) / 1e6);
  else if (v >= 10000) std::snprintf(buf, sizeof buf, "%.1fk", static_cast<double>(v) / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

std::string human_bytes(int64_t v) {
  if (v < 0) return "?";
  char buf[32];
  if (v >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(v) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(v) / 1024);
  return buf;
}

std::string cost_text(const FixCost& c) {
  return "intermediate channels " + human(c.intermediate_channels) + ", intermediate tensor " +
         human(c.intermediate_elements) + " elements (" + human_bytes(c.intermediate_bytes) + "), " + human(c.macs) +
         " MACs, Transpose moves " + human(c.moved_elements) + " elements, " + std::to_string(c.new_nodes) +
         " nodes";
}

void render_fix_run(std::ostream& out, const ModelReport& r, const FixRun& run, const TextOptions& options) {
  const Palette p{options.color};
  for (const auto& res : run.results) {
    const auto& n = r.facts.nodes[static_cast<size_t>(res.node)];
    // Node names, paths and reasons come from the model: cleaned like every other output line.
    out << printable_text(r.path + ": " + n.op_type + " '" + std::string(n.display_name) + "'") << ": ";
    if (res.applied) {
      out << p.paint("fixed", "1;32") << " with " << printable_text(res.fix_id) << "; " << printable_text(proof_summary(res)) << "\n";
    } else {
      out << p.paint("not fixed", "1;33") << (res.fix_id.empty() ? "" : " (" + printable_text(res.fix_id) + ")") << ": "
          << printable_text(res.reason) << "\n";
    }
  }
  const std::string path = printable_text(r.path);
  if (!run.error.empty()) {
    out << path << ": " << p.severity(Severity::Error) << ": " << printable_text(run.error) << "\n";
  } else if (run.written) {
    out << path << ": fixed " << run.applied() << " of " << run.results.size() << " node"
        << (run.results.size() == 1 ? "" : "s") << "; wrote " << printable_text(run.output_path)
        << (run.data_path.empty() ? " (weights embedded)" : " (weights in " + printable_text(run.data_path) + ")")
        << "\n";
  } else {
    out << path << ": nothing was fixed; no file written\n";
  }
}

namespace {

// The whole-model fixes on offer, after the summary: what each would do and
// how many of the findings above it settles.
void render_model_fix_plans(std::ostream& out, const ModelReport& r, const Palette& p) {
  for (const ModelFixPlan& plan : r.model_fix_plans) {
    const FixKind* kind = find_fix_kind(plan.kind);
    out << printable_text(r.path) << ": " << p.paint("fix", "1;36") << " " << plan.kind << " ("
        << applicability_name(kind->applicability) << "), for " << plan.settles.size() << " finding"
        << (plan.settles.size() == 1 ? "" : "s") << ": ";
    if (plan.why_not.empty()) out << printable_text(plan.summary) << "; --fix applies it\n";
    else out << "cannot apply: " << printable_text(plan.why_not) << "\n";
  }
}

}  // namespace

std::string summary_line(const ModelReport& r) { return printable_text(r.path) + ": " + summary_text(r.summary); }

void render_text(std::ostream& out, const ModelReport& r, const Platform& platform, const TextOptions& options) {
  const Palette p{options.color};
  if (!r.ok) {
    out << printable_text(r.path) << ": " << p.severity(Severity::Error) << ": " << printable_text(r.error) << "\n";
    return;
  }
  std::set<long> planned;  // a node's fixes are shown once, under its first diagnostic
  for (const auto& d : r.diagnostics) {
    if (!listed(d, options.show_waived, options.min_severity)) continue;
    const std::string hidden = !d.waiver.empty() ? " (waived: " + d.waiver + ")" : d.baselined ? " (in baseline)" : "";
    if (options.concise) {
      std::string loc = r.path;
      if (d.node >= 0) loc += ":" + r.facts.nodes[static_cast<size_t>(d.node)].path();
      out << printable_text(loc) << ": " << p.severity(d.severity) << ": " << printable_text(d.message) << " [" << printable_text(d.rule->id) << "]"
          << printable_text(hidden) << "\n";
      continue;
    }
    out << p.paint(where(r, d), "1") << ": " << p.severity(d.severity) << ": " << printable_text(d.message) << " "
        << p.paint("[" + printable_text(d.rule->id) + "]", "2") << printable_text(hidden) << "\n";
    if (d.node >= 0) {
      const auto& n = r.facts.nodes[static_cast<size_t>(d.node)];
      out << "    node #" << n.index_in_graph << " of graph " << printable_text(n.graph_path) << ", opset " << n.opset;
      // An unnamed node's display name is its position, which moves when a
      // node is added upstream: its identity is what a waiver must name.
      if (n.name.empty()) out << "; unnamed, identity " << printable_text(r.facts.node_key(static_cast<size_t>(d.node)));
      out << "\n";
      if (const SourceLine* s = r.source_for(d.node)) {
        const bool found = !s->path.empty();
        out << "    built at " << printable_text(found ? s->path : s->trace_file) << ":" << s->line
            << (s->function.empty() ? "" : " in " + printable_text(s->function));
        if (!found) out << " (not found under --source-root)";
        else if (!s->code.empty()) out << ": " << printable_text(s->code);
        out << "\n";
      }
    }
    if (!d.facts.empty()) out << "    facts: " << printable_text(facts_text(d.facts)) << "\n";
    if (d.outcome == Outcome::Fail && !d.rule->builtin) {
      // The rule's name, cpu_node and platform come from rule files: cleaned like the model's strings.
      out << "    rule " << printable_text(d.rule->name) << " (" << status_name(d.rule->status) << ", "
          << printable_text(platform.name) << ")";
      if (d.rule->effect == Effect::CpuFallback && d.severity == Severity::Error) {
        out << "; on the CPU" << (d.rule->cpu_node.empty() ? "" : " as " + printable_text(d.rule->cpu_node));
      }
      out << "\n";
    }
    if (d.node >= 0 && planned.insert(d.node).second) {
      if (const NodeFixPlan* plan = r.plan_for(d.node)) render_plan(out, *plan, p);
    }
  }
  out << p.paint(summary_line(r), "1") << "\n";
  if (!options.concise) render_model_fix_plans(out, r, p);
}

}  // namespace bpulint
