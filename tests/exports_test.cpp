// Verdicts on real torch.onnx.export output (tests/exports/, made by
// export_models.py), through the real binary and its JSON: what a user's
// first models get. Every number below was checked by hand against the graph
// (see tests/exports/README.md); a change here is a change of verdict.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>

#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;
using nlohmann::json;

namespace {

std::string exported(const std::string& name) { return std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + name + ".onnx"; }

struct Expected {
  const char* model;
  std::vector<std::string> pins;  // --input-shape values
  int exit_code;
  size_t errors, warnings, unverified, folded, runtime_shape, cpu;
  std::set<std::string> rules;  // every rule id among the shown diagnostics
};

json lint_json(const std::string& path, const std::vector<std::string>& pins, int& exit_code) {
  std::vector<std::string> args = {path, "--platform", "j6p", "--format", "json"};
  for (const auto& p : pins) {
    args.push_back("--input-shape");
    args.push_back(p);
  }
  const CommandResult r = run_bpu_lint(args);
  INFO(r.err);
  exit_code = r.exit_code;
  return json::parse(r.out);
}

const std::string kViTPin = "images=1x3x32x32";

// The table: static exports, dynamic exports as they are (the dynamic input is
// BPU9005's error, its shape arithmetic runtime shape ops, one root-cause
// note), and dynamic exports pinned (everything static folds, nothing unverified).
const std::vector<Expected> kTable = {
    // ViT with nn.MultiheadAttention: the int64 shape arithmetic folds; its six Linear
    // layers (rank 3 x a constant 2-D weight) get no Bayes MatMul-rank hint: J6 runs them.
    {"vit_mha_static", {}, 0, 0, 0, 0, 62, 0, 0, {"BPU0001"}},
    {"vit_mha_dynamic", {}, 1, 1, 0, 21, 127, 50, 0, {"BPU0001", "BPU0004", "BPU9005"}},
    {"vit_mha_dynamic", {kViTPin}, 0, 0, 0, 0, 177, 0, 0, {"BPU0001"}},
    {"vit_seqfirst_static", {}, 0, 0, 0, 0, 72, 0, 0, {"BPU0001"}},
    {"vit_seqfirst_dynamic", {}, 1, 1, 0, 21, 137, 50, 0, {"BPU0001", "BPU0004", "BPU9005"}},
    {"vit_seqfirst_dynamic", {kViTPin}, 0, 0, 0, 0, 187, 0, 0, {"BPU0001"}},
    // FPN with interpolate(size=p.shape[-2:]): the Resize sizes are known. Its two lateral-Conv
    // Adds are J6E/M's int32-fed Adds (BPU3007), unknown on J6P: a hint each.
    {"fpn_interpolate", {}, 0, 0, 0, 0, 14, 0, 0, {"BPU0005"}},
    {"fpn_interpolate_dynamic", {}, 1, 1, 0, 4, 26, 10, 0, {"BPU0004", "BPU0005", "BPU9005"}},
    {"fpn_interpolate_dynamic", {"p3=1x16x32x32", "p4=1x32x16x16", "p5=1x64x8x8"}, 0, 0, 0, 0, 36, 0, 0, {"BPU0005"}},
    // The occupancy decoder: up1/up2 break the D-stride rule, up3 both rules.
    {"occupancy_static", {}, 1, 4, 0, 0, 4, 0, 3, {"BPU1101", "BPU1102"}},
    {"occupancy_dynamic", {}, 1, 5, 0, 1, 15, 6, 3, {"BPU0004", "BPU1101", "BPU1102", "BPU9005"}},
    {"occupancy_dynamic", {"bev=1x64x10x10"}, 1, 4, 0, 0, 21, 0, 3, {"BPU1101", "BPU1102"}},
    // torch.where / masked_fill: Greater, Less, Cast and Where have no public J6P placement.
    {"masking_where", {}, 0, 0, 0, 0, 11, 0, 0, {"BPU0001"}},
    // einsum('bdhw,bchw->bcdhw') then view(b, c * d, h, w): the Einsum's dims come from its
    // equation, so the view's shape arithmetic folds (it was 16 runtime shape ops).
    {"lift_splat_einsum", {}, 0, 0, 0, 0, 25, 0, 0, {"BPU0001"}},
    // A QAT ConvTranspose3d: the D-stride rule; the activation QuantizeLinear/DequantizeLinear
    // have no public J6P placement; the weight's fold (a constant).
    {"qat_upsample_static", {}, 1, 1, 0, 0, 7, 0, 1, {"BPU0001", "BPU1102"}},
    {"qat_upsample_dynamic", {}, 1, 2, 0, 0, 7, 0, 1, {"BPU0001", "BPU1102", "BPU9005"}},
    {"qat_upsample_dynamic", {"voxels=1x8x3x4x5"}, 1, 1, 0, 0, 7, 0, 1, {"BPU0001", "BPU1102"}},
    // torch's FakeQuantize: the two Identity aliases of the zero point and the weight's pair fold.
    {"qat_fakequant_opset13", {}, 1, 1, 0, 0, 4, 0, 1, {"BPU0001", "BPU1102"}},
    {"qat_fakequant_opset17", {}, 1, 1, 0, 0, 4, 0, 1, {"BPU0001", "BPU1102"}},
    // A scale computed from the weight: seven Constants, Abs/ReduceMax/Div/Clip and the weight's pair fold.
    {"qat_computed_scale", {}, 1, 1, 0, 0, 13, 0, 1, {"BPU0001", "BPU1102"}},
};

}  // namespace

