// The graph reports: --format html (one self-contained file) and --format dot.
// A strict well-formedness check of the HTML (every element closed in order,
// quoted attributes, valid character references, unique ids, internal links
// that resolve, nothing fetched from anywhere), then what each report must
// contain: every finding, fix option and --fix proof, the CPU islands as
// clusters, the collapsed view of big graphs, hostile names neutralised.
// tests/html/run.sh renders reports in a real browser.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bpulint/render/graph_pieces.h"
#include "bpulint/render/graphviz_layout.h"
#include "bpulint/render/markup.h"
#include "bpulint/render/report_graph.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

struct HtmlCheck {
  std::vector<std::string> errors;
  std::set<std::string> ids;
  std::map<std::string, int> tags;  // start tags by name
  std::string text;                 // text content outside script and style, references left as they are
  int tag(const std::string& name) const {
    auto it = tags.find(name);
    return it == tags.end() ? 0 : it->second;
  }
};

bool valid_reference(const std::string& s, size_t at) {
  // &name; &#123; &#x1F;
  size_t i = at + 1;
  if (i < s.size() && s[i] == '#') {
    ++i;
    const bool hex = i < s.size() && (s[i] == 'x' || s[i] == 'X');
    if (hex) ++i;
    const size_t start = i;
    while (i < s.size() && (hex ? std::isxdigit(static_cast<unsigned char>(s[i])) : std::isdigit(static_cast<unsigned char>(s[i])))) ++i;
    return i > start && i < s.size() && s[i] == ';';
  }
  const size_t start = i;
  while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) ++i;
  return i > start && i < s.size() && s[i] == ';';
}

// A strict reading of what bpu-lint writes: no optional end tags omitted, every
// attribute double-quoted, "/>" only inside <svg>.
HtmlCheck check_html(const std::string& h) {
  static const std::set<std::string> kVoid = {"area", "base", "br", "col", "embed", "hr", "img",
                                              "input", "link", "meta", "source", "track", "wbr"};
  HtmlCheck c;
  auto fail = [&](size_t at, const std::string& why) {
    if (c.errors.size() < 20) c.errors.push_back("offset " + std::to_string(at) + ": " + why);
  };
  if (h.rfind("<!DOCTYPE html>\n", 0) != 0) fail(0, "no <!DOCTYPE html> first");
  std::vector<std::string> open;
  std::vector<std::string> links;
  size_t i = h.find('\n') + 1;
  while (i < h.size()) {
    if (h[i] != '<') {
      const size_t next = std::min(h.find('<', i), h.size());
      for (size_t k = i; k < next; ++k) {
        if (h[k] == '&' && !valid_reference(h, k)) fail(k, "bare '&' in text");
        if (h[k] == '>') fail(k, "bare '>' in text");
      }
      c.text.append(h, i, next - i);
      i = next;
      continue;
    }
    if (h.compare(i, 4, "<!--") == 0) {
      const size_t end = h.find("-->", i);
      if (end == std::string::npos) return fail(i, "unterminated comment"), c;
      i = end + 3;
      continue;
    }
    const bool closing = i + 1 < h.size() && h[i + 1] == '/';
    size_t k = i + (closing ? 2 : 1);
    const size_t name_start = k;
    while (k < h.size() && (std::isalnum(static_cast<unsigned char>(h[k])) || h[k] == ':' || h[k] == '-')) ++k;
    std::string name = h.substr(name_start, k - name_start);
    if (name.empty()) return fail(i, "'<' that starts no tag"), c;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (closing) {
      if (k >= h.size() || h[k] != '>') return fail(i, "malformed end tag"), c;
      if (open.empty() || open.back() != name) {
        return fail(i, "</" + name + "> closes <" + (open.empty() ? std::string("nothing") : open.back()) + ">"), c;
      }
      open.pop_back();
      i = k + 1;
      continue;
    }
    ++c.tags[name];
    bool self_closing = false;
    std::set<std::string> attrs;
    while (true) {
      while (k < h.size() && h[k] == ' ') ++k;
      if (k >= h.size()) return fail(i, "unterminated tag"), c;
      if (h[k] == '>') {
        ++k;
        break;
      }
      if (h.compare(k, 2, "/>") == 0) {
        self_closing = true;
        k += 2;
        break;
      }
      const size_t a = k;
      while (k < h.size() && (std::isalnum(static_cast<unsigned char>(h[k])) || h[k] == '-' || h[k] == ':' || h[k] == '_')) ++k;
      const std::string attr = h.substr(a, k - a);
      if (attr.empty()) return fail(k, "bad attribute in <" + name + ">"), c;
      if (!attrs.insert(attr).second) fail(k, "duplicate attribute " + attr);
      if (k >= h.size() || h[k] != '=') continue;  // a boolean attribute
      if (k + 1 >= h.size() || h[k + 1] != '"') return fail(k, "unquoted value of " + attr), c;
      const size_t v = k + 2, end = h.find('"', v);
      if (end == std::string::npos) return fail(k, "unterminated value"), c;
      const std::string value = h.substr(v, end - v);
      for (size_t p = 0; p < value.size(); ++p) {
        if (value[p] == '<') fail(v + p, "'<' in an attribute value");
        if (value[p] == '&' && !valid_reference(value, p)) fail(v + p, "bare '&' in an attribute value");
      }
      if (attr == "id" && !c.ids.insert(value).second) fail(v, "duplicate id " + value);
      if (attr == "src") fail(v, "a src attribute: " + value);
      if (attr == "href" || attr == "xlink:href") {
        if (value.empty() || value[0] != '#') fail(v, "a link out of the file: " + value);
        else links.push_back(value.substr(1));
      }
      if (value.find("http://") != std::string::npos || value.find("https://") != std::string::npos) {
        fail(v, "a URL in " + attr);
      }
      k = end + 1;
    }
    if (name == "link" || name == "iframe" || name == "img" || name == "object" || name == "embed") {
      fail(i, "<" + name + "> in a self-contained report");
    }
    if (name == "script" || name == "style") {
      const std::string close = "</" + name + ">";
      const size_t end = h.find(close, k);
      if (end == std::string::npos) return fail(i, "unterminated <" + name + ">"), c;
      const std::string body = h.substr(k, end - k);
      if (body.find("@import") != std::string::npos || body.find("url(") != std::string::npos) {
        fail(k, "<" + name + "> loads something");
      }
      i = end + close.size();
      continue;
    }
    const bool in_svg = std::find(open.begin(), open.end(), "svg") != open.end() || name == "svg";
    if (self_closing && !in_svg) fail(i, "'/>' on an HTML element <" + name + ">");
    if (!self_closing && kVoid.count(name) == 0) open.push_back(name);
    i = k;
  }
  if (!open.empty()) fail(h.size(), "<" + open.back() + "> never closed");
  for (const auto& l : links) {
    if (c.ids.count(l) == 0) fail(0, "link to a missing id #" + l);
  }
  return c;
}

