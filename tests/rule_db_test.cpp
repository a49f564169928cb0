#include <doctest/doctest.h>

#include "bpulint/rules/rule_db.h"
#include "test_util.h"

using namespace bpulint;

namespace {

const char* kPlatformHead = R"(schema_version: 1
platform: testchip
march: test-m
description: a test platform
rules:
)";

std::string load_error(const std::string& rules_yaml) {
  RuleDatabase db;
  std::string error;
  const bool ok = load_rule_database({{"rules/test.yaml", std::string(kPlatformHead) + rules_yaml}}, db, error);
  CHECK_FALSE(ok);
  return error;
}

const char* kGoodRule = R"(  - id: BPU5001
    name: good-rule
    summary: s
    ops: [ConvTranspose]
    require: kernel_shape[0] in 1..2
    severity: error
    message: "kernel {kernel_shape}"
    source: test
    status: verified
)";

}  // namespace

TEST_CASE("the built-in database loads and has j6p with its alias") {
  const RuleDatabase& db = test::database();
  const Platform* p = db.find("nash-p");
  REQUIRE(p != nullptr);
  CHECK(p->name == "j6p");
  CHECK(db.find("J6P") == p);
  CHECK(db.find("nope") == nullptr);
  for (const auto& r : p->rules) {
    CHECK_FALSE(r.source.empty());
    CHECK(r.defined_at.file.rfind("rules/", 0) == 0);
    CHECK(r.defined_at.line > 0);
  }
}

TEST_CASE("a good rule loads") {
  RuleDatabase db;
  std::string error;
  REQUIRE(load_rule_database({{"rules/test.yaml", std::string(kPlatformHead) + kGoodRule}}, db, error));
  REQUIRE(db.platforms.size() == 1);
  CHECK(db.platforms[0].rules.at(0).id == "BPU5001");
  CHECK(db.platforms[0].rules.at(0).defined_at.str() == "rules/test.yaml:6:5");
}

TEST_CASE("unknown key: file:line:col") {
  std::string yaml = kGoodRule;
  yaml += "    sevrity: error\n";
  CHECK(load_error(yaml) == "rules/test.yaml:15:5: unknown key 'sevrity' in rule (allowed: id, name, summary, "
                             "description, scope, ops, domain, when, require, message, severity, effect, cpu_node, "
                             "source, status, ref, fixes, resolved_by)");
}

TEST_CASE("bad expression points into the expression") {
  std::string yaml = kGoodRule;
  yaml.replace(yaml.find("kernel_shape[0] in 1..2"), 23, "kernel_shape[0] in 1..");
  const std::string e = load_error(yaml);
  CHECK(e.rfind("rules/test.yaml:10:", 0) == 0);
  CHECK(e.find("bad require expression") != std::string::npos);
}

TEST_CASE("unknown fact is caught at load time") {
  std::string yaml = kGoodRule;
  yaml.replace(yaml.find("kernel_shape[0] in"), 12, "kernal_shape");
  const std::string e = load_error(yaml);
  CHECK(e.rfind("rules/test.yaml:10:14: unknown fact 'kernal_shape'", 0) == 0);
}

TEST_CASE("duplicate rule id") {
  std::string yaml = std::string(kGoodRule) + kGoodRule;
  const std::string e = load_error(yaml);
  CHECK(e.rfind("rules/test.yaml:15:9: duplicate rule id 'BPU5001' (first at rules/test.yaml:6:5)", 0) == 0);
}

TEST_CASE("unknown op, unknown fix, bad status, derived error, missing key, YAML syntax") {
  std::string yaml = kGoodRule;
  CHECK(load_error(std::string(yaml).replace(yaml.find("[ConvTranspose]"), 15, "[ConvTranspos]"))
            .find("unknown op 'ConvTranspos'") != std::string::npos);
  CHECK(load_error(yaml + "    fixes: [magic]\n").find("unknown fix 'magic'") != std::string::npos);
  CHECK(load_error(std::string(yaml).replace(yaml.find("verified"), 8, "sure"))
            .find("status must be verified, derived or inferred") != std::string::npos);
  CHECK(load_error(std::string(yaml).replace(yaml.find("verified"), 8, "derived"))
            .find("may be at most a note") != std::string::npos);
  CHECK(load_error(std::string(yaml).replace(yaml.find("    source: test\n"), 17, ""))
            .find("missing required key 'source'") != std::string::npos);
  const std::string syntax = load_error("  - id: [unclosed\n");
  CHECK(syntax.rfind("rules/test.yaml:", 0) == 0);
  CHECK(syntax.find("YAML syntax error") != std::string::npos);
}

TEST_CASE("include merges a shared file, and duplicates across files are caught") {
  const std::string shared = std::string("schema_version: 1\nshared: common\ndescription: d\nrules:\n") + kGoodRule;
  RuleDatabase db;
  std::string error;
  const std::string plat = "schema_version: 1\nplatform: a\nmarch: m\ndescription: d\ninclude: [common.yaml]\n";
  REQUIRE(load_rule_database({{"rules/common.yaml", shared}, {"rules/a.yaml", plat}}, db, error));
  CHECK(db.platforms.at(0).rules.size() == 1);
  CHECK_FALSE(load_rule_database(
      {{"rules/common.yaml", shared}, {"rules/a.yaml", plat + "rules:\n" + kGoodRule}}, db, error));
  CHECK(error.find("duplicate rule id 'BPU5001' (first at rules/common.yaml:5:5)") != std::string::npos);
}
