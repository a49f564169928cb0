// --format dot: each model's graph (whole or collapsed, as in the HTML
// report) as one digraph, and after --fix the fixed model's as another.
// Graphviz reads several graphs from one file: dot -Tsvg -O report.dot.
#include "bpulint/render/markup.h"
#include "bpulint/render/render_graph.h"
#include "bpulint/render/report_graph.h"
#include "summary_format.h"

namespace bpulint {
namespace {

// The text summary, so the DOT comment counts and words things as every other format.
std::string summary_comment(const ModelReport& r) { return summary_text(r.summary); }

std::string legend_comment() {
  std::string s = "// fill colours:";
  for (Placement p : {Placement::Bpu, Placement::Cpu, Placement::Folded, Placement::Unknown, Placement::RuntimeShape,
                      Placement::DataShape, Placement::NoCompile}) {
    s += std::string(" ") + placement_style(p).label + " " + placement_style(p).fill + ";";
  }
  return s + " dashed red clusters: CPU islands; thick borders: nodes with findings (error " +
         severity_colour(Severity::Error) + ", warning " + severity_colour(Severity::Warning) + ", note " +
         severity_colour(Severity::Note) + "); 3-D boxes: collapsed nodes, counted\n";
}

}  // namespace

std::string render_dot(const RunInfo& run) {
  std::string out = "// bpu-lint " + printable_text(run.tool_version) + " --format dot, platform " +
                    printable_text(run.platform != nullptr ? run.platform->name : "") +
                    ": one digraph per model; render with `dot -Tsvg -O FILE`\n" + legend_comment();
  GraphOptions options;
  options.show_waived = run.show_waived;
  options.min_severity = run.min_severity;
  for (size_t k = 0; k < run.models.size(); ++k) {
    const auto& m = run.models[k];
    if (m.report == nullptr || !m.report->ok) {
      out += "// " + printable_text(m.path) + ": error: " +
             printable_text(m.report != nullptr && m.error.empty() ? m.report->error : m.error) + "\n";
      continue;
    }
    std::vector<long> fixed_nodes;
    if (m.fix_run != nullptr) {
      for (const auto& res : m.fix_run->results) fixed_nodes.push_back(res.node);
    }
    DotStyle style;
    style.graph_name = m.path;
    style.id_prefix = "m" + std::to_string(k) + "_";
    const ReportGraph g = build_report_graph(*m.report, fixed_nodes, options);
    style.comment = m.path + ": " + summary_comment(*m.report) +
                    (g.collapsed ? "; collapsed view, context " + std::to_string(g.context_hops) + " hops" : "");
    out += graph_dot(*m.report, g, style);
    if (m.fixed != nullptr && m.fixed->ok) {
      style.graph_name = m.fix_run != nullptr ? m.fix_run->output_path : m.path + " (fixed)";
      style.id_prefix = "m" + std::to_string(k) + "x_";
      const ReportGraph fixed = build_report_graph(*m.fixed, {}, options);
      style.comment = "after --fix: " + style.graph_name + ": " + summary_comment(*m.fixed);
      out += graph_dot(*m.fixed, fixed, style);
    }
  }
  return out;
}

}  // namespace bpulint