std::string errors_of(const HtmlCheck& c) {
  std::string out;
  for (const auto& e : c.errors) out += e + "\n";
  return out;
}

std::string case_study_html(TempDir& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {example_model(), "--format", "html", "-o", dir.path("report.html")};
  args.insert(args.end(), extra.begin(), extra.end());
  const CommandResult r = run_bpu_lint(args);
  INFO(r.err);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  CHECK(r.out.empty());  // the report went to the file
  return read_file(dir.path("report.html"));
}

// The section of the report between two markers.
std::string between(const std::string& s, const std::string& from, const std::string& to) {
  const size_t a = s.find(from);
  if (a == std::string::npos) return "";
  const size_t b = s.find(to, a + from.size());
  return s.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

// "{0, 0, ...}": an initializer's values in ONNX text syntax.
std::string zeros(int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += i == 0 ? "0" : ", 0";
  return s + "}";
}

// A chain of `blocks` Conv -> Relu pairs; every `every`-th block ends in a 3-D
// ConvTranspose with kernel D 5 (a CPU island with a finding), between Reshapes.
std::string chain_model(int blocks, int every) {
  std::string body, weights;
  std::string x = "X";
  int n = 0;
  for (int b = 0; b < blocks; ++b) {
    const std::string c = "c" + std::to_string(n++), r = "r" + std::to_string(n++);
    body += "  " + c + " = Conv (" + x + ", W)\n  " + r + " = Relu (" + c + ")\n";
    x = r;
    if (b % every == every - 1) {
      const std::string u = "u" + std::to_string(n++), t = "t" + std::to_string(n++), d = "d" + std::to_string(n++),
                        v = "v" + std::to_string(n++);
      body += "  " + u + " = Reshape (" + x + ", S5)\n  " + t + " = ConvTranspose <kernel_shape = [5, 1, 1], strides = [5, 1, 1]> (" +
              u + ", WT)\n  " + d + " = Conv <kernel_shape = [5, 1, 1], strides = [5, 1, 1]> (" + t + ", WD)\n  " + v +
              " = Reshape (" + d + ", S4)\n";
      x = v;
    }
  }
  body += "  Y = Identity (" + x + ")\n";
  return "<ir_version: 8, opset_import: [\"\" : 17]>\n"
         "g (float[1, 4, 4, 4] X) => (float[1, 4, 4, 4] Y)\n"
         "<float[4, 4, 1, 1] W = " + zeros(16) + ", float[4, 4, 5, 1, 1] WT = " + zeros(80) +
         ", float[4, 4, 5, 1, 1] WD = " + zeros(80) + ", int64[5] S5 = {1, 4, 1, 4, 4}, int64[4] S4 = {1, 4, 4, 4}>\n{\n" +
         body + "}\n";
}

}  // namespace

TEST_CASE("html checker: catches what a report must not contain") {
  const std::string ok = "<!DOCTYPE html>\n<html><body><p id=\"a\">x &amp; y</p><a href=\"#a\">a</a><br></body></html>\n";
  CHECK(check_html(ok).errors.empty());
  for (const std::string bad : {
           "<!DOCTYPE html>\n<html><body><p>x</b></body></html>\n",
           "<!DOCTYPE html>\n<html><body><p>x & y</p></body></html>\n",
           "<!DOCTYPE html>\n<html><body><p title=x>y</p></body></html>\n",
           "<!DOCTYPE html>\n<html><body><a href=\"https://example.com\">x</a></body></html>\n",
           "<!DOCTYPE html>\n<html><head><link rel=\"stylesheet\" href=\"#x\"></head></html>\n",
           "<!DOCTYPE html>\n<html><body><script src=\"a.js\"></script></body></html>\n",
           "<!DOCTYPE html>\n<html><body><a href=\"#nowhere\">x</a></body></html>\n",
           "<!DOCTYPE html>\n<html><body><p id=\"a\"></p><p id=\"a\"></p></body></html>\n",
           "<!DOCTYPE html>\n<html><body><p>",
           "<!DOCTYPE html>\n<html><body><p title=\"a<b\">x</p></body></html>\n",
       }) {
    INFO(bad);
    CHECK_FALSE(check_html(bad).errors.empty());
  }
}

