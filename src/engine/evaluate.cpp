#include "bpulint/engine/evaluate.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "bpulint/rules/builtin_rules.h"
#include "bpulint/base/side_by_side.h"

namespace bpulint {
namespace {

Diagnostic diagnostic(const Rule* rule, Severity severity, Outcome outcome, std::string message, long node,
                      Trace facts = {}, std::vector<std::string> fixes = {}) {
  Diagnostic d;
  d.rule = rule;
  d.severity = severity;
  d.outcome = outcome;
  d.message = std::move(message);
  d.node = node;
  d.facts = std::move(facts);
  d.fixes = std::move(fixes);
  return d;
}

// ---- rule checks remembered by what they read -------------------------
//
// A node's rule checks read its facts only through a FactSource, and are a
// pure function of what those reads return: the same answers, the same
// reads in the same order, the same findings. Networks repeat a few blocks
// many times, so the checks of an op type are remembered as a tree of reads:
// each inner entry says which fact the checks read next, with one branch per
// answer seen; a leaf holds the findings. A node walks the tree reading its
// own facts (reads the checks would make anyway); at a leaf it copies the
// findings, otherwise it is checked afresh and its reads grow the tree.

struct FactRead {
  enum class Kind : uint8_t { Fact, ElementField, ListSize };
  Kind kind = Kind::Fact;
  FactId id = 0;     // the fact, or the list
  size_t index = 0;  // ElementField
  FactId field = 0;  // ElementField
  const std::string* name = nullptr;  // Fact: its text, in the rule's AST (which outlives the memo)

  bool same_read(const FactRead& o) const {
    return kind == o.kind && id == o.id && index == o.index && field == o.field;
  }
};

struct ReadAnswer {
  bool present = false;  // Fact, ElementField: a value came back
  Value value;
  long size = -1;  // ListSize

  // `v` (nullptr: none) and `other_size` as a read returns them.
  bool same(const Value* v, long other_size) const {
    return present == (v != nullptr) && size == other_size && (!present || value.identical(*v));
  }
  bool same(const ReadAnswer& o) const { return same(o.present ? &o.value : nullptr, o.size); }
};

// Makes the read on `source`: the value (nullptr if none) or the list size.
const Value* perform(const FactRead& r, const FactSource& source, long& size) {
  size = -1;
  switch (r.kind) {
    case FactRead::Kind::Fact: return source.fact(r.id, *r.name);
    case FactRead::Kind::ElementField: return source.element_field(r.id, r.index, r.field);
    case FactRead::Kind::ListSize: size = source.list_size(r.id); return nullptr;
  }
  return nullptr;
}

// Passes reads through to a node's facts and logs each with its answer.
class RecordingSource final : public FactSource {
 public:
  struct Entry {
    FactRead read;
    ReadAnswer answer;
  };
  explicit RecordingSource(const FactSource& inner) : inner_(inner) {}
  const Value* fact(FactId id, const std::string& name) const override {
    return log({FactRead::Kind::Fact, id, 0, 0, &name}, inner_.fact(id, name));
  }
  const Value* element_field(FactId list, size_t index, FactId field) const override {
    return log({FactRead::Kind::ElementField, list, index, field, nullptr}, inner_.element_field(list, index, field));
  }
  long list_size(FactId list) const override {
    const long size = inner_.list_size(list);
    log({FactRead::Kind::ListSize, list, 0, 0, nullptr}, nullptr, size);
    return size;
  }
  const std::vector<Entry>& entries() const { return log_; }

 private:
  const Value* log(const FactRead& read, const Value* v, long size = -1) const {
    ReadAnswer a;
    a.present = v != nullptr;
    if (v != nullptr) a.value = *v;
    a.size = size;
    log_.push_back({read, std::move(a)});
    return v;
  }
  const FactSource& inner_;
  mutable std::vector<Entry> log_;
};

class CheckMemo {
 public:
  // False once the memo has proved useless for its op type (reads that
  // differ node by node, such as names): its nodes are then checked afresh
  // without recording their reads.
  bool worthwhile() const { return misses_ < kTrialMisses || misses_ <= 4 * hits_; }

  // The findings of an earlier node whose reads answered as `source` does;
  // nullptr when there is none.
  const std::vector<Diagnostic>* find(const FactSource& source) {
    const std::vector<Diagnostic>* found = lookup(source);
    ++(found != nullptr ? hits_ : misses_);
    return found;
  }

