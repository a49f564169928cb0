// Human output: compiler-style diagnostics and a per-model summary.
#pragma once

#include <cstdint>
#include <ostream>

#include "bpulint/fix/fix_result.h"
#include "bpulint/lint/lint.h"

namespace bpulint {

struct TextOptions {
  bool color = false;
  bool concise = false;  // one line per diagnostic, no detail lines
  bool show_waived = false;  // list waived and baselined findings too, marked as such
  Severity min_severity = Severity::Note;  // list only findings at or above this level
};

void render_text(std::ostream& out, const ModelReport& report, const Platform& platform, const TextOptions& options);

// "file: 13 nodes: 6 on BPU, ..." (the last line of a model's text output).
std::string summary_line(const ModelReport& report);

// What --fix did, node by node, and where the result went.
void render_fix_run(std::ostream& out, const ModelReport& report, const FixRun& run, const TextOptions& options);

// "intermediate channels 320, 5.6 MiB intermediate, 94.4M MACs, moves 2.6M elements"
std::string cost_text(const FixCost& cost);

// 1234567 -> "1.2M", 1536 -> "1.5 KiB"; "?" when negative (unknown). Fix costs
// are for comparing options, not for accounting; the HTML report uses them too.
std::string human(int64_t v);
std::string human_bytes(int64_t v);

}  // namespace bpulint