TEST_CASE("real exports: exact verdicts, static, dynamic and pinned") {
  for (const auto& e : kTable) {
    std::string pins;
    for (const auto& p : e.pins) pins += " " + p;
    INFO(e.model << pins);
    int exit_code = -1;
    const json report = lint_json(exported(e.model), e.pins, exit_code);
    CHECK(exit_code == e.exit_code);
    const json& model = report["models"][0];
    const json& s = model["summary"];
    CHECK(s["errors"] == e.errors);
    CHECK(s["warnings"] == e.warnings);
    CHECK(s["unverified"] == e.unverified);
    CHECK(s["folded_nodes"] == e.folded);
    CHECK(s["runtime_shape_nodes"] == e.runtime_shape);
    CHECK(s["cpu_nodes"] == e.cpu);
    std::set<std::string> rules;
    for (const auto& d : model["diagnostics"]) rules.insert(d["rule"].get<std::string>());
    CHECK(rules == e.rules);
    // The bar: pinned, at most 3 checks end in "cannot verify".
    if (!e.pins.empty()) CHECK(s["unverified"].get<size_t>() <= 3);
  }
}

TEST_CASE("real exports: shape arithmetic is never a BPU or CPU finding") {
  // MultiheadAttention's Gather(Shape(x)) + 2 feeding a Div used to be BPU2002 "on the CPU".
  for (const char* name : {"vit_mha_static", "vit_seqfirst_static", "vit_mha_dynamic", "vit_seqfirst_dynamic"}) {
    INFO(name);
    int exit_code = -1;
    const json report = lint_json(exported(name), {}, exit_code);
    for (const auto& d : report["models"][0]["diagnostics"]) {
      CHECK(d["rule"] != "BPU2002");
      CHECK(d["rule"] != "BPU2001");
    }
    CHECK(report["models"][0]["summary"]["cpu_islands"] == 0);
  }
}

TEST_CASE("real exports: one root-cause note names the dynamic input and how to pin it") {
  const CommandResult r = run_bpu_lint({exported("vit_mha_dynamic"), "--format", "concise"});
  CHECK(count(r.out, "[BPU0004]") == 1);
  CHECK(r.out.find("input 'images' has dynamic dims [N, 3, 32, 32]: 21 rule checks on 21 nodes cannot be verified; "
                   "pin it with --input-shape images=<N>x3x32x32") != std::string::npos);
  CHECK(count(r.out, "cannot verify BPU") == 0);
  // --show-unverified lists the checks as well, under the same note.
  const CommandResult all = run_bpu_lint({exported("vit_mha_dynamic"), "--format", "concise", "--show-unverified"});
  CHECK(count(all.out, "cannot verify BPU") == 21);
  CHECK(count(all.out, "[BPU0004]") == 1);
  CHECK(all.out.find("(21 checks unverified)") != std::string::npos);
}

