// The graph reports: --format html (one self-contained file: per model the
// summary chart, the graph laid out by Graphviz and coloured by placement,
// findings, ranked fixes, --fix results with before/after pictures, and the
// rule cards) and --format dot (the same graphs as DOT, for your own tools).
// Deterministic like the machine formats: no timestamps, no absolute paths.
#pragma once

#include <string>

#include "bpulint/render/render_machine.h"

namespace bpulint {

std::string render_html(const RunInfo& run);
std::string render_dot(const RunInfo& run);

}  // namespace bpulint
