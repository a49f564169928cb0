// The compile-config fix kinds: node_info lines added to a copy of the
// user's hb_mapper / hb_compile config (--fix with --hb-config), every other
// line kept, proven by reading the copy back, and the re-lint with it.
#include <doctest/doctest.h>

#include <string>

#include "bpulint/fix/fix_catalog.h"
#include "bpulint/lint/hb_config.h"
#include "bpulint/lint/hb_config_writer.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const std::string kAttn = std::string(BPULINT_SOURCE_DIR) + "/tests/compare/attn_mini.onnx";  // YOLO11 scopes
const std::string kVit = std::string(BPULINT_SOURCE_DIR) + "/tests/compare/vit_s2.onnx";       // torchvision ViT export
const char* const kSoftmax = "/model.6/m.0/m.0/m.0/attn/Softmax";

// An hb_mapper config as the D-Robotics model zoo writes them: comments, quoting, sections.
const char* const kX5Config = R"(# hb_mapper config for the attention block (YOLO11n layout)
model_parameters:
  onnx_model: 'attn_mini.onnx'
  march: "bayes-e"   # X5
  working_dir: 'model_output'
  output_model_file_prefix: 'attn_mini'

input_parameters:
  input_name: ""
  input_type_rt: 'nv12'
  norm_type: 'data_scale'
  scale_value: 0.003921568627451
calibration_parameters:
  cal_data_dir: './calibration_data_rgb_f32'
  calibration_type: 'default'
compiler_parameters:
  optimize_level: 'O3'
)";

std::string fixed_text(const std::string& text, const std::vector<ConfigEdit>& edits) {
  std::string out, error;
  INFO(error);
  REQUIRE(fix_hb_config_text(text, "cfg.yaml", edits, out, error));
  return out;
}

HbConfig parsed(const std::string& text) {
  HbConfig c;
  std::string error;
  INFO(error);
  REQUIRE(parse_hb_config(text, "cfg.yaml", c, error));
  return c;
}

}  // namespace

TEST_CASE("config writer: node_info added at the end of model_parameters, every other line as written") {
  const std::string out = fixed_text(kX5Config, {node_on_bpu_edit(kSoftmax, "int8")});
  const std::string added = "  node_info:\n    \"/model.6/m.0/m.0/m.0/attn/Softmax\": {'ON': 'BPU', 'InputType': 'int8', "
                            "'OutputType': 'int8'}\n";
  std::string expected = kX5Config;
  const std::string last = "  output_model_file_prefix: 'attn_mini'\n";
  expected.insert(expected.find(last) + last.size(), added);
  CHECK(out == expected);
  const HbConfig c = parsed(out);
  CHECK(c.nodes.at(kSoftmax).on == "BPU");
  CHECK(c.nodes.at(kSoftmax).input_type == "int8");
  CHECK(c.march == "bayes-e");
}

TEST_CASE("config writer: an existing node_info (block, flow over lines, or a quoted string) is merged") {
  const std::string block = "model_parameters:\n  march: nash-p\n  node_info:\n    \"/a/MatMul\": {'ON': 'BPU', 'InputType': "
                            "'float16', 'OutputType': 'float16'}\n    /b/Conv: {ON: CPU}\n  # kept\n  working_dir: out\n";
  const std::string out = fixed_text(block, {{"/a/MatMul", {{"InputType", "int16"}, {"OutputType", "int16"}}}});
  CHECK(out == "model_parameters:\n  march: nash-p\n  node_info:\n    \"/a/MatMul\": {'ON': 'BPU', 'InputType': 'int16', "
               "'OutputType': 'int16'}\n    \"/b/Conv\": {'ON': 'CPU'}\n  # kept\n  working_dir: out\n");

  const std::string flow = "model_parameters:\n  node_info: {\n    \"/a\": {'InputType': 'int8', 'OutputType': 'float32'},\n  }\n"
                           "  march: nash-p\n";
  const HbConfig f = parsed(fixed_text(flow, {{"/a", {{"OutputType", "int16"}}}}));
  CHECK(f.nodes.at("/a").input_type == "int8");
  CHECK(f.nodes.at("/a").output_type == "int16");
  CHECK(f.march == "nash-p");

  const std::string quoted = "model_parameters:\n  node_info: '{\"/a\": {\"ON\": \"CPU\"}}'\n";
  const HbConfig q = parsed(fixed_text(quoted, {node_on_bpu_edit("/b", "int16")}));
  CHECK(q.nodes.at("/a").on == "CPU");
  CHECK(q.nodes.at("/b").output_type == "int16");
}

