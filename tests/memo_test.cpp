// The walk's shape-inference memo and the rule checks' memo must not change
// a single fact or finding: each is compared here with a run that infers and
// checks every node afresh, on real torch exports and on a generated graph
// whose repeated blocks differ only where a memo must notice (constant
// shapes a Reshape reads, attributes, a dynamic batch dim).
#include <doctest/doctest.h>

#include "bpulint/engine/evaluate.h"
#include "bpulint/engine/facts.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

std::string zeros(int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += i ? ", 0" : "0";
  return s + "}";
}

// Blocks on two [N, 4, 8, 8] inputs (two chains, so look-alike
// nodes have different root causes): Conv with alternating attributes, Relu,
// two Reshapes whose targets alternate between equal-typed initializers, a
// ConvTranspose3d k = s = 2 (fails on j6p, with fixes) and an Add.
std::string repeated_blocks(int blocks) {
  std::string body;
  for (const char* chain : {"X", "Z"}) {
    std::string x = chain;
    for (int b = 0; b < blocks; ++b) {
      const std::string k = std::string(chain) + std::to_string(b);
      const bool odd = b % 2 != 0;
      body += "  c" + k + " = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]" +
              std::string(odd ? ", dilations = [1, 1]" : "") + "> (" + x + ", W)\n";
      body += "  r" + k + " = Relu (c" + k + ")\n";
      body += "  f" + k + " = Reshape (r" + k + ", " + (odd ? "Sa" : "Sb") + ")\n";
      body += "  u" + k + " = Reshape (f" + k + ", S5)\n";
      body += "  t" + k + " = ConvTranspose <kernel_shape = [2, 2, 2], strides = [2, 2, 2]> (u" + k + ", WT)\n";
      body += "  d" + k + " = Conv <kernel_shape = [2, 2, 2], strides = [2, 2, 2]> (t" + k + ", WD)\n";
      body += "  v" + k + " = Reshape (d" + k + ", S4)\n";
      body += "  a" + k + " = Add (v" + k + ", r" + k + ")\n";
      x = "a" + k;
    }
    body += std::string("  Y") + chain + " = Identity (" + x + ")\n";
    // An op nothing can infer, then look-alike nodes: the same facts, a different root cause.
    body += std::string("  p") + chain + " = custom.Opaque (" + chain + ")\n";
    body += std::string("  q") + chain + " = ConvTranspose <kernel_shape = [2, 2], strides = [2, 2]> (p" + chain + ", W2)\n";
  }
  return "<ir_version: 8, opset_import: [\"\" : 17, \"custom\" : 1]>\n"
         "g (float[N, 4, 8, 8] X, float[N, 4, 8, 8] Z) => (float[N, 4, 8, 8] YX, float[N, 4, 8, 8] YZ)\n"
         "<float[4, 4, 3, 3] W = " + zeros(144) + ", float[4, 4, 2, 2] W2 = " + zeros(64) + ", float[4, 4, 2, 2, 2] WT = " + zeros(128) +
         ", float[4, 4, 2, 2, 2] WD = " + zeros(128) +
         ", int64[3] Sa = {0, 4, 64}, int64[3] Sb = {0, 8, -1}, int64[5] S5 = {0, 4, 2, 4, 8}, int64[4] S4 = {0, 4, 8, 8}>\n{\n" +
         body + "}\n";
}

std::vector<std::string> models(const TempDir& dir) {
  std::vector<std::string> paths = {save_model(dir, "blocks.onnx", model_from_text(repeated_blocks(12))),

                                    std::string(BPULINT_SOURCE_DIR) + "/examples/case_study.onnx"};
  for (const char* name : {"vit_mha_dynamic", "vit_mha_static", "vit_seqfirst_dynamic", "fpn_interpolate_dynamic",
                           "occupancy_dynamic", "occupancy_traced", "masking_where"}) {
    paths.push_back(std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + name + ".onnx");
  }
  return paths;
}

std::string type_bytes(const onnx::TypeProto* t) { return t == nullptr ? "<none>" : t->SerializeAsString(); }

void check_same_finding(const Diagnostic& a, const Diagnostic& b) {
  INFO("finding on node " << a.node << ": " << a.message);
  CHECK(a.rule == b.rule);
  CHECK(a.severity == b.severity);
  CHECK(a.outcome == b.outcome);
  CHECK(a.message == b.message);
  CHECK(a.node == b.node);
  CHECK(a.fixes == b.fixes);
  CHECK(a.cause == b.cause);
  CHECK(a.folded_into_note == b.folded_into_note);
  REQUIRE(a.facts.size() == b.facts.size());
  for (size_t t = 0; t < a.facts.size(); ++t) {
    CHECK(a.facts[t].text == b.facts[t].text);
    CHECK(a.facts[t].value.identical(b.facts[t].value));
  }
}

}  // namespace

