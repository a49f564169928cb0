// Every --format of `bpu-lint MODEL...`, listed once: the command line's
// choices come from here, and so does what renders each.
#pragma once

#include <string>
#include <vector>

#include "bpulint/render/render_machine.h"

namespace bpulint {

struct OutputFormat {
  const char* name;
  // Text formats are written model by model as each is linted; the others
  // are one document, rendered from the whole run at the end.
  bool text = false;
  std::string (*render)(const RunInfo& run, SarifProfile profile) = nullptr;  // nullptr for text formats
  bool relative_uris = false;  // names files relative to the repository root (RunInfo::sarif_root)
};

const std::vector<OutputFormat>& output_formats();
// nullptr for a name that is not a format.
const OutputFormat* find_output_format(const std::string& name);
std::vector<std::string> output_format_names();

}  // namespace bpulint