TEST_CASE("config writer: no model_parameters, CRLF lines, odd node names, and a flow-style section refused") {
  const HbConfig added = parsed(fixed_text("input_parameters:\n  input_shape: 1x3x8x8\n", {node_on_bpu_edit("/x", "int8")}));
  CHECK(added.nodes.at("/x").on == "BPU");
  CHECK(added.input_shapes.at("") == std::vector<int64_t>{1, 3, 8, 8});

  const std::string crlf = fixed_text("model_parameters:\r\n  march: bayes-e\r\n", {node_on_bpu_edit("/x", "int8")});
  CHECK(crlf.find("\n") == crlf.find("\r\n") + 1);
  CHECK(count(crlf, "\n") == count(crlf, "\r\n"));

  const std::string odd = "a\"b\\c: d\x01";
  CHECK(parsed(fixed_text("model_parameters:\n  march: x\n", {node_on_bpu_edit(odd, "int8")})).nodes.at(odd).on == "BPU");

  std::string out, error;
  CHECK_FALSE(fix_hb_config_text("model_parameters: {march: bayes-e}\n", "cfg.yaml", {node_on_bpu_edit("/x", "int8")}, out,
                                 error));
  CHECK(error.find("flow mapping") != std::string::npos);
}

TEST_CASE("the config fix kinds are catalog rows with a config remedy, and the rules name them") {
  for (const char* id : {"node-info-bpu-int8", "node-info-bpu-int16", "node-info-float-to-int16"}) {
    const FixKind* k = find_fix_kind(id);
    REQUIRE(k != nullptr);
    CHECK(k->config != nullptr);
    CHECK(k->layer == nullptr);
    CHECK(std::string(k->config->evidence).find("platform-constraints.md") != std::string::npos);
  }
  const CommandResult explain = run_bpu_lint({"explain", "node-info-bpu-int8"});
  CHECK(explain.exit_code == 0);
  CHECK(explain.out.find("Offered by: BPU3401") != std::string::npos);
}

TEST_CASE("bpu-lint --fix --hb-config on X5: the Softmax's node_info line, the input untouched, the re-lint clean") {
  TempDir dir;
  write_file(dir.path("x5.yaml"), kX5Config);
  write_file(dir.path("attn_mini.onnx"), read_file(kAttn));
  const CommandResult lint = run_bpu_lint({"--hb-config", dir.path("x5.yaml"), "--format", "json"});
  CHECK(count(lint.out, "\"config_fixes\"") == 1);
  CHECK(lint.out.find("\"id\": \"node-info-bpu-int8\"") < lint.out.find("\"id\": \"node-info-bpu-int16\""));

  const CommandResult fix = run_bpu_lint({"--hb-config", dir.path("x5.yaml"), "--fix"});
  INFO(fix.out, fix.err);
  CHECK(read_file(dir.path("x5.yaml")) == kX5Config);
  const std::string written = read_file(dir.path("x5.fixed.yaml"));
  const HbConfig c = parsed(written);
  CHECK(c.nodes.at(kSoftmax).on == "BPU");
  CHECK(c.nodes.at(kSoftmax).output_type == "int8");
  CHECK(fix.out.find("wrote " + dir.path("x5.fixed.yaml")) != std::string::npos);
  CHECK(fix.out.find("settles BPU3401") != std::string::npos);
  CHECK(fix.out.find("6.7 ms") != std::string::npos);
  const std::string relint = fix.out.substr(fix.out.find("re-lint of"));
  CHECK(relint.find("[BPU3401]") == std::string::npos);
  CHECK(fix.out.find("[BPU3401]") != std::string::npos);
  // The opset-13 model is converted to opset 11 first (opset-down), so the
  // re-lint of the converted model with the fixed config has no finding left.
  CHECK(fix.out.find("opset-down (safe): converted from opset 13 to 11") != std::string::npos);
  CHECK(relint.find("re-lint of " + dir.path("attn_mini.fixed.onnx") + " with " + dir.path("x5.fixed.yaml")) == 0);
  CHECK(relint.find("[BPU9102]") == std::string::npos);
  CHECK(fix.exit_code == 0);

  // int16 by strategy, to a path of one's choosing; the re-lint reads that file.
  const CommandResult int16 = run_bpu_lint({"--hb-config", dir.path("x5.yaml"), "--fix", "--fix-strategy",
                                            "node-info-bpu-int16", "--fixed-config", dir.path("x5.int16.yaml")});
  INFO(int16.err);
  CHECK(parsed(read_file(dir.path("x5.int16.yaml"))).nodes.at(kSoftmax).input_type == "int16");
  CHECK(int16.out.find("8.0 ms") != std::string::npos);

  // JSON: what was added, and the re-lint with the copy.
  const CommandResult json = run_bpu_lint({"--hb-config", dir.path("x5.yaml"), "--fix", "--format", "json",
                                           "--fixed-config", dir.path("j.yaml")});
  CHECK(json_valid(json.out));
  CHECK(json.out.find("\"fixed_config\"") != std::string::npos);
  CHECK(json.out.find("\"kind\": \"node-info-bpu-int8\"") != std::string::npos);
}

