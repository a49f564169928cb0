// Graphviz, as a library: DOT text in, laid out with the `dot` engine, SVG
// out. Only the report formats call it (--format html), so linting never
// pays for it.
#pragma once

#include <string>

namespace bpulint {

// Lays out `dot` (one graph) and renders it as a standalone SVG document.
// Returns false with a one-line reason (a syntax error, a layout failure).
// Graphviz keeps global state, so calls are serialised.
bool layout_svg(const std::string& dot, std::string& svg, std::string& error);

}  // namespace bpulint
