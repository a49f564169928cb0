// Fix kinds that change the compile config instead of the model: the
// remedies the evidence gives as config lines (node_info entries for a
// Softmax X5 keeps on the CPU, int16 for the float nodes J6P sends to the
// CPU). Planned here from the findings and the config's own node entries;
// the lint stage's config writer adds them to a copy of the user's file.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bpulint/engine/diagnostic.h"
#include "bpulint/engine/facts.h"
#include "bpulint/fix/fix_catalog.h"

namespace bpulint {

// A node's node_info entry as the config has it ("" = not set).
struct ConfigNodeTypes {
  std::string on, input_type, output_type;
};
using ConfigNodes = std::map<std::string, ConfigNodeTypes>;  // by node name

// One node_info entry to set: these fields replace the config's, the
// entry's other fields are kept.
struct ConfigEdit {
  std::string node;
  std::vector<std::pair<std::string, std::string>> fields;  // e.g. {"ON", "BPU"}, {"InputType", "int8"}
};

// What a config remedy reads: the finding it settles, the model's facts,
// and the config's node entries.
struct ConfigFixInput {
  const ModelFacts& facts;
  const Diagnostic& finding;
  const ConfigNodes& config;
};

struct ConfigRemedy {
  // The edits that settle the finding, or false with why not.
  bool (*plan)(const ConfigFixInput& in, std::vector<ConfigEdit>& edits, std::string& why_not);
  // Where the remedy comes from and what it measured, said with every edit.
  const char* evidence;
};

// One config fix kind offered for one finding.
struct ConfigFixPlan {
  std::string kind;  // fix id
  std::string rule;  // the finding's rule id
  long node = -1;    // the finding's node; -1 for a model-level finding
  std::vector<ConfigEdit> edits;
  std::string why_not;  // "" when it applies
};

// For every shown error or warning finding whose rule offers config fix
// kinds: one plan per kind, in the rule's order, in finding order.
std::vector<ConfigFixPlan> plan_config_fixes(const ModelFacts& facts, const std::vector<Diagnostic>& diagnostics,
                                             const ConfigNodes& config);

// The plans a strategy picks, one per finding: "auto" the first that
// applies, else the kind with that id (a finding that does not offer it
// keeps none).
std::vector<const ConfigFixPlan*> choose_config_fixes(const std::vector<ConfigFixPlan>& plans,
                                                      const std::string& strategy);

// `edit` merged into `entries`: a new entry at the end, or its fields set on
// the entry of the same node (the entry's other fields kept).
void merge_config_edit(std::vector<ConfigEdit>& entries, const ConfigEdit& edit);

// The edits of `chosen`, merged by node in first-seen order (a later field
// of the same name wins).
std::vector<ConfigEdit> merge_config_edits(const std::vector<const ConfigFixPlan*>& chosen);

// The entry as a line of the config: "/a/Softmax": {'ON': 'BPU', 'InputType': 'int8', 'OutputType': 'int8'}
// (the name a double-quoted YAML string).
std::string config_edit_text(const ConfigEdit& edit);

// A YAML double-quoted scalar (node names carry '/', ':' and anything a
// model gives them; control characters as \xNN).
std::string yaml_double_quoted(const std::string& s);

// The edit that moves a node onto the BPU at `type` (int8, int16) in and out.
ConfigEdit node_on_bpu_edit(const std::string& node, const std::string& type);

}  // namespace bpulint
