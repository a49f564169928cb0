// Constraint expressions, back half: the tri-state evaluator (AST of expr_ast.h x
// facts -> Value) and the public eval / render. Never throws; parsing is in
// expr_parse.cpp, the API in include/bpulint/rules/expr.h.
#include "bpulint/rules/expr.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <utility>

#include "expr_ast.h"

namespace bpulint {
using namespace expr_detail;  // the AST, expr_ast.h
namespace {

// ===========================================================================
// Limits and small helpers
// ===========================================================================

// range(a, b) materialises a list; cap it so a typo cannot eat all memory.
constexpr int64_t kMaxRangeLength = int64_t{1} << 20;
// Every evaluation stops after this many node evaluations (about 0.1 s): no
// rule can make a lint run without end. Real rules take tens of steps (they
// quantify over a node's inputs and dims); a quantifier over a range() of a
// hundred thousand elements still fits, nested ones over long ranges do not.
constexpr int64_t kMaxEvalSteps = int64_t{1} << 20;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

const char* type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Unknown: return "unknown";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "string";
    case Value::Kind::List: return "list";
    case Value::Kind::Record: return "record";
  }
  return "?";
}

Value type_error(const std::string& what) { return Value::unknown("type error: " + what); }

// ===========================================================================
// Evaluator
// ===========================================================================

// Result of evaluating a node: either a pointer into long-lived data (the
// facts, a literal in the AST, the list a quantifier iterates) or an owned
// temporary. Lets `input[0].shape[2]` walk the facts without copying them.
class Ref {
 public:
  static Ref to(const Value& v) {
    Ref r;
    r.ptr_ = &v;
    return r;
  }
  static Ref own(Value v) {
    Ref r;
    r.owned_ = std::move(v);
    return r;
  }
  const Value& get() const { return ptr_ ? *ptr_ : owned_; }
  Value take() && { return ptr_ ? *ptr_ : std::move(owned_); }

  // A part of this value (a list item, a record field). Borrowed only if
  // this Ref is borrowed; otherwise the part must be copied out before the
  // owning temporary dies.
  Ref part(const Value& child) const { return ptr_ ? to(child) : own(child); }

 private:
  const Value* ptr_ = nullptr;
  Value owned_;
};

// Tri-state structural equality: [1, ?] == [2, ?] is false (a definite
// mismatch wins), [1, ?] == [1, 2] is unknown. Leaves use Value::equals.
Value tri_equals(const Value& a, const Value& b) {
  if (a.is_unknown()) return a;
  if (b.is_unknown()) return b;
  bool lists = a.kind() == Value::Kind::List && b.kind() == Value::Kind::List;
  bool records = a.kind() == Value::Kind::Record && b.kind() == Value::Kind::Record;
  if (!lists && !records) return Value::of_bool(a.equals(b));
  std::optional<Value> unknown;
  auto merge = [&](const Value& r) {
    if (r.is_unknown()) {
      if (!unknown) unknown = r;
      return true;
    }
    return r.as_bool();
  };
  if (lists) {
    if (a.items().size() != b.items().size()) return Value::of_bool(false);
    for (size_t i = 0; i < a.items().size(); ++i) {
      if (!merge(tri_equals(a.items()[i], b.items()[i]))) return Value::of_bool(false);
    }
  } else {
    if (a.fields().size() != b.fields().size()) return Value::of_bool(false);
    for (auto x = a.fields().begin(), y = b.fields().begin(); x != a.fields().end(); ++x, ++y) {
      if (x->first != y->first) return Value::of_bool(false);
      if (!merge(tri_equals(x->second, y->second))) return Value::of_bool(false);
    }
  }
  return unknown ? *unknown : Value::of_bool(true);
}

Value negate(Value v) { return v.kind() == Value::Kind::Bool ? Value::of_bool(!v.as_bool()) : v; }