TEST_CASE("real exports: on every chip, unverified checks fold into one note per dynamic input") {
  // The Bayes general limits check `all(t in input + output: ...)`: their unknown dim sits inside a
  // tensor record of the list, and it is still traced to the input it comes from (97 notes on a
  // dynamic ResNet-18 on bayes-e before, one per node and rule).
  const std::vector<std::pair<std::string, int>> models = {
      {"vit_mha_dynamic", 1}, {"vit_seqfirst_dynamic", 1}, {"fpn_interpolate_dynamic", 3}, {"occupancy_dynamic", 1}};
  for (const char* chip : {"j6p", "j6e", "bayes-e", "bayes", "bernoulli2"}) {
    for (const auto& model : models) {
      const std::string name = model.first;  // (clang 14 captures no structured binding)
      const int dynamic_inputs = model.second;
      CAPTURE(chip);
      CAPTURE(name);
      const CommandResult r = run_bpu_lint({exported(name), "--platform", chip, "--format", "concise"});
      CHECK(count(r.out, "cannot verify BPU2") == 0);
      CHECK(count(r.out, "cannot verify BPU1") == 0);
      const int per_input = count(r.out, "[BPU0004]");
      CHECK(per_input <= dynamic_inputs);
    }
  }
}

TEST_CASE("real exports: the dynamic decoder is fixed like its static twin, pinned or not") {
  for (const auto& pins : std::vector<std::vector<std::string>>{{}, {"--input-shape", "bev=1x64x10x10"}}) {
    TempDir dir;
    std::vector<std::string> args = {exported("occupancy_dynamic"), "--fix", "--fixed-model", dir.path("fixed.onnx")};
    args.insert(args.end(), pins.begin(), pins.end());
    const CommandResult r = run_bpu_lint(args);
    INFO(r.out << r.err);
    // up1/up2 (kernel == stride): convtranspose2d; up3 (kernel D 3, stride 2, pad D 1): the D taps.
    CHECK(count(r.out, "fixed with convtranspose2d;") == 2);
    CHECK(r.out.find("'/up3/ConvTranspose': fixed with convtranspose2d-d-taps; proven on random inputs") !=
          std::string::npos);
    CHECK(r.out.find("fixed 3 of 3 nodes") != std::string::npos);
    // Only the dynamic input itself is left (BPU9005), and only while it is not pinned.
    CHECK(r.exit_code == (pins.empty() ? 1 : 0));
    CHECK(r.out.find("0 on CPU") != std::string::npos);
    // The pin is a lint assumption: the written model keeps the declared batch N.
    LoadedModel fixed;
    std::string error;
    REQUIRE(load_model(dir.path("fixed.onnx"), fixed, error));
    const auto& in = fixed.model->graph().input(0).type().tensor_type().shape();
    CHECK(in.dim(0).dim_param() == "N");
    CHECK(in.dim(1).dim_value() == 64);
  }
  // The static twin: the same three layers, nothing left.
  TempDir dir;
  const CommandResult s = run_bpu_lint({exported("occupancy_static"), "--fix", "--fixed-model", dir.path("fixed.onnx")});
  CHECK(count(s.out, "fixed with convtranspose2d;") == 2);
  CHECK(count(s.out, "fixed with convtranspose2d-d-taps;") == 1);
  CHECK(s.exit_code == 0);
}

