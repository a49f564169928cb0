// Generated docs are generated: the committed pages must be exactly what the
// rule database produces (regenerate with scripts/gen_docs.sh).
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "bpulint/render/rule_docs.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

TEST_CASE("docs/ is up to date with the rule database") {
  const std::string docs = std::string(BPULINT_SOURCE_DIR) + "/docs";
  INFO("regenerate with: scripts/gen_docs.sh build/bpu-lint");
  CHECK(read_file(docs + "/README.md") == docs_index_markdown(database()));
  std::set<std::string> expected;
  for (const auto& p : database().platforms) {
    expected.insert(p.name + ".md");
    INFO(p.name);
    CHECK(read_file(docs + "/platforms/" + p.name + ".md") == rules_markdown(p));
  }
  std::set<std::string> present;
  for (const auto& e : std::filesystem::directory_iterator(docs + "/platforms")) present.insert(e.path().filename().string());
  CHECK(present == expected);
}

TEST_CASE("rules validate: the database itself is valid, broken files are named with file:line:col") {
  const CommandResult ok = run_bpu_lint({"rules", "validate", std::string(BPULINT_SOURCE_DIR) + "/rules"});
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  TempDir dir;
  write_file(dir.path("mine.yaml"),
             "schema_version: 1\nextends: j6p\nrules:\n"
             "  - id: BPU8101\n    name: never\n    summary: s\n    ops: [Relu]\n    when: \"1 > 2\"\n"
             "    require: \"true\"\n    severity: warning\n    message: m\n    source: me\n    status: inferred\n");
  const CommandResult never = run_bpu_lint({"rules", "validate", dir.path("mine.yaml")});
  CHECK(never.exit_code == 2);
  CHECK(never.err.find(dir.path("mine.yaml") + ":4:5: rule BPU8101 can never apply") != std::string::npos);
  CHECK(never.err.find("can never fail") != std::string::npos);
  write_file(dir.path("bad.yaml"), "schema_version: 1\nextends: j6p\nrules:\n  - id: BPU8102\n    nmae: x\n");
  const CommandResult bad = run_bpu_lint({"rules", "validate", dir.path("bad.yaml")});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find(dir.path("bad.yaml") + ":5:5: unknown key 'nmae'") != std::string::npos);
}

TEST_CASE("rules --format json gives every rule with source and status") {
  const CommandResult r = run_bpu_lint({"rules", "--platform", "j6p", "--format", "json"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("\"id\": \"BPU1101\"") != std::string::npos);
  CHECK(r.out.find("\"status\": \"inferred\"") != std::string::npos);
  CHECK(r.out.find("\"source\": \"Horizon developer-forum case study") != std::string::npos);
}