// Exact three-way comparison of an int and a finite double.
int compare_int_double(int64_t i, double d) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (d >= kTwo63) return -1;
  if (d < -kTwo63) return 1;
  double whole = std::trunc(d);
  int64_t w = static_cast<int64_t>(whole);
  if (i != w) return i < w ? -1 : 1;
  double frac = d - whole;
  return frac > 0 ? -1 : (frac < 0 ? 1 : 0);
}

// Three-way numeric comparison; both arguments must be numbers, not NaN.
int compare_numbers(const Value& a, const Value& b) {
  bool ai = a.kind() == Value::Kind::Int, bi = b.kind() == Value::Kind::Int;
  if (ai && bi) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  if (ai) return compare_int_double(a.as_int(), b.as_number());
  if (bi) return -compare_int_double(b.as_int(), a.as_number());
  double x = a.as_number(), y = b.as_number();
  return x < y ? -1 : (x > y ? 1 : 0);
}

bool is_nan(const Value& v) { return v.kind() == Value::Kind::Float && std::isnan(v.as_number()); }

Value compare(Op op, const Value& a, const Value& b) {
  if (a.is_unknown()) return a;
  if (b.is_unknown()) return b;
  if (op == Op::Eq) return tri_equals(a, b);
  if (op == Op::Ne) return negate(tri_equals(a, b));
  int c = 0;
  if (a.is_number() && b.is_number()) {
    if (is_nan(a) || is_nan(b)) return Value::unknown("comparison with NaN");
    c = compare_numbers(a, b);
  } else if (a.kind() == Value::Kind::String && b.kind() == Value::Kind::String) {
    c = a.as_string().compare(b.as_string());
  } else {
    return type_error(std::string("cannot compare ") + type_name(a) + " and " + type_name(b) + " with '" +
                      op_symbol(op) + "'");
  }
  switch (op) {
    case Op::Lt: return Value::of_bool(c < 0);
    case Op::Le: return Value::of_bool(c <= 0);
    case Op::Gt: return Value::of_bool(c > 0);
    default: return Value::of_bool(c >= 0);
  }
}

Value overflow() { return Value::unknown("integer overflow"); }
Value division_by_zero() { return Value::unknown("division by zero"); }

// Python-style floor division and modulo; callers have excluded b == 0.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a % b < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // a % -1 overflows in C++ for INT64_MIN
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

Value int_arith(Op op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case Op::Add: return __builtin_add_overflow(a, b, &r) ? overflow() : Value::of_int(r);
    case Op::Sub: return __builtin_sub_overflow(a, b, &r) ? overflow() : Value::of_int(r);
    case Op::Mul: return __builtin_mul_overflow(a, b, &r) ? overflow() : Value::of_int(r);
    default: break;
  }
  if (b == 0) return division_by_zero();
  if (op == Op::Mod) return Value::of_int(floor_mod(a, b));
  if (a == kInt64Min && b == -1) return overflow();
  if (op == Op::FloorDiv) return Value::of_int(floor_div(a, b));
  // Op::Div: stay integral when exact, so `c / group` can index or compare as an int.
  if (a % b == 0) return Value::of_int(a / b);
  return Value::of_float(static_cast<double>(a) / static_cast<double>(b));
}

Value float_arith(Op op, double a, double b) {
  double r = 0;
  switch (op) {
    case Op::Add: r = a + b; break;
    case Op::Sub: r = a - b; break;
    case Op::Mul: r = a * b; break;
    default:
      if (b == 0) return division_by_zero();
      if (op == Op::Div) {
        r = a / b;
      } else if (op == Op::FloorDiv) {
        r = std::floor(a / b);
      } else {
        r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
      }
  }
  if (!std::isfinite(r)) return Value::unknown("float overflow");
  return Value::of_float(r);
}

