// fuzz_rules: the same bytes three ways.
//   1. a YAML rule file: load_rule_database (as a platform or shared file) and
//      extend_rule_database (as a user file extending the built-in j6p);
//   2. an expression: parse_expr, free_identifiers, eval (with a trace)
//      against a fixed fact record holding known, unknown and extreme values;
//   3. a message template: parse_template, free_identifiers, render.
// A parse failure must come with an in-range offset and a message; nothing may
// throw, crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "bpulint/rules/expr.h"
#include "bpulint/rules/rule_db.h"
#include "bpulint/rules/value.h"
#include "fuzz_util.h"

using namespace bpulint;

namespace {

Value ints(std::initializer_list<int64_t> v) {
  std::vector<Value> items;
  for (int64_t x : v) items.push_back(Value::of_int(x));
  return Value::of_list(std::move(items));
}

Value tensor(Value shape, const std::string& dtype, bool is_const) {
  Value t = Value::of_record({});
  const bool known = shape.kind() == Value::Kind::List;
  t.set("name", Value::of_string("t"));
  t.set("present", Value::of_bool(true));
  t.set("dtype", Value::of_string(dtype));
  t.set("rank", known ? Value::of_int(static_cast<int64_t>(shape.items().size())) : Value::unknown("rank"));
  t.set("shape", std::move(shape));
  t.set("const", Value::of_bool(is_const));
  t.set("value", Value::unknown("not a constant"));
  return t;
}

// A ConvTranspose3d-like node record with the corner cases expressions meet:
// unknown dims, huge dims whose products overflow, negative and zero values.
const Value& root() {
  static const Value r = [] {
    constexpr int64_t big = std::numeric_limits<int64_t>::max();
    constexpr int64_t small = std::numeric_limits<int64_t>::min();
    Value rec = Value::of_record({});
    rec.set("op", Value::of_string("ConvTranspose"));
    rec.set("domain", Value::of_string(""));
    rec.set("opset", Value::of_int(17));
    rec.set("name", Value::of_string("/a/b\xff\xfe"));
    rec.set("op_class", Value::of_string("bpu"));
    rec.set("kernel_shape", ints({5, 2, 2}));
    rec.set("strides", ints({5, 2, 2}));
    rec.set("pads", ints({0, 0, 0, 0, 0, 0}));
    rec.set("dilations", ints({1, 1, 1}));
    rec.set("group", Value::of_int(1));
    rec.set("alpha", Value::of_float(0.5));
    rec.set("huge", ints({big, big, small, -1, 0}));
    rec.set("nothing", Value::unknown("absent"));
    rec.set("auto_pad", Value::of_string("NOTSET"));
    std::vector<Value> dyn = {Value::unknown("N"), Value::of_int(128), Value::of_int(2), Value::of_int(6),
                              Value::of_int(6)};
    rec.set("input", Value::of_list({tensor(Value::of_list(dyn), "float32", false),
                                      tensor(ints({128, 64, 5, 2, 2}), "float32", true),
                                      tensor(ints({big, big, 3}), "int8", true),
                                      tensor(Value::unknown("no shape"), "float16", false)}));
    rec.set("output", Value::of_list({tensor(ints({1, 64, 10, 12, 12}), "float32", false)}));
    rec.set("max_rank", Value::of_int(5));
    return rec;
  }();
  return r;
}

void fuzz_expression(const std::string& text) {
  ExprError err;
  ExprPtr e = parse_expr(text, &err);
  if (!e) {
    FUZZ_CHECK(err.offset <= text.size(), "expression error offset beyond the text");
    FUZZ_CHECK(!err.message.empty(), "expression error without a message");
    return;
  }
  FUZZ_CHECK(expr_text(*e) == text, "expr_text differs from the source");
  (void)free_identifiers(*e);
  Trace trace;
  const Value v = eval(*e, root(), &trace);
  (void)v.to_string();
  for (const auto& t : trace) (void)t.value.to_string();
  // Re-parsing a traced fact's canonical text must work: it is shown to users.
  for (const auto& t : trace) FUZZ_CHECK(parse_expr(t.text, nullptr) != nullptr, "trace text does not parse: " + t.text);
}

void fuzz_template(const std::string& text) {
  ExprError err;
  TemplatePtr t = parse_template(text, &err);
  if (!t) {
    FUZZ_CHECK(err.offset <= text.size(), "template error offset beyond the text");
    FUZZ_CHECK(!err.message.empty(), "template error without a message");
    return;
  }
  (void)free_identifiers(*t);
  (void)render(*t, root());
}

void fuzz_rule_file(const std::string& text) {
  RuleDatabase db;
  std::string error;
  if (!load_rule_database({{"fuzz.yaml", text}}, db, error)) {
    FUZZ_CHECK(!error.empty(), "load_rule_database failed without a message");
  }
  // A platform file plus the same bytes as a shared file it includes.
  const std::string platform =
      "schema_version: 1\nplatform: p\nmarch: m\ndescription: d\ninclude: [shared.yaml]\n";
  RuleDatabase db2;
  if (!load_rule_database({{"p.yaml", platform}, {"shared.yaml", text}}, db2, error)) {
    FUZZ_CHECK(!error.empty(), "load_rule_database (shared) failed without a message");
  }
  RuleDatabase ext = fuzz::builtin_db();
  if (!extend_rule_database(ext, {{"user.yaml", text}}, error)) {
    FUZZ_CHECK(!error.empty(), "extend_rule_database failed without a message");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // bigger inputs add time, not coverage
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz_expression(text);
  fuzz_template(text);
  fuzz_rule_file(text);
  return 0;
}
