// Times the graph report's two steps on one model, as the HTML report runs
// them: build the picture (whole, or collapsed) and lay it out with Graphviz.
// With --full N the full-layout limit can be raised, to measure how a full
// layout scales (how kFullGraphNodes and kGraphLayoutBudget were chosen;
// bench/graph_report.sh, bench/HISTORY.md "Graph reports").
//
// With --piece N (default kLayoutPieceNodes, as the HTML report does) the
// picture is laid out in pieces of at most N nodes; --piece 0 lays it out whole.
//
//   bench_graph_layout MODEL [--full N] [--budget N] [--hops N] [--piece N] [--platform NAME] [--svg FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bpulint/render/graph_pieces.h"
#include "bpulint/render/graphviz_layout.h"
#include "bpulint/lint/lint.h"
#include "bpulint/render/report_graph.h"
#include "bpulint/rules/rule_db.h"

using namespace bpulint;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [--full N] [--budget N] [--hops N] [--piece N] [--platform NAME] [--svg FILE]\n", argv[0]);
    return 2;
  }
  GraphOptions options;
  std::string platform_name = kDefaultPlatform;
  std::string svg_file;  // where to write the SVG, to look at it
  size_t piece = kLayoutPieceNodes;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const unsigned long v = std::strtoul(argv[i + 1], nullptr, 10);
    if (flag == "--full") options.full_nodes = v;
    else if (flag == "--budget") options.budget = v;
    else if (flag == "--hops") options.context_hops = static_cast<int>(v);
    else if (flag == "--piece") piece = v;
    else if (flag == "--platform") platform_name = argv[i + 1];
    else if (flag == "--svg") svg_file = argv[i + 1];
  }
  RuleDatabase db;
  std::string error;
  if (!load_default_rule_database("", db, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  const Platform* platform = db.find(platform_name);
  if (platform == nullptr) {
    std::fprintf(stderr, "no platform %s\n", platform_name.c_str());
    return 2;
  }
  ModelReport report = lint(argv[1], ModelPlan::defaults(*platform));
  if (!report.ok) {
    std::fprintf(stderr, "%s: %s\n", argv[1], report.error.c_str());
    return 2;
  }

  auto t = std::chrono::steady_clock::now();
  const ReportGraph graph = build_report_graph(report, {}, options);
  const double build = seconds_since(t);
  DotStyle style;
  style.id_prefix = "m0_";
  style.finding_prefix = "m0_f";
  std::vector<std::string> dots;
  size_t widest = graph.items.size();  // nodes of the largest Graphviz call
  if (piece == 0) {
    dots.push_back(graph_dot(report, graph, style));
  } else {
    const GraphPieces pieces = split_report_graph(graph, piece);
    widest = 0;
    for (size_t k = 0; k < pieces.pieces.size(); ++k) {
      dots.push_back(pieces.pieces.size() == 1 ? graph_dot(report, graph, style)
                                               : piece_dot(report, graph, pieces, k, style));
      widest = std::max(widest, pieces.pieces[k].nodes());
    }
  }
  size_t dot_bytes = 0;
  for (auto& dot : dots) {
    // Experiments with dot's own limits: BENCH_DOT_ATTRS="mclimit=0.5, nslimit=2" joins the graph attributes.
    if (const char* attrs = std::getenv("BENCH_DOT_ATTRS")) {
      const size_t at = dot.find("graph [");
      if (at != std::string::npos) dot.insert(at + 7, std::string(attrs) + ", ");
    }
    dot_bytes += dot.size();
  }
  std::string svg;
  t = std::chrono::steady_clock::now();
  const bool ok = layout_pieces_svg(dots, svg, error);
  const double layout = seconds_since(t);
  if (ok && !svg_file.empty()) {
    if (FILE* f = std::fopen(svg_file.c_str(), "wb")) {
      std::fwrite(svg.data(), 1, svg.size(), f);
      std::fclose(f);
    }
  }
  // nodes items collapsed hops build_s layout_s dot_bytes svg_bytes pieces widest_piece
  std::printf("%zu\t%zu\t%s\t%d\t%.3f\t%.3f\t%zu\t%zu\t%zu\t%zu%s%s\n", report.facts.nodes.size(), graph.items.size(),
              graph.collapsed ? "collapsed" : "full", graph.context_hops, build, layout, dot_bytes, svg.size(),
              dots.size(), widest, ok ? "" : "\t", ok ? "" : error.c_str());
  return ok ? 0 : 1;
}
