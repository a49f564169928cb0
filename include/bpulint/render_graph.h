// The graph reports: --format dot (each model's graph as DOT, coloured by
// placement, CPU islands as clusters, for your own tools). Deterministic like
// the machine formats: no timestamps, no absolute paths.
#pragma once

#include <string>

#include "bpulint/render_machine.h"

namespace bpulint {

std::string render_dot(const RunInfo& run);

}  // namespace bpulint
