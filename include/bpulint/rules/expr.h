// Constraint expressions and message templates used by YAML rule files.
//
//   kernel_shape[0] in 1..2
//   all(t in input: t.rank <= 10)
//   input[0].dtype in {'int8', 'int16'}
//
// Expressions are parsed once into an immutable AST and evaluated against a
// node's facts (a Value record). Evaluation is tri-state: anything that
// cannot be decided (unknown dim, missing fact, type mismatch, overflow)
// yields Value::unknown(reason) instead of a guess, and `and`/`or`/`all`/
// `any` follow Kleene logic so a definite answer still wins where one exists.
// Nothing here throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpulint/rules/trace.h"
#include "bpulint/rules/value.h"

namespace bpulint {

class Expr;  // immutable AST
using ExprPtr = std::shared_ptr<const Expr>;

struct ExprError {
  size_t offset = 0;  // byte offset into the source text
  std::string message;
};

// Returns nullptr (and fills *error when given) on a syntax error, an
// unknown function, wrong arity, empty text, trailing junk or nesting deeper
// than 200 levels.
ExprPtr parse_expr(const std::string& text, ExprError* error);

// The source text the expression was parsed from.
const std::string& expr_text(const Expr& expr);

// Root-level fact names the expression reads (not quantifier variables, not
// function names), sorted and unique.
std::vector<std::string> free_identifiers(const Expr& expr);

// One fact reference seen during evaluation, e.g. {"kernel_shape[0]", 5}: trace.h.

// A root-level fact name, interned when an expression is parsed (rule load),
// so a fact source can find its facts by a small integer, not by string.
using FactId = uint32_t;
FactId intern_fact(const std::string& name);

// Where an expression's root-level facts come from: a record (the Value
// overloads below), or a node's typed facts read only when an expression asks
// (NodeFactSource in facts.h), so no record is built per node.
class FactSource {
 public:
  virtual ~FactSource() = default;
  // The fact, or nullptr when there is none. `name` is the interned `id`'s
  // text. The pointee must stay valid while the source lives.
  virtual const Value* fact(FactId id, const std::string& name) const = 0;

  // Shortcuts for a source whose list facts have typed elements (a node's
  // tensors), so `input[1].const` or `len(input)` reads one field instead of
  // building every element's record. Each answer must equal the general
  // path's; nullptr / -1 (the defaults) mean "take the general path", which
  // also owns every error message (index out of range, no such field).
  virtual const Value* element_field(FactId list, size_t index, FactId field) const {
    (void)list, (void)index, (void)field;
    return nullptr;
  }
  virtual long list_size(FactId list) const {
    (void)list;
    return -1;
  }
};

// A record's fields as root facts (the model record, rule docs, tests).
class RecordFactSource final : public FactSource {
 public:
  explicit RecordFactSource(const Value& record) : record_(record) {}
  const Value* fact(FactId, const std::string& name) const override { return record_.field(name); }

 private:
  const Value& record_;
};

// Evaluates against `root` (a record of facts). When `trace` is given, every
// fact reference evaluated is appended once, in first-seen order: the longest
// identifier/member/index/slice chain rooted at a root-level name that does
// not involve a quantifier variable (`input[0].shape[2]`, `kernel_shape`).
Value eval(const Expr& expr, const Value& root, Trace* trace = nullptr);
Value eval(const Expr& expr, const FactSource& root, Trace* trace = nullptr);

// Message template: literal text with {expression} placeholders; `{{` and
// `}}` are literal braces. Example: "kernel D={kernel_shape[0]} outside [1, 2]".
class Template;
using TemplatePtr = std::shared_ptr<const Template>;

// Error offsets are byte offsets into the whole template text.
TemplatePtr parse_template(const std::string& text, ExprError* error);

// Placeholders render with Value::to_string(); unknown renders as "?" (a dynamic dim as its name).
std::string render(const Template& tmpl, const Value& root);
std::string render(const Template& tmpl, const FactSource& root);

// Union of the placeholders' free identifiers, sorted and unique.
std::vector<std::string> free_identifiers(const Template& tmpl);

}  // namespace bpulint