Value arith(Op op, const Value& a, const Value& b) {
  if (a.is_unknown()) return a;
  if (b.is_unknown()) return b;
  if (a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int) return int_arith(op, a.as_int(), b.as_int());
  if (a.is_number() && b.is_number()) return float_arith(op, a.as_number(), b.as_number());
  if (op == Op::Add && a.kind() == b.kind()) {
    if (a.kind() == Value::Kind::String) return Value::of_string(a.as_string() + b.as_string());
    if (a.kind() == Value::Kind::List) {
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::of_list(std::move(items));
    }
  }
  return type_error(std::string("cannot apply '") + op_symbol(op) + "' to " + type_name(a) + " and " +
                    type_name(b));
}

// Deep: a list or record is known only if everything inside it is.
bool fully_known(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Unknown: return false;
    case Value::Kind::List:
      return std::all_of(v.items().begin(), v.items().end(), fully_known);
    case Value::Kind::Record:
      return std::all_of(v.fields().begin(), v.fields().end(),
                         [](const auto& field) { return fully_known(field.second); });
    default: return true;
  }
}

// Folds Kleene and/or: `dominant` (false for and, true for or) wins
// outright; otherwise the first unknown (or non-bool) operand is reported.
class KleeneFold {
 public:
  explicit KleeneFold(bool dominant) : dominant_(dominant) {}

  // Returns true once the result is decided by a dominant operand.
  bool add(const Value& v, const char* context) {
    if (v.kind() == Value::Kind::Bool) return decided_ = decided_ || v.as_bool() == dominant_;
    if (!unknown_) {
      unknown_ = v.is_unknown() ? v : type_error(std::string(context) + " needs a bool, got " + type_name(v));
    }
    return decided_;
  }

  Value result() const {
    if (decided_) return Value::of_bool(dominant_);
    return unknown_ ? *unknown_ : Value::of_bool(!dominant_);
  }

 private:
  bool dominant_;
  bool decided_ = false;
  std::optional<Value> unknown_;
};

// Thrown when an evaluation exceeds kMaxSteps; caught by the public eval().
struct StepLimit {};

class Evaluator {
 public:
  Evaluator(const FactSource& root, Trace* trace) : root_(root), trace_(trace) {}

  Ref eval(const Node& n) {
    if (++steps_ > kMaxEvalSteps) throw StepLimit{};
    if (!n.traced || !trace_) return eval_node(n);
    // Reserve the trace slot before evaluating, so `shape[axis]` is listed
    // before the `axis` it contains (source order).
    size_t slot = reserve_trace_slot(n.text);
    Ref r = eval_node(n);
    if (slot != kNoSlot) (*trace_)[slot].value = r.get();
    return r;
  }

 private:
  static constexpr size_t kNoSlot = SIZE_MAX;

  size_t reserve_trace_slot(const std::string& text) {
    for (const TraceEntry& e : *trace_) {
      if (e.text == text) return kNoSlot;
    }
    trace_->push_back({text, Value::unknown("not evaluated")});
    return trace_->size() - 1;
  }

  Ref eval_node(const Node& n) {
    switch (n.kind) {
      case NodeKind::Literal: return Ref::to(n.literal);
      case NodeKind::RootIdent: return eval_root_ident(n);
      case NodeKind::BoundVar: return eval_bound_var(n);
      case NodeKind::Member: return eval_member(n);
      case NodeKind::Index: return eval_index(n);
      case NodeKind::Slice: return eval_slice(n);
      case NodeKind::ListLit: return Ref::own(eval_list_literal(n));
      case NodeKind::Neg: return Ref::own(eval_neg(n));
      case NodeKind::Not: return Ref::own(eval_not(n));
      case NodeKind::And: return Ref::own(eval_logical(n, false, "'and'"));
      case NodeKind::Or: return Ref::own(eval_logical(n, true, "'or'"));
      case NodeKind::Arith: return Ref::own(eval_arith(n));
      case NodeKind::Compare: return Ref::own(eval_compare(n));
      case NodeKind::InRange: return Ref::own(eval_in_range(n));
      case NodeKind::InSet: return Ref::own(eval_in_set(n));
      case NodeKind::InList: return Ref::own(eval_in_list(n));
      case NodeKind::Call: return Ref::own(eval_call(n));
      case NodeKind::Quantifier: return Ref::own(eval_quantifier(n));
    }
    return Ref::own(Value::unknown("internal error: bad node"));
  }

