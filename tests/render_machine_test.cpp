// Machine-readable output (JSON, SARIF in both profiles, GitHub annotations)
// and the text formats, as golden files over one shared set of diagnostics:
// the case-study example (with a --fix run and its re-lint), a model built
// here that gives every kind of finding, and an unreadable model.
// BPULINT_UPDATE_GOLDEN=1 rewrites the goldens (tests/golden/README.md).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "bpulint/lint/config.h"
#include "bpulint/fix/fix_apply.h"
#include "bpulint/base/json_writer.h"
#include "bpulint/render/finding_groups.h"
#include "bpulint/render/render_machine.h"
#include "bpulint/render/render_text.h"
#include "test_util.h"

namespace bpulint {
namespace {

using test::TempDir;

// One model, every kind of finding on J6P:
//   Softmax over 70000 (error), ArgMax over 40000 (warning), Hardmax (not in
//   the database: note), Softmax over a dynamic dim (cannot verify: note,
//   listed as --show-unverified does, under its root-cause note),
//   a second Softmax error that is waived and an unnamed LogSoftmax error
//   that is baselined. Node names: a non-UTF-8 one and one with quotes,
//   backslashes and a newline.
const char* kMixModel = R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
mix (float[1,70000] big, float[1,40000] wide, float[N,16] dyn) => (float[1,70000] s, int64[1,1] a, float[N,16] h, float[N,16] t, float[1,70000] s2, float[1,70000] s3)
{
  s = Softmax<axis=1>(big)
  a = ArgMax<axis=1>(wide)
  h = Hardmax<axis=1>(dyn)
  t = Softmax<axis=0>(dyn)
  s2 = Softmax<axis=1>(big)
  s3 = LogSoftmax<axis=1>(big)
}
)ONNX";

const char* kExamplePath = "examples/case_study.onnx";
const char* kExampleFixedPath = "examples/case_study.fixed.onnx";
const char* kMixPath = "tests/fixtures/mix, model #1.onnx";  // ',' ' ' '#': escaping in every format
const char* kMissingPath = "models/missing.onnx";

struct Fixture {
  TempDir dir;
  Waiver waiver{"BPU3001", "softmax_waived", "accepted until the decoder is retrained (ticket 42)", "", {}};
  ModelReport example, mix, fixed;
  FixRun fix_run;

  Fixture() {
    const Platform& j6p = test::platform("j6p");
    // The configuration, as the CLI resolves it: BPU1102 (inferred) set to
    // warning; a waiver for one node of the mix model.
    ModelPlan plan = ModelPlan::defaults(j6p);
    plan.levels.severity = {{"BPU1102", Severity::Warning}, {"BPU3005", Severity::Warning}, {"BPU9001", Severity::Note}};
    plan.waivers = {&waiver};
    // The example, linted in place, reported under a stable relative path.
    example = lint(BPULINT_SOURCE_DIR "/examples/case_study.onnx", plan);
    REQUIRE(example.ok);
    example.path = kExamplePath;
    fix_run = apply_fixes(*example.loaded, example.facts, example.fix_plans, "auto", dir.path("case_study.fixed.onnx"));
    REQUIRE(fix_run.written);
    fixed = lint(fix_run.output_path, plan);
    REQUIRE(fixed.ok);
    fix_run.output_path = kExampleFixedPath;
    fixed.path = kExampleFixedPath;

    onnx::ModelProto model = test::model_from_text(kMixModel);
    model.mutable_graph()->mutable_node(2)->set_name(std::string("hard\xff\xfemax \xe2\x82"));
    model.mutable_graph()->mutable_node(3)->set_name("soft\"max\\dyn\nline2\tend");
    model.mutable_graph()->mutable_node(0)->set_name("softmax_big");
    model.mutable_graph()->mutable_node(1)->set_name("argmax_wide");
    model.mutable_graph()->mutable_node(4)->set_name("softmax_waived");
    const std::string path = test::save_model(dir, "mix.onnx", model);
    plan.show_unverified = true;
    mix = lint(path, plan);
    REQUIRE(mix.ok);
    mix.path = kMixPath;
    // As a --baseline match would (its keys are config.cpp's business).
    for (auto& d : mix.diagnostics) d.baselined = d.baselined || d.node == 5;
    mix.summary = summarize(mix.facts, mix.placement, mix.diagnostics);
  }

