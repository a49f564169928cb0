// The whole-model fix kinds on the command line (src/fix/kinds/opset-down,
// host-split): offered with what they would do, applied by --fix after the
// layer rewrites, proven, written, re-linted; the input never touched.
// tests/fix_kinds/run.sh runs what they write in ONNX Runtime on torchvision exports.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>

#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;
using json = nlohmann::json;

namespace {

// An opset-13 Conv then a Split whose sizes are an int64 initializer in
// raw_data, as torch writes them.
std::string conv_split_op13(const TempDir& dir) {
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 7, opset_import: ["" : 13], producer_name: "model-fix-test">
g (float[1,8,8,8] x) => (float[1,8,8,8] a, float[1,8,8,8] b) {
  feat = Conv <pads = [1, 1, 1, 1]> (x, W)
  a, b = Split <axis = 1> (feat, sizes)
}
)");
  std::mt19937 rng(13);
  *m.mutable_graph()->add_initializer() = float_tensor("W", {16, 8, 3, 3}, random_floats(16 * 8 * 3 * 3, rng), true);
  onnx::TensorProto sizes;
  sizes.set_name("sizes");
  sizes.set_data_type(onnx::TensorProto::INT64);
  sizes.add_dims(2);
  const int64_t values[2] = {8, 8};  // little-endian on the hosts the tests run on
  sizes.set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof values));
  *m.mutable_graph()->add_initializer() = sizes;
  return save_model(dir, "conv_split.onnx", m);
}

json model_report(const CommandResult& r) {
  INFO(r.err);
  REQUIRE(json_valid(r.out));
  return json::parse(r.out)["models"][0];
}

onnx::ModelProto read_proto(const std::string& path) {
  onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  return m;
}

}  // namespace

TEST_CASE("host-split: offered on j6p for the TopK and NonZero tail, with the frontier and the findings it settles") {
  TempDir dir;
  const std::string model = save_conv_topk(dir);
  const json m = model_report(run_bpu_lint({model, "--platform", "j6p", "--format", "json"}));
  REQUIRE(m.contains("model_fixes"));
  REQUIRE(m["model_fixes"].size() == 1);
  const json& fix = m["model_fixes"][0];
  CHECK(fix["id"] == "host-split");
  CHECK(fix["applicable"] == true);
  CHECK(fix["frontier"] == json::array({"feat"}));
  CHECK(fix["summary"].get<std::string>().find("cut 5 of the main graph's 6 nodes") == 0);
  // Each position names a listed finding on a node of the tail.
  REQUIRE_FALSE(fix["diagnostics"].empty());
  for (const auto& at : fix["diagnostics"]) {
    const json& d = m["diagnostics"][at.get<size_t>()];
    CHECK(d["op_type"] != "Conv");
  }
  const CommandResult text = run_bpu_lint({model, "--platform", "j6p"});
  CHECK(text.out.find("conv_topk.onnx: fix host-split (safe), for ") != std::string::npos);
  CHECK(text.out.find("--fix applies it") != std::string::npos);
}

TEST_CASE("host-split: --fix writes the BPU and host parts, re-lints the BPU part, and leaves the input as it was") {
  TempDir dir;
  const std::string model = save_conv_topk(dir);
  const std::string before = read_file(model);
  const CommandResult fix = run_bpu_lint({model, "--platform", "j6p", "--fix"});
  INFO(fix.out, fix.err);
  CHECK(fix.exit_code == 0);
  CHECK(fix.out.find("host-split (safe): split into 1 + 5 nodes, the host part reading 1 tensor") != std::string::npos);
  CHECK(fix.out.find("re-lint of " + dir.path("conv_topk.bpu.onnx") + ":") != std::string::npos);
  CHECK(read_file(model) == before);
  const onnx::ModelProto head = read_proto(dir.path("conv_topk.bpu.onnx"));
  const onnx::ModelProto tail = read_proto(dir.path("conv_topk.host.onnx"));
  CHECK(head.graph().node_size() == 1);
  CHECK(tail.graph().node_size() == 5);
  REQUIRE(tail.graph().input_size() == 1);
  CHECK(tail.graph().input(0).name() == "feat");

  // JSON: the files, what was proven, the re-lint of the BPU part (no CPU node).
  const json m = model_report(run_bpu_lint({model, "--platform", "j6p", "--fix", "--format", "json"}));
  REQUIRE(m["applied_model_fixes"].size() == 1);
  const json& run = m["applied_model_fixes"][0];
  CHECK(run["kind"] == "host-split");
  CHECK(run["files"][0]["role"] == "bpu part");
  CHECK(run["files"][1]["role"] == "host part");
  CHECK(run["relint_path"] == dir.path("conv_topk.bpu.onnx"));
  CHECK(run["summary"]["cpu_nodes"] == 0);
  CHECK(run["summary"]["unknown_nodes"] == 0);

  // Another strategy leaves the model whole.
  TempDir other;
  const std::string copy = save_model(other, "m.onnx", read_proto(model));
  const CommandResult layers = run_bpu_lint({copy, "--platform", "j6p", "--fix", "--fix-strategy", "convtranspose2d"});
  CHECK_FALSE(std::ifstream(other.path("m.bpu.onnx")).good());
}