TEST_CASE("bpu-lint --fix: config fixes without --hb-config are said, not written, and the config is never the output") {
  TempDir dir;
  write_file(dir.path("x5.yaml"), kX5Config);
  write_file(dir.path("attn_mini.onnx"), read_file(kAttn));
  const CommandResult said = run_bpu_lint({dir.path("attn_mini.onnx"), "--platform", "x5", "--fix"});
  CHECK(said.out.find("give it with --hb-config FILE") != std::string::npos);

  const CommandResult clash = run_bpu_lint({"--hb-config", dir.path("x5.yaml"), "--fix", "--fixed-config", dir.path("x5.yaml")});
  CHECK(clash.exit_code == 2);
  CHECK(count(clash.err, "error:") == 1);
  CHECK(read_file(dir.path("x5.yaml")) == kX5Config);

  const CommandResult no_fix = run_bpu_lint({"--hb-config", dir.path("x5.yaml"), "--fixed-config", dir.path("o.yaml")});
  CHECK(no_fix.exit_code == 2);
  CHECK(no_fix.err.find("--fixed-config needs --fix") != std::string::npos);
}

TEST_CASE("bpu-lint --fix --hb-config on J6P: float node_info types become int16 and BPU9007 is gone (a ViT export)") {
  TempDir dir;
  write_file(dir.path("vit_s2.onnx"), read_file(kVit));
  write_file(dir.path("j6p.yaml"),
             "model_parameters:\n  onnx_model: vit_s2.onnx\n  march: nash-p\n  node_info: {\n"
             "    \"/encoder/layers/encoder_layer_0/self_attention/MatMul\": {'ON': 'BPU', 'InputType': 'float16', "
             "'OutputType': 'float16'},\n    \"/encoder/layers/encoder_layer_1/self_attention/Softmax\": {'InputType': "
             "'int8', 'OutputType': 'float32'},\n  }\ninput_parameters:\n  input_name: x\n  input_shape: 1x3x224x224\n");
  const CommandResult fix = run_bpu_lint({"--hb-config", dir.path("j6p.yaml"), "--fix"});
  INFO(fix.out, fix.err);
  CHECK(fix.exit_code == 0);
  CHECK(count(fix.out, "[BPU9007]") == 1);  // before, not in the re-lint
  const HbConfig c = parsed(read_file(dir.path("j6p.fixed.yaml")));
  CHECK(c.nodes.at("/encoder/layers/encoder_layer_0/self_attention/MatMul").input_type == "int16");
  CHECK(c.nodes.at("/encoder/layers/encoder_layer_1/self_attention/Softmax").input_type == "int8");
  CHECK(c.nodes.at("/encoder/layers/encoder_layer_1/self_attention/Softmax").output_type == "int16");
  CHECK(c.input_shapes.at("x") == std::vector<int64_t>{1, 3, 224, 224});
}