  RunInfo run(bool show_waived) const {
    RunInfo r;
    r.tool_version = "0.0.0-test";
    r.platform = &test::platform("j6p");
    RunInfo::Model a;
    a.report = &example;
    a.path = kExamplePath;
    a.fix_run = &fix_run;
    a.fixed = &fixed;
    RunInfo::Model b;
    b.report = &mix;
    b.path = kMixPath;
    RunInfo::Model c;
    c.path = kMissingPath;
    c.error = "no such file";
    r.models = {a, b, c};
    r.exit_code = 2;
    r.show_waived = show_waived;
    r.severity_overrides = {{"BPU1102", Severity::Warning}, {"BPU3005", Severity::Warning}, {"BPU9001", Severity::Note}};
    r.configuration_notes = {"waiver #2 (nodes 'decoder/*', rule BPU3001) matched nothing"};
    return r;
  }
};

const Fixture& fixture() {
  static Fixture f;
  return f;
}

// Compares with tests/golden/NAME, or rewrites it with BPULINT_UPDATE_GOLDEN=1.
void check_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(BPULINT_SOURCE_DIR) + "/tests/golden/" + name;
  const char* update = std::getenv("BPULINT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    test::write_file(path, actual);
    MESSAGE("rewrote " << path);
    return;
  }
  const std::string expected = test::read_file(path);
  if (expected == actual) return;
  // First differing line, for a readable failure.
  std::istringstream e(expected), a(actual);
  std::string el, al;
  int line = 0;
  for (;;) {
    ++line;
    const bool more_e = static_cast<bool>(std::getline(e, el));
    const bool more_a = static_cast<bool>(std::getline(a, al));
    if (!more_e && !more_a) break;
    if (el != al || more_e != more_a) break;
  }
  FAIL_CHECK(name << " differs from the golden file at line " << line << "\n  golden: " << el << "\n  actual: " << al
                  << "\n(expected after a deliberate change: rerun with BPULINT_UPDATE_GOLDEN=1)");
}

// --- a tiny JSON DOM, for structural checks of the output -----------------

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  // in order
  const Json* get(const std::string& k) const {
    for (const auto& m : members) {
      if (m.first == k) return &m.second;
    }
    return nullptr;
  }
  const Json& operator[](const std::string& k) const {
    static const Json null;
    const Json* v = get(k);
    return v != nullptr ? *v : null;
  }
  const Json& operator[](size_t i) const {
    static const Json null;
    return i < items.size() ? items[i] : null;
  }
};

// The DOM above, from nlohmann's parse (key order kept).
Json from_nlohmann(const nlohmann::ordered_json& j) {
  Json v;
  if (j.is_boolean()) {
    v.type = Json::Type::Bool;
    v.b = j.get<bool>();
  } else if (j.is_number()) {
    v.type = Json::Type::Number;
    v.n = j.get<double>();
  } else if (j.is_string()) {
    v.type = Json::Type::String;
    v.s = j.get<std::string>();
  } else if (j.is_array()) {
    v.type = Json::Type::Array;
    for (const auto& item : j) v.items.push_back(from_nlohmann(item));
  } else if (j.is_object()) {
    v.type = Json::Type::Object;
    for (const auto& [k, item] : j.items()) v.members.emplace_back(k, from_nlohmann(item));
  }
  return v;
}

Json parse(const std::string& text) {
  std::string error;
  INFO(error);
  REQUIRE(test::json_valid(text, &error));
  return from_nlohmann(nlohmann::ordered_json::parse(text));
}

