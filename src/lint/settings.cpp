#include "bpulint/lint/settings.h"

#include <algorithm>
#include <set>

#include "bpulint/rules/builtin_rules.h"
#include "bpulint/lint/hb_config.h"

namespace bpulint {
namespace {

bool matches_prefix(const std::string& id, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return id.compare(0, p.size(), p) == 0; });
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Every rule id a finding on this platform can carry: its rules, its
// siblings' (reported as "cannot verify" here) and the engine's own.
std::set<std::string> rule_ids(const Platform& p) {
  std::set<std::string> ids;
  for (const auto& r : p.rules) ids.insert(r.id);
  for (const auto& s : p.sibling_rules) ids.insert(s.rule.id);
  for (const auto& r : builtin_rules()) ids.insert(r.id);
  return ids;
}

// The real ids nearest a typo (compared over the typo's length, so a
// mistyped prefix finds the ids it was meant to start), at most three.
std::string closest_ids(const std::string& selector, const std::set<std::string>& ids) {
  std::vector<std::pair<size_t, std::string>> ranked;
  for (const auto& id : ids) {
    const std::string head = id.substr(0, std::max(selector.size(), size_t{4}));
    ranked.emplace_back(std::min(edit_distance(selector, id), edit_distance(selector, head)), id);
  }
  std::sort(ranked.begin(), ranked.end());
  std::string out;
  for (size_t i = 0; i < ranked.size() && i < 3; ++i) out += (out.empty() ? "" : ", ") + ranked[i].second;
  return out;
}

}  // namespace

bool RuleLevels::admits(const Rule& rule, Severity& level) const {
  if (!select.empty() && !matches_prefix(rule.id, select)) return false;
  if (matches_prefix(rule.id, ignore)) return false;
  auto it = severity.find(rule.id);
  if (it != severity.end()) level = it->second;
  return true;
}

ModelPlan ModelPlan::defaults(const Platform& platform, FactOptions facts) {
  ModelPlan plan;
  plan.platform = &platform;
  plan.facts = std::move(facts);
  return plan;
}

const Platform* resolve_platform(const RuleDatabase& db, const std::string& name, const std::string& from,
                                 std::string& error) {
  if (const Platform* p = db.find(name)) return p;
  std::string names;
  for (const auto& q : db.platforms) names += (names.empty() ? "" : ", ") + q.name + " (" + q.march + ")";
  error = "unknown platform or march '" + name + "'" + (from.empty() ? "" : " (from " + from + ")") + " (known: " +
          names + ")";
  return nullptr;
}

void plan_compile_config(const HbConfig& config, ModelPlan& plan) {
  plan.hb_config = &config;
  for (const auto& [node, c] : config.nodes) {
    if (!c.float_type().empty()) plan.facts.config_float_nodes[node] = c.float_type();
  }
}

bool resolve_plan(const Config& config, const RuleDatabase& db, const std::string& model_path,
                  const CommandLineSettings& cli, const Baseline* baseline, ModelPlan& plan, std::string& error) {
  ModelSettings s = config.settings_for(model_path);
  if (cli.select) s.select = *cli.select;
  if (cli.ignore) s.ignore = *cli.ignore;
  std::string platform_from = config.path;
  if (cli.hb_config != nullptr) {
    s.platform = cli.hb_config->march;
    platform_from = cli.hb_config->path;
    for (const auto& [name, dims] : cli.hb_config->input_shapes) {
      s.input_shapes[name] = dims;
      s.input_shape_sources[name] = cli.hb_config->path + " input_shape";
    }
  }
  plan = ModelPlan{};
  const std::string name = !cli.platform.empty() ? cli.platform : s.platform ? *s.platform : kDefaultPlatform;
  plan.platform = resolve_platform(db, name, cli.platform.empty() ? platform_from : "", error);
  if (plan.platform == nullptr) return false;
  for (auto& id : s.select) plan.levels.select.push_back(upper_id(id));
  for (auto& id : s.ignore) plan.levels.ignore.push_back(upper_id(id));
  plan.levels.severity = s.severity;
  plan.facts.input_shapes = s.input_shapes;
  plan.facts.pin_sources = s.input_shape_sources;
  for (const auto& [pin, dims] : cli.input_shapes) {
    plan.facts.input_shapes[pin] = dims;
    plan.facts.pin_sources[pin] = "--input-shape";
  }
  // A waiver scoped to other models neither applies to this one nor counts it.
  const std::string rel = config.relative_path(model_path);
  for (const auto& w : config.waivers) {
    if (w.model.empty() || (!rel.empty() && glob_matches(w.model, rel))) plan.waivers.push_back(&w);
  }
  plan.baseline = baseline;
  plan.show_unverified = cli.show_unverified;
  if (cli.hb_config != nullptr) plan_compile_config(*cli.hb_config, plan);
  return true;
}

