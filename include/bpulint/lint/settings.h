// What applies to one model, resolved in one place: the platform (one
// resolver, one error text, for lint, rules, compare and calibrate), the input
// pins, the rule levels, the waivers in scope and the baseline. lint() takes
// the result, a ModelPlan, and never looks at configuration files itself.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bpulint/lint/config.h"
#include "bpulint/engine/facts.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

struct HbConfig;

// Which findings a model reports and at what level: select/ignore are rule id
// prefixes (upper-cased; empty select = all), severity maps an id to a level.
struct RuleLevels {
  std::vector<std::string> select, ignore;
  std::map<std::string, Severity> severity;
  // False when the rule is not reported; else `level` becomes its level here.
  bool admits(const Rule& rule, Severity& level) const;
};

struct ModelPlan {
  const Platform* platform = nullptr;
  FactOptions facts;                      // input pins, and where each was set
  RuleLevels levels;
  std::vector<const Waiver*> waivers;     // the configuration's waivers whose model glob covers this model
  const Baseline* baseline = nullptr;     // findings it records are reported as baselined
  bool show_unverified = false;           // list the checks folded into a root-cause note too
  const HbConfig* hb_config = nullptr;    // --hb-config: its node placements (node_info, run_on_*)

  // Every rule at its own level, nothing waived: what compare, calibrate and
  // a model without configuration get.
  static ModelPlan defaults(const Platform& platform, FactOptions facts = {});
};

// What a compile config decides per node (node_info, run_on_*) joins the
// plan: its placements, and the nodes it keeps in float as a model fact.
void plan_compile_config(const HbConfig& config, ModelPlan& plan);

// The platform named `name` (a name, march or alias). nullptr with one error
// text everywhere: "unknown platform or march 'X' (from F) (known: ...)";
// `from` names where the name came from ("" for the command line).
const Platform* resolve_platform(const RuleDatabase& db, const std::string& name, const std::string& from,
                                 std::string& error);

// What the command line sets for every model; it wins over the configuration.
struct CommandLineSettings {
  std::string platform;  // "" = the configuration's, else the default
  std::optional<std::vector<std::string>> select, ignore;
  std::map<std::string, std::vector<int64_t>> input_shapes;  // --input-shape
  const HbConfig* hb_config = nullptr;                        // --hb-config: march and input shapes
  bool show_unverified = false;
};

// The plan of the model at `model_path`: the configuration's layers (top
// level, then matching overrides), then a Horizon compile config, then the
// command line. False with the platform error.
bool resolve_plan(const Config& config, const RuleDatabase& db, const std::string& model_path,
                  const CommandLineSettings& cli, const Baseline* baseline, ModelPlan& plan, std::string& error);

// A selector that matches no rule would silently turn the gate off (a typo'd
// --select runs nothing and passes): each select, ignore and severity id or
// prefix, and each waiver's rule glob, must match a rule of a platform of the
// models it applies to. False with the first one that does not, its nearest ids.
struct ScopedModel {
  std::string path;
  const Config* config = nullptr;
  const Platform* platform = nullptr;
};
bool check_selectors(const std::vector<ScopedModel>& models, const CommandLineSettings& cli, std::string& error);

}  // namespace bpulint
