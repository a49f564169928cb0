// One node identity: graph path + name, or, unnamed, op type and output names.
// Waivers, baselines and SARIF fingerprints all use it, so inserting an
// unrelated unnamed node upstream (which shifts every display name after it:
// ConvTranspose_0 becomes ConvTranspose_1) renames nothing.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "test_util.h"

namespace bpulint {
namespace {

using test::run_bpu_lint;
using test::TempDir;

// An unnamed 3-D ConvTranspose with kernel == stride == 5 in D: BPU1101
// (error) and BPU1102 (warning) fail on it. `relu_first` adds an unnamed Relu
// in front of it.
std::string model_text(bool relu_first) {
  return std::string("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                     "g (float[1,4,2,4,4] X) => (float[1,4,10,8,8] Y) <float[4,4,5,2,2] W = {") +
         [] {
           std::string w;
           for (int i = 0; i < 4 * 4 * 5 * 2 * 2; ++i) w += (i ? ", " : "") + std::to_string((i % 7) * 0.125);
           return w;
         }() +
         "}> {\n" + (relu_first ? "  R = Relu (X)\n  Y = ConvTranspose <kernel_shape = [5, 2, 2], strides = [5, 2, 2]> (R, W)\n"
                                : "  Y = ConvTranspose <kernel_shape = [5, 2, 2], strides = [5, 2, 2]> (X, W)\n") +
         "}\n";
}

std::string fingerprint(const std::string& sarif, const std::string& rule) {
  const auto doc = nlohmann::json::parse(sarif);
  for (const auto& r : doc["runs"][0]["results"]) {
    if (r["ruleId"] == rule) return r["partialFingerprints"]["bpuLintNode/v1"].get<std::string>();
  }
  return {};
}

TEST_CASE("node identity: a waiver, a baseline entry and a SARIF fingerprint of an unnamed node survive an unnamed node inserted upstream") {
  TempDir dir;
  const std::string model = dir.path("m.onnx");
  test::write_file(model, test::model_from_text(model_text(false)).SerializeAsString());
  // The identity the JSON report names the node by; the waiver uses it.
  const auto json = nlohmann::json::parse(run_bpu_lint({model, "--isolated", "--format", "json"}).out);
  std::string id;
  for (const auto& d : json["models"][0]["diagnostics"]) {
    if (d["rule"] == "BPU1102") id = d["node_id"].get<std::string>();
  }
  CHECK(id == "g/ConvTranspose:Y");
  test::write_file(dir.path(".bpu-lint.yaml"), "waivers:\n  - rule: BPU1102\n    node: \"" + id +
                                                   "\"\n    reason: D-stride measured on the board\n");
  const auto before = run_bpu_lint({model, "--write-baseline", dir.path("baseline.yaml"), "--format", "sarif"});
  REQUIRE(before.exit_code == 1);  // BPU1101 is an error; the baseline takes it
  const std::string fp = fingerprint(before.out, "BPU1101");
  CHECK(fp == "BPU1101:g/ConvTranspose:Y:ConvTranspose");

  // The same layer after an unnamed Relu is inserted in front of it.
  test::write_file(model, test::model_from_text(model_text(true)).SerializeAsString());
  const auto text = run_bpu_lint({model, "--baseline", dir.path("baseline.yaml")});
  INFO(text.out << text.err);
  CHECK(text.exit_code == 0);                                     // the error is still in the baseline
  CHECK(text.out.find("1 waived, 1 in baseline") != std::string::npos);
  CHECK(text.out.find("matched nothing") == std::string::npos);
  CHECK(text.out.find("stale baseline entry") == std::string::npos);
  // Its display name did move.
  const auto shown = run_bpu_lint({model, "--show-waived"});
  INFO(shown.out);
  CHECK(shown.out.find("ConvTranspose 'ConvTranspose_1'") != std::string::npos);
  const auto after = run_bpu_lint({model, "--format", "sarif", "--show-waived"});
  CHECK(fingerprint(after.out, "BPU1101") == fp);
}

// On real torch.onnx.export output every node is named: the identity is the
// graph path + the name the exporter gave (torch_jit//blocks.0/attn/Softmax
// keeps one slash), the same for every finding in JSON and SARIF.
TEST_CASE("node identity: on real exports it is the exporter's name under the graph path, in JSON and SARIF") {
  for (const char* name : {"vit_mha_dynamic", "occupancy_static"}) {
    const std::string model = std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + name + ".onnx";
    INFO(model);
    const auto json = nlohmann::json::parse(run_bpu_lint({model, "--isolated", "--format", "json"}).out);
    std::set<std::string> ids;
    size_t named = 0;
    for (const auto& d : json["models"][0]["diagnostics"]) {
      if (d["node"].is_null()) {
        CHECK(d["node_id"].is_null());
        continue;
      }
      const std::string node = d["node"].get<std::string>();
      const std::string path = d["graph_path"].get<std::string>();
      CHECK(d["node_id"].get<std::string>() == path + (node.rfind('/', 0) == 0 ? "" : "/") + node);
      ids.insert(d["node_id"].get<std::string>());
      ++named;
    }
    CHECK(named > 0);
    const auto sarif = nlohmann::json::parse(run_bpu_lint({model, "--isolated", "--format", "sarif"}).out);
    for (const auto& r : sarif["runs"][0]["results"]) {
      const std::string fp = r["partialFingerprints"]["bpuLintNode/v1"].get<std::string>();
      if (fp.find(":(model):") != std::string::npos) continue;
      const std::string rest = fp.substr(fp.find(':') + 1);
      CHECK(ids.count(rest.substr(0, rest.rfind(':'))) == 1);
    }
  }
}

}  // namespace
}  // namespace bpulint