  // Remembers a fresh check: its reads in order, and its findings.
  void add(const std::vector<RecordingSource::Entry>& reads, const std::vector<Diagnostic>& findings) {
    if (leaves_ >= kMaxLeaves) return;
    Branch* b = &root_;
    for (const auto& [read, answer] : reads) {
      if (b->leaf) return;
      if (!b->read) b->read = read;
      else if (!b->read->same_read(read)) return;  // cannot happen for a pure check; never guess
      Branch* next = nullptr;
      for (auto& [seen, child] : b->children) {
        if (seen.same(answer)) {
          next = child.get();
          break;
        }
      }
      if (next == nullptr) {
        if (b->children.size() >= kMaxAnswers) return;  // a lookup scans them all
        b->children.emplace_back(answer, std::make_unique<Branch>());
        next = b->children.back().second.get();
      }
      b = next;
    }
    if (b->leaf || b->read) return;
    b->leaf = true;
    b->findings = findings;
    ++leaves_;
  }

 private:
  static constexpr size_t kMaxLeaves = 1024;
  static constexpr size_t kMaxAnswers = 32;   // per read
  static constexpr size_t kTrialMisses = 64;  // before judging the hit rate
  struct Branch {
    bool leaf = false;
    std::optional<FactRead> read;  // inner: the next read
    std::vector<std::pair<ReadAnswer, std::unique_ptr<Branch>>> children;
    std::vector<Diagnostic> findings;  // leaf; node index and cause set per node
  };

  const std::vector<Diagnostic>* lookup(const FactSource& source) const {
    const Branch* b = &root_;
    while (!b->leaf) {
      if (!b->read) return nullptr;
      long size = -1;
      const Value* v = perform(*b->read, source, size);
      const Branch* next = nullptr;
      for (const auto& [answer, child] : b->children) {
        if (answer.same(v, size)) {
          next = child.get();
          break;
        }
      }
      if (next == nullptr) return nullptr;
      b = next;
    }
    return &b->findings;
  }

  Branch root_;
  size_t leaves_ = 0;
  size_t hits_ = 0;
  size_t misses_ = 0;
};

// What check_node needs to know about an op type, looked up once per type.
struct OpPlan {
  const OpPlacement* placement = nullptr;  // the platform's entry; nullptr = not classified
  OpClass effective = OpClass::Unknown;    // after lowering
  const std::vector<const Rule*>* rules = nullptr;
  const std::vector<const SiblingRule*>* siblings = nullptr;
  // Rule checks of this op type's default-domain nodes (custom domains are
  // checked afresh: their rules differ by domain).
  std::unique_ptr<CheckMemo> memo = std::make_unique<CheckMemo>();
};

// Rules by op type, so evaluation costs O(nodes x rules-per-op), not O(nodes x rules).
struct RuleIndex {
  std::unordered_map<std::string, std::vector<const Rule*>> by_op;
  std::vector<const Rule*> any_op;
  std::vector<const Rule*> model;
  // The platform's op classes, hashed once.
  std::unordered_map<std::string, const OpPlacement*> op_classes;
  // Sibling chips' limits this platform lacks, by op type.
  std::unordered_map<std::string, std::vector<const SiblingRule*>> siblings_by_op;
  const Platform& platform;

  // The plan of an op type, made on its first node: one lookup per node
  // instead of four. Not thread-safe: one index per evaluating thread.
  const OpPlan& plan(const std::string& op) const {
    auto [it, inserted] = plans_.try_emplace(op);
    if (!inserted) return it->second;
    OpPlan& p = it->second;
    auto cls = op_classes.find(op);
    p.placement = cls == op_classes.end() ? nullptr : cls->second;
    p.effective = platform.effective_class(op);
    auto rules = by_op.find(op);
    p.rules = rules == by_op.end() ? nullptr : &rules->second;
    auto sib = siblings_by_op.find(op);
    p.siblings = sib == siblings_by_op.end() ? nullptr : &sib->second;
    return p;
  }

  explicit RuleIndex(const Platform& p) : platform(p) {
    for (const auto& kv : p.ops) op_classes[kv.first] = &kv.second;
    for (const auto& r : p.rules) {
      if (r.scope == RuleScope::Model) {
        model.push_back(&r);
        continue;
      }
      for (const auto& op : r.ops) {
        if (op == "*") {
          any_op.push_back(&r);
        } else {
          by_op[op].push_back(&r);
        }
      }
    }
    for (const auto& sr : p.sibling_rules) {
      for (const auto& op : sr.rule.ops) {
        siblings_by_op[op].push_back(&sr);
      }
    }
  }