TEST_CASE("shape inference shared between look-alike nodes gives the facts of inferring each node") {
  TempDir dir;
  size_t tensors = 0;
  for (const std::string& path : models(dir)) {
    INFO(path);
    LoadedModel loaded;
    std::string error;
    REQUIRE(load_model(path, loaded, error));
    FactOptions fresh_options;
    fresh_options.memoize_inference = false;
    ModelFacts fresh, shared;
    REQUIRE(extract_facts(loaded, fresh_options, fresh, error));
    REQUIRE(extract_facts(loaded, FactOptions{}, shared, error));
    REQUIRE(fresh.nodes.size() == shared.nodes.size());
    REQUIRE(fresh.tensors.size() == shared.tensors.size());
    CHECK(fresh.notes == shared.notes);
    REQUIRE(fresh.causes.size() == shared.causes.size());
    for (size_t c = 0; c < fresh.causes.size(); ++c) {
      CHECK(fresh.causes[c].detail == shared.causes[c].detail);
      CHECK(fresh.causes[c].node == shared.causes[c].node);
    }
    for (size_t i = 0; i < fresh.tensors.size(); ++i) {
      const TensorFacts& a = fresh.tensors[i];
      const TensorFacts& b = shared.tensors[i];
      INFO("tensor " << i << " '" << std::string(a.name) << "'");
      CHECK(type_bytes(a.type) == type_bytes(b.type));
      CHECK(a.is_const == b.is_const);
      CHECK(a.shape_derived == b.shape_derived);
      CHECK(a.cause == b.cause);
      CHECK((a.data == nullptr) == (b.data == nullptr));
      CHECK((a.values == nullptr) == (b.values == nullptr));
      ++tensors;
    }
    for (size_t i = 0; i < fresh.nodes.size(); ++i) {
      INFO("node " << i << " " << std::string(fresh.nodes[i].display_name));
      CHECK(fresh.nodes[i].fold == shared.nodes[i].fold);
      CHECK(node_record(fresh.nodes[i], "bpu").identical(node_record(shared.nodes[i], "bpu")));
    }
  }
  CHECK(tensors > 2000);
}

TEST_CASE("rule checks shared between look-alike nodes give the findings of checking each node") {
  TempDir dir;
  size_t findings = 0, unknown_with_cause = 0;
  for (const std::string& path : models(dir)) {
    LoadedModel loaded;
    std::string error;
    REQUIRE(load_model(path, loaded, error));
    ModelFacts facts;
    REQUIRE(extract_facts(loaded, FactOptions{}, facts, error));
    for (const Platform& p : database().platforms) {
      INFO(path << " on " << p.name);
      const std::vector<Diagnostic> fresh = evaluate(facts, p, false);
      const std::vector<Diagnostic> shared = evaluate(facts, p, true);
      REQUIRE(fresh.size() == shared.size());
      for (size_t i = 0; i < fresh.size(); ++i) {
        const Diagnostic& a = fresh[i];
        check_same_finding(a, shared[i]);
        ++findings;
        if (a.cause != 0) ++unknown_with_cause;
      }
    }
  }
  // Enough of each kind that a memo mixing nodes up would show.
  CHECK(findings > 1500);
  CHECK(unknown_with_cause > 100);
}

// A lint checks nodes while the walk runs, in chunks that the walk's thread
// also takes once it is done: whichever thread checked a chunk, and whatever
// its memos held, the findings are those of one fresh pass in node order.
TEST_CASE("rule checks shared between the walk's thread and the check thread give the findings of one pass") {
  TempDir dir;
  // 2 chains x 300 blocks (about 4,800 nodes, 19 chunks of 256), and the real
  // exports (vit_seqfirst_dynamic's 299 nodes take two chunks).
  std::vector<std::string> paths = models(dir);
  paths.front() = save_model(dir, "blocks300.onnx", model_from_text(repeated_blocks(300)));
  size_t failed = 0;
  for (const std::string& path : paths) {
    LoadedModel loaded;
    std::string error;
    REQUIRE(load_model(path, loaded, error));
    for (bool publish_while_walking : {true, false}) {
      for (const char* platform : {"j6p", "bayes"}) {
        INFO(path << " on " << platform
                  << (publish_while_walking ? ", nodes published as walked" : ", all nodes published at the end"));
        const Platform* p = database().find(platform);
        REQUIRE(p != nullptr);
        ModelFacts facts;
        FactProgress progress;
        // Published all at once, both threads start on the chunks together.
        const std::vector<Diagnostic> shared = evaluate_while_extracting(facts, *p, progress, [&] {
          if (!extract_facts(loaded, FactOptions{}, facts, error, publish_while_walking ? &progress : nullptr)) {
            return false;
          }
          progress.publish(facts.nodes.size());
          return true;
        });
        const std::vector<Diagnostic> fresh = evaluate(facts, *p, false);
        REQUIRE(fresh.size() == shared.size());
        for (size_t i = 0; i < fresh.size(); ++i) check_same_finding(fresh[i], shared[i]);
        failed += static_cast<size_t>(std::count_if(fresh.begin(), fresh.end(),
                                                    [](const Diagnostic& d) { return d.outcome == Outcome::Fail; }));
      }
    }
  }
  CHECK(failed >= 2400);  // the blocks' ConvTranspose3d alone fail 600 times per platform and mode
}