TEST_CASE("markup: names are escaped for HTML and DOT and shortened by code points") {
  CHECK(html_escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  CHECK(html_escape(std::string("a\xff" "b\n\x1b", 5)) == "a\xef\xbf\xbd" "b\\x0a\\x1b");
  CHECK(html_escape("\xc2\x85") == "\\x85");            // C1 control (NEL)
  CHECK(html_escape("\xef\xbf\xbe") == "\xef\xbf\xbd");  // noncharacter U+FFFE
  CHECK(dot_quote("a\"b\\c&d\ne") == "\"a\\\"b\\\\c&amp;d\\\\x0ae\"");
  CHECK(dot_quote_lines({"op", "na\"me"}) == "\"op\\nna\\\"me\"");
  CHECK(shorten_tail("/encoder/layers.11/mlp/fc1/MatMul", 12) == "...c1/MatMul");
  CHECK(shorten_tail("short", 12) == "short");
  // Multi-byte characters are never cut in half.
  CHECK(shorten_tail("\xe4\xb8\xad\xe6\x96\x87\xe5\x90\x8d\xe5\xad\x97\xe5\xb1\x82", 4) == "...\xe5\xb1\x82");
}

TEST_CASE("html report of the case study: well-formed, self-contained, every finding with its node in the graph") {
  TempDir dir;
  const std::string html = case_study_html(dir);
  const HtmlCheck c = check_html(html);
  INFO(errors_of(c));
  CHECK(c.errors.empty());
  CHECK(c.tag("script") == 2);  // the error hook in <head>, the sorting/zoom script at the end
  CHECK(c.tag("svg") == 1);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);

  const CommandResult j = run_bpu_lint({example_model(), "--format", "json"});
  const auto report = nlohmann::json::parse(j.out);
  const auto& model = report["models"][0];
  const auto& diagnostics = model["diagnostics"];
  REQUIRE(diagnostics.size() == 4);
  // The two identical BPU1102 findings (the JSON report's one group) share a row.
  REQUIRE(model["groups"].size() == 1);
  CHECK(model["groups"][0]["diagnostics"] == nlohmann::json::parse("[2, 3]"));
  CHECK(count(html, "class=\"finding\"") == 2);
  CHECK(count(html, "class=\"finding folded\" data-count=\"2\"") == 1);
  const size_t row_of[] = {0, 1, 2, 2};
  for (size_t k = 0; k < diagnostics.size(); ++k) {
    const auto& d = diagnostics[k];
    const std::string row = between(html, "<tr id=\"m0_f" + std::to_string(row_of[k]) + "\"", "</tr>");
    INFO(row);
    CHECK(row.find(">" + d["rule"].get<std::string>() + "</a>") != std::string::npos);
    CHECK(row.find(html_escape(d["message"].get<std::string>())) != std::string::npos);
    CHECK(row.find(html_escape(d["node"].get<std::string>())) != std::string::npos);
    for (const auto& [fact, value] : d["facts"].items()) CHECK(row.find(html_escape(fact)) != std::string::npos);
    // The node cell links to the node in the graph, and the node links back to its first finding.
    CHECK(row.find("class=\"to-graph\" href=\"#m0_n") != std::string::npos);
  }
  // Every node is drawn; the three ConvTranspose nodes sit in three CPU islands.
  for (int n = 0; n < 10; ++n) CHECK(c.ids.count("m0_n" + std::to_string(n)) == 1);
  CHECK(model["summary"]["cpu_islands"] == 3);
  for (int k = 0; k < 3; ++k) CHECK(c.ids.count("m0_island" + std::to_string(k)) == 1);
  CHECK(count(html, "class=\"node node&#45;cpu flagged\"") == 3);
  CHECK(html.find("<a xlink:href=\"#m0_f0\">") != std::string::npos);
  // Every ranked fix option of every node, with its costs.
  size_t options = 0;
  std::set<std::string> planned;
  for (const auto& d : diagnostics) {
    if (!planned.insert(d["node"].get<std::string>()).second) continue;
    for (const auto& o : d["fixes"]) {
      ++options;
      CHECK(html.find("<span class=\"mono\">" + o["id"].get<std::string>() + "</span>") != std::string::npos);
    }
  }
  CHECK(options == 9);  // three fixes for each of the three layers
  CHECK(count(html, "class=\"fix-option\"") == static_cast<int>(options));
  CHECK(html.find("92.2k (360.0 KiB)") != std::string::npos);
  // One rule card per rule that fired, with its constraint, source and status.
  CHECK(c.ids.count("rule0") == 1);
  CHECK(c.ids.count("rule1") == 1);
  CHECK(c.ids.count("rule2") == 0);
  CHECK(html.find("<dt>require</dt><dd><code>kernel_shape[0] in 1..2</code></dd>") != std::string::npos);
  CHECK(html.find("<dt>source</dt>") != std::string::npos);
  CHECK(html.find("<span class=\"status inferred\">inferred</span>") != std::string::npos);
  // Sortable: the findings table and the script that sorts it.
  CHECK(html.find("<table class=\"data sortable findings\">") != std::string::npos);
  CHECK(html.find("table.sortable") != std::string::npos);
}