// Every key named `key` anywhere in the document.
void collect(const Json& v, const std::string& key, std::vector<const Json*>& out) {
  for (const auto& m : v.members) {
    if (m.first == key) out.push_back(&m.second);
    collect(m.second, key, out);
  }
  for (const auto& i : v.items) collect(i, key, out);
}

std::string text_output(bool concise) {
  const Fixture& f = fixture();
  const Platform& j6p = test::platform("j6p");
  TextOptions o;
  o.concise = concise;
  std::ostringstream out;
  render_text(out, f.example, j6p, o);
  render_fix_run(out, f.example, f.fix_run, o);
  out << "re-lint of " << f.fixed.path << ":\n";
  render_text(out, f.fixed, j6p, o);
  render_text(out, f.mix, j6p, o);
  return out.str();
}

}  // namespace

TEST_CASE("json_string escapes control characters and replaces invalid UTF-8") {
  CHECK(json_string("plain") == "\"plain\"");
  CHECK(json_string("q\"b\\s/") == "\"q\\\"b\\\\s/\"");
  CHECK(json_string(std::string("\x01\b\f\n\r\t\x1f\x7f", 8)) == "\"\\u0001\\b\\f\\n\\r\\t\\u001f\\u007f\"");
  CHECK(json_string(std::string("a\0b", 3)) == "\"a\\u0000b\"");
  // Valid multi-byte UTF-8 is kept as is.
  CHECK(json_string("\xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9") == "\"\xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9\"");
  // One U+FFFD per maximal invalid subpart.
  CHECK(json_string("a\xff\xfe" "b") == "\"a\\ufffd\\ufffdb\"");
  CHECK(json_string("\xe2\x82") == "\"\\ufffd\"");          // truncated 3-byte sequence
  CHECK(json_string("\xe2\x82z") == "\"\\ufffdz\"");
  CHECK(json_string("\x80") == "\"\\ufffd\"");              // stray continuation
  CHECK(json_string("\xc0\xaf") == "\"\\ufffd\\ufffd\"");    // overlong '/'
  CHECK(json_string("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // surrogate U+D800
  CHECK(json_string("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
  CHECK(json_string("\xf0\x9f\x98") == "\"\\ufffd\"");
  CHECK(sanitize_utf8("a\xff" "b\xe2\x82\xac") == "a\xef\xbf\xbd" "b\xe2\x82\xac");
  for (const char* s : {"a\xff\xfe", "\xe2\x82", "\xed\xa0\x80", "\x01\x7f", "\xc0\xaf"}) {
    CHECK(test::json_valid(json_string(s)));
  }
}

// The output checks below rely on it: what they accept is strict JSON.
TEST_CASE("the JSON check of the tests rejects invalid UTF-8, lone surrogates and trailing text") {
  for (const char* ok : {"{}", "[]", "0", "-0.5e+3", "\"\\ud83d\\ude00\"", " {\"a\": [1, true, null]} ", "\"\xc3\xa9\""}) {
    CHECK_MESSAGE(test::json_valid(ok), ok);
  }
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", ".5", "nan", "\"\\x\"", "\"\x01\"", "\"\xff\"",
                          "\"\\ud800\"", "\"\\udc00\"", "[1] 2", "{'a': 1}", "\"abc"}) {
    CHECK_MESSAGE(!test::json_valid(bad), bad);
  }
}

TEST_CASE("json_number prints shortest round-trip doubles and null for non-finite") {
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(2.0) == "2");
  CHECK(json_number(1e-05) == "1e-05");
  CHECK(json_number(1.0 / 3.0) == "0.3333333333333333");
  CHECK(json_number(std::numeric_limits<double>::quiet_NaN()) == "null");
  CHECK(json_number(std::numeric_limits<double>::infinity()) == "null");
  CHECK(json_number(-std::numeric_limits<double>::infinity()) == "null");
  for (double v : {0.1, 1e300, 5e-324, -2.5, 123456789.125}) CHECK(std::strtod(json_number(v).c_str(), nullptr) == v);
}

TEST_CASE("JsonWriter indents with 2 spaces and keeps key order") {
  JsonWriter w;
  w.begin_object().member("b", 1).member("a", "x").key("e").begin_array().end_array();
  w.key("o").begin_object().end_object().key("l").begin_array().value(true).null().value(1.5).end_array();
  w.end_object();
  CHECK(w.str() == "{\n  \"b\": 1,\n  \"a\": \"x\",\n  \"e\": [],\n  \"o\": {},\n  \"l\": [\n    true,\n    null,\n"
                   "    1.5\n  ]\n}");
  CHECK(test::json_valid(w.str()));
}


TEST_CASE("golden: text and concise") {
  check_golden("text.txt", text_output(false));
  check_golden("concise.txt", text_output(true));
}

TEST_CASE("golden: json") {
  const std::string out = render_json(fixture().run(false));
  check_golden("report.json", out);
  const Json j = parse(out);
  CHECK(j["version"].n == 1);
  CHECK(j["exit_code"].n == 2);
  REQUIRE(j["models"].items.size() == 3);
  const Json& mix = j["models"][1];
  CHECK(mix["path"].s == kMixPath);
  // Waived and baselined diagnostics are left out and counted.
  CHECK(mix["summary"]["waived"].n == 1);
  CHECK(mix["summary"]["baselined"].n == 1);
  CHECK(mix["summary"]["errors"].n == 2);  // BPU3001 and BPU9005 (a dynamic input)
  // Where they are: BPU3001 on one node, BPU9005 on the model itself.
  CHECK(mix["summary"]["error_nodes"].n == 1);
  CHECK(mix["summary"]["model_errors"].n == 1);
  CHECK(mix["summary"]["warnings"].n == 1);
  std::map<std::string, int> by_rule;
  bool utf8_name = false, quoted_name = false, unknown_fact = false;
  for (const auto& d : mix["diagnostics"].items) {
    ++by_rule[d["rule"].s];
    CHECK(d.get("waiver") == nullptr);
    if (d["node"].s == "hard\xef\xbf\xbd\xef\xbf\xbdmax \xef\xbf\xbd") utf8_name = true;
    if (d["node"].s == "soft\"max\\dyn\nline2\tend") quoted_name = true;
    for (const auto& f : d["facts"].members) unknown_fact = unknown_fact || f.second.type == Json::Type::Null;
  }
  CHECK(by_rule["BPU3001"] == 2);  // the error and the dynamic (unknown) one
  CHECK(by_rule["BPU3005"] == 1);
  CHECK(by_rule["BPU0001"] == 2);  // Hardmax and ArgMax
  CHECK(utf8_name);
  CHECK(quoted_name);
  CHECK(unknown_fact);
  // The unreadable model and the fix run.
  CHECK(j["models"][2]["error"].s == "no such file");
  const Json& fixed = j["models"][0]["fixed_model"];
  CHECK(fixed["written"].b);
  CHECK(fixed["results"].items.size() == 1);  // BPU1102 is a warning here: no plan
  CHECK(fixed["results"][0]["max_abs_error"].n == 0);
  CHECK(fixed["summary"]["errors"].n == 0);
  // Fix options ride on the diagnostics of nodes with a plan.
  const Json& first = j["models"][0]["diagnostics"][0];
  CHECK(first["rule"].s == "BPU1101");
  REQUIRE(first["fixes"].items.size() == 3);
  CHECK(first["fixes"][0]["id"].s == "convtranspose2d");
  CHECK(first["fixes"][0]["recommended"].b);
  CHECK(first["fixes"][2]["id"].s == "convtranspose2d-d-taps");  // applies to any D, ranked last here
  CHECK_FALSE(first["fixes"][2]["recommended"].b);
}

TEST_CASE("golden: json with waived and baselined diagnostics shown") {
  const std::string out = render_json(fixture().run(true));
  check_golden("report-show-waived.json", out);
  const Json j = parse(out);
  int waived = 0, baselined = 0;
  for (const auto& d : j["models"][1]["diagnostics"].items) {
    if (d.get("waiver") != nullptr) ++waived;
    if (d.get("baselined") != nullptr) ++baselined;
  }
  CHECK(waived == 1);
  CHECK(baselined == 1);
}

namespace {

void check_sarif_structure(const Json& log, SarifProfile profile, bool show_waived) {
  CHECK(log["$schema"].s == "https://json.schemastore.org/sarif-2.1.0.json");
  CHECK(log["version"].s == "2.1.0");
  REQUIRE(log["runs"].items.size() == 1);
  const Json& run = log["runs"][0];
  const Json& rules = run["tool"]["driver"]["rules"];
  CHECK(run["tool"]["driver"].get("informationUri") == nullptr);
  CHECK(run["automationDetails"]["id"].s == "bpu-lint/j6p/");
  std::string previous;
  for (const auto& r : rules.items) {
    CHECK(r["id"].s > previous);  // sorted, unique
    previous = r["id"].s;
    CHECK(r["name"].s != r["id"].s);
    CHECK(!r["help"]["text"].s.empty());
    CHECK(r["shortDescription"]["text"].s.size() <= 1024);
    CHECK(r["fullDescription"]["text"].s.size() <= 1024);
    CHECK(r.get("helpUri") == nullptr);
  }
  const Json& inv = run["invocations"][0];
  CHECK_FALSE(inv["executionSuccessful"].b);
  CHECK(inv["exitCode"].n == 2);
  CHECK(inv["toolExecutionNotifications"][0]["message"]["text"].s == std::string(kMissingPath) + ": no such file");
  CHECK(inv["toolConfigurationNotifications"].items.size() == 1);
  // Overrides only for rules in driver.rules (BPU1102 and BPU3005 fired, BPU9001 did not).
  REQUIRE(inv["ruleConfigurationOverrides"].items.size() == 2);
  for (const auto& ov : inv["ruleConfigurationOverrides"].items) {
    CHECK(rules[static_cast<size_t>(ov["descriptor"]["index"].n)]["id"].s == ov["descriptor"]["id"].s);
  }
  REQUIRE(run["artifacts"].items.size() == 2);
  CHECK(run["artifacts"][0]["location"]["uri"].s == kExamplePath);
  CHECK(run["artifacts"][1]["location"]["uri"].s == "tests/fixtures/mix%2C%20model%20%231.onnx");
  CHECK(run["artifacts"][0]["length"].n == 809788);

  size_t results = 0, suppressed = 0;
  for (const auto& res : run["results"].items) {
    // A result stands for properties.count findings (identical ones fold into one).
    results += static_cast<size_t>(res["properties"]["count"].n);
    const Json& rule = rules[static_cast<size_t>(res["ruleIndex"].n)];
    CHECK(rule["id"].s == res["ruleId"].s);
    CHECK(res.get("fixes") == nullptr);
    CHECK(!res["message"]["text"].s.empty());
    CHECK(res["partialFingerprints"]["primaryLocationLineHash"].s.size() == 16);
    const Json& loc = res["locations"][0];
    const Json& art = loc["physicalLocation"]["artifactLocation"];
    const size_t a = static_cast<size_t>(art["index"].n);
    CHECK(run["artifacts"][a]["location"]["uri"].s == art["uri"].s);
    const Json* region = loc["physicalLocation"].get("region");
    if (profile == SarifProfile::GitHub) {
      CHECK(region == nullptr);
    } else {
      REQUIRE(region != nullptr);
      CHECK((*region).get("startLine") == nullptr);
      CHECK((*region)["byteOffset"].n + (*region)["byteLength"].n <= run["artifacts"][a]["length"].n);
    }
    for (const auto& l : loc["logicalLocations"].items) {
      const Json& cached = run["logicalLocations"][static_cast<size_t>(l["index"].n)];
      CHECK(cached["fullyQualifiedName"].s == l["fullyQualifiedName"].s);
      CHECK(cached["kind"].s == "node");
      CHECK(run["logicalLocations"][static_cast<size_t>(cached["parentIndex"].n)]["kind"].s == "module");
    }
    if (res.get("suppressions") != nullptr) {
      ++suppressed;
      CHECK(res["suppressions"][0]["kind"].s == "external");
      CHECK(!res["suppressions"][0]["justification"].s.empty());
    }
    CHECK((res.get("baselineState") != nullptr) == show_waived);
  }
  CHECK(suppressed == (show_waived ? 1u : 0u));
  // Shown diagnostics only (two hidden in the mix model), or all of them; the example's two
  // identical BPU1102 findings (layers .3 and .6) are one result.
  CHECK(run["results"].items.size() + 1 == results);
  const Fixture& f = fixture();
  CHECK(results == f.example.diagnostics.size() + f.mix.diagnostics.size() - (show_waived ? 0 : 2));
  std::vector<const Json*> fixes;
  collect(log, "fixes", fixes);
  for (const Json* x : fixes) CHECK(x->type == Json::Type::Array);  // only the properties' fix options
}

}  // namespace

TEST_CASE("golden: sarif, github profile") {
  const std::string out = render_sarif(fixture().run(false), SarifProfile::GitHub);
  check_golden("report-github.sarif", out);
  const Json log = parse(out);
  check_sarif_structure(log, SarifProfile::GitHub, false);
  // The node path leads the message.
  CHECK(log["runs"][0]["results"][0]["message"]["text"].s.rfind(
            "torch_jit/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose: ", 0) == 0);
}

TEST_CASE("golden: sarif, spec profile") {
  const std::string out = render_sarif(fixture().run(false), SarifProfile::Spec);
  check_golden("report-spec.sarif", out);
  const Json log = parse(out);
  check_sarif_structure(log, SarifProfile::Spec, false);
  // The first result's region is the NodeProto's bytes.
  const Fixture& f = fixture();
  const ByteSpan& span = f.example.loaded->node_spans[0];
  const Json& region = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
  CHECK(region["byteOffset"].n == static_cast<double>(span.offset));
  CHECK(region["byteLength"].n == static_cast<double>(span.length));
}

TEST_CASE("golden: sarif, spec profile with waived and baselined diagnostics shown") {
  const std::string out = render_sarif(fixture().run(true), SarifProfile::Spec);
  check_golden("report-spec-show-waived.sarif", out);
  check_sarif_structure(parse(out), SarifProfile::Spec, true);
}

TEST_CASE("golden: github annotations") {
  const std::string out = render_github(fixture().run(false));
  check_golden("github.txt", out);
  std::istringstream lines(out);
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    ++n;
    CHECK(line.rfind("::", 0) == 0);
    CHECK(test::json_valid(json_string(line)));  // valid UTF-8 after replacement
  }
  CHECK(out.find("file=tests/fixtures/mix%2C model #1.onnx,title=BPU3005 argmax-axis-size::") != std::string::npos);
  CHECK(out.find("soft\"max\\dyn%0Aline2\\x09end") != std::string::npos);  // a tab spelled out, as in text
  CHECK(out.find("::notice file=examples/case_study.onnx,title=bpu-lint summary::10 nodes") != std::string::npos);
}