TEST_CASE("real exports: after --fix no ConvTranspose finding is left on j6p, and up3's fixes are listed") {
  for (const char* name : {"occupancy_static", "occupancy_dynamic"}) {
    INFO(name);
    int exit_code = -1;
    const json before = lint_json(exported(name), {}, exit_code);
    // up3 lists the three fixes, the D-tap rewrite recommended with its costs.
    bool listed = false;
    for (const auto& d : before["models"][0]["diagnostics"]) {
      if (d["rule"] != "BPU1101") continue;
      const json& fixes = d["fixes"];
      REQUIRE(fixes.size() == 3);
      CHECK(fixes[0]["id"] == "convtranspose2d-d-taps");
      CHECK(fixes[0]["recommended"] == true);
      CHECK(fixes[0]["intermediate_channels"] == 12);  // C_out 4 x KD 3
      CHECK(fixes[0]["new_nodes"] == 9);
      CHECK(fixes[1]["applicable"] == false);
      CHECK(fixes[2]["applicable"] == false);
      listed = true;
    }
    CHECK(listed);
    TempDir dir;
    const CommandResult fix = run_bpu_lint({exported(name), "--fix", "--fixed-model", dir.path("fixed.onnx")});
    INFO(fix.out << fix.err);
    const json after = lint_json(dir.path("fixed.onnx"), {}, exit_code);
    const json& model = after["models"][0];
    CHECK(model["summary"]["cpu_nodes"] == 0);
    for (const auto& d : model["diagnostics"]) {
      CHECK(d["rule"].get<std::string>().rfind("BPU11", 0) != 0);
      if (d["severity"] == "error") CHECK(d["rule"] == "BPU9005");  // the dynamic input, not a node
    }
  }
}

TEST_CASE("real exports: a QAT layer is fixed in the quantised domain and keeps its QDQ structure") {
  for (const char* name : {"qat_upsample_static", "qat_upsample_dynamic"}) {
    INFO(name);
    int exit_code = -1;
    const json before = lint_json(exported(name), {}, exit_code);
    for (const auto& d : before["models"][0]["diagnostics"]) {
      if (d["rule"] != "BPU1102") continue;
      CHECK(d["fix_blocked"].is_null());
      CHECK(d["fixes"][0]["id"] == "convtranspose2d");
      CHECK(d["fixes"][0]["recommended"] == true);
    }
    TempDir dir;
    const CommandResult fix = run_bpu_lint({exported(name), "--fix", "--fixed-model", dir.path("fixed.onnx")});
    INFO(fix.out << fix.err);
    CHECK(count(fix.out, "fixed with convtranspose2d;") == 1);
    const json after = lint_json(dir.path("fixed.onnx"), {}, exit_code);
    const json& model = after["models"][0];
    CHECK(model["summary"]["cpu_nodes"] == 0);
    for (const auto& d : model["diagnostics"]) {
      CHECK(d["rule"].get<std::string>().rfind("BPU11", 0) != 0);
      if (d["severity"] == "error") CHECK(d["rule"] == "BPU9005");
    }
    // The activation pairs stay; the weight's pair is the rewrite's, per channel on the 2-D
    // ConvTranspose's output-channel axis (1), feeding its weight.
    LoadedModel fixed;
    std::string error;
    REQUIRE(load_model(dir.path("fixed.onnx"), fixed, error));
    int quantize = 0, dequantize = 0;
    std::string weight;
    for (const auto& n : fixed.model->graph().node()) {
      quantize += n.op_type() == "QuantizeLinear" ? 1 : 0;
      dequantize += n.op_type() == "DequantizeLinear" ? 1 : 0;
      if (n.op_type() == "DequantizeLinear" && n.name() == "/ConvTranspose_fix_dequantize_weight") {
        REQUIRE(n.attribute_size() == 1);
        CHECK(n.attribute(0).i() == 1);
        weight = n.output(0);
      }
      if (n.op_type() == "ConvTranspose") CHECK(n.input(1) == weight);
    }
    CHECK(quantize == 3);
    CHECK(dequantize == 3);
    CHECK_FALSE(weight.empty());
  }
}