TEST_CASE("html report folds identical findings: one row per group (as JSON and SARIF fold them), nodes to open, a small page") {
  TempDir dir;
  // 600 identical ConvTranspose3d layers (kernel D 5): each the same findings and the same ranked fixes.
  const std::string model = save_model(dir, "chain.onnx", model_from_text(chain_model(1200, 2)));
  const CommandResult h = run_bpu_lint({model, "--format", "html", "-o", dir.path("r.html"), "--exit-zero"});
  REQUIRE_MESSAGE(h.exit_code == 0, h.err);
  const std::string html = read_file(dir.path("r.html"));
  const HtmlCheck c = check_html(html);
  INFO(errors_of(c));
  CHECK(c.errors.empty());
  const CommandResult j = run_bpu_lint({model, "--format", "json", "--exit-zero"});
  const auto m = nlohmann::json::parse(j.out)["models"][0];
  const auto& diagnostics = m["diagnostics"];
  const auto& groups = m["groups"];
  REQUIRE(diagnostics.size() >= 600);
  REQUIRE(groups.size() >= 1);
  size_t folded_away = 0;
  for (const auto& g : groups) folded_away += g["count"].get<size_t>() - 1;
  const size_t rows = diagnostics.size() - folded_away;
  CHECK(count(html, "<tr id=\"m0_f") == static_cast<int>(rows));
  CHECK(count(html, "class=\"finding folded\"") == static_cast<int>(groups.size()));
  CHECK(count(html, "class=\"finding\"") == static_cast<int>(rows - groups.size()));
  for (const auto& g : groups) {
    const size_t n = g["count"].get<size_t>();
    const auto& first = diagnostics[g["diagnostics"][0].get<size_t>()];
    const std::string rule = g["rule"].get<std::string>();
    // The group's row: its count, the first member's message, and at most 50 of its nodes, then how many more.
    bool found = false;
    for (size_t row = 0; row < rows && !found; ++row) {
      const std::string tr = between(html, "<tr id=\"m0_f" + std::to_string(row) + "\"", "</tr>");
      if (tr.find("data-count=\"" + std::to_string(n) + "\"") == std::string::npos || tr.find(">" + rule + "</a>") == std::string::npos) continue;
      found = true;
      CHECK(tr.find("<details class=\"nodes\"><summary><b>" + std::to_string(n) + " nodes</b>") != std::string::npos);
      CHECK(tr.find(html_escape(first["message"].get<std::string>())) != std::string::npos);
      CHECK(count(tr, "<li>") == static_cast<int>(std::min<size_t>(n, 50)));
      if (n > 50) CHECK(tr.find("and " + std::to_string(n - 50) + " more") != std::string::npos);
    }
    CHECK_MESSAGE(found, rule);
  }
  // Every count stays the findings': the heading and the tiles.
  const auto commas = [](size_t v) {
    std::string d = std::to_string(v), out;
    for (size_t i = 0; i < d.size(); ++i) out += (i > 0 && (d.size() - i) % 3 == 0 ? "," : "") + d.substr(i, 1);
    return out;
  };
  CHECK(html.find("Findings (" + commas(diagnostics.size()) + ")") != std::string::npos);
  // The errors tile counts findings and says on how many nodes they are.
  CHECK(html.find("<b>" + commas(m["summary"]["errors"].get<size_t>()) + "</b><span>errors on " +
                  std::to_string(m["summary"]["error_nodes"].get<size_t>()) + " nodes") != std::string::npos);
  // The 600 identical fix plans are one: three ranked options and the node list.
  CHECK(count(html, "class=\"fix-option\"") == 3);
  CHECK(html.find("Fixes, ranked (600 nodes") != std::string::npos);
  CHECK(html.find("<summary><b>600 nodes</b>") != std::string::npos);
  // Small: outside the drawing (its own budget, report_graph.h), a few KiB per row, not per finding.
  const size_t svg_from = html.find("<svg"), svg_to = html.find("</svg>");
  REQUIRE(svg_from != std::string::npos);
  REQUIRE(svg_to != std::string::npos);
  CHECK(html.size() - (svg_to - svg_from) < 80 * 1024);
  // The graph's flagged nodes link to their folded row.
  CHECK(html.find("<a xlink:href=\"#m0_f0\">") != std::string::npos);
  for (size_t k = rows; k < rows + 5; ++k) CHECK(html.find("xlink:href=\"#m0_f" + std::to_string(k) + "\"") == std::string::npos);
}