TEST_CASE("finding groups: a run over the limit is coarsened to one group per rule, largest model first") {
  // Three different BPU1101 messages (kernel D 3, 4, 5) and a BPU1102 each: 6 exact groups.
  TempDir dir;
  using test::model_from_text;
  using test::platform;
  using test::save_model;
  std::string body, outputs;
  const int kernels[] = {3, 4, 5};
  for (int i = 0; i < 3; ++i) {
    const std::string k = std::to_string(kernels[i]);
    outputs += std::string(i ? ", " : "") + "float Y" + std::to_string(i);
    body += "  Y" + std::to_string(i) + " = ConvTranspose <kernel_shape = [" + k + ", 2, 2], strides = [" + k +
            ", 2, 2]> (X, W" + std::to_string(i) + ")\n";
  }
  const std::string path = save_model(dir, "m.onnx", model_from_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[1,4,2,4,4] X, float[4,4,3,2,2] W0, float[4,4,4,2,2] W1, "
      "float[4,4,5,2,2] W2) => (" + outputs + ") {\n" + body + "}\n"));
  const ModelReport r = test::lint_model(path, platform("j6p"));
  REQUIRE(r.ok);
  const auto exact = group_findings({&r}, false, Severity::Note);
  REQUIRE(exact.size() == 1);
  size_t exact_1101 = 0;
  for (const auto& g : exact[0]) exact_1101 += r.diagnostics[g.members.front()].rule->id == "BPU1101" ? 1 : 0;
  CHECK(exact_1101 == 3);
  const auto coarse = group_findings({&r}, false, Severity::Note, 2);
  size_t coarse_1101 = 0, members = 0, exact_members = 0;
  for (const auto& g : coarse[0]) {
    CHECK(g.by_rule);
    members += g.members.size();
    if (r.diagnostics[g.members.front()].rule->id == "BPU1101") {
      ++coarse_1101;
      CHECK(g.members.size() == 3);
    }
  }
  for (const auto& g : exact[0]) exact_members += g.members.size();
  CHECK(coarse_1101 == 1);
  CHECK(members == exact_members);  // folding loses no finding
}