namespace {

// What the fix of a fake-quant export left: op counts, and the names of nodes and initializers.
struct FixedGraph {
  std::map<std::string, int> ops;
  std::set<std::string> nodes, initializers;
  onnx::NodeProto weight_dequantize;  // the rewrite's, by name; empty op_type when absent
};

FixedGraph fixed_graph(const std::string& path) {
  FixedGraph g;
  LoadedModel fixed;
  std::string error;
  REQUIRE(load_model(path, fixed, error));
  for (const auto& n : fixed.model->graph().node()) {
    ++g.ops[n.op_type()];
    g.nodes.insert(n.name());
    if (n.op_type() == "DequantizeLinear" && n.name() == "/up/ConvTranspose_fix_dequantize_weight") g.weight_dequantize = n;
  }
  for (const auto& t : fixed.model->graph().initializer()) g.initializers.insert(t.name());
  return g;
}

// --fix with each strategy on a fake-quant export: one layer rewritten, proven, no CPU node and
// no ConvTranspose finding after; the weight's old QuantizeLinear/DequantizeLinear and the nodes
// that computed its scale and zero point for them alone are gone, with the old weight; the new
// per-tensor pair reads the rewrite's own scale and zero point initializers.
void check_fake_quant_fix(const std::string& name, const std::string& scale, const std::string& zero_point,
                          const std::vector<std::string>& gone) {
  int exit_code = -1;
  const json before = lint_json(exported(name), {}, exit_code);
  CHECK(exit_code == 1);
  size_t layer_findings = 0;
  for (const auto& d : before["models"][0]["diagnostics"]) {
    if (d["rule"] != "BPU1102") continue;
    ++layer_findings;
    CHECK(d["fix_blocked"].is_null());
    CHECK(d["fixes"][0]["id"] == "convtranspose2d");
    CHECK(d["fixes"][0]["recommended"] == true);
  }
  CHECK(layer_findings == 1);
  for (const std::string strategy : {"convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps"}) {
    INFO(strategy);
    TempDir dir;
    const CommandResult fix = run_bpu_lint({exported(name), "--fix", "--fix-strategy", strategy, "--fixed-model",
                                            dir.path("fixed.onnx")});
    INFO(fix.out << fix.err);
    CHECK(fix.exit_code == 0);
    CHECK(count(fix.out, "fixed with " + strategy + ";") == 1);
    const json after = lint_json(dir.path("fixed.onnx"), {}, exit_code);
    CHECK(exit_code == 0);
    CHECK(after["models"][0]["summary"]["cpu_nodes"] == 0);
    const FixedGraph g = fixed_graph(dir.path("fixed.onnx"));
    CHECK(g.ops.count("ConvTranspose") == (strategy == "conv3d-1x1x1" ? 0u : 1u));
    // The activation pairs stay, the weight's pair is the rewrite's.
    CHECK(g.ops.at("QuantizeLinear") == 3);
    CHECK(g.ops.at("DequantizeLinear") == 3);
    REQUIRE(g.weight_dequantize.input_size() == 3);
    CHECK(g.weight_dequantize.attribute_size() == 0);  // per tensor: no axis
    CHECK(g.weight_dequantize.input(1) == scale + "_fix_" + strategy);
    CHECK(g.weight_dequantize.input(2) == zero_point + "_fix_" + strategy);
    CHECK(g.initializers.count(scale + "_fix_" + strategy) == 1);
    CHECK(g.initializers.count(zero_point + "_fix_" + strategy) == 1);
    CHECK(g.initializers.count("up.weight") == 0);
    for (const auto& n : gone) CHECK_MESSAGE(g.nodes.count(n) == 0, n);
  }
}

}  // namespace

// torch.ao.quantization's FakeQuantize (per-tensor symmetric qint8) on the input, the weight and
// the output: torch.onnx keeps one int8 0 and aliases the weight's and the output's zero points to
// it through Identity; the scales are [1] buffers. Folded today: Identity of an integer initializer.
TEST_CASE("real exports: torch's FakeQuantize ConvTranspose3d is fixed, its zero point read through Identity") {
  for (const char* name : {"qat_fakequant_opset13", "qat_fakequant_opset17"}) {
    INFO(name);
    check_fake_quant_fix(name, "up.weight_fake_quant.scale", "onnx::QuantizeLinear_35",
                         {"/up/weight_fake_quant/QuantizeLinear", "/up/weight_fake_quant/DequantizeLinear", "Identity_1"});
    // The output's alias of the same zero point is not the weight's: it stays.
    TempDir dir;
    const CommandResult fix = run_bpu_lint({exported(name), "--fix", "--fixed-model", dir.path("fixed.onnx")});
    const FixedGraph g = fixed_graph(dir.path("fixed.onnx"));
    CHECK(g.nodes.count("Identity_0") == 1);
    CHECK(g.initializers.count("onnx::QuantizeLinear_34") == 1);
  }
}