  Ref eval_root_ident(const Node& n) {
    const Value* v = root_.fact(n.fact, n.name);
    if (!v) return Ref::own(Value::unknown("no fact '" + n.name + "'"));
    return Ref::to(*v);
  }

  // A lazily bound element is read from its list only when the body needs
  // all of it; its fields are asked of the source one by one (eval_member).
  Ref eval_bound_var(const Node& n) {
    const Binding& b = env_.at(n.slot);
    if (b.value != nullptr) return Ref::to(*b.value);
    const Value* list = root_.fact(b.list->fact, b.list->name);
    if (list == nullptr || list->kind() != Value::Kind::List || b.index >= list->items().size()) {
      return Ref::own(Value::unknown("internal error: " + b.list->name + " changed length"));
    }
    return Ref::to(list->items()[b.index]);
  }

  Ref eval_member(const Node& n) {
    // Untraced only: a trace lists the facts read, and the shortcut reads fewer.
    if (n.element_field && trace_ == nullptr) {
      if (const Value* v = root_.element_field(n.kids[0]->kids[0]->fact, n.element_index, n.field_fact)) return Ref::to(*v);
    }
    if (n.kids[0]->kind == NodeKind::BoundVar) {
      const Binding& b = env_.at(n.kids[0]->slot);
      if (b.value == nullptr) {
        if (const Value* v = root_.element_field(b.list->fact, b.index, n.field_fact)) return Ref::to(*v);
      }
    }
    Ref base = eval(*n.kids[0]);
    const Value& b = base.get();
    if (b.is_unknown()) return base;
    if (b.kind() != Value::Kind::Record) {
      return Ref::own(type_error(n.kids[0]->text + " is " + type_name(b) + ", it has no field '" + n.name + "'"));
    }
    const Value* field = b.field(n.name);
    if (!field) return Ref::own(Value::unknown(n.kids[0]->text + " has no field '" + n.name + "'"));
    return base.part(*field);
  }

  Ref eval_index(const Node& n) {
    Ref base = eval(*n.kids[0]);
    Ref index = eval(*n.kids[1]);
    const Value& b = base.get();
    const Value& i = index.get();
    if (b.is_unknown()) return base;
    if (i.is_unknown()) return index;
    bool is_list = b.kind() == Value::Kind::List;
    if (!is_list && b.kind() != Value::Kind::String) {
      return Ref::own(type_error("cannot index " + n.kids[0]->text + " (" + type_name(b) + ")"));
    }
    if (i.kind() != Value::Kind::Int) return Ref::own(type_error(std::string("index must be an int, got ") + type_name(i)));
    int64_t size = static_cast<int64_t>(is_list ? b.items().size() : b.as_string().size());
    int64_t k = i.as_int() < 0 ? i.as_int() + size : i.as_int();
    if (k < 0 || k >= size) {
      return Ref::own(Value::unknown("index " + std::to_string(i.as_int()) + " out of range for " +
                                     n.kids[0]->text + " (length " + std::to_string(size) + ")"));
    }
    if (!is_list) return Ref::own(Value::of_string(b.as_string().substr(static_cast<size_t>(k), 1)));
    return base.part(b.items()[static_cast<size_t>(k)]);
  }

  // Python slice bound: negative counts from the end, then clamp to [0, size].
  static int64_t slice_bound(int64_t v, int64_t size) {
    if (v < 0) v = std::max<int64_t>(v + size, 0);
    return std::min(v, size);
  }