// One summary formatter: the text line, the GitHub notice and the HTML tiles
// say the same, and the placement counts add up to the nodes (the GitHub
// notice once left out runtime shape ops: 203 of 253 nodes).
TEST_CASE("summaries: text, GitHub and HTML give the same counts, and they add up to every node") {
  using test::run_bpu_lint;
  for (const char* name : {"vit_mha_dynamic", "occupancy_dynamic", "vit_mha_static"}) {
    const std::string model = std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + name + ".onnx";
    INFO(model);
    const auto text = run_bpu_lint({model, "--isolated"});
    const auto github = run_bpu_lint({model, "--isolated", "--format", "github"});
    const auto html = run_bpu_lint({model, "--isolated", "--format", "html"});
    REQUIRE(text.exit_code != 2);
    const std::string out = text.out;
    const size_t at = out.rfind(model + ": ");
    REQUIRE(at != std::string::npos);
    const std::string summary = out.substr(at + model.size() + 2, out.find('\n', at) - at - model.size() - 2);
    CHECK(github.out.find("title=bpu-lint summary::" + summary + "\n") != std::string::npos);
    // "N nodes: a on BPU, b on CPU, c folded[, ...]; ..."
    const std::string placement = summary.substr(0, summary.find(';'));
    std::istringstream words(placement);
    long nodes = 0, sum = 0;
    words >> nodes;
    std::string word;
    while (words >> word) {
      char* end = nullptr;
      const long n = std::strtol(word.c_str(), &end, 10);
      if (end != word.c_str() && *end == '\0') sum += n;
    }
    CHECK(nodes > 0);
    CHECK(sum == nodes);
    // The HTML's tiles: the same error and warning counts.
    const size_t errors = summary.find(" error");
    REQUIRE(errors != std::string::npos);
    const std::string count = summary.substr(summary.rfind(' ', errors - 1) + 1, errors - summary.rfind(' ', errors - 1) - 1);
    CHECK(html.out.find("<div class=\"tile" + std::string(count == "0" ? " " : " bad") + "\"><b>" + count + "</b><span>error") !=
          std::string::npos);
  }
  CHECK(test::run_bpu_lint({std::string(BPULINT_SOURCE_DIR) + "/tests/exports/vit_mha_dynamic.onnx", "--isolated"})
            .out.find("runtime shape op") != std::string::npos);
}

}  // namespace bpulint