bool check_selectors(const std::vector<ScopedModel>& models, const CommandLineSettings& cli, std::string& error) {
  struct Use {
    std::string where, what;
    std::set<const Platform*> platforms;
  };
  std::map<std::pair<std::string, std::string>, Use> uses;  // (where, selector) -> platforms in scope
  auto use = [&](const std::string& where, const std::string& what, const std::string& selector, const Platform* p) {
    Use& u = uses[{where, what + "\n" + selector}];
    u.where = where;
    u.what = what;
    u.platforms.insert(p);
  };
  for (const auto& m : models) {
    const Config& c = *m.config;
    const std::string top = c.path.empty() ? "the configuration" : c.path;
    if (!cli.select) for (const auto& id : c.select) use(top, "select", id, m.platform);
    if (!cli.ignore) for (const auto& id : c.ignore) use(top, "ignore", id, m.platform);
    for (const auto& kv : c.severity) use(top, "severity", kv.first, m.platform);
    const std::string rel = c.relative_path(m.path);
    for (const auto& ov : c.overrides) {
      if (rel.empty() ||
          !std::any_of(ov.models.begin(), ov.models.end(), [&](const std::string& g) { return glob_matches(g, rel); })) {
        continue;
      }
      if (ov.select && !cli.select) for (const auto& id : *ov.select) use(ov.where.str(), "select", id, m.platform);
      if (ov.ignore && !cli.ignore) for (const auto& id : *ov.ignore) use(ov.where.str(), "ignore", id, m.platform);
      for (const auto& kv : ov.severity) use(ov.where.str(), "severity", kv.first, m.platform);
    }
    if (cli.select) for (const auto& id : *cli.select) use("--select", "", id, m.platform);
    if (cli.ignore) for (const auto& id : *cli.ignore) use("--ignore", "", id, m.platform);
    for (const auto& w : c.waivers) {
      if (!w.model.empty() && (rel.empty() || !glob_matches(w.model, rel))) continue;
      use(w.where.str(), "waiver rule", w.rule, m.platform);
    }
  }
  for (const auto& [key, u] : uses) {
    const std::string selector = key.second.substr(key.second.find('\n') + 1);
    const bool is_glob = u.what == "waiver rule";
    const bool exact = u.what == "severity";
    std::set<std::string> ids;
    std::string names;
    for (const Platform* p : u.platforms) {
      const auto some = rule_ids(*p);
      ids.insert(some.begin(), some.end());
      names += (names.empty() ? "" : " or ") + p->name;
    }
    const bool found = std::any_of(ids.begin(), ids.end(), [&](const std::string& id) {
      if (is_glob) return rule_glob_matches(selector, id);
      const std::string s = upper_id(selector);
      return exact ? id == s : id.compare(0, s.size(), s) == 0;
    });
    if (found) continue;
    error = u.where + ": " + (u.what.empty() ? "" : u.what + " ") + "'" + selector + "' matches no rule of " + names +
            " (closest: " + closest_ids(upper_id(selector), ids) + "; see: bpu-lint rules --platform " +
            (*u.platforms.begin())->name + ")";
    return false;
  }
  return true;
}

}  // namespace bpulint