  Ref eval_slice(const Node& n) {
    Ref base = eval(*n.kids[0]);
    const Value& b = base.get();
    int64_t bounds[2] = {0, 0};
    for (int side = 0; side < 2; ++side) {
      const Node* bound = n.kids[1 + side].get();
      if (!bound) continue;
      Ref r = eval(*bound);
      if (r.get().is_unknown()) return r;
      if (r.get().kind() != Value::Kind::Int) {
        return Ref::own(type_error(std::string("slice bound must be an int, got ") + type_name(r.get())));
      }
      bounds[side] = r.get().as_int();
    }
    if (b.is_unknown()) return base;
    bool is_list = b.kind() == Value::Kind::List;
    if (!is_list && b.kind() != Value::Kind::String) {
      return Ref::own(type_error("cannot slice " + n.kids[0]->text + " (" + type_name(b) + ")"));
    }
    int64_t size = static_cast<int64_t>(is_list ? b.items().size() : b.as_string().size());
    int64_t lo = n.kids[1] ? slice_bound(bounds[0], size) : 0;
    int64_t hi = n.kids[2] ? slice_bound(bounds[1], size) : size;
    hi = std::max(lo, hi);
    if (!is_list) return Ref::own(Value::of_string(b.as_string().substr(static_cast<size_t>(lo), static_cast<size_t>(hi - lo))));
    return Ref::own(Value::of_list(std::vector<Value>(b.items().begin() + lo, b.items().begin() + hi)));
  }

  Value eval_list_literal(const Node& n) {
    std::vector<Value> items;
    items.reserve(n.kids.size());
    for (const NodePtr& kid : n.kids) items.push_back(eval(*kid).take());
    return Value::of_list(std::move(items));
  }

  Value eval_neg(const Node& n) {
    Ref r = eval(*n.kids[0]);
    const Value& v = r.get();
    if (v.is_unknown()) return v;
    if (v.kind() == Value::Kind::Int) return v.as_int() == kInt64Min ? overflow() : Value::of_int(-v.as_int());
    if (v.kind() == Value::Kind::Float) return Value::of_float(-v.as_number());
    return type_error(std::string("cannot negate ") + type_name(v));
  }

  Value eval_not(const Node& n) {
    Ref r = eval(*n.kids[0]);
    const Value& v = r.get();
    if (v.kind() == Value::Kind::Bool) return Value::of_bool(!v.as_bool());
    if (v.is_unknown()) return v;
    return type_error(std::string("'not' needs a bool, got ") + type_name(v));
  }

  // Short-circuits on a dominant operand, like Python; unevaluated operands
  // do not appear in the trace.
  Value eval_logical(const Node& n, bool dominant, const char* context) {
    KleeneFold fold(dominant);
    for (const NodePtr& kid : n.kids) {
      if (fold.add(eval(*kid).get(), context)) break;
    }
    return fold.result();
  }

  // Arithmetic does not short-circuit: every fact is still evaluated (and
  // traced) even once the result is known to be unknown.
  Value eval_arith(const Node& n) {
    Value acc = eval(*n.kids[0]).take();
    for (size_t i = 1; i < n.kids.size(); ++i) {
      Ref right = eval(*n.kids[i]);
      acc = arith(n.ops[i - 1], acc, right.get());
    }
    return acc;
  }

  // `a < b < c` == `a < b and b < c`, with b evaluated once.
  Value eval_compare(const Node& n) {
    KleeneFold fold(false);
    Ref left = eval(*n.kids[0]);
    for (size_t i = 1; i < n.kids.size(); ++i) {
      Ref right = eval(*n.kids[i]);
      if (fold.add(compare(n.ops[i - 1], left.get(), right.get()), "comparison")) break;
      left = std::move(right);
    }
    return fold.result();
  }

  Value eval_in_range(const Node& n) {
    Ref x = eval(*n.kids[0]);
    Ref lo = eval(*n.kids[1]);
    Ref hi = eval(*n.kids[2]);
    for (const Ref* r : {&x, &lo, &hi}) {
      const Value& v = r->get();
      if (v.is_unknown()) return v;
      if (!v.is_number()) return type_error(std::string("range membership needs numbers, got ") + type_name(v));
      if (is_nan(v)) return Value::unknown("comparison with NaN");
    }
    bool inside = compare_numbers(lo.get(), x.get()) <= 0 && compare_numbers(x.get(), hi.get()) <= 0;
    return Value::of_bool(inside != n.negated);
  }