 private:
  mutable std::unordered_map<std::string, OpPlan> plans_;
};

std::string first_unknown_reason(const Value& v, const Trace& trace) {
  if (!v.as_string().empty()) return v.as_string();
  for (const auto& t : trace) {
    if (t.value.is_unknown()) return t.text + " is unknown" + (t.value.as_string().empty() ? "" : " (" + t.value.as_string() + ")");
  }
  return "a fact it needs is unknown";
}

bool is_true(const Value& v) { return v.kind() == Value::Kind::Bool && v.as_bool(); }
bool is_false(const Value& v) { return v.kind() == Value::Kind::Bool && !v.as_bool(); }

// Lists and records too: a rule over `input + output` traces the tensor
// records whole, with the unknown dim inside a record's shape.
bool has_unknown(const Value& v) {
  if (v.is_unknown()) return true;
  if (v.kind() == Value::Kind::Record) {
    return std::any_of(v.fields().begin(), v.fields().end(), [](const auto& f) { return has_unknown(f.second); });
  }
  if (v.kind() != Value::Kind::List) return false;
  return std::any_of(v.items().begin(), v.items().end(), has_unknown);
}

uint32_t first_cause(const TensorList& tensors) {
  for (const auto& t : tensors) {
    if (t.cause != 0) return t.cause;
  }
  return 0;
}

// The root cause of a check that could not be decided: the tensor whose
// unknown fact the trace shows first (input[1].shape -> input 1), followed
// upstream by the walk. 0 when the unknown is the node's own (an attribute
// without a default, a value computed from data).
uint32_t unknown_cause(const NodeFacts& n, const Trace& trace) {
  for (const auto& t : trace) {
    if (!has_unknown(t.value)) continue;
    const std::string& text = t.text;
    for (const auto* side : {"input", "output"}) {
      const size_t len = std::char_traits<char>::length(side);
      if (text.compare(0, len, side) != 0 || (text.size() > len && text[len] != '[' && text[len] != '.')) continue;
      const auto& tensors = side[0] == 'i' ? n.inputs : n.outputs;
      if (text.size() > len + 1 && text[len] == '[' && std::isdigit(static_cast<unsigned char>(text[len + 1]))) {
        const size_t k = std::strtoul(text.c_str() + len + 1, nullptr, 10);
        if (k < tensors.size() && tensors[k].cause != 0) return tensors[k].cause;
      }
      // The whole list (`all(t in input: ...)`): the first tensor whose record holds the unknown.
      if (text.size() == len && t.value.kind() == Value::Kind::List) {
        for (size_t k = 0; k < t.value.items().size() && k < tensors.size(); ++k) {
          if (has_unknown(t.value.items()[k]) && tensors[k].cause != 0) return tensors[k].cause;
        }
      }
      if (const uint32_t c = first_cause(tensors)) return c;
    }
    if (text == "max_rank") {
      if (const uint32_t c = first_cause(n.inputs)) return c;
      if (const uint32_t c = first_cause(n.outputs)) return c;
    }
    // Convolution kernels come from the weight's shape when not set.
    if (text.compare(0, 12, "kernel_shape") == 0 && n.inputs.size() > 1 && n.inputs[1].cause != 0) {
      return n.inputs[1].cause;
    }
  }
  return 0;
}

// Checks one rule against one fact record; appends a diagnostic unless it passes.
// Most checks pass, so the first evaluation records no trace; only a finding
// is evaluated again to collect the facts it reports.
void check(const Rule& rule, const FactSource& record, long node, const NodeFacts* facts, std::vector<Diagnostic>& out) {
  const bool applies_fast = !rule.when || !is_false(eval(*rule.when, record));
  if (!applies_fast || is_true(eval(*rule.require, record))) return;

  Trace trace;
  const Value applies = rule.when ? eval(*rule.when, record, &trace) : Value::of_bool(true);
  const Value ok = eval(*rule.require, record, &trace);
  if (applies.is_unknown() || ok.is_unknown()) {
    const Value& why = applies.is_unknown() ? applies : ok;
    out.push_back(diagnostic(&rule, Severity::Note, Outcome::Unknown,
                             "cannot verify " + rule.id + " (" + rule.summary + "): " + first_unknown_reason(why, trace),
                             node, trace));
    if (facts != nullptr) out.back().cause = unknown_cause(*facts, trace);
    return;
  }
  out.push_back(diagnostic(&rule, rule.severity, Outcome::Fail, render(*rule.message, record), node, trace, rule.fixes));
}

// One note per node that a sibling chip's limit applies to: the limit is
// unknown here, so the node is neither passed nor failed. Each limit says
// whether the node would meet it on the sibling.
void check_siblings(const std::vector<const SiblingRule*>& siblings, const FactSource& record, long node,
                    const NodeFacts& n, const Platform& platform, std::vector<Diagnostic>& out) {
  std::string parts, on;
  Trace all;
  for (const SiblingRule* s : siblings) {
    const Rule& r = s->rule;
    if (r.domain != n.domain) continue;
    Trace when_trace, trace;
    const Value applies = r.when ? eval(*r.when, record, &when_trace) : Value::of_bool(true);
    if (is_false(applies)) continue;
    const Value ok = eval(*r.require, record, &trace);
    // A short line: the values the limit compared, not whole tensor records (a quantifier over
    // `input` traces the list of them), which the sibling's own finding would show.
    const auto whole_records = [](const TraceEntry& e) {
      if (e.value.kind() == Value::Kind::Record) return true;
      return e.value.kind() == Value::Kind::List &&
             std::any_of(e.value.items().begin(), e.value.items().end(),
                         [](const Value& v) { return v.kind() == Value::Kind::Record; });
    };
    trace.erase(std::remove_if(trace.begin(), trace.end(), whole_records), trace.end());
    when_trace.erase(std::remove_if(when_trace.begin(), when_trace.end(), whole_records), when_trace.end());
    std::string here;
    for (const auto& t : trace) here += (here.empty() ? "" : ", ") + t.text + " = " + t.value.to_string();
    trace.insert(trace.end(), when_trace.begin(), when_trace.end());
    const char* verdict = is_true(ok) && is_true(applies) ? "met" : is_false(ok) && is_true(applies) ? "not met" : "unknown";
    parts += (parts.empty() ? "" : "; ") + expr_text(*r.require) + " [" + r.id + "] " + verdict + " here (" + here + ")";
    for (const auto& name : s->platforms) {
      if (on.find(name) == std::string::npos) on += (on.empty() ? "" : ", ") + name;
    }
    for (auto& t : trace) {
      const bool seen = std::any_of(all.begin(), all.end(), [&](const TraceEntry& e) { return e.text == t.text; });
      if (!seen) all.push_back(std::move(t));
    }
  }
  if (parts.empty()) return;
  out.push_back(diagnostic(&builtin_rule(builtin::kSiblingLimit), Severity::Note, Outcome::Unknown,
                           "cannot verify " + n.op_type + " on " + platform.name + ": limits published for " + on +
                               " only: " + parts + "; unknown on " + platform.name,
                           node, all));
}

// Custom-domain op types: where each first appears and how many nodes use it.
// The first node of a type reports them all, the others stay quiet.
struct CustomOp {
  long first = -1;
  size_t count = 0;
};
using CustomOps = std::map<std::string, CustomOp>;

void check_node(const NodeFacts& n, long index, const Platform& platform, const RuleIndex& index_of, bool memoize,
                const Consumers* consumers, std::vector<Diagnostic>& out) {
  // Constant-folded nodes and runtime shape arithmetic never reach the BPU
  // or the CPU as such: no placement note, no rule.
  if (n.fold != Fold::None) return;
  const size_t first = out.size();
  std::string op_class = "unknown";
  const OpPlan& plan = index_of.plan(n.op_type);
  if (n.domain.empty()) {
    const OpPlacement* cls = plan.placement;
    const OpClass effective = plan.effective;
    if (cls != nullptr) op_class = op_class_name(effective);
    if (cls == nullptr) {
      out.push_back(diagnostic(&builtin_rule(builtin::kOpNotInDatabase), Severity::Note, Outcome::Unknown,
                               "cannot verify " + n.op_type + ": the op is not classified for " + platform.name +
                                   ", so its placement is unknown",
                               index));
    } else if (effective == OpClass::Unknown) {
      out.push_back(diagnostic(&builtin_rule(builtin::kOpNotInDatabase), Severity::Note, Outcome::Unknown,
                               "cannot verify " + n.op_type + ": its placement on " + platform.name + " is unknown" +
                                   (cls->note.empty() ? "" : " (" + cls->note + ")"),
                               index));
    } else if (effective == OpClass::Cpu) {
      out.push_back(diagnostic(&builtin_rule(builtin::kOpRunsOnCpu), Severity::Error, Outcome::Fail,
                               n.op_type + " has no BPU implementation on " + platform.name + " and runs on the CPU" +
                                   (cls->note.empty() ? "" : " (" + cls->note + ")"),
                               index));
    }
  }  // custom-domain ops: once per op type, added by add_custom_op_notes
  if (plan.rules != nullptr || plan.siblings != nullptr || !index_of.any_op.empty()) {
    // Facts are read from the node as the rules ask for them, and dropped after: memory stays flat.
    const NodeFactSource record(n, op_class, consumers);
    CheckMemo* memo = memoize && n.domain.empty() && plan.memo->worthwhile() ? plan.memo.get() : nullptr;
    const std::vector<Diagnostic>* known = memo != nullptr ? memo->find(record) : nullptr;
    if (known != nullptr) {
      for (const Diagnostic& d : *known) {
        out.push_back(d);
        out.back().node = index;
        // As check() does; the sibling note has no cause.
        if (d.outcome == Outcome::Unknown && d.rule != &builtin_rule(builtin::kSiblingLimit)) {
          out.back().cause = unknown_cause(n, d.facts);
        }
      }
    } else {
      const size_t fresh = out.size();
      const RecordingSource recording(record);
      const FactSource& source = memo != nullptr ? static_cast<const FactSource&>(recording) : record;
      if (plan.rules != nullptr) {
        for (const Rule* r : *plan.rules) {
          if (r->domain == n.domain) check(*r, source, index, &n, out);
        }
      }
      for (const Rule* r : index_of.any_op) check(*r, source, index, &n, out);
      if (plan.siblings != nullptr) check_siblings(*plan.siblings, source, index, n, platform, out);
      if (memo != nullptr) {
        memo->add(recording.entries(), std::vector<Diagnostic>(out.begin() + static_cast<long>(fresh), out.end()));
      }
    }
  }
  std::sort(out.begin() + static_cast<long>(first), out.end(),
            [](const Diagnostic& a, const Diagnostic& b) { return a.rule->id < b.rule->id; });
}

// Model-level findings: notes, functions not analysed, model-scope rules.
std::vector<Diagnostic> evaluate_model_level(const ModelFacts& facts, const RuleIndex& index) {
  std::vector<Diagnostic> out;
  for (const auto& note : facts.notes) {
    out.push_back(diagnostic(&builtin_rule(builtin::kModelNote), Severity::Note, Outcome::Unknown, note, -1));
  }
  for (const auto& fn : facts.unanalysed_functions) {
    out.push_back(diagnostic(&builtin_rule(builtin::kModelNote), Severity::Note, Outcome::Unknown,
                             "model-local function " + fn + " is not analysed; its call sites are reported as unknown ops",
                             -1));
  }
  const size_t first = out.size();
  const RecordFactSource model(facts.model);
  for (const Rule* r : index.model) check(*r, model, -1, nullptr, out);
  std::sort(out.begin() + static_cast<long>(first), out.end(),
            [](const Diagnostic& a, const Diagnostic& b) { return a.rule->id < b.rule->id; });
  return out;
}

// One note per custom-domain op type, on its first node, ahead of that node's
// other findings (BPU0001 sorts first).
void add_custom_op_notes(const ModelFacts& facts, std::vector<Diagnostic>& node_diagnostics) {
  CustomOps custom_ops;
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    const auto& n = facts.nodes[i];
    if (n.domain.empty()) continue;
    auto& c = custom_ops[n.domain + "::" + n.op_type];
    if (c.count++ == 0) c.first = static_cast<long>(i);
  }
  std::vector<Diagnostic> notes;
  for (const auto& [op, c] : custom_ops) {
    notes.push_back(diagnostic(&builtin_rule(builtin::kOpNotInDatabase), Severity::Note, Outcome::Unknown,
                               "cannot verify " + op + " (" + std::to_string(c.count) + " node" +
                                   (c.count == 1 ? "" : "s") + " in the model): custom-domain ops are not in the database",
                               c.first));
  }
  for (auto& note : notes) {
    auto at = std::lower_bound(node_diagnostics.begin(), node_diagnostics.end(), note.node,
                               [](const Diagnostic& d, long node) { return d.node < node; });
    node_diagnostics.insert(at, std::move(note));
  }
}

// Findings that repeat one fact per node are said once per model, on the
// first node, with the count and the first few node names: an op whose
// placement is unknown or CPU-only (a QDQ export has hundreds of
// QuantizeLinear nodes), a derived rule's hint (another chip's number:
// the ViT's six Linear layers would otherwise get six notes) and any other
// note (a detector's 93 runtime-index Gathers say one thing). The others
// stay in the list, counted in that note (folded_into_note).
void fold_repeats(const ModelFacts& facts, std::vector<Diagnostic>& diagnostics) {
  std::map<std::string, std::vector<Diagnostic*>> groups;
  for (auto& d : diagnostics) {
    if (d.node < 0) continue;
    const NodeFacts& n = facts.nodes[static_cast<size_t>(d.node)];
    const bool placement = d.rule->builtin && (d.rule->id == builtin::kOpNotInDatabase || d.rule->id == builtin::kOpRunsOnCpu);
    const bool derived = !d.rule->builtin && d.outcome == Outcome::Fail &&
                         (d.rule->status == Status::Derived || d.severity == Severity::Note);
    if (placement && n.domain.empty()) groups[d.rule->id + "|" + n.op_type].push_back(&d);
    else if (derived) groups[d.rule->id].push_back(&d);
  }
  for (auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    std::string names;
    for (size_t i = 0; i < members.size() && i < 3; ++i) {
      names.append(i ? ", '" : "'").append(facts.nodes[static_cast<size_t>(members[i]->node)].display_name) += '\'';
    }
    if (members.size() > 3) names += " and " + std::to_string(members.size() - 3) + " more";
    members[0]->message += "; on " + std::to_string(members.size()) + " nodes: " + names;
    for (size_t i = 1; i < members.size(); ++i) members[i]->folded_into_note = true;
  }
}

// The node findings completed: custom-op notes, repeats folded, then the
// model-level findings ahead of them.
std::vector<Diagnostic> with_model_level(const ModelFacts& facts, const RuleIndex& index,
                                         std::vector<Diagnostic> nodes) {
  add_custom_op_notes(facts, nodes);
  fold_repeats(facts, nodes);
  std::vector<Diagnostic> out = evaluate_model_level(facts, index);
  out.insert(out.end(), std::make_move_iterator(nodes.begin()), std::make_move_iterator(nodes.end()));
  return out;
}

}  // namespace

