// Turning the command line's inputs into model paths: files as given, folders
// walked for *.onnx the way ruff walks for *.py (hidden folders, venvs and
// node_modules skipped; .gitignore and .ignore honoured; --exclude and the
// configuration's `exclude:` leaving out what they match).
#pragma once

#include <string>
#include <vector>

namespace bpulint {

struct WalkOptions {
  std::vector<std::string> excludes;  // --exclude: against the path below the walked folder, or the name
  std::string config_file;            // --config: its `exclude:` applies everywhere
  bool isolated = false;              // --isolated: no configuration file is looked for
};

// Appends the models of `inputs`, in the order given (a folder's in sorted
// order), to `models`; a folder that cannot be searched or holds no model,
// and a broken *.onnx symlink, go to `errors` (one line each; the rest still
// runs). False, with `fatal`, when a configuration file cannot be read.
bool expand_inputs(const std::vector<std::string>& inputs, const WalkOptions& options,
                   std::vector<std::string>& models, std::vector<std::string>& errors, std::string& fatal);

}  // namespace bpulint
