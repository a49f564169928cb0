#include "bpulint/compare/calibrate.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "bpulint/rules/expr.h"
#include "bpulint/rules/fact_names.h"
#include "bpulint/compare/rule_stub.h"

namespace bpulint {
namespace {

// A matched node of one pair, with the side the compiler put it on.
struct Sample {
  size_t pair = 0;
  const NodeComparison* cmp = nullptr;
  const NodeFacts* node = nullptr;
  bool cpu = false;         // the compiler ran it on the CPU (BPU and NULL are the BPU side)
  bool mismatch = false;    // compare did not agree (missed, wrong or unknown)
  Value record;             // the node's facts as rules read them
};

// A condition on one fact, and how simple it is (lower is simpler).
struct Atom {
  std::string text;
  int cost = 0;
  std::vector<signed char> value;  // per sample: 1 true, 0 false, -1 neither (unknown)
};

// A literal the expression language reads back as the same string.
bool plain_string(const std::string& s) {
  return s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
           const auto u = static_cast<unsigned char>(c);
           return u >= 0x20 && u < 0x7f && c != '\'' && c != '\\';
         });
}

// Candidate atoms from the facts of the samples: what the stubs list.
std::map<std::string, int> candidate_atoms(const std::vector<const Sample*>& samples, bool with_op) {
  std::map<std::string, int> out;
  auto add = [&](const std::string& text, int cost) {
    auto it = out.find(text);
    if (it == out.end() || it->second > cost) out[text] = cost;
  };
  for (const Sample* s : samples) {
    const Value& rec = s->record;
    if (with_op) add("op == '" + s->node->op_type + "'", 1);
    for (const char* side : {"input", "output"}) {
      const Value* list = rec.field(side);
      if (list == nullptr || list->kind() != Value::Kind::List) continue;
      for (size_t i = 0; i < list->items().size() && i < 4; ++i) {
        const Value& t = list->items()[i];
        const Value* present = t.field("present");
        if (present == nullptr || !present->as_bool()) continue;
        const std::string at = std::string(side) + "[" + std::to_string(i) + "]";
        if (const Value* r = t.field("rank"); r != nullptr && r->kind() == Value::Kind::Int) {
          const std::string v = std::to_string(r->as_int());
          add(at + ".rank == " + v, 2);
          add(at + ".rank <= " + v, 3);
          add(at + ".rank >= " + v, 3);
        }
        if (const Value* d = t.field("dtype"); d != nullptr && d->kind() == Value::Kind::String && plain_string(d->as_string())) {
          add(at + ".dtype == '" + d->as_string() + "'", 2);
        }
        for (const char* flag : {"const", "from_1d_2d_input"}) {
          if (const Value* b = t.field(flag); b != nullptr && b->kind() == Value::Kind::Bool) {
            add(std::string(b->as_bool() ? "" : "not ") + at + "." + flag, 2);
          }
        }
        if (const Value* p = t.field("producer"); p != nullptr && p->kind() == Value::Kind::String &&
                                                  plain_string(p->as_string())) {
          add(at + ".producer == '" + p->as_string() + "'", 2);
        }
        const Value* shape = t.field("shape");
        if (shape != nullptr && shape->kind() == Value::Kind::List) {
          for (size_t k = 0; k < shape->items().size() && k < 8; ++k) {
            const Value& dim = shape->items()[k];
            if (dim.kind() != Value::Kind::Int) continue;
            const std::string d = at + ".shape[" + std::to_string(k) + "]";
            const std::string v = std::to_string(dim.as_int());
            add(d + " == " + v, 3);
            add(d + " <= " + v, 4);
            add(d + " >= " + v, 4);
          }
        }
      }
    }
    for (const auto& [key, v] : rec.fields()) {
      if (reserved_node_facts().count(key) != 0 || key.empty() ||
          !std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }) ||
          std::isdigit(static_cast<unsigned char>(key[0])) != 0) {
        continue;
      }
      if (v.kind() == Value::Kind::Int) {
        const std::string n = std::to_string(v.as_int());
        add(key + " == " + n, 3);
        add(key + " <= " + n, 4);
        add(key + " >= " + n, 4);
      } else if (v.kind() == Value::Kind::String && plain_string(v.as_string())) {
        add(key + " == '" + v.as_string() + "'", 3);
      }
    }
  }
  return out;
}

