// Rule tests as data: tests/rules/<RULE>.yaml holds models that must make the
// rule fire, stay quiet or be unverifiable. Every rule of every platform must
// have cases that fire and cases that stay quiet.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include <onnx/defs/schema.h>

#include <nlohmann/json.hpp>

#include "bpulint/engine/evaluate.h"
#include "bpulint/lint/hb_config.h"
#include "bpulint/lint/lint.h"
#include "bpulint/lint/settings.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

struct Case {
  std::string file, rule, name, platform, expect, model;
  std::string node;       // expect fire: the one node it fires on (its display name; "(model)" for a model rule)
  std::string hb_config;  // a Horizon compile config's YAML the case lints with (--hb-config); "" = none
};

// The case's model, linted as the CLI does, with its compile config if it has one.
ModelReport lint_case(const Case& c) {
  if (c.hb_config.empty()) return lint_text(c.model, c.platform);
  HbConfig config;
  std::string error;
  REQUIRE_MESSAGE(parse_hb_config(c.hb_config, "case.yaml", config, error), error);
  // A config names nodes and the text syntax cannot: each node is named Op_N
  // (its op and position, the display name bpu-lint gives an unnamed node).
  onnx::ModelProto model = model_from_text(c.model);
  for (int i = 0; i < model.graph().node_size(); ++i) {
    auto* node = model.mutable_graph()->mutable_node(i);
    if (node->name().empty()) node->set_name(node->op_type() + "_" + std::to_string(i));
  }
  TempDir dir;
  ModelPlan plan = ModelPlan::defaults(platform(c.platform));
  plan_compile_config(config, plan);
  ModelReport r = lint(save_model(dir, "model.onnx", model), plan);
  REQUIRE_MESSAGE(r.ok, r.error);
  return r;
}

// BPULINT_RULE_CASES=<file>: only that fixture file (ctest runs one test per file).
bool selected(const std::string& file) {
  const char* only = std::getenv("BPULINT_RULE_CASES");
  return only == nullptr || *only == '\0' || std::filesystem::path(file).filename() == std::filesystem::path(only).filename();
}

std::vector<Case> load_cases() {
  std::vector<Case> cases;
  const std::string dir = std::string(BPULINT_SOURCE_DIR) + "/tests/rules";
  if (!std::filesystem::is_directory(dir)) return cases;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const YAML::Node root = YAML::LoadFile(f);
    const std::string rule = root["rule"].as<std::string>();
    REQUIRE_MESSAGE(std::filesystem::path(f).stem() == rule, f << ": the file must be named after its rule");
    for (const auto& c : root["cases"]) {
      cases.push_back({f, rule, c["name"].as<std::string>(), c["platform"].as<std::string>(),
                       c["expect"].as<std::string>(), c["model"].as<std::string>(),
                       c["node"] ? c["node"].as<std::string>() : std::string(),
                       c["hb_config"] ? c["hb_config"].as<std::string>() : std::string()});
    }
  }
  return cases;
}

}  // namespace

// Closed world, as clang-tidy's CHECK-MESSAGES: a case that fires names its
// node, and the rule fails there and nowhere else in the model.
TEST_CASE("every rule case gives its expected verdict") {
  const auto cases = load_cases();
  size_t run = 0;
  for (const auto& c : cases) {
    if (!selected(c.file)) continue;
    ++run;
    INFO(c.file << ": " << c.name << " (" << c.platform << ", expect " << c.expect << ")");
    REQUIRE(database().find(c.platform) != nullptr);
    const ModelReport r = lint_case(c);
    bool unknown = false, any = false;
    std::vector<std::string> failed_on;
    for (const auto& d : r.diagnostics) {
      if (d.rule->id != c.rule || !d.waiver.empty()) continue;  // (set aside by the case's compile config)
      any = true;
      if (d.outcome == Outcome::Fail) {
        failed_on.push_back(d.node < 0 ? std::string("(model)") : std::string(r.facts.nodes[static_cast<size_t>(d.node)].display_name));
      }
      unknown = unknown || d.outcome == Outcome::Unknown;
    }
    if (c.expect == "fire") {
      INFO("a fire case names the node it fires on (`node:`), and fires there only");
      CHECK_FALSE(c.node.empty());
      CHECK(failed_on == std::vector<std::string>{c.node});
    } else if (c.expect == "quiet") {
      CHECK_FALSE(any);
    } else if (c.expect == "unknown") {
      CHECK((unknown && failed_on.empty()));
    } else {
      FAIL("expect must be fire, quiet or unknown");
    }
    if (c.expect != "fire") CHECK(c.node.empty());
  }
  CHECK(run > 0);  // a file name that selects nothing is a mistake, not a pass
}

TEST_CASE("every rule has cases that fire and cases that stay quiet") {
  std::map<std::string, std::set<std::string>> expects;  // rule -> {fire, quiet, ...}
  for (const auto& c : load_cases()) expects[c.rule].insert(c.expect);
  for (const auto& p : database().platforms) {
    for (const auto& r : p.rules) {
      INFO(p.name << " " << r.id << " (" << r.defined_at.str() << "): add tests/rules/" << r.id << ".yaml");
      CHECK(expects[r.id].count("fire") == 1);
      CHECK(expects[r.id].count("quiet") == 1);
    }
  }
  for (const auto& entry : expects) {
    const std::string& rule = entry.first;  // a named variable: INFO captures it (clang 14 cannot capture a binding)
    bool known = false;
    for (const auto& p : database().platforms) {
      for (const auto& r : p.rules) known = known || r.id == rule;
    }
    INFO("tests/rules/" << rule << ".yaml names a rule no platform has");
    CHECK(known);
  }
}

