#include "bpulint/render/graph_pieces.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <utility>

#include "bpulint/render/graphviz_layout.h"

namespace bpulint {
namespace {

// The order pieces are cut in: topological, so that edges between pieces
// run downwards, ties (and cycles, which collapsed boxes can close) broken
// by graph order; an input goes just before its first consumer and an
// output just after its producer (the report graph lists them first and
// last), so they land in the piece they belong to.
std::vector<size_t> layout_order(const ReportGraph& g) {
  const size_t n = g.items.size();
  constexpr uint64_t kUnset = ~uint64_t{0};
  std::vector<uint64_t> key(n, kUnset);
  for (const auto& e : g.edges) {
    if (g.items[e.from].kind == GraphItem::Kind::Input && g.items[e.to].kind != GraphItem::Kind::Input) {
      key[e.from] = std::min(key[e.from], 3 * static_cast<uint64_t>(e.to));
    }
    if (g.items[e.to].kind == GraphItem::Kind::Output && g.items[e.from].kind != GraphItem::Kind::Output &&
        key[e.to] == kUnset) {
      key[e.to] = 3 * static_cast<uint64_t>(e.from) + 2;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (key[i] == kUnset) key[i] = 3 * static_cast<uint64_t>(i) + 1;
  }
  std::vector<std::vector<size_t>> next(n);
  std::vector<size_t> waiting(n, 0);  // unplaced producers
  for (const auto& e : g.edges) {
    next[e.from].push_back(e.to);
    ++waiting[e.to];
  }
  using Entry = std::pair<uint64_t, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  std::vector<size_t> by_key(n);  // to force the next item when a cycle leaves none ready
  for (size_t i = 0; i < n; ++i) {
    by_key[i] = i;
    if (waiting[i] == 0) ready.push({key[i], i});
  }
  std::sort(by_key.begin(), by_key.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  std::vector<char> placed(n, 0);
  std::vector<size_t> order;
  order.reserve(n);
  size_t forced = 0;
  while (order.size() < n) {
    size_t item = n;
    while (!ready.empty() && item == n) {
      if (!placed[ready.top().second]) item = ready.top().second;
      ready.pop();
    }
    while (item == n) {
      if (!placed[by_key[forced]]) item = by_key[forced];
      ++forced;
    }
    placed[item] = 1;
    order.push_back(item);
    for (size_t to : next[item]) {
      if (--waiting[to] == 0 && !placed[to]) ready.push({key[to], to});
    }
  }
  return order;
}

// The far ends of the edges leaving a growing piece, by (item, direction),
// with how many edges reach each: their count is the piece's stubs.
class Frontier {
 public:
  Frontier(const ReportGraph& g, const std::vector<std::vector<size_t>>& incident, const std::vector<size_t>& position)
      : g_(g), incident_(incident), position_(position) {}

  void reset(size_t start) {
    start_ = start;
    end_ = start;
    far_.clear();
  }
  // Adds the item at position end_ (or takes it back out).
  void add(size_t item) { apply(item, +1), ++end_; }
  void remove(size_t item) { --end_, apply(item, -1); }
  size_t stubs() const { return far_.size(); }
  size_t items() const { return end_ - start_; }

 private:
  bool inside(size_t item) const { return position_[item] >= start_ && position_[item] < end_; }

  void bump(size_t item, bool incoming, int by) {
    const auto key = std::make_pair(item, incoming);
    const long count = (far_[key] += by);
    if (count == 0) far_.erase(key);
  }

  void apply(size_t item, int sign) {
    for (size_t e : incident_[item]) {
      const GraphEdge& ed = g_.edges[e];
      const bool out = ed.from == item;
      const size_t other = out ? ed.to : ed.from;
      if (inside(other)) {
        // The edge was a stub of `other`'s (`item` at its far end); now it is inside the piece.
        bump(item, /*incoming=*/out, -sign);
      } else {
        bump(other, /*incoming=*/!out, sign);
      }
    }
  }

  const ReportGraph& g_;
  const std::vector<std::vector<size_t>>& incident_;
  const std::vector<size_t>& position_;
  size_t start_ = 0, end_ = 0;
  std::map<std::pair<size_t, bool>, long> far_;
};

// The stubs of a cut piece; beyond what the bound leaves room for, the last
// ones in each direction are merged into one summary stub.
std::vector<GraphStub> piece_stubs(const ReportGraph& g, const std::vector<size_t>& items,
                                   const std::vector<std::vector<size_t>>& incident,
                                   const std::vector<long>& piece_of_item, size_t piece, size_t room) {
  std::vector<size_t> crossing;
  for (size_t i : items) {
    for (size_t e : incident[i]) crossing.push_back(e);
  }
  std::sort(crossing.begin(), crossing.end());  // graph order of the edges, each once
  crossing.erase(std::unique(crossing.begin(), crossing.end()), crossing.end());
  std::map<std::pair<bool, size_t>, GraphStub> by_far;  // incoming first, then by far item
  for (size_t e : crossing) {
    const GraphEdge& ed = g.edges[e];
    const bool from_here = piece_of_item[ed.from] == static_cast<long>(piece);
    const bool to_here = piece_of_item[ed.to] == static_cast<long>(piece);
    if (from_here == to_here) continue;
    const size_t far = from_here ? ed.to : ed.from;
    GraphStub& s = by_far[{!to_here, far}];
    s.other = static_cast<long>(far);
    s.incoming = to_here;
    s.pieces = {static_cast<size_t>(piece_of_item[far])};
    s.edges.push_back(e);
  }
  std::vector<GraphStub> stubs;
  for (auto& entry : by_far) stubs.push_back(std::move(entry.second));
  if (stubs.size() <= room) return stubs;
  // Keep room - 2 stubs, then at most one summary per direction.
  const size_t keep = room >= 2 ? room - 2 : 0;
  std::vector<GraphStub> out(stubs.begin(), stubs.begin() + static_cast<long>(keep));
  GraphStub summary[2];
  for (size_t k = keep; k < stubs.size(); ++k) {
    GraphStub& s = summary[stubs[k].incoming ? 0 : 1];
    if (s.edges.empty()) s.far_items = 0;
    s.other = -1;
    s.incoming = stubs[k].incoming;
    s.far_items += 1;
    s.edges.insert(s.edges.end(), stubs[k].edges.begin(), stubs[k].edges.end());
    for (size_t p : stubs[k].pieces) {
      if (std::find(s.pieces.begin(), s.pieces.end(), p) == s.pieces.end()) s.pieces.push_back(p);
    }
  }
  for (GraphStub& s : summary) {
    if (s.edges.empty()) continue;
    std::sort(s.pieces.begin(), s.pieces.end());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

GraphPieces split_report_graph(const ReportGraph& g, size_t max_nodes) {
  max_nodes = std::max<size_t>(max_nodes, 4);
  GraphPieces out;
  const size_t n = g.items.size();
  out.piece_of_item.assign(n, -1);
  if (n == 0) return out;
  const std::vector<size_t> order = layout_order(g);
  std::vector<size_t> position(n);
  for (size_t k = 0; k < n; ++k) position[order[k]] = k;
  std::vector<std::vector<size_t>> incident(n);
  for (size_t e = 0; e < g.edges.size(); ++e) {
    incident[g.edges[e].from].push_back(e);
    incident[g.edges[e].to].push_back(e);
  }
  Frontier frontier(g, incident, position);
  std::vector<size_t> stubs_after;  // stubs_after[k]: the stubs if the piece ended after its k+1-th item
  for (size_t start = 0; start < n;) {
    frontier.reset(start);
    stubs_after.clear();
    size_t end = start;
    while (end < n) {
      frontier.add(order[end]);
      if (frontier.items() > 1 && frontier.items() + frontier.stubs() > max_nodes) {
        frontier.remove(order[end]);
        break;
      }
      stubs_after.push_back(frontier.stubs());
      ++end;
    }
    // Cut where the fewest edges cross, among the second half of what fits
    // (the last item when the graph ends here).
    size_t cut = end;
    if (end < n) {
      const size_t fits = end - start;
      size_t best = fits;
      for (size_t len = fits; len >= (fits + 1) / 2 && len >= 1; --len) {
        if (stubs_after[len - 1] < stubs_after[best - 1]) best = len;
      }
      cut = start + best;
    }
    GraphPiece piece;
    for (size_t k = start; k < cut; ++k) {
      piece.items.push_back(order[k]);
      out.piece_of_item[order[k]] = static_cast<long>(out.pieces.size());
    }
    out.pieces.push_back(std::move(piece));
    start = cut;
  }
  for (size_t p = 0; p < out.pieces.size(); ++p) {
    GraphPiece& piece = out.pieces[p];
    const size_t room = piece.items.size() < max_nodes ? max_nodes - piece.items.size() : 0;
    piece.stubs = piece_stubs(g, piece.items, incident, out.piece_of_item, p, std::max<size_t>(room, 2));
  }
  return out;
}

namespace {

// "0.00 0.00 W H" -> W, H.
bool view_box(const std::string& svg, double& width, double& height) {
  const size_t at = svg.find("viewBox=\"");
  if (at == std::string::npos) return false;
  double x = 0, y = 0;
  return std::sscanf(svg.c_str() + at + 9, "%lf %lf %lf %lf", &x, &y, &width, &height) == 4;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

bool layout_pieces_svg(const std::vector<std::string>& dots, std::string& svg, std::string& error) {
  if (dots.size() == 1) return layout_svg(dots[0], svg, error);
  // Each piece's drawing: the lines inside its <svg> element.
  struct Part {
    std::string body;
    double width = 0, height = 0;
  };
  std::vector<Part> parts;
  for (const std::string& dot : dots) {
    std::string one;
    if (!layout_svg(dot, one, error)) return false;
    Part part;
    const size_t head = one.find("<svg");
    const size_t open = head == std::string::npos ? head : one.find('>', head);
    const size_t close = one.rfind("</svg>");
    if (open == std::string::npos || close == std::string::npos || close < open || !view_box(one, part.width, part.height)) {
      error = "Graphviz wrote an SVG without its <svg> element";
      return false;
    }
    part.body = one.substr(open + 1, close - open - 1);
    parts.push_back(std::move(part));
  }
  // Stacked top to bottom, centred, each under a "part k of n" caption.
  constexpr double kCaption = 16;
  double width = 0, height = 0;
  for (const Part& p : parts) width = std::max(width, p.width), height += kCaption + p.height;
  const std::string count = std::to_string(parts.size());
  svg = "<svg width=\"" + number(width) + "pt\" height=\"" + number(height) + "pt\"\n viewBox=\"0.00 0.00 " +
        number(width) + " " + number(height) +
        "\" xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n";
  double y = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const Part& p = parts[k];
    const double left = (width - p.width) / 2;
    svg += "<g class=\"graph-part\">\n<text x=\"" + number(left + 4) + "\" y=\"" + number(y + 11) +
           "\" font-family=\"Helvetica,sans-Serif\" font-size=\"9.00\" fill=\"#5f6873\">part " + std::to_string(k + 1) +
           " of " + count + "</text>\n";
    if (k > 0) {
      svg += "<path d=\"M4," + number(y + 1) + "H" + number(width - 4) +
             "\" stroke=\"#c3c9d0\" stroke-dasharray=\"4,3\" fill=\"none\"/>\n";
    }
    svg += "<g transform=\"translate(" + number(left) + " " + number(y + kCaption) + ")\">";
    // Only the first piece's graph <title> survives (inline_svg drops that one as the graph's name).
    std::string body = p.body;
    if (k > 0) {
      const size_t t = body.find("<title>");
      const size_t te = t == std::string::npos ? t : body.find("</title>\n", t);
      if (te != std::string::npos) body.erase(t, te + 9 - t);
    }
    svg += body + "</g>\n</g>\n";
    y += kCaption + p.height;
  }
  svg += "</svg>\n";
  return true;
}

}  // namespace bpulint