TEST_CASE("html report after --fix: each rewrite before and after, with its proof line and the re-lint") {
  TempDir dir;
  const std::string fixed = dir.path("fixed.onnx");
  const std::string html = case_study_html(dir, {"--fix", "--fixed-model", fixed});
  const HtmlCheck c = check_html(html);
  INFO(errors_of(c));
  CHECK(c.errors.empty());
  const CommandResult j =
      run_bpu_lint({example_model(), "--format", "json", "--fix", "--fixed-model", dir.path("fixed2.onnx")});
  const auto results = nlohmann::json::parse(j.out)["models"][0]["fixed_model"]["results"];
  REQUIRE(results.size() == 3);
  for (const auto& res : results) {
    REQUIRE(res["applied"] == true);
    auto shape_text = [](const nlohmann::json& dims) {
      std::string s;
      for (const auto& d : dims) s += (s.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
      return s;
    };
    std::string inputs;
    for (const auto& s : res["proof_input_shapes"]) inputs += (inputs.empty() ? "" : " and ") + shape_text(s);
    const std::string proof = "fixed with " + res["fix"].get<std::string>() + "; proven on random inputs " + inputs +
                              " (seed " + std::to_string(res["seed"].get<uint64_t>()) +
                              "): max abs error 0; shapes checked at " + shape_text(res["input_shape"]);
    INFO(proof);
    CHECK(html.find(proof) != std::string::npos);
  }
  // Before: the original node (on the CPU, in its island); after: the six replacement
  // nodes of convtranspose2d, on the BPU in the re-lint.
  CHECK(count(html, "<figcaption>before</figcaption>") == 3);
  CHECK(count(html, "<figcaption>after (placement in the re-lint)</figcaption>") == 3);
  CHECK(c.tag("svg") == 1 + 3 + 3);
  const std::string after = between(html, "<figcaption>after", "</figure>");
  CHECK(count(after, "class=\"node node&#45;bpu\"") == 6);
  CHECK(after.find("ConvTranspose_fix_convtranspose2d") != std::string::npos);
  CHECK(after.find("node&#45;cpu") == std::string::npos);
  CHECK(html.find("Re-lint of the fixed model") != std::string::npos);
  CHECK(html.find("Findings after the fix (0)") != std::string::npos);
}

TEST_CASE("html and dot reports: hostile names are shown, never interpreted") {
  TempDir dir;
  static const char kEvil[] = "\"><script>alert(1)</script>&amp;\n<!--\xff\xfe";
  const std::string evil_node(kEvil, sizeof kEvil - 1);
  const std::string evil_input = "x\" onmouseover=\"alert(2)";
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 2, 3, 3] X) => (float[1, 2, 10, 6, 6] Y)
<float[2, 2, 5, 2, 2] W = )" + zeros(80) + R"(>
{
  T = ConvTranspose <kernel_shape = [5, 2, 2], strides = [5, 2, 2]> (X, W)
  Y = Relu (T)
}
)");
  auto* g = m.mutable_graph();
  g->mutable_node(0)->set_name(evil_node);
  g->mutable_node(1)->set_name("relu\\\"}; digraph x {");
  g->mutable_input(0)->set_name(evil_input);
  g->mutable_node(0)->set_input(0, evil_input);
  const std::string path = save_model(dir, "evil.onnx", m);

  const CommandResult h = run_bpu_lint({path, "--format", "html"});
  INFO(h.err);
  CHECK(h.exit_code == 1);
  const HtmlCheck c = check_html(h.out);
  INFO(errors_of(c));
  CHECK(c.errors.empty());
  CHECK(h.out.find("<script>alert") == std::string::npos);
  CHECK(h.out.find("onmouseover=\"") == std::string::npos);
  CHECK(c.tag("script") == 2);
  // In the findings table: the name as text, with the invalid bytes as U+FFFD and the newline visible.
  CHECK(h.out.find("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;\\x0a&lt;!--\xef\xbf\xbd\xef\xbf\xbd") !=
        std::string::npos);
  // In the graph (Graphviz's SVG): the same text, escaped by Graphviz.
  const std::string svg = between(h.out, "<svg", "</svg>");
  CHECK(svg.find("&lt;script&gt;alert(1)") != std::string::npos);
  CHECK(svg.find("relu\\&quot;}; digraph x {") != std::string::npos);

  const CommandResult d = run_bpu_lint({path, "--format", "dot"});
  CHECK(d.exit_code == 1);
  std::string layout, error;
  INFO(d.out);
  CHECK(layout_svg(d.out, layout, error));
  CHECK(error.empty());
  CHECK(layout.find("&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;\\x0a") != std::string::npos);
  CHECK(count(d.out, "\ndigraph ") == 1);  // the node name did not open a graph
}

TEST_CASE("dot report: one digraph per model, placement colours and CPU islands as clusters") {
  TempDir dir;
  const CommandResult d = run_bpu_lint({example_model(), "--format", "dot", "-o", dir.path("g.dot")});
  CHECK(d.exit_code == 1);
  const std::string dot = read_file(dir.path("g.dot"));
  CHECK(count(dot, "\ndigraph ") == 1);
  CHECK(count(dot, "subgraph cluster_") == 3);
  CHECK(count(dot, "class=\"node-cpu flagged\"") == 3);
  CHECK(count(dot, "fillcolor=\"" + std::string(placement_style(Placement::Folded).fill) + "\"") == 6);
  CHECK(count(dot, "fillcolor=\"" + std::string(placement_style(Placement::Bpu).fill) + "\"") == 1);
  CHECK(count(dot, " -> ") == 11);
  std::string svg, error;
  CHECK(layout_svg(dot, svg, error));
  CHECK(count(svg, "class=\"cluster island\"") == 3);
  // After --fix, the fixed model's graph follows as a second digraph.
  const CommandResult f =
      run_bpu_lint({example_model(), "--format", "dot", "--fix", "--fixed-model", dir.path("fixed.onnx")});
  CHECK(f.exit_code == 0);
  CHECK(count(f.out, "\ndigraph ") == 2);
  CHECK(count(between(f.out, "after --fix", "\n}"), "subgraph cluster_") == 0);
}

