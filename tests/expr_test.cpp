// Tests for the constraint expression language and message templates.
#include <doctest/doctest.h>

#include <string>

#include "bpulint/rules/expr.h"
#include "bpulint/rules/value.h"

using bpulint::ExprError;
using bpulint::Trace;
using bpulint::Value;

namespace {

Value I(int64_t v) { return Value::of_int(v); }
Value S(const std::string& v) { return Value::of_string(v); }
Value L(std::vector<Value> v) { return Value::of_list(std::move(v)); }

Value tensor(const std::string& name, const std::string& dtype, std::vector<Value> shape) {
  int64_t rank = static_cast<int64_t>(shape.size());
  return Value::of_record({{"name", S(name)},
                           {"dtype", S(dtype)},
                           {"shape", L(std::move(shape))},
                           {"rank", I(rank)},
                           {"const", Value::of_bool(false)}});
}

// A ConvTranspose node whose weight has one unknown (dynamic) dim.
Value facts() {
  return Value::of_record({
      {"op", S("ConvTranspose")},
      {"domain", S("")},
      {"opset", I(17)},
      {"kernel_shape", L({I(5), I(2), I(2)})},
      {"strides", L({I(5), I(2), I(2)})},
      {"pads", L({I(0), I(0), I(0), I(0), I(0), I(0)})},
      {"group", I(1)},
      {"axis", I(1)},
      {"alpha", Value::of_float(2.5)},
      {"dyn", Value::unknown("dynamic dim 'N'")},
      {"input", L({tensor("x", "float32", {I(1), I(128), I(2), I(6), I(6)}),
                   tensor("w", "float32", {I(128), Value::unknown("dynamic dim 'C'"), I(5), I(2), I(2)})})},
      {"output", L({tensor("y", "float32", {I(1), I(64), I(10), I(12), I(12)})})},
  });
}

bpulint::ExprPtr parse_ok(const std::string& text) {
  ExprError err;
  auto e = bpulint::parse_expr(text, &err);
  INFO("parse error at " << err.offset << ": " << err.message);
  REQUIRE_MESSAGE((e != nullptr), text);
  return e;
}

Value ev(const std::string& text, Trace* trace = nullptr) {
  return bpulint::eval(*parse_ok(text), facts(), trace);
}

// "true" / "false" / value text, or "?<reason>" for unknown; easy to CHECK.
std::string show(const Value& v) { return v.is_unknown() ? "?" + v.as_string() : v.to_string(); }
std::string run(const std::string& text) { return show(ev(text)); }

ExprError parse_err(const std::string& text) {
  ExprError err;
  auto e = bpulint::parse_expr(text, &err);
  CHECK_MESSAGE((e == nullptr), text);
  return err;
}

std::string render(const std::string& tmpl) {
  ExprError err;
  auto t = bpulint::parse_template(tmpl, &err);
  INFO("template error at " << err.offset << ": " << err.message);
  REQUIRE((t != nullptr));
  return bpulint::render(*t, facts());
}

}  // namespace