// A hand-written fake quant whose scale is max|w| / 127 computed in forward: Abs -> ReduceMax ->
// Div -> Clip on the weight initializer. NEEDS the constant folder (TensorFacts::data of a float
// chain): until it lands, the layer is refused with "a constant whose value bpu-lint does not compute".
TEST_CASE("real exports: a weight fake quant whose scale is computed from the weight is fixed (needs constant folding)") {
  check_fake_quant_fix("qat_computed_scale", "/up/Clip_output_0", "/up/Constant_2_output_0",
                       {"/up/QuantizeLinear", "/up/DequantizeLinear", "/up/Abs", "/up/ReduceMax", "/up/Div", "/up/Clip",
                        "/up/Constant", "/up/Constant_1", "/up/Constant_2"});
}

TEST_CASE("a missing shape names the input to pin, after the real blocker") {
  TempDir dir;
  // The decoder with a dynamic H as well: nothing is rewritable without a pin.
  LoadedModel source;
  std::string error;
  REQUIRE(load_model(exported("occupancy_dynamic"), source, error));
  onnx::ModelProto m = *source.model;
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("H");
  const CommandResult r = run_bpu_lint({save_model(dir, "dynh.onnx", m), "--fix", "--fixed-model", dir.path("out.onnx")});
  INFO(r.out);
  CHECK(r.out.find("'/up1/ConvTranspose': not fixed: no fix applies: input dim 3 is not static (only the batch dim may "
                   "be dynamic); pin it with --input-shape bev=<N>x64x<H>x10 (") != std::string::npos);
  // up3: the non-overlapping fixes are ruled out by its D axis, the D-tap one by the missing H.
  CHECK(r.out.find("'/up3/ConvTranspose': not fixed: no fix applies; convtranspose2d: D axis overlaps (kernel 3 != "
                   "stride 2)") != std::string::npos);
  CHECK(r.out.find("; convtranspose2d-d-taps: input dim 3 is not static (only the batch dim may be dynamic); pin it "
                   "with --input-shape bev=<N>x64x<H>x10 (") != std::string::npos);
  // A pin may still let a fix apply: no call for a source change yet.
  CHECK(r.out.find("PyTorch source") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path("out.onnx")));
}