std::vector<Atom> evaluate_atoms(const std::map<std::string, int>& candidates, const std::vector<const Sample*>& samples) {
  std::vector<Atom> atoms;
  for (const auto& [text, cost] : candidates) {
    ExprError err;
    const ExprPtr e = parse_expr(text, &err);
    if (!e) continue;
    Atom a{text, cost, {}};
    a.value.reserve(samples.size());
    for (const Sample* s : samples) {
      const Value v = eval(*e, s->record);
      a.value.push_back(v.kind() == Value::Kind::Bool ? (v.as_bool() ? 1 : 0) : -1);
    }
    atoms.push_back(std::move(a));
  }
  // Simplest first; the text breaks ties, so the choice never depends on input order.
  std::stable_sort(atoms.begin(), atoms.end(), [](const Atom& a, const Atom& b) { return a.cost < b.cost; });
  return atoms;
}

// The simplest condition true on every sample marked `yes` and false on
// every other: one atom, else two joined by `and`; "" when none is.
std::string separate(const std::vector<const Sample*>& samples, const std::vector<bool>& yes, bool with_op) {
  const std::vector<Atom> atoms = evaluate_atoms(candidate_atoms(samples, with_op), samples);
  auto true_on_yes = [&](const Atom& a) {
    for (size_t i = 0; i < samples.size(); ++i) {
      if (yes[i] && a.value[i] != 1) return false;
    }
    return true;
  };
  std::vector<const Atom*> holds;
  for (const Atom& a : atoms) {
    if (!true_on_yes(a)) continue;
    bool false_on_no = true;
    for (size_t i = 0; i < samples.size() && false_on_no; ++i) false_on_no = yes[i] || a.value[i] == 0;
    if (false_on_no) return a.text;
    holds.push_back(&a);
  }
  // Two atoms: each must hold on every `yes`; on every other sample one is false.
  constexpr size_t kMaxPairs = 400;
  if (holds.size() > kMaxPairs) holds.resize(kMaxPairs);
  const Atom* best_a = nullptr;
  const Atom* best_b = nullptr;
  for (size_t x = 0; x < holds.size(); ++x) {
    for (size_t y = x + 1; y < holds.size(); ++y) {
      const Atom& a = *holds[x];
      const Atom& b = *holds[y];
      if (best_a != nullptr && a.cost + b.cost >= best_a->cost + best_b->cost) continue;
      bool ok = true;
      for (size_t i = 0; i < samples.size() && ok; ++i) ok = yes[i] || a.value[i] == 0 || b.value[i] == 0;
      if (ok) {
        best_a = &a;
        best_b = &b;
      }
    }
  }
  return best_a == nullptr ? "" : best_a->text + " and " + best_b->text;
}

// "x3.log lines 21, 23 (hb_mapper 1.18.2, march bernoulli2); y.log line 9 (...)"
std::string provenance(const std::vector<const Sample*>& samples, const std::vector<CalibrationPair>& pairs) {
  std::map<size_t, std::set<size_t>> lines;
  for (const Sample* s : samples) lines[s->pair].insert(s->cmp->line);
  std::string out;
  for (const auto& [pair, set] : lines) {
    std::string list;
    size_t shown = 0;
    for (size_t l : set) {
      if (shown++ == 8) {
        list += " and " + std::to_string(set.size() - 8) + " more";
        break;
      }
      list += (list.empty() ? "" : ", ") + std::to_string(l);
    }
    const std::string versions = versions_text(pairs[pair].compile_log);
    out += (out.empty() ? "" : "; ") + pairs[pair].log + (set.size() == 1 ? " line " : " lines ") + list +
           (versions.empty() ? "" : " (" + versions + ")");
  }
  return out;
}