TEST_CASE("rule order does not change the output") {
  const auto cases = load_cases();
  std::vector<std::string> models;
  for (size_t i = 0; i < cases.size(); i += 3) models.push_back(cases[i].model);
  std::mt19937 rng(20261130);
  for (const auto& p : database().platforms) {
    Platform shuffled = p;
    for (int round = 0; round < 3; ++round) {
      std::shuffle(shuffled.rules.begin(), shuffled.rules.end(), rng);
      for (const auto& text : models) {
        const ModelReport r = lint_text(text, p.name);
        const std::vector<Diagnostic> first = evaluate(r.facts, p);
        const std::vector<Diagnostic> again = evaluate(r.facts, shuffled);
        REQUIRE(again.size() == first.size());
        for (size_t i = 0; i < again.size(); ++i) {
          CHECK(again[i].rule->id == first[i].rule->id);
          CHECK(again[i].message == first[i].message);
          CHECK(again[i].node == first[i].node);
        }
      }
    }
  }
}

TEST_CASE("every default-domain ONNX op is classified on every platform") {
  std::set<std::string> ops;
  for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas()) {
    if (schema.domain().empty() && !schema.Deprecated()) ops.insert(schema.Name());
  }
  REQUIRE(ops.size() > 150);
  for (const auto& p : database().platforms) {
    for (const auto& op : ops) {
      INFO(p.name << ": " << op << " is in no op class (bpu, folded, cpu, lowered or unknown)");
      CHECK(p.ops.count(op) == 1);
    }
  }
}

TEST_CASE("cross-platform verdicts differ where the sources do") {
  const std::string convt = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                            "g (float[1,4,6,6] X, float[4,4,3,3] W) => (float[] Y) {\n"
                            "  Y = ConvTranspose <strides = [3, 3]> (X, W)\n}\n";
  const std::string conv9 = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                            "g (float[1,4,16,16] X, float[4,4,9,9] W) => (float[] Y) {\n"
                            "  Y = Conv (X, W)\n}\n";
  auto errors = [](const std::string& text, const std::string& platform_name) {
    return lint_text(text, platform_name).summary.errors;
  };
  CHECK(errors(convt, "bernoulli2") > 0);  // X3: ConvTranspose stride in {2, 4}
  CHECK(errors(convt, "bayes") == 0);      // Bayes: stride in [1, 14]
  CHECK(errors(conv9, "bernoulli2") > 0);  // X3: Conv kernel in [1, 7]
  CHECK(errors(conv9, "bayes") == 0);      // Bayes: Conv kernel in [1, 31]
}

// The tests judge the report the CLI prints: for every rule case model and real export, the
// test helper (lint_model, as lint_text uses) and `bpu-lint --format json`
// list the same findings, in the same order, with the same levels and messages.
TEST_CASE("the test helper and the CLI give the same diagnostics for every rule case model and real export") {
  const auto cases = load_cases();
  TempDir dir;
  std::map<std::string, std::vector<std::string>> by_platform;  // platform -> model files
  for (size_t i = 0; i < cases.size(); ++i) {
    by_platform[cases[i].platform].push_back(save_model(dir, "case_" + std::to_string(i) + ".onnx",
                                                        model_from_text(cases[i].model)));
  }
  size_t exports = 0;  // the torch.onnx.export models, on J6P and J6E
  for (const auto& e : std::filesystem::directory_iterator(std::string(BPULINT_SOURCE_DIR) + "/tests/exports")) {
    if (e.path().extension() != ".onnx") continue;
    for (const char* p : {"j6p", "j6e"}) by_platform[p].push_back(e.path().string());
    exports += 2;
  }
  CHECK(exports >= 20);
  size_t compared = 0;
  for (const auto& entry : by_platform) {  // no structured binding: INFO captures, and clang 14 cannot capture one
    const std::string& platform_name = entry.first;
    const std::vector<std::string>& files = entry.second;
    std::vector<std::string> args = files;
    for (const char* a : {"--isolated", "--format", "json", "--exit-zero", "--platform"}) args.push_back(a);
    args.push_back(platform_name);
    const CommandResult cli = run_bpu_lint(args);
    INFO(platform_name << ": " << cli.err);
    REQUIRE(cli.exit_code == 0);
    const auto doc = nlohmann::json::parse(cli.out);
    REQUIRE(doc["models"].size() == files.size());
    for (size_t m = 0; m < files.size(); ++m) {
      const ModelReport r = lint_model(files[m], platform(platform_name));
      REQUIRE(r.ok);
      std::vector<std::string> helper, printed;
      for (const auto& d : r.diagnostics) {
        if (!listed(d, false, Severity::Note)) continue;
        helper.push_back(d.rule->id + " " + severity_name(d.severity) + " " +
                         (d.outcome == Outcome::Fail ? "fail" : "unknown") + " " +
                         (d.node < 0 ? std::string("-") : std::string(r.facts.nodes[static_cast<size_t>(d.node)].display_name)) +
                         ": " + d.message);
      }
      for (const auto& d : doc["models"][m]["diagnostics"]) {
        printed.push_back(d["rule"].get<std::string>() + " " + d["severity"].get<std::string>() + " " +
                          d["outcome"].get<std::string>() + " " +
                          (d["node"].is_null() ? std::string("-") : d["node"].get<std::string>()) + ": " +
                          d["message"].get<std::string>());
      }
      INFO(files[m]);
      CHECK(helper == printed);
      ++compared;
    }
  }
  CHECK(compared == cases.size() + exports);
}
