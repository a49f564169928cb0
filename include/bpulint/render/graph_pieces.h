// A hard bound on the layout work of one picture. Graphviz's dot layout costs
// more than linearly in the nodes of one call (crossing minimisation ranks
// against ranks), so the HTML report never hands it more than
// kLayoutPieceNodes nodes at once: the report graph is cut, in graph order,
// into pieces laid out one by one and stacked top to bottom in one SVG. An
// edge between two pieces ends at a stub in each ("from part 1: Conv 'x'",
// "to part 3: ..."), which links to the node at its other end.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bpulint/render/report_graph.h"

namespace bpulint {

// Nodes (items and stubs) per Graphviz call: a piece this size lays out in
// tens of milliseconds (bench/README.md, "HTML report layout bound").
constexpr size_t kLayoutPieceNodes = 240;

// An edge's far end, outside the piece.
struct GraphStub {
  long other = -1;               // the item at the far end; -1 = several, summarised
  bool incoming = false;         // the far end feeds this piece (else it consumes from it)
  std::vector<size_t> pieces;    // the far ends' pieces, ascending
  std::vector<size_t> edges;     // ReportGraph::edges it stands in for
  size_t far_items = 1;          // distinct far items (more than one only when summarised)
};

struct GraphPiece {
  std::vector<size_t> items;     // in layout order
  std::vector<GraphStub> stubs;
  size_t nodes() const { return items.size() + stubs.size(); }  // what one Graphviz call lays out
};

struct GraphPieces {
  std::vector<GraphPiece> pieces;
  std::vector<long> piece_of_item;  // item -> its piece
};

// Cuts `graph` into pieces of at most `max_nodes` nodes each (at least 4),
// items and stubs counted. Inputs sit before their first consumer and
// outputs after their producer; each cut falls where the fewest edges cross,
// within the second half of what fits.
GraphPieces split_report_graph(const ReportGraph& graph, size_t max_nodes);

// The DOT of one piece: its items, the clusters they are in, the edges
// between them and its stubs. Ids stay unique across the pieces of a graph.
std::string piece_dot(const ModelReport& report, const ReportGraph& graph, const GraphPieces& pieces, size_t piece,
                      const DotStyle& style);

// Lays out each piece and stacks them in one standalone SVG document (one
// piece: exactly layout_svg's output). False with a one-line reason.
bool layout_pieces_svg(const std::vector<std::string>& dots, std::string& svg, std::string& error);

}  // namespace bpulint
