// The config half of --fix: the user's compile config with the config fix
// kinds' node_info entries added, every other line as written (comments, key
// order and quoting kept: only the node_info block is rewritten, or added at
// the end of model_parameters).
#pragma once

#include <string>
#include <vector>

#include "bpulint/fix/config_fix.h"
#include "bpulint/lint/hb_config.h"

namespace bpulint {

// `text` (the config at `path`) with `edits` merged into
// model_parameters.node_info: an edit's fields replace the entry's, the
// entry's other fields and the other entries stay. Then proven: the result
// re-reads as a compile config, every edit reads back as set, and the file
// minus node_info equals the original. False with a one-line reason (the
// caller names the file).
bool fix_hb_config_text(const std::string& text, const std::string& path, const std::vector<ConfigEdit>& edits,
                        std::string& out, std::string& error);

// The view of a config's nodes the config fix kinds plan from.
ConfigNodes config_nodes(const HbConfig& config);

// "<config stem>.fixed.yaml" in `folder`.
std::string default_fixed_config_path(const std::string& config_path, const std::string& folder);

}  // namespace bpulint