TEST_SUITE("expr") {

TEST_CASE("value: to_string and equals") {
  CHECK(I(5).to_string() == "5");
  CHECK(Value::of_float(2.5).to_string() == "2.5");
  CHECK(Value::of_float(0.1).to_string() == "0.1");
  CHECK(Value::of_float(1.0 / 3).to_string() == "0.3333333333333333");
  CHECK(Value::of_float(1000.0).to_string() == "1000");
  CHECK(Value::of_float(123456.5).to_string() == "123456.5");
  CHECK(Value::of_float(1e20).to_string() == "1e+20");
  CHECK(Value::of_float(-0.00015).to_string() == "-0.00015");
  CHECK(Value::of_bool(true).to_string() == "true");
  CHECK(S("float32").to_string() == "float32");
  CHECK(L({I(5), S("a"), Value::unknown("x")}).to_string() == "[5, 'a', ?]");
  CHECK(Value::of_record({{"b", S("x")}, {"a", I(1)}}).to_string() == "{a: 1, b: 'x'}");
  CHECK(Value::unknown("why").to_string() == "?");
  CHECK(I(2).equals(Value::of_float(2.0)));
  CHECK_FALSE(I(2).equals(Value::of_float(2.5)));
  CHECK_FALSE(I(9007199254740993).equals(Value::of_float(9007199254740992.0)));
  CHECK_FALSE(Value::unknown().equals(Value::unknown()));
  CHECK_FALSE(Value::of_bool(true).equals(I(1)));
  CHECK(L({I(1), S("a")}).equals(L({Value::of_float(1), S("a")})));
  CHECK_FALSE(L({I(1)}).equals(L({I(1), I(2)})));
}

TEST_CASE("literals and arithmetic precedence") {
  CHECK(run("1 + 2 * 3") == "7");
  CHECK(run("(1 + 2) * 3") == "9");
  CHECK(run("10 - 4 - 3") == "3");
  CHECK(run("-2 * 3") == "-6");
  CHECK(run("--2") == "2");
  CHECK(run("2.5 * 2") == "5");
  CHECK(run("'ab' + \"cd\"") == "abcd");
  CHECK(run("[1, 2] + [3]") == "[1, 2, 3]");
  CHECK(run("true") == "true");
  CHECK(run("[]") == "[]");
  CHECK(run("[1, 2,]") == "[1, 2]");
  CHECK(run("'it\\'s'") == "it's");
  CHECK(run("1e3") == "1000");
}

TEST_CASE("division and modulo follow Python") {
  CHECK(run("6 / 3") == "2");
  CHECK(ev("6 / 3").kind() == Value::Kind::Int);
  CHECK(run("7 / 2") == "3.5");
  CHECK(run("7 // 2") == "3");
  CHECK(run("-7 // 2") == "-4");
  CHECK(run("7 // -2") == "-4");
  CHECK(run("-7 % 3") == "2");
  CHECK(run("7 % -3") == "-2");
  CHECK(run("7.5 // 2") == "3");
  CHECK(run("-7.5 % 2") == "0.5");
  CHECK(run("1 / 0") == "?division by zero");
  CHECK(run("1 // 0") == "?division by zero");
  CHECK(run("1 % 0") == "?division by zero");
  CHECK(run("1.0 / 0.0") == "?division by zero");
}

TEST_CASE("integer overflow is unknown") {
  CHECK(run("9223372036854775807 + 1") == "?integer overflow");
  CHECK(run("-9223372036854775807 - 2") == "?integer overflow");
  CHECK(run("4294967296 * 4294967296") == "?integer overflow");
  CHECK(run("(-9223372036854775807 - 1) // -1") == "?integer overflow");
  CHECK(run("(-9223372036854775807 - 1) / -1") == "?integer overflow");
  CHECK(run("(-9223372036854775807 - 1) % -1") == "0");
  CHECK(run("-(-9223372036854775807 - 1)") == "?integer overflow");
  CHECK(run("abs(-9223372036854775807 - 1)") == "?integer overflow");
  CHECK(run("prod([4294967296, 4294967296])") == "?integer overflow");
  CHECK(run("1e308 * 10") == "?float overflow");
}

TEST_CASE("comparisons, chains and numeric mixing") {
  CHECK(run("1 < 2") == "true");
  CHECK(run("2 <= 2") == "true");
  CHECK(run("3 > 4") == "false");
  CHECK(run("2 == 2.0") == "true");
  CHECK(run("2 != 2.5") == "true");
  CHECK(run("1 < 1.5") == "true");
  CHECK(run("'a' < 'b'") == "true");
  CHECK(run("1 <= 14 <= 14") == "true");
  CHECK(run("1 <= 15 <= 14") == "false");
  CHECK(run("1 <= 0 <= 14") == "false");
  CHECK(run("1 <= dyn <= 14") == "?dynamic dim 'N'");
  CHECK(run("5 <= 3 <= dyn") == "false");  // first link false decides
  CHECK(run("kernel_shape == [5, 2, 2]") == "true");
  CHECK(run("kernel_shape == [5, 2]") == "false");
  CHECK(run("'a' == 1") == "false");
  CHECK(run("true == 1") == "false");
  // List equality is tri-state: a definite mismatch beats an unknown element.
  CHECK(run("input[1].shape == [128, 1, 5, 2, 2]") == "?dynamic dim 'C'");
  CHECK(run("input[1].shape == [1, 1, 5, 2, 2]") == "false");
  CHECK(run("input[1].shape != [1, 1, 5, 2, 2]") == "true");
}

TEST_CASE("membership: ranges at both edges, sets, lists") {
  CHECK(run("kernel_shape[1] in 1..2") == "true");  // 2: upper edge
  CHECK(run("1 in 1..2") == "true");                // lower edge
  CHECK(run("0 in 1..2") == "false");
  CHECK(run("3 in 1..2") == "false");
  CHECK(run("3 not in 1..2") == "true");
  CHECK(run("1.5 in 1..2") == "true");
  CHECK(run("-1 in -2..-1") == "true");
  CHECK(run("dyn in 1..2") == "?dynamic dim 'N'");
  CHECK(run("1 in 1..dyn") == "?dynamic dim 'N'");
  CHECK(run("'a' in 1..2").rfind("?type error", 0) == 0);
  CHECK(run("input[0].dtype in {'int8', 'int16'}") == "false");
  CHECK(run("input[0].dtype in {'int8', 'float32',}") == "true");
  CHECK(run("input[0].dtype not in {'int8', 'int16'}") == "true");
  CHECK(run("1 in {1, dyn}") == "true");
  CHECK(run("2 in {1, dyn}") == "?dynamic dim 'N'");
  CHECK(run("dyn in {}") == "false");
  CHECK(run("2 in kernel_shape") == "true");
  CHECK(run("7 in kernel_shape") == "false");
  CHECK(run("7 not in kernel_shape") == "true");
  CHECK(run("128 in input[1].shape") == "true");
  CHECK(run("7 in input[1].shape") == "?dynamic dim 'C'");
  CHECK(run("1 in group").rfind("?type error", 0) == 0);
  CHECK(run("1 in nothing") == "?no fact 'nothing'");
  CHECK(run("not 1 in {1}") == "false");  // not binds looser than in
}

TEST_CASE("indexing, negative indexes and slices") {
  CHECK(run("kernel_shape[0]") == "5");
  CHECK(run("kernel_shape[-1]") == "2");
  CHECK(run("kernel_shape[-3]") == "5");
  CHECK(run("kernel_shape[3]") == "?index 3 out of range for kernel_shape (length 3)");
  CHECK(run("kernel_shape[-4]") == "?index -4 out of range for kernel_shape (length 3)");
  CHECK(run("input[0].shape[2:]") == "[2, 6, 6]");
  CHECK(run("input[0].shape[:2]") == "[1, 128]");
  CHECK(run("input[0].shape[1:-1]") == "[128, 2, 6]");
  CHECK(run("input[0].shape[-2:]") == "[6, 6]");
  CHECK(run("input[0].shape[:]") == "[1, 128, 2, 6, 6]");
  CHECK(run("input[0].shape[4:2]") == "[]");
  CHECK(run("input[0].shape[-100:100]") == "[1, 128, 2, 6, 6]");
  CHECK(run("'float32'[0:5]") == "float");
  CHECK(run("op[0]") == "C");
  CHECK(run("[10, 20, 30][axis]") == "20");
  CHECK(run("input[0].shape[axis + 1]") == "2");
  CHECK(run("group[0]").rfind("?type error: cannot index group (int)", 0) == 0);
  CHECK(run("kernel_shape[0.5]").rfind("?type error", 0) == 0);
  CHECK(run("kernel_shape[dyn]") == "?dynamic dim 'N'");
  CHECK(run("input[1].shape[1]") == "?dynamic dim 'C'");
}

TEST_CASE("members and missing facts") {
  CHECK(run("input[0].dtype") == "float32");
  CHECK(run("input[0].rank") == "5");
  CHECK(run("output[0].shape[1]") == "64");
  CHECK(run("input[0].nope") == "?input[0] has no field 'nope'");
  CHECK(run("group.rank") == "?type error: group is int, it has no field 'rank'");
  CHECK(run("missing") == "?no fact 'missing'");
  CHECK(run("missing.x[0]") == "?no fact 'missing'");
  CHECK(run("dyn.x") == "?dynamic dim 'N'");
}

TEST_CASE("type errors are unknown, never crashes") {
  CHECK(run("'a' + 1") == "?type error: cannot apply '+' to string and int");
  CHECK(run("true + 1").rfind("?type error", 0) == 0);
  CHECK(run("[1] < [2]").rfind("?type error", 0) == 0);
  CHECK(run("-'a'").rfind("?type error", 0) == 0);
  CHECK(run("not 1").rfind("?type error", 0) == 0);
  CHECK(run("1 and true").rfind("?type error", 0) == 0);
  CHECK(run("false and 1") == "false");
  CHECK(run("len(group)").rfind("?type error", 0) == 0);
  CHECK(run("sum(['a'])").rfind("?type error", 0) == 0);
  CHECK(run("all(x in group: true)").rfind("?type error", 0) == 0);
  CHECK(run("all(x in kernel_shape: x)").rfind("?type error", 0) == 0);
  CHECK(run("range(0, 'a')").rfind("?type error", 0) == 0);
}

TEST_CASE("Kleene logic with unknown") {
  CHECK(run("false and dyn > 1") == "false");
  CHECK(run("dyn > 1 and false") == "false");
  CHECK(run("true and dyn > 1") == "?dynamic dim 'N'");
  CHECK(run("dyn > 1 and true") == "?dynamic dim 'N'");
  CHECK(run("true or dyn > 1") == "true");
  CHECK(run("dyn > 1 or true") == "true");
  CHECK(run("false or dyn > 1") == "?dynamic dim 'N'");
  CHECK(run("not dyn > 1") == "?dynamic dim 'N'");
  CHECK(run("not true") == "false");
  CHECK(run("true and true") == "true");
  CHECK(run("false or false") == "false");
  // The first reason is carried.
  CHECK(run("missing > 1 and dyn > 1") == "?no fact 'missing'");
  CHECK(run("missing > 1 or dyn > 1 or false") == "?no fact 'missing'");
  // Precedence: not > and > or.
  CHECK(run("true or true and false") == "true");
  CHECK(run("(true or true) and false") == "false");
  CHECK(run("not false and false") == "false");
  CHECK(run("strides[0] == 1 or kernel_shape[0] == 1") == "false");
  CHECK(run("strides[0] == 5 or kernel_shape[9] == 1") == "true");
}

TEST_CASE("functions") {
  CHECK(run("len(pads)") == "6");
  CHECK(run("len(pads) == 2 * (input[0].rank - 2)") == "true");
  CHECK(run("len(input[1].shape)") == "5");  // known even with unknown elements
  CHECK(run("len('abc')") == "3");
  CHECK(run("prod(kernel_shape)") == "20");
  CHECK(run("prod([])") == "1");
  CHECK(run("prod(input[1].shape)") == "?dynamic dim 'C'");
  CHECK(run("sum(kernel_shape)") == "9");
  CHECK(run("sum([])") == "0");
  CHECK(run("sum([1, 2.5])") == "3.5");
  CHECK(run("sum(input[1].shape)") == "?dynamic dim 'C'");
  CHECK(run("min(kernel_shape)") == "2");
  CHECK(run("max(kernel_shape)") == "5");
  CHECK(run("min(3, 1, 2)") == "1");
  CHECK(run("max(3, 1.5)") == "3");
  CHECK(run("max(1, dyn)") == "?dynamic dim 'N'");
  CHECK(run("min([])") == "?min() of an empty list");
  CHECK(run("abs(-3)") == "3");
  CHECK(run("abs(-2.5)") == "2.5");
  CHECK(run("known(dyn)") == "false");
  CHECK(run("known(group)") == "true");
  CHECK(run("known(missing)") == "false");
  CHECK(run("known(input[0].shape)") == "true");
  CHECK(run("known(input[1].shape)") == "false");  // deep
  CHECK(run("range(0, 4)") == "[0, 1, 2, 3]");
  CHECK(run("range(3, 3)") == "[]");
  CHECK(run("range(0, 1000000000000)").rfind("?range() would have more than", 0) == 0);
  CHECK(run("ceil_div(7, 2)") == "4");
  CHECK(run("ceil_div(8, 2)") == "4");
  CHECK(run("ceil_div(-7, 2)") == "-3");
  CHECK(run("ceil_div(7, 0)") == "?division by zero");
  CHECK(run("align_up(5, 4)") == "8");
  CHECK(run("align_up(8, 4)") == "8");
  CHECK(run("align_up(0, 4)") == "0");
  CHECK(run("align_up(5, 0)").rfind("?align_up() needs a positive alignment", 0) == 0);
  CHECK(run("align_up(9223372036854775807, 2)") == "?integer overflow");
  CHECK(run("input[0].shape[1] * input[0].shape[2] <= 65535") == "true");
}

TEST_CASE("quantifiers") {
  CHECK(run("all(t in input: t.rank <= 10)") == "true");
  CHECK(run("all(t in input: t.rank <= 4)") == "false");
  CHECK(run("any(t in input: t.name == 'w')") == "true");
  CHECK(run("any(t in input: t.name == 'z')") == "false");
  CHECK(run("count(d in kernel_shape: d == 2)") == "2");
  CHECK(run("all(d in []: false)") == "true");
  CHECK(run("any(d in []: true)") == "false");
  CHECK(run("count(d in []: true)") == "0");
  // Kleene: a definite false (all) / true (any) beats an unknown.
  CHECK(run("all(d in input[1].shape: d > 1)") == "?dynamic dim 'C'");
  CHECK(run("all(d in input[1].shape: d > 2)") == "false");
  CHECK(run("any(d in input[1].shape: d > 100)") == "true");
  CHECK(run("any(d in input[1].shape: d > 200)") == "?dynamic dim 'C'");
  CHECK(run("count(d in input[1].shape: d > 1)") == "?dynamic dim 'C'");
  CHECK(run("all(d in dyn: true)") == "?dynamic dim 'N'");
  // Nesting, shadowing, and outer variables in the inner list.
  CHECK(run("all(t in input: all(d in t.shape[2:]: d <= 6))") == "true");
  CHECK(run("any(group in kernel_shape: group == 5)") == "true");
  CHECK(run("all(i in range(0, len(kernel_shape)): kernel_shape[i] == strides[i])") == "true");
  CHECK(run("count(t in input: count(u in input: u.rank == t.rank) == 2)") == "2");
  // The variable is not visible in the list expression itself.
  CHECK(run("count(x in [x]: x == 1)") == "?no fact 'x'");
}

TEST_CASE("parse errors with offsets") {
  ExprError e = parse_err("");
  CHECK(e.message == "empty expression");
  CHECK(e.offset == 0);
  CHECK(parse_err("   ").message == "empty expression");

  e = parse_err("len(pads");
  CHECK(e.message == "expected ',' or ')' but found end of expression");
  CHECK(e.offset == 8);

  e = parse_err("(1 + 2");
  CHECK(e.message == "expected ')' but found end of expression");
  CHECK(e.offset == 6);

  e = parse_err("foo(1)");
  CHECK(e.message == "unknown function 'foo'");
  CHECK(e.offset == 0);

  e = parse_err("1 + foo(1)");
  CHECK(e.offset == 4);

  e = parse_err("a $ b");
  CHECK(e.message == "unexpected character '$'");
  CHECK(e.offset == 2);

  e = parse_err("a b");
  CHECK(e.message == "unexpected 'b'");
  CHECK(e.offset == 2);

  e = parse_err("len(a, b)");
  CHECK(e.message == "len() takes 1 argument, got 2");
  e = parse_err("range(1)");
  CHECK(e.message == "range() takes 2 arguments, got 1");
  e = parse_err("min()");
  CHECK(e.message == "min() takes at least 1 argument, got 0");

  e = parse_err("x = 1");
  CHECK(e.offset == 2);
  CHECK(e.message == "unexpected character '='; use '==' to compare");

  e = parse_err("'abc");
  CHECK(e.message == "unterminated string");
  CHECK(e.offset == 0);

  e = parse_err("1 +");
  CHECK(e.message == "expected an expression but found end of expression");
  CHECK(e.offset == 3);

  e = parse_err("x[1:2:3]");
  CHECK(e.offset == 5);

  e = parse_err("all(t input: true)");
  CHECK(e.offset == 6);
  CHECK(e.message.rfind("expected 'in' but found 'input'", 0) == 0);

  e = parse_err("all(t in input true)");
  CHECK(e.offset == 15);

  e = parse_err("{1, 2}");
  CHECK(e.offset == 0);

  e = parse_err("x.1");
  CHECK(e.offset == 2);

  e = parse_err("99999999999999999999");
  CHECK(e.message == "integer literal '99999999999999999999' is too large");

  e = parse_err("a ? b");
  CHECK(e.offset == 2);

  e = parse_err("x == \xE2\x82\xAC");
  CHECK(e.message == "unexpected byte 0xE2");
  CHECK(e.offset == 5);

  CHECK((bpulint::parse_expr("(", nullptr) == nullptr));  // null error pointer is fine
}

TEST_CASE("nesting depth is bounded") {
  std::string deep_parens = std::string(500, '(') + "1" + std::string(500, ')');
  ExprError e = parse_err(deep_parens);
  CHECK(e.message.find("nested too deeply") != std::string::npos);

  CHECK(parse_err(std::string(100000, '-') + "1").message.find("nested too deeply") != std::string::npos);
  CHECK(parse_err(std::string(100000, '(')).message.find("nested too deeply") != std::string::npos);
  CHECK(parse_err(std::string(100000, '[')).message.find("nested too deeply") != std::string::npos);
  CHECK(run(std::string(100000, 'n')).rfind("?no fact 'nnn", 0) == 0);  // long, but not nested
  std::string chain = "x";
  for (int i = 0; i < 300; ++i) chain += "[0]";
  CHECK(parse_err(chain).message.find("nested too deeply") != std::string::npos);

  std::string nots;
  for (int i = 0; i < 300; ++i) nots += "not ";
  CHECK(parse_err(nots + "true").message.find("nested too deeply") != std::string::npos);

  // Moderate nesting is fine, and long flat chains do not count as nesting.
  CHECK(run(std::string(50, '(') + "1" + std::string(50, ')')) == "1");
  std::string abs_nest;
  for (int i = 0; i < 150; ++i) abs_nest += "abs(";
  CHECK(run(abs_nest + "-1" + std::string(150, ')')) == "1");
  std::string sum = "1";
  for (int i = 0; i < 1000; ++i) sum += " + 1";
  CHECK(run(sum) == "1001");
  std::string ors = "false";
  for (int i = 0; i < 1000; ++i) ors += " or false";
  CHECK(run(ors + " or true") == "true");
}

TEST_CASE("expr_text and free_identifiers") {
  auto e = parse_ok("all(t in input: t.rank <= max_rank) and len(pads) == 2 * group and len(pads) > 0");
  CHECK(bpulint::expr_text(*e) == "all(t in input: t.rank <= max_rank) and len(pads) == 2 * group and len(pads) > 0");
  CHECK(bpulint::free_identifiers(*e) == std::vector<std::string>{"group", "input", "max_rank", "pads"});
  // A bound variable shadows a root name only inside its quantifier.
  e = parse_ok("all(group in kernel_shape: group > 0)");
  CHECK(bpulint::free_identifiers(*e) == std::vector<std::string>{"kernel_shape"});
  e = parse_ok("all(d in kernel_shape: d > 0) and d > 0");
  CHECK(bpulint::free_identifiers(*e) == std::vector<std::string>{"d", "kernel_shape"});
}

TEST_CASE("trace: contents, order, canonical text") {
  Trace trace;
  ev("input[0].shape[1] * input[0].shape[2] <= 65535 and kernel_shape[0] in 1..2", &trace);
  REQUIRE(trace.size() == 3);
  CHECK(trace[0].text == "input[0].shape[1]");
  CHECK(show(trace[0].value) == "128");
  CHECK(trace[1].text == "input[0].shape[2]");
  CHECK(trace[2].text == "kernel_shape[0]");
  CHECK(show(trace[2].value) == "5");

  // Canonical: spaces and redundant parentheses dropped, dedup by text.
  trace.clear();
  ev("kernel_shape [ 0 ] == 5 and (kernel_shape)[0] == 5 and len( pads ) == 6", &trace);
  REQUIRE(trace.size() == 2);
  CHECK(trace[0].text == "kernel_shape[0]");
  CHECK(trace[1].text == "pads");
  CHECK(show(trace[1].value) == "[0, 0, 0, 0, 0, 0]");

  // Quantifiers record the list, not the bound-variable references.
  trace.clear();
  ev("all(t in input: t.rank <= opset)", &trace);
  REQUIRE(trace.size() == 2);
  CHECK(trace[0].text == "input");
  CHECK(trace[1].text == "opset");

  // Complex index: whole chain first (source order), then the index fact.
  trace.clear();
  ev("input[0].shape[axis + 1] == 2", &trace);
  REQUIRE(trace.size() == 2);
  CHECK(trace[0].text == "input[0].shape[axis + 1]");
  CHECK(show(trace[0].value) == "2");
  CHECK(trace[1].text == "axis");

  // A chain cut by a bound index records its fact prefix.
  trace.clear();
  ev("all(i in range(0, 3): kernel_shape[i] == strides[i])", &trace);
  REQUIRE(trace.size() == 2);
  CHECK(trace[0].text == "kernel_shape");
  CHECK(trace[1].text == "strides");

  // Unknown and missing facts are recorded with their reasons; slices too.
  trace.clear();
  ev("prod(input[1].shape[1:]) > 0 or missing", &trace);
  REQUIRE(trace.size() == 2);
  CHECK(trace[0].text == "input[1].shape[1:]");
  CHECK(trace[1].text == "missing");
  CHECK(show(trace[1].value) == "?no fact 'missing'");

  // Short-circuited operands are not evaluated, so not traced.
  trace.clear();
  ev("group == 2 and opset > 1", &trace);
  REQUIRE(trace.size() == 1);
  CHECK(trace[0].text == "group");

  // Nested parens/priority are re-printed minimally but faithfully.
  trace.clear();
  ev("[1,2,3][(axis - 1) * 2 // 1] == 1 and strides[-1] == 2", &trace);
  REQUIRE(trace.size() == 2);
  CHECK(trace[0].text == "axis");
  CHECK(trace[1].text == "strides[-1]");
}

TEST_CASE("templates") {
  CHECK(render("kernel D={kernel_shape[0]} outside [1, 2]") == "kernel D=5 outside [1, 2]");
  CHECK(render("shape {input[0].shape}, dtype {input[0].dtype}") == "shape [1, 128, 2, 6, 6], dtype float32");
  // A dynamic dim prints its name, any other unknown "?".
  CHECK(render("dims {input[1].shape}, N={dyn}, m={missing}") == "dims [128, C, 5, 2, 2], N=N, m=?");
  CHECK(Value::dynamic_dim("").to_string() == "?");
  CHECK(Value::dynamic_dim("12").to_string() == "?");  // digits would read as a static dim
  CHECK(Value::of_list({Value::dynamic_dim("batch"), Value::of_int(3)}).to_string() == "[batch, 3]");
  CHECK(render("{{literal}} {{{group}}}") == "{literal} {1}");
  CHECK(render("set {group in {1, 2}} and '{op}'") == "set true and 'ConvTranspose'");
  CHECK(render("str {'}'}") == "str }");
  CHECK(render("") == "");
  CHECK(render("no placeholders") == "no placeholders");
  CHECK(render("{alpha * 2}") == "5");

  ExprError err;
  CHECK((bpulint::parse_template("a } b", &err) == nullptr));
  CHECK(err.offset == 2);
  CHECK((bpulint::parse_template("a {group", &err) == nullptr));
  CHECK(err.offset == 2);
  CHECK(err.message == "unterminated placeholder '{'");
  CHECK((bpulint::parse_template("ab {}", &err) == nullptr));
  CHECK(err.offset == 3);
  CHECK((bpulint::parse_template("xy {1 + foo(2)}", &err) == nullptr));
  CHECK(err.message == "unknown function 'foo'");
  CHECK(err.offset == 8);

  auto t = bpulint::parse_template("{b} {a[0]} {all(t in c: t)} {b}", &err);
  REQUIRE((t != nullptr));
  CHECK(bpulint::free_identifiers(*t) == std::vector<std::string>{"a", "b", "c"});
}

}  // TEST_SUITE

TEST_CASE("map() builds a list, keeping unknown elements") {
  using bpulint::Value;
  Value root = Value::of_record({});
  root.set("shape", Value::of_list({Value::of_int(2), Value::of_int(3), Value::unknown("dyn")}));
  root.set("axes", Value::of_list({Value::of_int(0), Value::of_int(-2)}));
  bpulint::ExprError err;
  auto e = bpulint::parse_expr("prod(map(a in axes: shape[a]))", &err);
  REQUIRE(static_cast<bool>(e));
  CHECK(bpulint::eval(*e, root).to_string() == "6");
  auto u = bpulint::parse_expr("map(a in shape: a * 2)", &err);
  REQUIRE(static_cast<bool>(u));
  CHECK(bpulint::eval(*u, root).to_string() == "[4, 6, ?]");
  auto p = bpulint::parse_expr("prod(map(a in shape: a))", &err);
  CHECK(bpulint::eval(*p, root).is_unknown());
}