TEST_CASE("html report of several models, one unreadable: each gets a section, the file stays well-formed") {
  TempDir dir;
  write_file(dir.path("broken.onnx"), "not a model");
  const CommandResult r = run_bpu_lint(
      {example_model(), dir.path("broken.onnx"), BPULINT_SOURCE_DIR "/tests/exports/occupancy_static.onnx", "--format", "html"});
  CHECK(r.exit_code == 2);
  const HtmlCheck c = check_html(r.out);
  INFO(errors_of(c));
  CHECK(c.errors.empty());
  CHECK(c.ids.count("m0") == 1);
  CHECK(c.ids.count("m1") == 1);
  CHECK(c.ids.count("m2") == 1);
  CHECK(c.tag("svg") == 2);
  CHECK(r.out.find("<nav class=\"toc\">") != std::string::npos);
  CHECK(between(r.out, "id=\"m1\"", "</section>").find("class=\"error-line\">error: not an ONNX model") !=
        std::string::npos);
  // Ids stay unique across models: each model's graph has its own prefix.
  CHECK(c.ids.count("m0_n0") == 1);
  CHECK(c.ids.count("m2_n0") == 1);
}

TEST_CASE("report graph: a small model is drawn whole") {
  const ModelReport r = lint_model(example_model(), platform("j6p"), {});
  REQUIRE(r.ok);
  const ReportGraph g = build_report_graph(r, {}, GraphOptions{});
  CHECK_FALSE(g.collapsed);
  CHECK(g.items.size() == 10 + 2);  // the nodes, the input and the output
  CHECK(g.edges.size() == 11);
  CHECK(g.clusters.size() == 3);
  for (size_t i = 0; i < r.facts.nodes.size(); ++i) CHECK(g.item_of_node[i] >= 0);
}

TEST_CASE("report graph: a big model is collapsed around its CPU islands, within the layout budget") {
  const ModelReport r = lint_text(chain_model(300, 60), "j6p");  // 600 Conv/Relu + 5 x 4 nodes
  REQUIRE(r.ok);
  REQUIRE(r.facts.nodes.size() == 621);
  REQUIRE(r.summary.cpu_islands == 5);
  const std::vector<long> islands = cpu_islands(r.facts, r.placement);

  const ReportGraph g = build_report_graph(r, {}, GraphOptions{});
  CHECK(g.collapsed);
  CHECK(g.context_hops == kGraphContextHops);
  CHECK(g.regions == 5);
  CHECK(g.regions_drawn == 5);
  size_t boxed = 0, drawn = 0, boxes = 0;
  for (const auto& item : g.items) {
    if (item.kind == GraphItem::Kind::Collapsed) {
      ++boxes;
      boxed += item.hidden;
      size_t sum = 0;
      for (size_t n : item.counts) sum += n;
      CHECK(sum == item.hidden);
    }
    if (item.kind == GraphItem::Kind::Node) ++drawn;
  }
  CHECK(boxes == 6);  // the runs before, between and after the five islands
  CHECK(drawn + boxed + g.side_nodes_left_out == r.facts.nodes.size());
  CHECK(drawn == 5 * 5);  // each ConvTranspose with two hops each way
  size_t island_clusters = 0;
  for (const auto& cl : g.clusters) island_clusters += cl.kind == GraphCluster::Kind::Island;
  CHECK(island_clusters == 5);
  for (size_t i = 0; i < r.facts.nodes.size(); ++i) {
    REQUIRE(g.item_of_node[i] >= 0);
    const GraphItem& item = g.items[static_cast<size_t>(g.item_of_node[i])];
    if (islands[i] >= 0) {
      CHECK(item.kind == GraphItem::Kind::Node);
      CHECK(g.clusters[static_cast<size_t>(item.cluster)].number == islands[i]);
      CHECK(item.finding >= 0);
      CHECK(item.worst == Severity::Error);
    }
  }
  std::string svg, error;
  CHECK(layout_svg(graph_dot(r, g, DotStyle{}), svg, error));

  // A smaller budget costs context first...
  GraphOptions tight;
  tight.budget = 30;
  const ReportGraph less = build_report_graph(r, {}, tight);
  CHECK(less.context_hops < kGraphContextHops);
  CHECK(less.regions_drawn == 5);
  CHECK(less.items.size() <= 30);
  // ...then the last regions.
  tight.budget = 12;
  const ReportGraph least = build_report_graph(r, {}, tight);
  CHECK(least.context_hops == 0);
  CHECK(least.regions_drawn < least.regions);
  CHECK(least.items.size() <= 12);
  CHECK(layout_svg(graph_dot(r, least, DotStyle{}), svg, error));

  // A model this size under the full limit is drawn whole.
  GraphOptions wide;
  wide.full_nodes = 1000;
  CHECK_FALSE(build_report_graph(r, {}, wide).collapsed);
}