  // `x in {a, b}`: true if any element equals x, even if others are unknown.
  Value eval_in_set(const Node& n) {
    Ref x = eval(*n.kids[0]);
    KleeneFold fold(true);
    for (size_t i = 1; i < n.kids.size(); ++i) {
      if (fold.add(tri_equals(x.get(), eval(*n.kids[i]).get()), "'in'")) break;
    }
    return n.negated ? negate(fold.result()) : fold.result();
  }

  Value eval_in_list(const Node& n) {
    Ref x = eval(*n.kids[0]);
    Ref list = eval(*n.kids[1]);
    const Value& l = list.get();
    if (l.is_unknown()) return x.get().is_unknown() ? x.get() : l;
    if (l.kind() != Value::Kind::List) return type_error(std::string("'in' needs a list, got ") + type_name(l));
    KleeneFold fold(true);
    for (const Value& item : l.items()) {
      if (fold.add(tri_equals(x.get(), item), "'in'")) break;
    }
    return n.negated ? negate(fold.result()) : fold.result();
  }

  // ---- functions ----

  Value eval_call(const Node& n) {
    const char* name = function_name(n.func);
    switch (n.func) {
      case Func::Len:
        if (n.kids[0]->kind == NodeKind::RootIdent && trace_ == nullptr) {
          if (const long size = root_.list_size(n.kids[0]->fact); size >= 0) return Value::of_int(size);
        }
        return fn_len(eval(*n.kids[0]).get());
      case Func::Prod:
      case Func::Sum: return fn_fold(n.func, eval(*n.kids[0]).get());
      case Func::Min:
      case Func::Max: return fn_extreme(n);
      case Func::Abs: return fn_abs(eval(*n.kids[0]).get());
      case Func::Known: return Value::of_bool(fully_known(eval(*n.kids[0]).get()));
      default: break;
    }
    // The remaining functions take two ints.
    Ref a = eval(*n.kids[0]);
    Ref b = eval(*n.kids[1]);
    for (const Ref* r : {&a, &b}) {
      if (r->get().is_unknown()) return r->get();
      if (r->get().kind() != Value::Kind::Int) {
        return type_error(std::string(name) + "() needs ints, got " + type_name(r->get()));
      }
    }
    int64_t x = a.get().as_int(), y = b.get().as_int();
    if (n.func == Func::Range) return fn_range(x, y);
    if (n.func == Func::CeilDiv) return fn_ceil_div(x, y);
    return fn_align_up(x, y);
  }

  static Value fn_len(const Value& v) {
    if (v.is_unknown()) return v;
    if (v.kind() == Value::Kind::List) return Value::of_int(static_cast<int64_t>(v.items().size()));
    if (v.kind() == Value::Kind::String) return Value::of_int(static_cast<int64_t>(v.as_string().size()));
    return type_error(std::string("len() needs a list, got ") + type_name(v));
  }

  // prod / sum with checked integer arithmetic; empty lists give 1 / 0.
  static Value fn_fold(Func func, const Value& list) {
    const char* name = function_name(func);
    if (list.is_unknown()) return list;
    if (list.kind() != Value::Kind::List) return type_error(std::string(name) + "() needs a list, got " + type_name(list));
    Op op = func == Func::Prod ? Op::Mul : Op::Add;
    Value acc = Value::of_int(func == Func::Prod ? 1 : 0);
    for (const Value& item : list.items()) {
      if (item.is_unknown()) return item;
      if (!item.is_number()) return type_error(std::string(name) + "() needs numbers, got " + type_name(item));
      acc = arith(op, acc, item);
      if (acc.is_unknown()) return acc;
    }
    return acc;
  }

