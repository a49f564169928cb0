// The --fix and --pytorch-snippet steps of a run, per model: what is written
// and what the user is told about it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "bpulint/lint/lint.h"
#include "bpulint/render/render_text.h"
#include "lint_run.h"
#include "model_run.h"

namespace bpulint {

// "nothing to fix", or which error findings offer no fix on the platform and
// that the PyTorch source must change.
void say_nothing_to_fix(std::ostream& log, const ModelReport& report, const Platform& platform);

// --fix on one model: rewrite, prove, write, then lint the written model with
// the same plan (without the baseline: its entries name the original's path).
// Progress goes to `log`; the re-lint's report to `text_out` (null for the
// machine formats, which render it from m.fixed). False after an error.
bool fix_and_relint(ModelRun& m, const RunOptions& options, std::ostream& log, std::ostream* text_out,
                    const TextOptions& text);

// Writes the PyTorch replacements of the report's fixable layers to
// `snippet_path` (never over one of `inputs`). False after printing an error.
bool write_pytorch_snippet(std::ostream& log, const ModelReport& report, const std::string& strategy,
                           const std::string& snippet_path, const std::vector<std::string>& inputs);

}  // namespace bpulint