namespace {

// Every item in one piece, no piece over the bound, and every edge between
// two pieces shown at both ends (as a stub of its own or inside a summary).
void check_pieces(const ReportGraph& g, const GraphPieces& p, size_t max_nodes) {
  REQUIRE(p.piece_of_item.size() == g.items.size());
  std::vector<int> seen(g.items.size(), 0);
  for (size_t k = 0; k < p.pieces.size(); ++k) {
    CHECK(p.pieces[k].nodes() <= max_nodes);
    CHECK_FALSE(p.pieces[k].items.empty());
    for (size_t i : p.pieces[k].items) {
      ++seen[i];
      CHECK(p.piece_of_item[i] == static_cast<long>(k));
    }
  }
  for (int s : seen) REQUIRE(s == 1);
  std::map<std::pair<size_t, size_t>, int> stubbed;  // (piece, edge) -> stubs showing it
  for (size_t k = 0; k < p.pieces.size(); ++k) {
    for (const GraphStub& st : p.pieces[k].stubs) {
      for (size_t e : st.edges) {
        ++stubbed[{k, e}];
        const size_t far = st.incoming ? g.edges[e].from : g.edges[e].to;
        CHECK(std::count(st.pieces.begin(), st.pieces.end(), static_cast<size_t>(p.piece_of_item[far])) == 1);
      }
    }
  }
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const auto a = static_cast<size_t>(p.piece_of_item[g.edges[e].from]);
    const auto b = static_cast<size_t>(p.piece_of_item[g.edges[e].to]);
    if (a == b) continue;
    CHECK(stubbed[{a, e}] == 1);
    CHECK(stubbed[{b, e}] == 1);
  }
}

}  // namespace

TEST_CASE("report graph pieces: no Graphviz call lays out more than the bound, whatever the graph's shape") {
  // A generated 20,000-item graph: a chain with skip connections every
  // third item, a hub (an input read by every tenth item), a few edges back.
  ReportGraph g;
  const size_t n = 20000;
  g.items.resize(n);
  g.items[0].kind = GraphItem::Kind::Input;
  g.items[n - 1].kind = GraphItem::Kind::Output;
  auto link = [&](size_t a, size_t b) {
    GraphEdge e;
    e.from = a;
    e.to = b;
    g.edges.push_back(e);
  };
  for (size_t i = 1; i + 1 < n; ++i) {
    link(i, i + 1);
    if (i % 3 == 0 && i + 7 < n) link(i, i + 7);
    if (i % 10 == 0) link(0, i);
    if (i % 997 == 0) link(i, i - 500);
  }
  for (size_t bound : {size_t{4}, size_t{25}, kLayoutPieceNodes}) {
    CAPTURE(bound);
    const GraphPieces p = split_report_graph(g, bound);
    check_pieces(g, p, bound);
    CHECK(p.pieces.size() <= 4 * n / (bound - 2));  // cuts do not shrink pieces to nothing
  }
  // The hub alone has 1,999 consumers: its stubs are summarised to fit.
  const GraphPieces p = split_report_graph(g, 40);
  check_pieces(g, p, 40);
  const GraphPiece& hub = p.pieces[static_cast<size_t>(p.piece_of_item[0])];
  const bool summarised = std::any_of(hub.stubs.begin(), hub.stubs.end(), [](const GraphStub& s) { return s.other < 0; });
  CHECK(summarised);
}

TEST_CASE("report graph pieces: a model's graph laid out piece by piece, stacked in one SVG with unique ids") {
  const ModelReport r = lint_text(chain_model(300, 60), "j6p");
  REQUIRE(r.ok);
  GraphOptions whole;
  whole.full_nodes = 1000;
  const ReportGraph g = build_report_graph(r, {}, whole);
  REQUIRE(g.items.size() == 623);
  const size_t bound = 60;
  const GraphPieces p = split_report_graph(g, bound);
  check_pieces(g, p, bound);
  REQUIRE(p.pieces.size() > 10);
  DotStyle style;
  style.id_prefix = "m0_";
  std::vector<std::string> dots;
  size_t drawn = 0;
  for (size_t k = 0; k < p.pieces.size(); ++k) {
    dots.push_back(piece_dot(r, g, p, k, style));
    std::string svg, error;
    REQUIRE(layout_svg(dots.back(), svg, error));
    // What Graphviz laid out in this call: one <g class="node..."> per node.
    size_t nodes = 0;
    for (size_t at = svg.find("class=\"node"); at != std::string::npos; at = svg.find("class=\"node", at + 1)) ++nodes;
    CHECK(nodes == p.pieces[k].nodes());
    CHECK(nodes <= bound);
    drawn += p.pieces[k].items.size();
  }
  CHECK(drawn == g.items.size());
  std::string svg, error;
  REQUIRE(layout_pieces_svg(dots, svg, error));
  CHECK(svg.find("part " + std::to_string(p.pieces.size()) + " of " + std::to_string(p.pieces.size())) !=
        std::string::npos);
  std::set<std::string> ids;
  size_t islands = 0;
  for (size_t at = svg.find(" id=\""); at != std::string::npos; at = svg.find(" id=\"", at + 1)) {
    const size_t end = svg.find('"', at + 5);
    const std::string id = svg.substr(at + 5, end - at - 5);
    CHECK_MESSAGE(ids.insert(id).second, "duplicate id " << id);
    islands += id.rfind("m0_island", 0) == 0 && id.find("_part") == std::string::npos;
  }
  CHECK(islands == 5);
  CHECK(svg.find("class=\"node stub\"") != std::string::npos);
  // One piece: exactly the single layout.
  std::string one, single;
  REQUIRE(layout_pieces_svg({dots[0]}, one, error));
  REQUIRE(layout_svg(dots[0], single, error));
  CHECK(one == single);
}