std::vector<Diagnostic> evaluate(const ModelFacts& facts, const Platform& platform, bool memoize) {
  const RuleIndex index(platform);
  const Consumers consumers(facts);
  std::vector<Diagnostic> nodes;
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    check_node(facts.nodes[i], static_cast<long>(i), platform, index, memoize, &consumers, nodes);
  }
  return with_model_level(facts, index, std::move(nodes));
}

namespace {

// Nodes are checked in chunks, claimed in order from one counter: by the
// check thread as the walk publishes them, and by the walk's thread too once
// the walk is over (on a findings-heavy graph the checks lag the walk). Each
// thread keeps runs of consecutive chunks; the runs are joined in node order,
// so the findings are the same however the chunks were shared.
class ChunkedChecks {
 public:
  ChunkedChecks(const ModelFacts& facts, const Platform& platform, FactProgress& progress)
      : facts_(facts), platform_(platform), progress_(progress), consumers_(facts) {}

  struct Run {
    size_t first_chunk = 0;
    size_t chunks = 0;
    std::vector<Diagnostic> found;
  };

  // Claims and checks chunks until none is left; `index` is this thread's own
  // (its memos are not shared).
  void work(const RuleIndex& index, std::vector<Run>& runs) {
    for (;;) {
      const size_t chunk = next_.fetch_add(1, std::memory_order_relaxed);
      const size_t first = chunk * kChunk;
      if (!progress_.wait_for(first)) return;
      if (runs.empty() || runs.back().first_chunk + runs.back().chunks != chunk) runs.push_back({chunk, 0, {}});
      Run& run = runs.back();
      for (size_t i = first; i < first + kChunk && progress_.wait_for(i); ++i) {
        check_node(facts_.nodes[i], static_cast<long>(i), platform_, index, true, &consumers_, run.found);
      }
      ++run.chunks;
    }
  }