std::string count_text(size_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

std::string node_line(const Sample& s, const std::vector<CalibrationPair>& pairs) {
  return comment_text(std::string(s.node->display_name)) + " (" + comment_text(s.node->op_type) + "), " + pairs[s.pair].log +
         " line " + std::to_string(s.cmp->line) + ": " + (s.cpu ? "CPU" : "BPU side (" + s.cmp->compiler + ")");
}

struct OpEntry {
  std::string op;
  std::string cls;  // cpu | bpu
  std::string source;
};

struct RuleEntry {
  std::string id, name, summary, description, when, require, severity, effect, cpu_node, message, status, source, ref;
  std::vector<std::string> ops, fixes;
  std::string domain;
};

void write_rule(std::ostringstream& out, const RuleEntry& r) {
  out << "  - id: " << r.id << "\n"
      << "    name: " << r.name << "\n"
      << "    summary: " << yaml_quote(r.summary) << "\n";
  if (!r.description.empty()) out << "    description: " << yaml_quote(r.description) << "\n";
  out << "    ops: [";
  for (size_t i = 0; i < r.ops.size(); ++i) out << (i ? ", " : "") << op_item(r.ops[i]);
  out << "]\n";
  if (!r.domain.empty()) out << "    domain: " << yaml_quote(r.domain) << "\n";
  if (!r.when.empty()) out << "    when: " << yaml_quote(r.when) << "\n";
  out << "    require: " << yaml_quote(r.require) << "\n"
      << "    severity: " << r.severity << "\n"
      << "    effect: " << r.effect << "\n";
  if (!r.cpu_node.empty()) out << "    cpu_node: " << yaml_quote(r.cpu_node) << "\n";
  out << "    message: " << yaml_quote(r.message) << "\n"
      << "    status: " << r.status << "\n"
      << "    source: " << yaml_quote(r.source) << "\n";
  if (!r.ref.empty()) out << "    ref: " << yaml_quote(r.ref) << "\n";
  if (!r.fixes.empty()) {
    out << "    fixes: [";
    for (size_t i = 0; i < r.fixes.size(); ++i) out << (i ? ", " : "") << r.fixes[i];
    out << "]\n";
  }
}

}  // namespace

