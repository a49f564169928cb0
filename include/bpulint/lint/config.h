// Project configuration (.bpu-lint.yaml) and baselines, as parsed: what a team
// decides about the findings. settings.h resolves them per model and
// triage.h applies them after evaluation; rules never see any of this.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bpulint/rules/rule_db.h"
#include "bpulint/rules/severity.h"
#include "bpulint/model/source_location.h"

namespace bpulint {

struct Waiver {
  std::string rule;    // rule id or glob (BPU11*)
  std::string node;    // glob on the node name, its display name or its graph path
  std::string reason;  // required
  std::string model;   // glob on the model path relative to the config's folder; "" = every model
  SourceLocation where;
};

using InputShapes = std::map<std::string, std::vector<int64_t>>;

// Settings for the models a glob selects (ruff's per-file settings, ESLint's
// overrides): later entries win over earlier ones, the command line over all.
struct Override {
  std::vector<std::string> models;  // globs relative to the config file's folder
  std::optional<std::string> platform;
  InputShapes input_shapes;
  std::optional<std::vector<std::string>> select, ignore;
  std::map<std::string, Severity> severity;
  SourceLocation where;
};

// What applies to one model once the configuration's layers are resolved.
struct ModelSettings {
  std::optional<std::string> platform;
  std::vector<std::string> select, ignore;
  std::map<std::string, Severity> severity;
  InputShapes input_shapes;
  std::map<std::string, std::string> input_shape_sources;  // name -> where the pin was set
};

struct Config {
  std::string path;                          // "" = no configuration file
  std::optional<std::string> platform;
  std::vector<std::string> select;           // rule ids or prefixes; empty = all
  std::vector<std::string> ignore;           // rule ids or prefixes
  std::map<std::string, Severity> severity;  // rule id -> level
  std::vector<std::string> rule_paths;       // extra rule files or folders, resolved against the config's folder
  std::vector<Waiver> waivers;
  InputShapes input_shapes;                  // for every model that has such an input
  std::vector<Override> overrides;
  std::vector<std::string> excludes;         // exclude: globs (as --exclude, relative to `folder`) folder walks leave out
  std::string folder;                        // absolute folder of the file: globs are relative to it

  // The settings of one model: the top level, then every override whose
  // globs match the model's path (relative to `folder`), in file order.
  ModelSettings settings_for(const std::string& model_path) const;
  // The model's path relative to the configuration's folder ("" when outside it).
  std::string relative_path(const std::string& model_path) const;
};

// Rule ids match case-insensitively: selectors are kept upper-cased.
std::string upper_id(std::string id);
// A waiver's rule glob against a rule id, ignoring case.
bool rule_glob_matches(const std::string& pattern, const std::string& id);
// A model or node glob (`*` crosses '/'), case-sensitive.
bool glob_matches(const std::string& pattern, const std::string& text);

constexpr const char* kConfigFileName = ".bpu-lint.yaml";

// The nearest .bpu-lint.yaml in the model's folder or above; "" when none.
std::string find_config(const std::string& model_path);

// Strict: unknown keys, bad levels and waivers without a reason are errors
// with file:line:col.
bool load_config(const std::string& path, Config& config, std::string& error);

// Findings known at baseline time, keyed by model, rule, node and op type.
// The node is its graph path + its name, or op type and output names when
// unnamed (torch_jit/Relu:47), so adding a node leaves the others' keys alone.
// Schema 1 files keyed unnamed nodes by their index (torch_jit/Relu_3); they
// are still read, and matched that way.
constexpr int kBaselineSchema = 2;
struct Baseline {
  struct Entry {
    std::string model, rule, node, op;
    size_t count = 0;
  };
  std::string path;
  int schema_version = kBaselineSchema;
  std::vector<Entry> entries;
};

bool load_baseline(const std::string& path, Baseline& baseline, std::string& error);

}  // namespace bpulint