// BPU1201 (a 3-D ConvTranspose has no BPU or CPU implementation on X3, J5/RDK
// Ultra and X5) offers the same rewrites as the J6P rules; each chip's own
// rules judge the rewrite's nodes. Ultra and X5 list Transpose (any rank) and
// Reshape (ranks 1-10) as BPU ops; X3 runs both on the CPU.
namespace {

json lint_on(const std::string& chip, const std::string& path) {
  const CommandResult r = run_bpu_lint({path, "--platform", chip, "--format", "json"});
  INFO(r.err);
  return json::parse(r.out);
}

// The ConvTranspose nodes of a model file with a 3-D kernel.
int conv_transpose_3d_nodes(const std::string& path) {
  LoadedModel m;
  std::string error;
  REQUIRE(load_model(path, m, error));
  int n = 0;
  for (const auto& node : m.model->graph().node()) {
    if (node.op_type() != "ConvTranspose") continue;
    for (const auto& a : node.attribute()) n += a.name() == "kernel_shape" && a.ints_size() == 3 ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("X5 and J5: --fix rewrites every 3-D ConvTranspose of the real exports, and the re-lint has none, and no CPU node") {
  for (const char* chip : {"bayes-e", "bayes"}) {
    for (const std::string& model : {exported("occupancy_static"), exported("occupancy_dynamic"), example_model()}) {
      INFO(chip << " " << model);
      // Every finding: a recommended fix, nothing blocked.
      size_t findings = 0;
      const json before = lint_on(chip, model);
      for (const auto& d : before["models"][0]["diagnostics"]) {
        if (d["rule"] != "BPU1201") continue;
        ++findings;
        CHECK(d["fix_blocked"].is_null());
        CHECK(d["fixes"][0]["recommended"] == true);
        CHECK(d["fixes"][0]["new_violations"].empty());
      }
      CHECK(findings == 3);
      TempDir dir;
      const CommandResult fix = run_bpu_lint({model, "--platform", chip, "--fix", "--fixed-model", dir.path("f.onnx")});
      INFO(fix.out << fix.err);
      CHECK(fix.out.find("fixed 3 of 3 nodes") != std::string::npos);
      CHECK(conv_transpose_3d_nodes(model) == 3);
      CHECK(conv_transpose_3d_nodes(dir.path("f.onnx")) == 0);
      const json after = lint_on(chip, dir.path("f.onnx"))["models"][0];
      CHECK(after["summary"]["cpu_nodes"] == 0);
      CHECK(after["summary"]["unknown_nodes"] == 0);
      CHECK(after["summary"]["no_compile_nodes"] == 0);
      for (const auto& d : after["diagnostics"]) {
        // Model-level only: occupancy_dynamic's input (on X5 the opset-17 export is converted to 11 too).
        if (d["severity"] == "error") CHECK(d["rule"] == "BPU9005");
      }
      if (std::string(chip) == "bayes-e") CHECK(fix.out.find("opset-down (safe): converted from opset 17 to 11") != std::string::npos);
      // The exit code follows the re-lint: only the dynamic input is left.
      CHECK(fix.exit_code == (model == exported("occupancy_dynamic") ? 1 : 0));
    }
  }
  // The chips' own limits choose: RDK Ultra caps a 2-D ConvTranspose weight at 65535 elements
  // (BPU1209), which the case study's first layer as a 2-D ConvTranspose ([128, 320, 2, 2]) breaks.
  const json ultra_report = lint_on("bayes", example_model());
  const json& ultra = ultra_report["models"][0]["diagnostics"][0];
  REQUIRE(ultra["node"] == "/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose");
  CHECK(ultra["fixes"][0]["id"] == "conv3d-1x1x1");
  CHECK(ultra["fixes"][0]["recommended"] == true);
  CHECK(ultra["fixes"][1]["id"] == "convtranspose2d");
  CHECK(ultra["fixes"][1]["new_violations"][0].get<std::string>().rfind("BPU1209 on ConvTranspose", 0) == 0);
  const json x5_report = lint_on("bayes-e", example_model());
  const json& x5_all = x5_report["models"][0]["diagnostics"];
  const auto x5_layer = std::find_if(x5_all.begin(), x5_all.end(), [](const json& d) { return d["rule"] == "BPU1201"; });
  REQUIRE(x5_layer != x5_all.end());  // (the first finding is the model's: X5's opset limit)
  const json& x5 = *x5_layer;
  CHECK(x5["fixes"][0]["id"] == "convtranspose2d");
  CHECK(x5["fixes"][0]["recommended"] == true);
}

TEST_CASE("X3: the rewrites' Reshape/Transpose run on the CPU, so each finding and --fix say why, and what is left") {
  const std::string left = "; the layer needs a change in its PyTorch source";
  // Layers every rewrite takes: all three blocked, conv3d-1x1x1 also by its 3-D Conv (BPU1416).
  const std::string why = "no fix applies; convtranspose2d: its nodes would break BPU0002 (Reshape, Transpose); "
                          "conv3d-1x1x1: its nodes would break BPU1416 (Conv), BPU0002 (Reshape, Transpose); "
                          "convtranspose2d-d-taps: its nodes would break BPU0002 (Reshape, Transpose)" + left;
  // up3 of the occupancy decoder overlaps along D: only the D-tap rewrite takes it, and X3 blocks that too.
  const std::string why_up3 = "no fix applies; convtranspose2d-d-taps: its nodes would break BPU0002 (Reshape, "
                              "Transpose); convtranspose2d: D axis overlaps (kernel 3 != stride 2)";
  for (const std::string& model : {exported("occupancy_static"), exported("occupancy_dynamic"), example_model()}) {
    INFO(model);
    const size_t alike = model == example_model() ? 3 : 2;  // the decoders' up1 and up2
    size_t findings = 0, said_once = 0;
    const json report = lint_on("bernoulli2", model);
    for (const auto& d : report["models"][0]["diagnostics"]) {
      if (d["rule"] != "BPU1201") continue;
      ++findings;
      const std::string blocked = d["fix_blocked"].get<std::string>();
      said_once += blocked == why ? 1 : 0;
      if (blocked != why) CHECK(blocked.rfind(why_up3, 0) == 0);
      CHECK(blocked.substr(blocked.size() - left.size()) == left);
      for (const auto& f : d["fixes"]) CHECK(f["recommended"] == false);
      CHECK(d["fixes"][0]["applicable"] == true);  // the rewrite exists; its nodes are what X3 lacks
    }
    CHECK(findings == 3);
    CHECK(said_once == alike);
    const CommandResult text = run_bpu_lint({model, "--platform", "bernoulli2"});
    CHECK(count(text.out, "      --fix leaves this node as it is: " + why + "\n") == static_cast<int>(alike));
    CHECK(count(text.out, "      --fix leaves this node as it is: ") == 3);
    TempDir dir;
    const CommandResult fix = run_bpu_lint({model, "--platform", "X3", "--fix", "--fixed-model", dir.path("f.onnx")});
    INFO(fix.out << fix.err);
    CHECK(fix.exit_code == 1);
    CHECK(count(fix.out, "ConvTranspose': not fixed: " + why + "\n") == static_cast<int>(alike));
    CHECK(count(fix.out, "ConvTranspose': not fixed: no fix applies") == 3);
    CHECK(fix.out.find(": nothing was fixed; no file written\n") != std::string::npos);
    CHECK(fix.out.find("nothing to fix") == std::string::npos);
    // The opset-17 export is still converted to opset 11 (BPU9103): the layers stay as they were.
    CHECK(fix.out.find("opset-down (safe): converted from opset 17 to 11") != std::string::npos);
    CHECK(conv_transpose_3d_nodes(dir.path("f.onnx")) == 3);
    CHECK_FALSE(std::filesystem::exists(dir.path("f.layers.onnx")));
  }
}

TEST_CASE("real exports at opsets 18 and 20 (torch 2.6) give the findings of their opset-17 twin on every platform") {
  // tests/exports/torch26: one torch 2.6 model exported at 17, 18 (Reduce* axes and Split sizes as
  // inputs) and 20 (GELU as one Gelu node), checked and inferred by ONNX 1.17 (cmake/onnx.cmake).
  const auto findings = [](const ModelReport& r) {
    std::multiset<std::string> out;
    for (const auto& d : r.diagnostics) {
      if (d.outcome == Outcome::Fail) out.insert(d.rule->id + " " + severity_name(d.severity));
    }
    return out;
  };
  const std::string dir = std::string(BPULINT_SOURCE_DIR) + "/tests/exports/torch26/";
  for (const char* p : {"j6p", "j6e", "j6m", "bayes-e", "bayes", "bernoulli2"}) {
    const ModelReport r17 = lint_model(dir + "convnext_block_op17.onnx", platform(p));
    REQUIRE(r17.ok);
    for (const char* opset : {"18", "20"}) {
      const ModelReport r = lint_model(dir + "convnext_block_op" + opset + ".onnx", platform(p));
      auto expected = findings(r17);
      // On J5 the opset-17 GELU's Div by sqrt(2) is a verified CPU fallback (BPU5403); a Gelu node has no Div.
      if (std::string(opset) == "20" && std::string(p) == "bayes") expected.erase(expected.find("BPU5403 error"));
      CHECK_MESSAGE(findings(r) == expected, p << " opset " << opset);
      CHECK_MESSAGE(r.summary.unverified == r17.summary.unverified, p << " opset " << opset);
      CHECK_MESSAGE(r.summary.unknown == r17.summary.unknown, p << " opset " << opset);
    }
  }
}