  static std::vector<Diagnostic> join(std::vector<Run> a, std::vector<Run> b) {
    std::vector<Run> runs(std::make_move_iterator(a.begin()), std::make_move_iterator(a.end()));
    runs.insert(runs.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
    if (runs.empty()) return {};
    std::sort(runs.begin(), runs.end(), [](const Run& x, const Run& y) { return x.first_chunk < y.first_chunk; });
    size_t total = 0;
    for (const auto& r : runs) total += r.found.size();
    std::vector<Diagnostic> out = std::move(runs.front().found);
    out.reserve(total);
    for (size_t i = 1; i < runs.size(); ++i) {
      out.insert(out.end(), std::make_move_iterator(runs[i].found.begin()),
                 std::make_move_iterator(runs[i].found.end()));
    }
    return out;
  }

 private:
  static constexpr size_t kChunk = 256;
  const ModelFacts& facts_;
  const Platform& platform_;
  FactProgress& progress_;
  const Consumers consumers_;  // read from the model itself: no wait for the walk
  std::atomic<size_t> next_{0};
};

}  // namespace

std::vector<Diagnostic> evaluate_while_extracting(const ModelFacts& facts, const Platform& platform,
                                                  FactProgress& progress, const std::function<bool()>& extract) {
  const RuleIndex index(platform);
  ChunkedChecks checks(facts, platform, progress);
  std::vector<ChunkedChecks::Run> walk_thread_runs, check_thread_runs;
  // Node i is checked as soon as the walk has published it; the walk runs on
  // this thread, the checks on another (after the walk, when no thread starts).
  bool ok = false;
  run_side_by_side(
      [&] {
        // However `extract` ends, the checks learn that the walk is over.
        try {
          ok = extract();
        } catch (...) {
          progress.finish();
          throw;
        }
        progress.finish();
        if (!ok) return;
        const RuleIndex own(platform);
        checks.work(own, walk_thread_runs);
      },
      [&] { checks.work(index, check_thread_runs); });
  if (!ok) return {};
  return with_model_level(facts, index, ChunkedChecks::join(std::move(check_thread_runs), std::move(walk_thread_runs)));
}

void fold_unverified(const ModelFacts& facts, std::vector<Diagnostic>& diagnostics, bool keep_individual) {
  const Rule* root_rule = &builtin_rule(builtin::kUnverifiedRoot);
  diagnostics.erase(std::remove_if(diagnostics.begin(), diagnostics.end(),
                                   [&](const Diagnostic& d) { return d.rule == root_rule; }),
                    diagnostics.end());
  struct Blocked {
    size_t checks = 0;
    std::set<long> nodes;
  };
  std::map<uint32_t, Blocked> blocked;
  for (auto& d : diagnostics) {
    const RootCause* cause = facts.cause(d.cause);
    if (d.outcome != Outcome::Unknown || d.rule->builtin || cause == nullptr) continue;
    auto& b = blocked[d.cause];
    ++b.checks;
    b.nodes.insert(d.node);
    d.folded_into_note = !keep_individual;
  }
  for (uint32_t id = 1; id <= facts.causes.size(); ++id) {
    const RootCause& c = facts.causes[id - 1];
    auto it = blocked.find(id);
    if (it == blocked.end() && c.kind != CauseKind::InferenceFailed) continue;
    const size_t checks = it == blocked.end() ? 0 : it->second.checks;
    const size_t nodes = it == blocked.end() ? 0 : it->second.nodes.size();
    std::string message = c.detail + ": ";
    if (checks == 0) {
      message += "no rule check depends on it";
    } else {
      message += std::to_string(checks) + " rule check" + (checks == 1 ? "" : "s") + " on " + std::to_string(nodes) +
                 " node" + (nodes == 1 ? "" : "s") + (c.node >= 0 && c.input.empty() ? " downstream" : "") +
                 " cannot be verified";
    }
    if (!c.hint.empty()) message += "; " + c.hint;
    Diagnostic note = diagnostic(root_rule, Severity::Note, Outcome::Unknown, std::move(message), c.node);
    note.cause = id;
    auto at = std::upper_bound(diagnostics.begin(), diagnostics.end(), note.node,
                               [](long node, const Diagnostic& d) { return node < d.node; });
    // Ahead of the origin node's own findings (BPU0004 sorts among the first ids).
    at = std::lower_bound(diagnostics.begin(), at, note.node, [](const Diagnostic& d, long node) { return d.node < node; });
    diagnostics.insert(at, std::move(note));
  }
}

}  // namespace bpulint