TEST_CASE("graphviz: a graph it cannot read is an error message, not a crash") {
  std::string svg, error;
  CHECK_FALSE(layout_svg("digraph { a -> ", svg, error));
  CHECK(error.find("Graphviz cannot read the graph") == 0);
  CHECK(svg.empty());
  CHECK(layout_svg("digraph { a -> b }", svg, error));
  CHECK(svg.find("<svg") != std::string::npos);
}

// Graphviz's default ids for named objects are the addresses of their
// interned names, and the dot layout emits clusters in id order, so the
// SVG followed the heap. Freed chunks of the names' sizes, handed back by
// malloc in falling address order, made the old order the reverse of the DOT's.
TEST_CASE("graphviz: clusters come out in the DOT's order, whatever the heap holds") {
  std::string dot = "digraph {\n";
  for (int k = 0; k < 12; ++k) {
    const std::string id = std::to_string(k);
    dot += "subgraph cluster_" + id + " { label=\"C" + id + "\"; n" + id + " }\n";
    if (k > 0) dot += "n" + std::to_string(k - 1) + " -> n" + id + "\n";
  }
  dot += "}\n";
  std::string first, svg, error;
  REQUIRE(layout_svg(dot, first, error));
  for (size_t size = 24; size <= 96; size += 8) {
    std::vector<char*> blocks;
    for (int k = 0; k < 64; ++k) blocks.push_back(static_cast<char*>(std::malloc(size)));
    std::sort(blocks.begin(), blocks.end());
    for (char* b : blocks) std::free(b);  // rising, so malloc returns them falling
  }
  REQUIRE(layout_svg(dot, svg, error));
  CHECK(svg == first);
  size_t at = 0;
  for (int k = 0; k < 12; ++k) {
    const size_t found = svg.find("<title>cluster_" + std::to_string(k) + "</title>");
    REQUIRE(found != std::string::npos);
    CHECK_MESSAGE(found > at, "cluster_" << k << " is out of the DOT's order");
    at = found;
  }
}

TEST_CASE("report graph: subgraph bodies are clusters hanging off their owner, islands inside them") {
  TempDir dir;
  const std::string path = save_model(dir, "if.onnx", model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (bool C, float[1, 2, 2, 3, 3] X) => (float[1, 2, 10, 6, 6] Y)
<float[2, 2, 5, 2, 2] W = )" + zeros(80) + R"(>
{
  Z = Relu (X)
  Y = If (C) <
    then_branch = t () => (float[1, 2, 10, 6, 6] A) {
      A = ConvTranspose <kernel_shape = [5, 2, 2], strides = [5, 2, 2]> (Z, W)
    },
    else_branch = e () => (float[1, 2, 10, 6, 6] B) {
      B0 = ConvTranspose <kernel_shape = [5, 2, 2], strides = [5, 2, 2]> (Z, W)
      B = Relu (B0)
    }>
}
)"));
  const ModelReport r = lint_model(path, platform("j6p"), {});
  REQUIRE(r.ok);
  REQUIRE(r.facts.nodes.size() == 5);  // Relu, If, then: ConvTranspose, else: ConvTranspose, Relu
  const ReportGraph g = build_report_graph(r, {}, GraphOptions{});
  size_t bodies = 0, islands = 0, owner_edges = 0, outer_reads = 0;
  for (const auto& cl : g.clusters) {
    if (cl.kind == GraphCluster::Kind::Subgraph) ++bodies;
    if (cl.kind == GraphCluster::Kind::Island) {
      ++islands;
      REQUIRE(cl.parent >= 0);
      CHECK(g.clusters[static_cast<size_t>(cl.parent)].kind == GraphCluster::Kind::Subgraph);
    }
  }
  CHECK(bodies == 2);
  CHECK(islands == 2);
  for (const auto& e : g.edges) {
    if (e.owner) {
      ++owner_edges;
      CHECK(r.facts.nodes[static_cast<size_t>(g.items[e.from].node)].op_type == "If");
    }
    // The bodies read Z from the main graph.
    if (!e.owner && g.items[e.from].kind == GraphItem::Kind::Node && g.items[e.to].kind == GraphItem::Kind::Node &&
        r.facts.nodes[static_cast<size_t>(g.items[e.to].node)].graph_id != 0 &&
        r.facts.nodes[static_cast<size_t>(g.items[e.from].node)].graph_id == 0) {
      ++outer_reads;
    }
  }
  CHECK(owner_edges == 2);
  CHECK(outer_reads == 2);
  const CommandResult h = run_bpu_lint({path, "--format", "html"});
  const HtmlCheck c = check_html(h.out);
  INFO(errors_of(c));
  CHECK(c.errors.empty());
  CHECK(count(h.out, "class=\"cluster body\"") == 2);
  CHECK(count(h.out, "class=\"cluster island\"") == 2);
}