  // min(list) or min(a, b, ...); likewise max.
  Value fn_extreme(const Node& n) {
    bool is_max = n.func == Func::Max;
    std::string name = function_name(n.func);
    std::vector<Value> args;
    Ref single;
    const std::vector<Value>* candidates = &args;
    if (n.kids.size() == 1) {
      single = eval(*n.kids[0]);
      const Value& l = single.get();
      if (l.is_unknown()) return l;
      if (l.kind() != Value::Kind::List) return type_error(name + "() needs a list, got " + type_name(l));
      candidates = &l.items();
    } else {
      for (const NodePtr& kid : n.kids) args.push_back(eval(*kid).take());
    }
    if (candidates->empty()) return Value::unknown(name + "() of an empty list");
    const Value* best = nullptr;
    for (const Value& v : *candidates) {
      if (v.is_unknown()) return v;
      if (!v.is_number()) return type_error(name + "() needs numbers, got " + type_name(v));
      if (is_nan(v)) return Value::unknown("comparison with NaN");
      if (!best || (is_max ? compare_numbers(v, *best) > 0 : compare_numbers(v, *best) < 0)) best = &v;
    }
    return *best;
  }

  static Value fn_abs(const Value& v) {
    if (v.is_unknown()) return v;
    if (v.kind() == Value::Kind::Int) {
      if (v.as_int() == kInt64Min) return overflow();
      return Value::of_int(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.kind() == Value::Kind::Float) return Value::of_float(std::fabs(v.as_number()));
    return type_error(std::string("abs() needs a number, got ") + type_name(v));
  }

  static Value fn_range(int64_t a, int64_t b) {
    if (b <= a) return Value::of_list({});
    int64_t length = 0;
    if (__builtin_sub_overflow(b, a, &length) || length > kMaxRangeLength) {
      return Value::unknown("range() would have more than " + std::to_string(kMaxRangeLength) + " elements");
    }
    std::vector<Value> items;
    items.reserve(static_cast<size_t>(length));
    for (int64_t i = a; i < b; ++i) items.push_back(Value::of_int(i));
    return Value::of_list(std::move(items));
  }

  static Value fn_ceil_div(int64_t a, int64_t b) {
    if (b == 0) return division_by_zero();
    if (a == kInt64Min && b == -1) return overflow();
    int64_t q = a / b;
    if (a % b != 0 && ((a % b > 0) == (b > 0))) ++q;
    return Value::of_int(q);
  }

  static Value fn_align_up(int64_t x, int64_t n) {
    if (n <= 0) return Value::unknown("align_up() needs a positive alignment, got " + std::to_string(n));
    Value blocks = fn_ceil_div(x, n);
    int64_t r = 0;
    if (__builtin_mul_overflow(blocks.as_int(), n, &r)) return overflow();
    return Value::of_int(r);
  }

  // What a quantifier variable is bound to: an element in hand, or (lazy)
  // element `index` of a root list whose source answers element by element.
  struct Binding {
    const Value* value = nullptr;
    const Node* list = nullptr;  // RootIdent
    size_t index = 0;
  };

  // Untraced, `all(t in input + output: ...)` walks the lists by index, so
  // `t.rank` reads one field and no element record is built. A trace needs
  // the lists themselves, so it takes the general path.
  bool lazy_bindings(const Node& list, std::vector<Binding>& out) const {
    if (trace_ != nullptr) return false;
    std::vector<const Node*> parts;
    if (list.kind == NodeKind::RootIdent) {
      parts.push_back(&list);
    } else if (list.kind == NodeKind::Arith &&
               std::all_of(list.ops.begin(), list.ops.end(), [](Op op) { return op == Op::Add; })) {
      for (const NodePtr& kid : list.kids) {
        if (kid->kind != NodeKind::RootIdent) return false;
        parts.push_back(kid.get());
      }
    } else {
      return false;
    }
    std::vector<long> sizes;
    for (const Node* part : parts) {
      const long size = root_.list_size(part->fact);
      if (size < 0) return false;
      sizes.push_back(size);
    }
    for (size_t p = 0; p < parts.size(); ++p) {
      for (long k = 0; k < sizes[p]; ++k) out.push_back({nullptr, parts[p], static_cast<size_t>(k)});
    }
    return true;
  }

  // all / any / count / map over a list, binding the variable to each element.
  Value eval_quantifier(const Node& n) {
    std::string name = function_name(n.func);
    std::vector<Binding> items;
    Ref list = Ref::own(Value());
    if (!lazy_bindings(*n.kids[0], items)) {
      list = eval(*n.kids[0]);
      const Value& l = list.get();
      if (l.is_unknown()) return l;
      if (l.kind() != Value::Kind::List) return type_error(name + "() needs a list, got " + type_name(l));
      items.reserve(l.items().size());
      for (const Value& item : l.items()) items.push_back({&item, nullptr, 0});
    }
    std::string context = name + "() condition";
    if (n.func == Func::Count) return count_true(n, items, context);
    if (n.func == Func::Map) return map_items(n, items);
    KleeneFold fold(n.func == Func::Any);  // all: false dominates; any: true does
    for (const Binding& item : items) {
      if (fold.add(eval_bound(n, item).get(), context.c_str())) break;
    }
    return fold.result();
  }

  // map(v in LIST: expr): the list of expr for each element; unknown
  // results stay as unknown elements (prod/sum then report them).
  Value map_items(const Node& n, const std::vector<Binding>& items) {
    std::vector<Value> out;
    out.reserve(items.size());
    for (const Binding& item : items) out.push_back(eval_bound(n, item).take());
    return Value::of_list(std::move(out));
  }

  Value count_true(const Node& n, const std::vector<Binding>& items, const std::string& context) {
    int64_t count = 0;
    for (const Binding& item : items) {
      Ref r = eval_bound(n, item);
      const Value& v = r.get();
      if (v.is_unknown()) return v;
      if (v.kind() != Value::Kind::Bool) return type_error(context + " needs a bool, got " + type_name(v));
      if (v.as_bool()) ++count;
    }
    return Value::of_int(count);
  }

  // The body's value is copied out before the binding is popped, because it
  // may borrow from the bound element.
  Ref eval_bound(const Node& quantifier, const Binding& item) {
    env_.push_back(item);
    Value v = eval(*quantifier.kids[1]).take();
    env_.pop_back();
    return Ref::own(std::move(v));
  }

  const FactSource& root_;
  Trace* trace_;
  std::vector<Binding> env_;  // quantifier bindings by slot
  int64_t steps_ = 0;         // nodes evaluated so far
};

}  // namespace

// ===========================================================================
// Public API
// ===========================================================================

Value eval(const Expr& expr, const Value& root, Trace* trace) { return eval(expr, RecordFactSource(root), trace); }

Value eval(const Expr& expr, const FactSource& root, Trace* trace) {
  try {
    return Evaluator(root, trace).eval(*expr.root).take();
  } catch (const StepLimit&) {
    return Value::unknown("the expression took more than " + std::to_string(kMaxEvalSteps) +
                          " evaluation steps (nested quantifiers over long lists?) and was stopped");
  } catch (const std::exception& e) {  // e.g. std::bad_alloc; never expected
    return Value::unknown(std::string("internal error: ") + e.what());
  }
}

std::string render(const Template& tmpl, const Value& root) { return render(tmpl, RecordFactSource(root)); }

std::string render(const Template& tmpl, const FactSource& root) {
  try {
    std::string out;
    for (const Template::Piece& piece : tmpl.pieces) {
      out += piece.expr ? eval(*piece.expr, root).to_string() : piece.literal;
    }
    return out;
  } catch (const std::exception&) {  // out of memory; keep the raw text
    return tmpl.source;
  }
}

}  // namespace bpulint
