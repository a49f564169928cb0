// Human output: compiler-style diagnostics and a per-model summary.
#pragma once

#include <ostream>

#include "bpulint/lint.h"

namespace bpulint {

struct TextOptions {
  bool color = false;
  bool concise = false;  // one line per diagnostic, no detail lines
};

void render_text(std::ostream& out, const ModelReport& report, const Platform& platform, const TextOptions& options);

// "file: 13 nodes: 6 on BPU, ..." (the last line of a model's text output).
std::string summary_line(const ModelReport& report);

}  // namespace bpulint
