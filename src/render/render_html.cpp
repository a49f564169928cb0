// --format html: one self-contained file (inline CSS, inline SVG, a little
// inline JavaScript; nothing fetched) for every model of the run.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bpulint/render/finding_groups.h"
#include "bpulint/render/graph_pieces.h"
#include "bpulint/render/graphviz_layout.h"
#include "bpulint/base/json_writer.h"
#include "bpulint/render/markup.h"
#include "summary_format.h"
#include "bpulint/render/render_graph.h"
#include "bpulint/render/render_text.h"
#include "bpulint/render/report_graph.h"
#include "bpulint/render/rule_docs.h"

namespace bpulint {
namespace {

// A folded row (finding_groups.h) lists at most this many of its nodes, and a
// page at most kNodesListedPerPage in all: the 20,000 identical findings of a
// big model are one row and a list of 50, not 20,000 rows (33 MB, 30 s to
// render). `--format json` and `--format csv` name every node.
constexpr size_t kNodesListedPerRow = 50;
constexpr size_t kNodesListedPerPage = 5000;
// Distinct fix plans shown per model (identical plans already share a row).
constexpr size_t kPlanRowsShown = 200;
// Before/after pictures of --fix results per model (each is a Graphviz layout).
constexpr size_t kFixPicturesShown = 20;

constexpr Placement kPlacements[] = {Placement::Bpu,          Placement::Cpu,       Placement::Folded,
                                     Placement::Unknown,      Placement::RuntimeShape, Placement::DataShape,
                                     Placement::NoCompile};

std::string esc(std::string_view s) { return html_escape(s); }

std::string num(size_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string plural(size_t n, const char* one, const char* many) { return num(n) + " " + (n == 1 ? one : many); }

std::string css_class(Placement p) {
  std::string s = placement_name(p);
  for (char& c : s) {
    if (c == '_') c = '-';
  }
  return s;
}

// The stylesheet; placement colours come from placement_style(), as in the graph.
std::string stylesheet() {
  std::string css = R"CSS(
:root { color-scheme: light; --ink: #1d2430; --muted: #5b6574; --line: #dde2e8; --soft: #f6f8fa; --accent: #1f5fbf; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Arial, "Liberation Sans", "DejaVu Sans", sans-serif; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace; font-size: 12.5px; }
header.top { padding: 18px 28px 14px; border-bottom: 1px solid var(--line); background: linear-gradient(#fbfcfd, #f3f5f8); }
header.top h1 { margin: 0 0 4px; font-size: 22px; letter-spacing: -0.01em; }
header.top h1 span { color: var(--muted); font-weight: 400; }
.meta { color: var(--muted); margin: 0 0 10px; }
.legend { display: flex; flex-direction: column; gap: 5px; font-size: 12.5px; color: var(--muted); }
.legend .group::before { content: attr(data-label); font-weight: 600; color: var(--ink); min-width: 64px; }
.legend .group { display: inline-flex; flex-wrap: wrap; gap: 6px 16px; }
.legend .key { display: inline-flex; align-items: center; gap: 6px; }
.legend .key .sw + .sw, .legend .key .sw.flag-warning, .legend .key .sw.flag-note { margin-left: 6px; }
.sw { display: inline-block; width: 14px; height: 14px; border-radius: 4px; border: 1.5px solid; vertical-align: -2px; }
.sw.island { border: 1.5px dashed #c0392b; background: #fff5f3; width: 20px; }
.sw.flag { background: #fff; border-width: 2.5px; }
.sw.collapsed { background: #eef4f0; border-color: #7fae8f; border-radius: 1px; box-shadow: 2px -2px 0 -0.5px #7fae8f; }
.sw.stub { border: 1.5px dashed #8c96a3; background: transparent; width: 20px; }
main { padding: 8px 28px 40px; max-width: 1500px; }
nav.toc { margin: 14px 0 0; }
nav.toc table { border-collapse: collapse; }
nav.toc td { padding: 3px 14px 3px 0; vertical-align: middle; }
section.model { border-top: 1px solid var(--line); padding-top: 6px; margin-top: 22px; }
section.model:first-of-type { border-top: 0; margin-top: 8px; }
h2 { font-size: 19px; margin: 12px 0 8px; word-break: break-all; }
h3 { font-size: 15.5px; margin: 22px 0 8px; }
h4 { font-size: 14px; margin: 14px 0 6px; }
.error-line { color: #b3001b; font-weight: 600; }
.summary { display: grid; grid-template-columns: minmax(280px, 1fr) auto; gap: 10px 28px; align-items: start; }
.bar { display: flex; height: 20px; border-radius: 6px; overflow: hidden; border: 1px solid var(--line); background: var(--soft); }
.bar span { min-width: 3px; }
.counts { list-style: none; padding: 0; margin: 8px 0 0; display: flex; flex-wrap: wrap; gap: 4px 16px; }
.counts li { white-space: nowrap; }
.counts li.zero { opacity: 0.45; }
.counts b { font-variant-numeric: tabular-nums; }
.tiles { display: flex; gap: 8px; flex-wrap: wrap; }
.tile { border: 1px solid var(--line); border-radius: 8px; padding: 6px 12px; min-width: 86px; background: #fff; }
.tile b { display: block; font-size: 20px; line-height: 1.2; font-variant-numeric: tabular-nums; }
.tile span { color: var(--muted); font-size: 12px; }
.tile.bad b { color: #b3001b; } .tile.warn b { color: #c76a00; } .tile.cpu b { color: #c0392b; }
.graph-tools { display: flex; gap: 6px; align-items: center; margin: 6px 0; color: var(--muted); font-size: 12.5px; flex-wrap: wrap; }
.graph-tools button { font: inherit; border: 1px solid var(--line); background: #fff; border-radius: 6px; padding: 2px 10px; cursor: pointer; color: var(--ink); }
.graph-tools button:hover { background: var(--soft); }
.graph-view { border: 1px solid var(--line); border-radius: 8px; overflow: auto; max-height: 78vh; background:
  radial-gradient(circle, #e9edf2 1px, transparent 1px) 0 0 / 16px 16px, #fcfdfe; padding: 8px; }
.graph-view svg { display: block; margin: 0 auto; }
.graph-view svg text { font-family: Arial, Helvetica, "Liberation Sans", sans-serif; }
.graph-view g.node:target path, .graph-view g.node:target polygon, .graph-view g.node.hl path, .graph-view g.node.hl polygon
  { stroke: #1f5fbf; stroke-width: 5px; }
.graph-note { color: var(--muted); margin: 4px 0; }
.graph-error { color: #b3001b; }
table.data { border-collapse: collapse; width: 100%; font-size: 13px; }
table.data th, table.data td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
table.data th { background: var(--soft); font-weight: 600; position: sticky; top: 0; white-space: nowrap; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: " \2195"; color: #a3acb8; font-weight: 400; }
table.sortable th[aria-sort="ascending"]::after { content: " \2191"; color: var(--ink); }
table.sortable th[aria-sort="descending"]::after { content: " \2193"; color: var(--ink); }
table.data tr:target td, table.data tr.hl td { background: #fff3c4; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.lvl { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 600; white-space: nowrap; }
.lvl.error { background: #fde2e4; color: #9b0016; } .lvl.warning { background: #fdebd3; color: #8a4a00; }
.lvl.note { background: #e2ecfb; color: #17478f; } .lvl.hidden { background: #eceff3; color: var(--muted); }
.op { color: var(--muted); font-size: 12px; }
table.data .mono { word-break: break-all; }
details.nodes summary { cursor: pointer; }
details.nodes ul { list-style: none; margin: 4px 0 0; padding: 0; max-height: 260px; overflow: auto; }
details.nodes li { margin: 1px 0; }
.more { color: var(--muted); font-size: 12px; }
.facts code { display: inline-block; background: var(--soft); border-radius: 4px; padding: 0 5px; margin: 1px 4px 1px 0; }
.tag { display: inline-block; border-radius: 4px; padding: 0 6px; font-size: 11.5px; margin-left: 6px; }
.tag.rec { background: #d3f0dc; color: #123d26; font-weight: 600; } .tag.na { background: #eceff3; color: var(--muted); }
.fix-result { border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; margin: 10px 0; }
.proof { margin: 4px 0; }
.proof.ok::before { content: "\2713  "; color: #2e8b57; font-weight: 700; }
.proof.no::before { content: "\2717  "; color: #b3001b; font-weight: 700; }
.before-after { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.before-after figure { margin: 0; }
.before-after figcaption { font-weight: 600; color: var(--muted); font-size: 12.5px; margin-bottom: 4px; }
.before-after .graph-view { max-height: 520px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; background: #fff; }
.card:target { outline: 3px solid #f2c94c; }
.card h3 { margin: 0 0 2px; font-size: 15px; }
.card .summary-line { margin: 2px 0 8px; }
.card .desc { color: var(--muted); margin: 0 0 8px; }
.card dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; font-size: 13px; }
.card dt { color: var(--muted); }
.card dd { margin: 0; word-break: break-word; }
.status { font-weight: 600; }
.status.verified { color: #2e8b57; } .status.derived { color: #b8860b; } .status.inferred { color: #6a5acd; }
ul.notes { margin: 4px 0; padding-left: 20px; color: var(--muted); }
footer { color: var(--muted); font-size: 12px; padding: 14px 28px 30px; border-top: 1px solid var(--line); }
@media (max-width: 900px) { .summary, .before-after { grid-template-columns: 1fr; } }
)CSS";
  for (Placement p : kPlacements) {
    const PlacementStyle& s = placement_style(p);
    const std::string c = css_class(p);
    css += ".p-" + c + " { background: " + s.fill + "; border-color: " + s.border + "; }\n";
    css += ".bar .p-" + c + " { background: " + s.border + "; }\n";
  }
  css += ".p-folded { border-style: dashed; }\n";
  for (Severity s : {Severity::Error, Severity::Warning, Severity::Note}) {
    css += std::string(".flag-") + severity_name(s) + " { border-color: " + severity_colour(s) + "; }\n";
  }
  return css;
}

// Records script errors on <html data-report-errors> (the browser test reads them).
const char* kErrorHook =
    "window.addEventListener('error',function(e){var d=document.documentElement;"
    "d.setAttribute('data-report-errors',(d.getAttribute('data-report-errors')||'')+(e.message||'error')+'\\n');});";

const char* kScript = R"JS(
(function () {
  'use strict';
  // Sortable tables: click a header (or Enter on it); numbers sort as numbers, data-sort overrides the text.
  function key(cell) {
    var v = cell.getAttribute('data-sort');
    return v === null ? cell.textContent.trim().toLowerCase() : v;
  }
  function compare(x, y) {
    var nx = Number(x), ny = Number(y);
    if (x !== '' && y !== '' && !isNaN(nx) && !isNaN(ny)) return nx - ny;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.tabIndex = 0;
      function sort() {
        var asc = th.getAttribute('aria-sort') !== 'ascending';
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var c = compare(key(a.cells[col]), key(b.cells[col]));
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener('click', sort);
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(); }
      });
    });
  });
  // Zoom: the SVG keeps its viewBox; width and height scale. Wide graphs start fitted to the view.
  Array.prototype.forEach.call(document.querySelectorAll('.graph-box'), function (box) {
    var view = box.querySelector('.graph-view'), svg = view && view.querySelector('svg');
    if (!svg) return;
    var w = parseFloat(svg.getAttribute('width')), h = parseFloat(svg.getAttribute('height'));
    if (!(w > 0 && h > 0)) return;
    var zoom = 1;
    function apply() {
      svg.setAttribute('width', (w * zoom).toFixed(1) + 'pt');
      svg.setAttribute('height', (h * zoom).toFixed(1) + 'pt');
    }
    function fit() {
      zoom = Math.min(1, Math.max(0.05, (view.clientWidth - 20) / (w * 4 / 3)));
      apply();
    }
    Array.prototype.forEach.call(box.querySelectorAll('button[data-zoom]'), function (b) {
      b.addEventListener('click', function () {
        var z = b.getAttribute('data-zoom');
        if (z === 'in') zoom = Math.min(zoom * 1.25, 8);
        else if (z === 'out') zoom = Math.max(zoom / 1.25, 0.05);
        else if (z === 'fit') return fit();
        else zoom = 1;
        apply();
      });
    });
    // Wide graphs start fitted to the view, but not below 70 % (labels stay legible), centred
    // on the first graph input.
    if (w * 4 / 3 > view.clientWidth) {
      fit();
      if (zoom < 0.7) { zoom = 0.7; apply(); }
      var input = svg.querySelector('g.graph-input'), v = view.getBoundingClientRect();
      if (input) {
        var r = input.getBoundingClientRect();
        view.scrollLeft += r.left + r.width / 2 - (v.left + v.width / 2);
      } else {
        view.scrollLeft = (view.scrollWidth - view.clientWidth) / 2;
      }
    }
  });
  // A finding's node link scrolls the graph to the node and marks it.
  function mark(el) {
    Array.prototype.forEach.call(document.querySelectorAll('.hl'), function (e) { e.classList.remove('hl'); });
    if (el) el.classList.add('hl');
  }
  document.addEventListener('click', function (e) {
    var a = e.target.closest ? e.target.closest('a.to-graph') : null;
    if (!a) return;
    var target = document.getElementById(a.getAttribute('href').slice(1));
    if (!target) return;
    e.preventDefault();
    mark(target);
    target.scrollIntoView({ block: 'center', inline: 'center' });
    history.replaceState(null, '', a.getAttribute('href'));
  });
  document.documentElement.setAttribute('data-report-ready', '1');
})();
)JS";

// Graphviz's SVG, made fit to sit inside HTML: no XML prolog, doctype,
// comments or namespace declarations (the HTML parser puts <svg> in the SVG
// namespace itself), and each node's and edge's <title> (the browser's
// tooltip) replaced by its tooltip text instead of the DOT node name.
std::string inline_svg(const std::string& svg, const std::string& label) {
  std::string out;
  out.reserve(svg.size());
  size_t pos = svg.find("<svg");
  if (pos == std::string::npos) return "";
  size_t pending_title = std::string::npos, pending_len = 0;  // the <title> text waiting for its tooltip
  bool graph_title = true;                                     // the first <title> names the graph: dropped
  while (pos < svg.size()) {
    size_t end = svg.find('\n', pos);
    if (end == std::string::npos) end = svg.size();
    std::string_view line(svg.data() + pos, end - pos);
    pos = end + 1;
    if (line.rfind("<!--", 0) == 0) {
      // A comment may span lines ("<!-- Generated by ...\n -->").
      if (line.find("-->") == std::string_view::npos) {
        const size_t close = svg.find("-->", pos);
        pos = close == std::string::npos ? svg.size() : svg.find('\n', close) + 1;
        if (pos == 0) pos = svg.size();
      }
      continue;
    }
    if (line.rfind("<svg", 0) == 0) {
      // <svg width=".." height=".." viewBox=".." xmlns=".." xmlns:xlink="..">, possibly over two lines.
      std::string head(line);
      while (head.find('>') == std::string::npos && pos < svg.size()) {
        end = svg.find('\n', pos);
        if (end == std::string::npos) end = svg.size();
        head += " " + svg.substr(pos, end - pos);
        pos = end + 1;
      }
      std::string attrs;
      for (const char* name : {"width", "height", "viewBox"}) {
        const std::string key = std::string(" ") + name + "=\"";
        const size_t at = head.find(key);
        if (at == std::string::npos) continue;
        const size_t close = head.find('"', at + key.size());
        if (close != std::string::npos) attrs += head.substr(at, close + 1 - at);
      }
      out += "<svg" + attrs + " role=\"img\" aria-label=\"" + esc(label) + "\">\n";
      continue;
    }
    if (line.rfind("<title>", 0) == 0) {
      if (graph_title) {
        graph_title = false;
        continue;
      }
      pending_title = out.size() + 7;
      pending_len = line.size() >= 15 ? line.size() - 15 : 0;  // between <title> and </title>
      out.append(line);
      out += '\n';
      continue;
    }
    if (line.rfind("<g id=\"a_", 0) == 0 && pending_title != std::string::npos) {
      const std::string_view key = "xlink:title=\"";
      const size_t at = line.find(key);
      if (at != std::string_view::npos) {
        const size_t close = line.find('"', at + key.size());
        if (close != std::string_view::npos) {
          out.replace(pending_title, pending_len, line.substr(at + key.size(), close - at - key.size()));
          // The <title> now carries the tooltip; the attribute would only repeat it.
          out.append(line.substr(0, at - 1));
          out.append(line.substr(close + 1));
          out += '\n';
          pending_title = std::string::npos;
          continue;
        }
      }
      pending_title = std::string::npos;
    } else if (line.rfind("<g id=", 0) == 0) {
      pending_title = std::string::npos;
    }
    out.append(line);
    out += '\n';
  }
  return out;
}

// Rules that fired in the run, each with one card at the end of the report.
struct RuleIndex {
  std::vector<const Rule*> rules;
  std::map<std::string, size_t> by_id;
  size_t add(const Rule* r) {
    auto [it, fresh] = by_id.emplace(r->id, rules.size());
    if (fresh) rules.push_back(r);
    return it->second;
  }
};

class HtmlReport {
 public:
  explicit HtmlReport(const RunInfo& run) : run_(run) {}

  std::string render() {
    // The same groups as SARIF, GitHub and JSON (one call over the run's reports).
    std::vector<const ModelReport*> reports, fixed;
    for (const auto& m : run_.models) {
      reports.push_back(m.report);
      fixed.push_back(m.fixed);
    }
    groups_ = group_findings(reports, run_.show_waived, run_.min_severity);
    fixed_groups_ = group_findings(fixed, run_.show_waived, run_.min_severity);
    for (const auto& m : run_.models) {
      for (const ModelReport* r : {m.report, m.fixed}) {
        if (r == nullptr || !r->ok) continue;
        for (const auto& d : r->diagnostics) {
          if (listed(d, run_.show_waived, run_.min_severity)) rules_.add(d.rule);
        }
      }
    }
    head();
    if (run_.models.size() > 1) contents();
    out_ += "<main>\n";
    if (!run_.configuration_notes.empty()) {
      out_ += "<ul class=\"notes\">\n";
      for (const auto& n : run_.configuration_notes) out_ += "<li>warning: " + esc(n) + "</li>\n";
      out_ += "</ul>\n";
    }
    for (size_t k = 0; k < run_.models.size(); ++k) model(k);
    rule_cards();
    out_ += "</main>\n<footer>Generated by bpu-lint " + esc(run_.tool_version) +
            ". Placement is predicted from the rule database before any compile; colours: see the legend at the top. "
            "The graph is laid out by Graphviz (dot).</footer>\n<script>" +
            std::string(kScript) + "</script>\n</body>\n</html>\n";
    return out_;
  }

 private:
  void head() {
    const std::string platform = run_.platform != nullptr ? run_.platform->name : "";
    std::string title = "bpu-lint report";
    if (run_.models.size() == 1) title += ": " + run_.models[0].path;
    if (!platform.empty()) title += " (" + platform + ")";
    out_ += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"generator\" content=\"bpu-lint " +
            esc(run_.tool_version) + "\">\n<title>" + esc(title) + "</title>\n<style>" + stylesheet() +
            "</style>\n<script>" + kErrorHook + "</script>\n</head>\n<body>\n<header class=\"top\">\n"
            "<h1>bpu-lint report <span>&middot; where each node runs</span></h1>\n<p class=\"meta\">platform <b>" +
            esc(platform) + "</b>";
    if (run_.platform != nullptr && !run_.platform->march.empty()) out_ += " (march " + esc(run_.platform->march) + ")";
    out_ += " &middot; " + plural(run_.models.size(), "model", "models") + " &middot; bpu-lint " +
            esc(run_.tool_version) + " &middot; exit code " + std::to_string(run_.exit_code) + "</p>\n" + legend() +
            "</header>\n";
  }

  static std::string legend() {
    std::string s = "<div class=\"legend\"><span class=\"group\" data-label=\"placement\">";
    for (Placement p : kPlacements) {
      s += "<span class=\"key\"><span class=\"sw p-" + css_class(p) + "\"></span>" +
           esc(placement_style(p).label) + "</span>";
    }
    s += "</span><span class=\"group\" data-label=\"graph\"><span class=\"key\"><span class=\"sw island\"></span>CPU island: one "
         "BPU&harr;CPU round trip</span><span class=\"key\">thick border, findings:<span class=\"sw flag flag-error\">"
         "</span>error<span class=\"sw flag flag-warning\"></span>warning<span class=\"sw flag flag-note\"></span>note"
         "</span><span class=\"key\"><span class=\"sw collapsed\"></span>collapsed run, counted</span>"
         "<span class=\"key\"><span class=\"sw stub\"></span>edge to another part of a large drawing</span></span></div>\n";
    return s;
  }

  void contents() {
    out_ += "<nav class=\"toc\"><table>\n";
    for (size_t k = 0; k < run_.models.size(); ++k) {
      const auto& m = run_.models[k];
      out_ += "<tr><td><a href=\"#m" + std::to_string(k) + "\">" + esc(m.path) + "</a></td><td>";
      if (m.report == nullptr || !m.report->ok) {
        out_ += "<span class=\"error-line\">not linted</span>";
      } else {
        const Summary& s = m.report->summary;
        out_ += "<div class=\"bar\" style=\"width:220px;height:12px\">" + bar_segments(s) + "</div></td><td>" +
                plural(s.nodes, "node", "nodes") + ", " + plural(s.cpu, "on CPU", "on CPU") + ", " +
                plural(s.errors, "error", "errors");
      }
      out_ += "</td></tr>\n";
    }
    out_ += "</table></nav>\n";
  }

  static size_t count_of(const Summary& s, Placement p) {
    switch (p) {
      case Placement::Bpu: return s.bpu;
      case Placement::Cpu: return s.cpu;
      case Placement::Folded: return s.folded;
      case Placement::Unknown: return s.unknown;
      case Placement::RuntimeShape: return s.runtime_shape;
      case Placement::DataShape: return s.data_shape;
      case Placement::NoCompile: return s.no_compile;
    }
    return 0;
  }

  static std::string bar_segments(const Summary& s) {
    std::string out;
    for (Placement p : kPlacements) {
      const size_t n = count_of(s, p);
      if (n == 0) continue;
      out += "<span class=\"p-" + css_class(p) + "\" style=\"flex:" + std::to_string(n) + "\" title=\"" + num(n) + " " +
             esc(placement_style(p).label) + "\"></span>";
    }
    return out;
  }

  void summary(const ModelReport& r) {
    const Summary& s = r.summary;
    out_ += "<div class=\"summary\"><div><div class=\"bar\" role=\"img\" aria-label=\"placement of " +
            plural(s.nodes, "node", "nodes") + "\">" + bar_segments(s) + "</div>\n<ul class=\"counts\">";
    for (Placement p : kPlacements) {
      const size_t n = count_of(s, p);
      const double share = s.nodes == 0 ? 0.0 : 100.0 * static_cast<double>(n) / static_cast<double>(s.nodes);
      char pct[16];
      std::snprintf(pct, sizeof pct, n > 0 && share < 0.5 ? "&lt;1%%" : "%.0f%%", share);
      out_ += std::string(n == 0 ? "<li class=\"zero\">" : "<li>") + "<span class=\"sw p-" + css_class(p) +
              "\"></span> <b>" + num(n) + "</b> " + esc(placement_style(p).label) + " <span class=\"op\">" + pct +
              "</span></li>";
    }
    out_ += "</ul></div>\n<div class=\"tiles\">";
    tile(num(s.nodes), "nodes", "");
    for (const SummaryPart& p : finding_parts(s)) {
      using K = SummaryPart::Kind;
      const char* tone = p.count == 0            ? ""
                         : p.kind == K::Islands  ? "cpu"
                         : p.kind == K::Errors   ? "bad"
                         : p.kind == K::Warnings ? "warn"
                                                 : "";
      tile(num(p.count), p.label, tone);
    }
    out_ += "</div></div>\n";
  }

  void tile(const std::string& value, const std::string& label, const char* cls) {
    out_ += std::string("<div class=\"tile ") + cls + "\"><b>" + value + "</b><span>" + label + "</span></div>";
  }

  void model(size_t k) {
    const auto& m = run_.models[k];
    const std::string id = "m" + std::to_string(k);
    out_ += "<section class=\"model\" id=\"" + id + "\">\n<h2>" + esc(m.path) + "</h2>\n";
    const ModelReport* r = m.report;
    if (r == nullptr || !r->ok) {
      out_ += "<p class=\"error-line\">error: " + esc(r != nullptr && m.error.empty() ? r->error : m.error) +
              "</p>\n</section>\n";
      return;
    }
    summary(*r);
    std::vector<long> fixed_nodes;
    if (m.fix_run != nullptr) {
      for (const auto& res : m.fix_run->results) fixed_nodes.push_back(res.node);
    }
    GraphOptions options;
    options.show_waived = run_.show_waived;
    options.min_severity = run_.min_severity;
    const ReportGraph g = build_report_graph(*r, fixed_nodes, options);
    graph(*r, g, id, rows_of_findings(*r, groups_[k]));
    findings(*r, groups_[k], &g, id, "Findings");
    plans(*r, g, id);
    if (m.fix_run != nullptr) fix_run(m, fixed_groups_[k], id);
    notes(*r);
    out_ += "</section>\n";
  }

  // Each listed finding's row in the folded findings table (the graph links a node to it).
  std::vector<long> rows_of_findings(const ModelReport& r, const std::vector<FindingGroup>& groups) const {
    std::vector<long> listed_index(r.diagnostics.size(), -1);
    long k = 0;
    for (size_t i = 0; i < r.diagnostics.size(); ++i) {
      if (listed(r.diagnostics[i], run_.show_waived, run_.min_severity)) listed_index[i] = k++;
    }
    std::vector<long> rows(static_cast<size_t>(k), -1);
    for (size_t row = 0; row < groups.size(); ++row) {
      for (size_t i : groups[row].members) rows[static_cast<size_t>(listed_index[i])] = static_cast<long>(row);
    }
    return rows;
  }

  void graph(const ModelReport& r, const ReportGraph& g, const std::string& id, std::vector<long> finding_rows) {
    out_ += "<h3>Graph</h3>\n<div class=\"graph-box\">\n<p class=\"graph-note\">";
    if (!g.collapsed) {
      out_ += "Every node (" + num(r.facts.nodes.size()) + ").";
    } else {
      out_ += num(r.facts.nodes.size()) + " nodes, more than a full layout shows readably (" + num(kFullGraphNodes) +
              "). Drawn: the CPU islands and the nodes that will not compile, have findings or were fixed, each with " +
              plural(static_cast<size_t>(g.context_hops), "hop", "hops") + " of context; " +
              plural(g.hidden_nodes - g.side_nodes_left_out, "other node is", "other nodes are") +
              " collapsed into counted boxes";
      if (g.side_nodes_left_out > 0) {
        out_ += " and " + num(g.side_nodes_left_out) + " that only compute constants or shapes are left out";
      }
      out_ += ".";
      if (g.regions_drawn < g.regions) {
        out_ += " Only the first " + num(g.regions_drawn) + " of " + num(g.regions) +
                " such regions fit a layout (the findings table accounts for every finding).";
      }
    }
    DotStyle style;
    style.graph_name = r.path;
    style.id_prefix = id + "_";
    style.finding_prefix = id + "_f";
    style.finding_rows = std::move(finding_rows);
    const std::vector<std::string> dots = layout_dots(r, g, style);
    if (dots.size() > 1) {
      out_ += " Laid out in " + num(dots.size()) + " parts of at most " + num(kLayoutPieceNodes) +
              " nodes each, top to bottom; an edge between parts ends at a dashed stub that links to its other end.";
    }
    out_ += " Click a node with findings to see them; hover for names and shapes.</p>\n";
    embed(dots, "graph of " + r.path, true);
    out_ += "</div>\n";
  }

  // The DOT of each piece Graphviz lays out at once: the whole graph when it
  // fits one (graph_pieces.h bounds the layout work).
  static std::vector<std::string> layout_dots(const ModelReport& r, const ReportGraph& g, const DotStyle& style) {
    const GraphPieces pieces = split_report_graph(g, kLayoutPieceNodes);
    if (pieces.pieces.size() <= 1) return {graph_dot(r, g, style)};
    std::vector<std::string> dots;
    for (size_t k = 0; k < pieces.pieces.size(); ++k) dots.push_back(piece_dot(r, g, pieces, k, style));
    return dots;
  }

  void embed(const ModelReport& r, const ReportGraph& g, const DotStyle& style, const std::string& label, bool tools) {
    embed(layout_dots(r, g, style), label, tools);
  }

  // Lays out DOT and writes the SVG (or why there is none).
  void embed(const std::vector<std::string>& dots, const std::string& label, bool tools) {
    std::string svg, error;
    if (!layout_pieces_svg(dots, svg, error)) {
      out_ += "<p class=\"graph-error\">The graph could not be drawn: " + esc(error) + "</p>\n";
      return;
    }
    if (tools) {
      out_ += "<div class=\"graph-tools\">zoom <button type=\"button\" data-zoom=\"out\">&minus;</button>"
              "<button type=\"button\" data-zoom=\"in\">+</button><button type=\"button\" data-zoom=\"fit\">fit</button>"
              "<button type=\"button\" data-zoom=\"1\">100%</button></div>\n";
    }
    out_ += "<div class=\"graph-view\">" + inline_svg(svg, label) + "</div>\n";
  }

  static bool known_node(const ModelReport& r, long node) {
    return node >= 0 && static_cast<size_t>(node) < r.facts.nodes.size();
  }

  // The node's name, a link to it when the graph draws it.
  std::string node_name(const ModelReport& r, const ReportGraph* g, long node, const std::string& id) {
    if (!known_node(r, node)) return "(model)";
    const NodeFacts& n = r.facts.nodes[static_cast<size_t>(node)];
    // The node's identity (what a waiver or baseline names it by) on hover.
    std::string name = "<span class=\"mono\" title=\"" + esc(r.facts.node_key(static_cast<size_t>(node))) + "\">" +
                       esc(std::string(n.display_name)) + "</span>";
    const long item = g != nullptr ? g->item_of_node[static_cast<size_t>(node)] : -1;
    if (item >= 0) {
      name = "<a class=\"to-graph\" href=\"#" + id + "_" + graph_item_id(*g, static_cast<size_t>(item)) + "\">" + name +
             "</a>";
    }
    return name;
  }

  std::string node_where(const ModelReport& r, long node) {
    if (!known_node(r, node)) return "";
    const NodeFacts& n = r.facts.nodes[static_cast<size_t>(node)];
    return "<span class=\"op\">" + esc(n.op_type) + (n.graph_id != 0 ? " in " + esc(n.graph_path) : "") + "</span>";
  }

  std::string node_cell(const ModelReport& r, const ReportGraph* g, long node, const std::string& id) {
    if (!known_node(r, node)) return "<td data-sort=\"-1\">(model)</td>";
    return "<td data-sort=\"" + std::to_string(node) + "\">" + node_name(r, g, node, id) + "<br>" + node_where(r, node) +
           "</td>";
  }

  // The nodes of a folded row: their count, and a list to open (capped, see kNodesListedPerRow).
  std::string nodes_cell(const ModelReport& r, const ReportGraph* g, const std::vector<long>& nodes, const std::string& id) {
    if (nodes.size() == 1) return node_cell(r, g, nodes.front(), id);
    const size_t listed = std::min({nodes.size(), kNodesListedPerRow, nodes_listed_left_});
    nodes_listed_left_ -= listed;
    std::string cell = "<td data-sort=\"" + std::to_string(nodes.front()) + "\"><details class=\"nodes\"><summary><b>" +
                       num(nodes.size()) + " nodes</b><br>" + node_where(r, nodes.front()) + "</summary><ul>";
    for (size_t i = 0; i < listed; ++i) cell += "<li>" + node_name(r, g, nodes[i], id) + "</li>";
    cell += "</ul>";
    if (listed < nodes.size()) {
      cell += std::string("<span class=\"more\">") + (listed == 0 ? "" : "and ") + num(nodes.size() - listed) +
              (listed == 0 ? " nodes, not listed here" : " more") +
              " (<span class=\"mono\">--format json</span> and <span class=\"mono\">csv</span> name every node)</span>";
    }
    return cell + "</details></td>";
  }

  // One row per group of identical findings (finding_groups.h); every count stays the findings'.
  void findings(const ModelReport& r, const std::vector<FindingGroup>& groups, const ReportGraph* g,
                const std::string& id, const char* title) {
    size_t count = 0;
    for (const auto& d : r.diagnostics) count += listed(d, run_.show_waived, run_.min_severity);
    out_ += std::string("<h3>") + title + " (" + num(count) + ")</h3>\n";
    if (count == 0) {
      out_ += "<p class=\"graph-note\">None.</p>\n";
      return;
    }
    if (groups.size() < count) {
      out_ += "<p class=\"graph-note\">" + plural(groups.size(), "row", "rows") + " for " + plural(count, "finding", "findings") +
              ": findings that say the same thing (rule, level, message, facts, fixes" +
              (std::any_of(groups.begin(), groups.end(), [](const FindingGroup& f) { return f.by_rule; })
                   ? "; past " + num(kMaxFindingGroups) + " groups, rule and level only"
                   : std::string()) +
              ") share a row, as in the SARIF and GitHub outputs; open a row's nodes to list them.</p>\n";
    }
    out_ += "<table class=\"data sortable findings\"><thead><tr><th>Rule</th><th>Level</th><th>Node</th>"
            "<th>Message</th><th>Facts</th></tr></thead>\n<tbody>\n";
    for (size_t row = 0; row < groups.size(); ++row) {
      const FindingGroup& group = groups[row];
      const Diagnostic& d = r.diagnostics[group.members.front()];
      const std::string level = severity_name(d.severity);
      const bool hidden = !d.shown();
      const size_t n = group.members.size();
      out_ += "<tr id=\"" + id + "_f" + std::to_string(row) + "\" class=\"finding" + (n > 1 ? " folded" : "") +
              "\" data-count=\"" + std::to_string(n) + "\"><td data-sort=\"" + esc(d.rule->id) + "\"><a href=\"#rule" +
              std::to_string(rules_.add(d.rule)) + "\">" + esc(d.rule->id) + "</a><br><span class=\"op\">" +
              esc(d.rule->name) + "</span></td>";
      out_ += "<td data-sort=\"" + std::to_string(2 - static_cast<int>(d.severity)) + "\"><span class=\"lvl " + level +
              "\">" + level + "</span>";
      if (d.outcome == Outcome::Unknown) out_ += "<br><span class=\"op\">cannot verify</span>";
      if (hidden) {
        out_ += "<br><span class=\"lvl hidden\">" +
                (d.waiver.empty() ? std::string("in baseline") : "waived: " + esc(d.waiver)) + "</span>";
      }
      std::vector<long> nodes;
      nodes.reserve(n);
      for (size_t i : group.members) nodes.push_back(r.diagnostics[i].node);
      out_ += "</td>" + nodes_cell(r, g, nodes, id) + "<td>";
      if (group.by_rule && n > 1) out_ += "<span class=\"op\">the first of these findings (their messages and facts differ):</span><br>";
      out_ += esc(d.message);
      if (const SourceLine* s = r.source_for(d.node)) {  // the PyTorch line that built the node
        const bool found = !s->path.empty();
        out_ += "<br><span class=\"op\">built at " + esc((found ? s->path : s->trace_file) + ":" + std::to_string(s->line)) +
                (s->function.empty() ? "" : " in " + esc(s->function)) + (found ? "" : " (not found under --source-root)") +
                "</span>" + (found && !s->code.empty() ? " <code>" + esc(s->code) + "</code>" : "");
      }
      out_ += "</td><td class=\"facts\">";
      for (const auto& t : d.facts) out_ += "<code>" + esc(t.text + " = " + t.value.to_string()) + "</code>";
      out_ += "</td></tr>\n";
    }
    out_ += "</tbody></table>\n";
  }

  // The cells after the node of one ranked option.
  static std::string option_cells(const FixOption& o, size_t rank) {
    std::string out = "<td class=\"num\">" + std::to_string(rank) + "</td><td><span class=\"mono\">" + esc(o.id) +
                      "</span>" + (o.recommended ? "<span class=\"tag rec\">recommended</span>" : "") +
                      (o.applicable ? "" : "<span class=\"tag na\">not applicable</span>") + "<br><span class=\"op\">" +
                      esc(o.title) + "</span></td><td>" + esc(applicability_name(o.applicability)) + "</td>";
    if (!o.applicable) return out + "<td colspan=\"5\">" + esc(o.why_not) + "</td></tr>\n";
    out += "<td class=\"num\">" + human(o.cost.intermediate_channels) + "</td><td class=\"num\">" +
           human(o.cost.intermediate_elements) + " (" + human_bytes(o.cost.intermediate_bytes) +
           ")</td><td class=\"num\">" + human(o.cost.macs) + "</td><td class=\"num\">" + human(o.cost.moved_elements) +
           "</td><td class=\"num\">" + std::to_string(o.cost.new_nodes);
    for (const auto& v : o.new_violations) out += "<br><span class=\"op\">would break " + esc(v) + "</span>";
    return out + "</td></tr>\n";
  }

  // Exact, not as rounded for display: what --format json holds for the plan.
  static std::string plan_key(const NodeFixPlan& plan) {
    std::string key;
    for (const FixOption& o : plan.options) {
      const FixCost& c = o.cost;
      key += o.id + '\n' + o.title + '\n' + std::to_string(static_cast<int>(o.applicability)) + (o.applicable ? "a" : "-") +
             (o.recommended ? "r" : "-") + o.why_not + '\n';
      for (int64_t v : {c.intermediate_channels, c.intermediate_elements, c.intermediate_bytes, c.macs, c.moved_elements,
                        static_cast<int64_t>(c.new_nodes)}) {
        key += std::to_string(v) + ',';
      }
      for (const auto& v : o.new_violations) key += '\n' + v;
      key += '\f';
    }
    return key;
  }

  // Nodes whose ranked options are the same (identical layers) share one row group.
  void plans(const ModelReport& r, const ReportGraph& g, const std::string& id) {
    if (r.fix_plans.empty()) return;
    struct PlanRows {
      std::vector<std::string> options;  // option_cells of each option
      std::vector<long> nodes;
    };
    std::vector<PlanRows> shared;
    std::map<std::string, size_t> at;
    for (const auto& plan : r.fix_plans) {
      const auto it = at.emplace(plan_key(plan), shared.size()).first;
      if (it->second == shared.size()) {
        std::vector<std::string> options;
        for (size_t i = 0; i < plan.options.size(); ++i) options.push_back(option_cells(plan.options[i], i + 1));
        shared.push_back({std::move(options), {}});
      }
      shared[it->second].nodes.push_back(plan.node);
    }
    out_ += "<h3>Fixes, ranked (" + plural(r.fix_plans.size(), "node", "nodes") +
            "; <span class=\"mono\">bpu-lint --fix</span> applies the recommended one)</h3>\n";
    if (shared.size() < r.fix_plans.size()) {
      out_ += "<p class=\"graph-note\">" + plural(shared.size(), "plan", "distinct plans") + ": nodes whose options, costs and "
              "verdicts are the same share one.</p>\n";
    }
    out_ += "<table class=\"data fixes\"><thead><tr><th>Node</th><th>Rank</th><th>Fix</th><th>Safety</th>"
            "<th>Intermediate channels</th><th>Intermediate tensor</th><th>MACs</th><th>Transpose moves</th>"
            "<th>New nodes</th></tr></thead>\n<tbody>\n";
    size_t nodes_left_out = 0;
    for (size_t k = 0; k < shared.size(); ++k) {
      if (k >= kPlanRowsShown) {
        nodes_left_out += shared[k].nodes.size();
        continue;
      }
      const std::string node = nodes_cell(r, &g, shared[k].nodes, id);
      for (size_t i = 0; i < shared[k].options.size(); ++i) {
        out_ += "<tr class=\"fix-option\">" + (i == 0 ? node : std::string("<td></td>")) + shared[k].options[i];
      }
    }
    out_ += "</tbody></table>\n";
    if (nodes_left_out > 0) {
      out_ += "<p class=\"graph-note\">Only the first " + num(kPlanRowsShown) + " of " + num(shared.size()) +
              " distinct plans are shown; the plans of " + plural(nodes_left_out, "more node", "more nodes") +
              " are in <span class=\"mono\">--format json</span> (each finding's <span class=\"mono\">fixes</span>).</p>\n";
    }
  }

  static std::string proof_line(const FixResult& res) {
    if (!res.applied) return "not fixed" + (res.fix_id.empty() ? std::string() : " (" + res.fix_id + ")") + ": " + res.reason;
    return "fixed with " + res.fix_id + "; " + proof_summary(res);
  }

  void fix_run(const RunInfo::Model& m, const std::vector<FindingGroup>& fixed_groups, const std::string& id) {
    const ModelReport& r = *m.report;
    const FixRun& run = *m.fix_run;
    out_ += "<h3>After --fix</h3>\n<p>";
    if (!run.error.empty()) out_ += "<span class=\"error-line\">error: " + esc(run.error) + "</span>";
    else if (run.written) {
      out_ += "Fixed " + num(run.applied()) + " of " + plural(run.results.size(), "node", "nodes") + "; wrote <span class=\"mono\">" +
              esc(run.output_path) + "</span>" +
              (run.data_path.empty() ? "" : " (weights in <span class=\"mono\">" + esc(run.data_path) + "</span>)");
    } else {
      out_ += "Nothing was fixed; no file written.";
    }
    out_ += "</p>\n";
    size_t pictures = 0;
    for (const auto& res : run.results) {
      const bool known = res.node >= 0 && static_cast<size_t>(res.node) < r.facts.nodes.size();
      out_ += "<div class=\"fix-result\">";
      if (known) {
        const NodeFacts& n = r.facts.nodes[static_cast<size_t>(res.node)];
        out_ += "<h4>" + esc(n.op_type) + " <span class=\"mono\">" + esc(std::string(n.display_name)) + "</span></h4>";
      }
      out_ += "<p class=\"proof " + std::string(res.applied ? "ok" : "no") + "\">" + esc(proof_line(res)) + "</p>\n";
      if (known && res.applied && pictures++ == kFixPicturesShown) {
        out_ += "<p class=\"graph-note\">Before/after pictures are drawn for the first " + num(kFixPicturesShown) +
                " fixed nodes only.</p>\n";
      }
      if (known && res.applied && pictures <= kFixPicturesShown) {
        out_ += "<div class=\"before-after\"><figure><figcaption>before</figcaption>";
        DotStyle style;
        style.graph_name = "before";
        style.id_prefix = id + "_b" + std::to_string(res.node) + "_";
        embed(r, neighbourhood_graph(r, {res.node}, 1, run_.show_waived, run_.min_severity), style, "before the fix", false);
        out_ += "</figure><figure><figcaption>after (placement in the re-lint)</figcaption>";
        const std::vector<long> after = m.fixed != nullptr ? replacement_nodes(r, res.node, *m.fixed) : std::vector<long>{};
        if (after.empty()) {
          out_ += "<p class=\"graph-note\">The rewritten model was not re-linted.</p>";
        } else {
          style.graph_name = "after";
          style.id_prefix = id + "_a" + std::to_string(res.node) + "_";
          embed(*m.fixed, neighbourhood_graph(*m.fixed, after, 1, run_.show_waived, run_.min_severity), style,
                "after the fix", false);
        }
        out_ += "</figure></div>\n";
      }
      out_ += "</div>\n";
    }
    if (m.fixed != nullptr && m.fixed->ok) {
      out_ += "<h3>Re-lint of the fixed model</h3>\n";
      summary(*m.fixed);
      findings(*m.fixed, fixed_groups, nullptr, id + "x", "Findings after the fix");
    }
  }

  void notes(const ModelReport& r) {
    if (r.facts.notes.empty() && r.facts.unanalysed_functions.empty()) return;
    out_ += "<h3>Notes</h3>\n<ul class=\"notes\">";
    for (const auto& n : r.facts.notes) out_ += "<li>" + esc(n) + "</li>";
    for (const auto& fn : r.facts.unanalysed_functions) out_ += "<li>model-local function " + esc(fn) + " is not analysed</li>";
    out_ += "</ul>\n";
  }

  void rule_cards() {
    if (rules_.rules.empty()) return;
    out_ += "<section id=\"rules\"><h2>Rules that fired</h2>\n<div class=\"cards\">\n";
    const std::vector<std::string> platforms = run_.platform != nullptr ? std::vector<std::string>{run_.platform->name}
                                                                        : std::vector<std::string>{};
    for (size_t k = 0; k < rules_.rules.size(); ++k) {
      const Rule& rule = *rules_.rules[k];
      out_ += "<div class=\"card\" id=\"rule" + std::to_string(k) + "\"><h3>" + esc(rule.id) +
              " <span class=\"op mono\">" + esc(rule.name) + "</span></h3><p class=\"summary-line\">" +
              esc(rule.summary) + "</p>";
      if (!rule.description.empty()) out_ += "<p class=\"desc\">" + esc(rule.description) + "</p>";
      out_ += "<dl>";
      for (const auto& field : rule_card(rule, rule.builtin ? std::vector<std::string>{} : platforms)) {
        std::string value = esc(field.value);
        if (field.code) value = "<code>" + value + "</code>";
        if (field.label == "status") value = "<span class=\"status " + value + "\">" + value + "</span>";
        out_ += "<dt>" + esc(field.label) + "</dt><dd>" + value + esc(field.detail) + "</dd>";
      }
      out_ += "</dl></div>\n";
    }
    out_ += "</div></section>\n";
  }

  const RunInfo& run_;
  std::vector<std::vector<FindingGroup>> groups_, fixed_groups_;  // per model, as finding_groups.h folds them
  size_t nodes_listed_left_ = kNodesListedPerPage;
  RuleIndex rules_;
  std::string out_;
};

}  // namespace

std::string render_html(const RunInfo& run) { return HtmlReport(run).render(); }

}  // namespace bpulint