TEST_CASE("opset-down: an opset-13 model on X5 is converted to 11, raw_data Split sizes included, and re-lints clean") {
  TempDir dir;
  const std::string model = conv_split_op13(dir);
  const std::string before = read_file(model);
  const json lint = model_report(run_bpu_lint({model, "--platform", "x5", "--format", "json"}));
  REQUIRE(lint["model_fixes"].size() >= 1);  // the Split, which X5 runs on the CPU, may be cut off too
  CHECK(lint["model_fixes"][0]["id"] == "opset-down");  // catalog order: converted first
  CHECK(lint["model_fixes"][0]["target_opset"] == 11);  // read from BPU9102's own constraint
  const json& settled = lint["diagnostics"][lint["model_fixes"][0]["diagnostics"][0].get<size_t>()];
  CHECK(settled["rule"] == "BPU9102");

  const CommandResult fix = run_bpu_lint({model, "--platform", "x5", "--fix", "--fix-strategy", "opset-down"});
  INFO(fix.out, fix.err);
  CHECK(fix.exit_code == 0);
  CHECK(fix.out.find("opset-down (safe): converted from opset 13 to 11") != std::string::npos);
  CHECK(read_file(model) == before);
  const onnx::ModelProto converted = read_proto(dir.path("conv_split.fixed.onnx"));
  CHECK(converted.opset_import(0).version() == 11);
  const onnx::NodeProto* split = nullptr;
  for (const auto& n : converted.graph().node()) split = n.op_type() == "Split" ? &n : split;
  REQUIRE(split != nullptr);
  CHECK(split->input_size() == 1);  // the sizes moved into the attribute, as opset 11 has them
  bool sizes = false;
  for (const auto& a : split->attribute()) {
    sizes = sizes || (a.name() == "split" && a.ints_size() == 2 && a.ints(0) == 8 && a.ints(1) == 8);
  }
  CHECK(sizes);
  const std::string relint = fix.out.substr(fix.out.find("re-lint of"));
  CHECK(relint.find("[BPU9102]") == std::string::npos);
}

TEST_CASE("opset-down: an op with no older form is named at lint time, and --fix writes nothing and says why") {
  TempDir dir;
  const std::string model = save_model(dir, "hs.onnx", model_from_text(R"(
<ir_version: 8, opset_import: ["" : 14], producer_name: "model-fix-test">
g (float[1,8,8,8] x) => (float[1,8,8,8] y) {
  y = HardSwish (x)
}
)"));
  const json lint = model_report(run_bpu_lint({model, "--platform", "x5", "--format", "json"}));
  REQUIRE(lint["model_fixes"].size() == 1);
  CHECK(lint["model_fixes"][0]["applicable"] == false);
  CHECK(lint["model_fixes"][0]["why_not"].get<std::string>().find("HardSwish has no form at opset 11") == 0);
  const CommandResult fix = run_bpu_lint({model, "--platform", "x5", "--fix"});
  CHECK(fix.exit_code == 1);
  CHECK(fix.out.find("opset-down cannot apply: HardSwish has no form at opset 11") != std::string::npos);
  CHECK_FALSE(std::ifstream(dir.path("hs.fixed.onnx")).good());
}

TEST_CASE("explain prints a model fix kind's card: what --fix writes, what offers it, the evidence") {
  const CommandResult split = run_bpu_lint({"explain", "host-split"});
  CHECK(split.exit_code == 0);
  CHECK(split.out.find("host-split: Cut the trailing CPU region off") == 0);
  CHECK(split.out.find("Writes: <stem>.bpu.onnx") != std::string::npos);
  const CommandResult opset = run_bpu_lint({"explain", "opset-down"});
  CHECK(opset.out.find("Offered by: BPU9102, BPU9103") != std::string::npos);
}