Calibration calibrate(const Platform& platform, const std::vector<CalibrationPair>& pairs, const std::string& command) {
  // Every matched node of every pair, with the compiler's side.
  std::vector<Sample> samples;
  for (size_t p = 0; p < pairs.size(); ++p) {
    const Comparison& c = *pairs[p].comparison;
    const ModelFacts& facts = pairs[p].report->facts;
    auto take = [&](const std::vector<NodeComparison>& list, bool mismatch) {
      for (const auto& n : list) {
        const NodeFacts& node = facts.nodes[static_cast<size_t>(n.node)];
        const std::string cls = node.domain.empty() ? op_class_name(platform.effective_class(node.op_type)) : "unknown";
        samples.push_back({p, &n, &node, n.compiler == "CPU", mismatch, node_record(node, cls)});
      }
    };
    take(c.agree, false);
    take(c.missed, true);
    take(c.wrong, true);
    take(c.unknown, true);
  }
  std::map<std::string, std::vector<const Sample*>> by_op;  // sorted: the file's order
  for (const Sample& s : samples) {
    if (s.node->domain.empty()) by_op[s.node->op_type].push_back(&s);
  }

  Calibration result;
  std::vector<OpEntry> op_entries;
  std::vector<RuleEntry> rule_entries;
  std::set<std::string> used_ids;
  for (const Rule& r : platform.rules) used_ids.insert(r.id);
  int next_id = 1;
  auto new_id = [&] {
    char id[16];
    do std::snprintf(id, sizeof id, "CAL%04d", next_id++);
    while (used_ids.count(id) != 0);
    used_ids.insert(id);
    return std::string(id);
  };
  // Wrong nodes a rule put on the CPU; ops given class bpu here (their
  // engine "CPU op" finding goes with the old class).
  std::vector<const Sample*> by_rule;
  std::set<std::string> now_bpu;

  for (const auto& [op, group] : by_op) {
    if (std::none_of(group.begin(), group.end(), [](const Sample* s) { return s->mismatch; })) continue;
    std::vector<const Sample*> cpu, bpu;
    for (const Sample* s : group) (s->cpu ? cpu : bpu).push_back(s);
    const OpClass now = platform.effective_class(op);
    const std::string where = provenance(group, pairs);
    if (bpu.empty()) {
      op_entries.push_back({op, "cpu", "bpu-lint calibrate: " + count_text(cpu.size(), op + " node") +
                                           ", all on the CPU: " + where});
      result.op_classes.push_back(op + ": cpu");
      continue;
    }
    const bool needs_bpu_class = now != OpClass::Bpu && now != OpClass::Lowered;
    if (cpu.empty()) {
      if (needs_bpu_class) {
        op_entries.push_back({op, "bpu", "bpu-lint calibrate: " + count_text(bpu.size(), op + " node") +
                                             ", all on the BPU side (BPU or NULL): " + where});
        result.op_classes.push_back(op + ": bpu");
        now_bpu.insert(op);
      }
      for (const Sample* s : bpu) {
        if (s->mismatch && !s->cmp->placed_by.empty()) by_rule.push_back(s);
      }
      continue;
    }
    for (const Sample* s : bpu) {
      if (s->mismatch && !s->cmp->placed_by.empty()) by_rule.push_back(s);
    }
    // Both sides, every CPU node already predicted there and the op already
    // BPU: what is wrong is the BPU nodes a rule put on the CPU, narrowed below.
    if (!needs_bpu_class && std::none_of(cpu.begin(), cpu.end(), [](const Sample* s) { return s->mismatch; })) continue;
    // Otherwise a rule that holds on exactly the BPU nodes.
    std::vector<bool> yes;
    for (const Sample* s : group) yes.push_back(!s->cpu);
    const std::string cond = separate(group, yes, false);
    if (cond.empty()) {
      for (const Sample* s : group) {
        if (s->mismatch) {
          result.leftovers.push_back(node_line(*s, pairs) + "; no fact separates the " + count_text(cpu.size(), "CPU node") +
                                     " of " + op + " from its " + count_text(bpu.size(), "BPU node"));
        }
      }
      continue;
    }
    if (needs_bpu_class) {
      op_entries.push_back({op, "bpu", "bpu-lint calibrate: " + count_text(bpu.size(), op + " node") +
                                           " on the BPU side where " + cond + " (the others on the CPU): " + where});
      result.op_classes.push_back(op + ": bpu");
      now_bpu.insert(op);
    }
    RuleEntry r;
    r.id = new_id();
    r.name = kebab(op) + "-calibrated-" + kebab(platform.name);
    r.summary = op + " runs on the CPU on " + platform.name + " unless " + cond + " (calibrated).";
    r.ops = {op};
    r.require = cond;
    r.severity = "error";
    r.effect = "cpu_fallback";
    r.message = "{op} runs on the CPU on " + platform.name + " here: the compiler ran its nodes on the BPU only where " +
                cond + " (calibrated from compile logs)";
    r.status = "verified";
    r.source = "bpu-lint calibrate: " + count_text(cpu.size(), op + " node") + " on the CPU, " +
               count_text(bpu.size(), "node") + " on the BPU side: " + where;
    rule_entries.push_back(r);
    result.rules.push_back(r.id);
  }

  // Database rules that failed nodes the compiler ran on the BPU: declared
  // again with a `when` that leaves those nodes out and keeps the rest.
  std::map<std::string, std::vector<const Sample*>> wrong_by_rule;
  std::map<std::string, const Rule*> rule_of;
  for (const Sample* s : by_rule) {
    for (const Diagnostic* d : s->cmp->placed_by) {
      if (d->rule->builtin && now_bpu.count(s->node->op_type) != 0) continue;
      wrong_by_rule[d->rule->id].push_back(s);
      rule_of[d->rule->id] = d->rule;
    }
  }
  // Per rule id, the CPU samples it failed at error level: what placed them (one pass).
  std::map<std::string, std::vector<const Sample*>> rightly_placed;
  if (!wrong_by_rule.empty()) {
    std::map<std::pair<size_t, long>, const Sample*> cpu_sample;
    for (const Sample& s : samples) {
      if (s.cpu) cpu_sample[{s.pair, s.cmp->node}] = &s;
    }
    for (size_t p = 0; p < pairs.size(); ++p) {
      for (const Diagnostic& d : pairs[p].report->diagnostics) {
        if (d.outcome != Outcome::Fail || d.severity != Severity::Error || wrong_by_rule.count(d.rule->id) == 0) continue;
        auto it = cpu_sample.find({p, d.node});
        if (it != cpu_sample.end()) rightly_placed[d.rule->id].push_back(it->second);
      }
    }
  }
  for (const auto& entry : wrong_by_rule) {
    const std::string& id = entry.first;  // not a structured binding: lambdas capture it (clang 14)
    const std::vector<const Sample*>& wrong = entry.second;
    const Rule& rule = *rule_of[id];
    const bool own = std::any_of(platform.rules.begin(), platform.rules.end(), [&](const Rule& r) { return r.id == id; });
    if (rule.builtin || rule.scope != RuleScope::Node || !own || rule.message_text.empty()) {
      for (const Sample* s : wrong) {
        result.leftovers.push_back(node_line(*s, pairs) + "; put on the CPU by " + id +
                                   (rule.builtin ? ", an engine rule" : ", which a rule file cannot declare again"));
      }
      continue;
    }
    // The nodes the rule put on the CPU where the compiler ran them keep failing.
    std::vector<const Sample*> group = wrong;
    std::vector<bool> yes(wrong.size(), true);
    auto right = rightly_placed.find(id);
    if (right != rightly_placed.end()) {
      for (const Sample* s : right->second) {
        group.push_back(s);
        yes.push_back(false);
      }
    }
    const std::string cond = separate(group, yes, true);
    if (cond.empty()) {
      for (const Sample* s : wrong) {
        result.leftovers.push_back(node_line(*s, pairs) + "; put on the CPU by " + id +
                                   ", and no fact separates it from the nodes " + id + " rightly puts there");
      }
      continue;
    }
    RuleEntry r;
    r.id = rule.id;
    r.name = rule.name;
    r.summary = rule.summary;
    r.description = rule.description;
    r.ops = rule.ops;
    r.domain = rule.domain;
    r.when = rule.when ? "(" + expr_text(*rule.when) + ") and not (" + cond + ")" : "not (" + cond + ")";
    r.require = expr_text(*rule.require);
    r.severity = severity_name(rule.severity);
    r.effect = effect_name(rule.effect);
    r.cpu_node = rule.cpu_node;
    r.message = rule.message_text;
    r.status = status_name(rule.status);
    r.source = rule.source + "; calibrated: not where " + cond + ", which the compiler ran on the BPU side (bpu-lint calibrate: " +
               provenance(wrong, pairs) + ")";
    r.ref = rule.ref;
    r.fixes = rule.fixes;
    rule_entries.push_back(r);
    result.overrides.push_back(r.id);
  }

  std::ostringstream out;
  out << "# Written by `" << comment_text(command) << "`.\n"
      << "# Load it with --rules FILE (or `rules:` in .bpu-lint.yaml): compare then agrees on these pairs:\n";
  for (const auto& p : pairs) {
    const std::string versions = versions_text(p.compile_log);
    out << "#   " << comment_text(p.model) << " with " << comment_text(p.log)
        << (versions.empty() ? "" : " (" + comment_text(versions) + ")") << "\n";
  }
  if (!result.leftovers.empty()) {
    out << "# Left for you (no fact of the ones calibrate tries explains them; compare prints a stub for each):\n";
    for (const auto& l : result.leftovers) out << "#   " << comment_text(l) << "\n";
  }
  if (op_entries.empty() && rule_entries.empty()) out << "# Nothing to calibrate: compare already agrees on every node it can explain.\n";
  out << "schema_version: 1\n"
      << "extends: " << platform.name << "\n"
      << "description: " << yaml_quote("Calibrated against compile logs by bpu-lint calibrate") << "\n";
  if (!op_entries.empty()) {
    out << "ops:\n";
    for (const auto& e : op_entries) {
      out << "  - class: " << e.cls << "\n"
          << "    ops: [" << op_item(e.op) << "]\n"
          << "    status: verified\n"
          << "    source: " << yaml_quote(e.source) << "\n";
    }
  }
  if (!rule_entries.empty()) {
    out << "rules:\n";
    for (size_t i = 0; i < rule_entries.size(); ++i) {
      if (i > 0) out << "\n";
      write_rule(out, rule_entries[i]);
    }
  }
  result.yaml = out.str();
  return result;
}

}  // namespace bpulint
