// A team's repository: per-path settings in .bpu-lint.yaml, pins that mean
// the same whatever files a run gets, waivers and baselines scoped to the
// models of the run, Horizon compile configs as input, --min-severity, user
// rules that are pleasant to write, and folder scans that miss nothing.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string exported(const std::string& name) { return std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + name + ".onnx"; }

// A team repository: models/vit.onnx (dynamic batch), decoders/fpn.onnx
// (three dynamic inputs), legacy/occ.onnx (ConvTranspose3d errors).
struct Repo {
  TempDir dir;
  Repo() {
    for (const char* d : {"models", "decoders", "legacy", "other"}) fs::create_directories(dir.path(d));
    fs::copy_file(exported("vit_mha_dynamic"), dir.path("models/vit.onnx"));
    fs::copy_file(exported("fpn_interpolate_dynamic"), dir.path("decoders/fpn.onnx"));
    fs::copy_file(exported("occupancy_static"), dir.path("legacy/occ.onnx"));
    fs::copy_file(exported("occupancy_static"), dir.path("other/occ.onnx"));
  }
  std::string path(const std::string& p) const { return dir.path(p); }
  void config(const std::string& yaml) const { write_file(dir.path(".bpu-lint.yaml"), yaml); }
};

json run_json(const std::vector<std::string>& args, int* exit_code = nullptr) {
  std::vector<std::string> a = args;
  a.push_back("--format");
  a.push_back("json");
  const CommandResult r = run_bpu_lint(a);
  INFO(r.err);
  if (exit_code != nullptr) *exit_code = r.exit_code;
  return json::parse(r.out);
}

const json* model_of(const json& report, const std::string& suffix) {
  for (const auto& m : report["models"]) {
    const std::string p = m["path"];
    if (p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0) return &m;
  }
  return nullptr;
}

const char* kTeamConfig = R"(platform: j6p
input_shapes: {images: 1x3x32x32}
overrides:
  - models: ["decoders/*.onnx"]
    input_shapes: {p3: 1x16x32x32, p4: 1x32x16x16, p5: 1x64x8x8}
  - models: ["legacy/*"]
    platform: j6e
  - models: ["legacy/occ.onnx"]
    platform: j6m
    ignore: [BPU0005]
waivers:
  - rule: "BPU11*"
    node: "*/up*/ConvTranspose"
    model: "other/occ.onnx"
    reason: measured on the board with OE 3.5
)";

}  // namespace

TEST_CASE("per-path settings: input_shapes and overrides by model glob, later entries win") {
  Repo repo;
  repo.config(kTeamConfig);
  int code = -1;
  const json r = run_json({repo.dir.dir()}, &code);
  const json* vit = model_of(r, "models/vit.onnx");
  const json* fpn = model_of(r, "decoders/fpn.onnx");
  const json* occ = model_of(r, "legacy/occ.onnx");
  REQUIRE(vit != nullptr);
  REQUIRE(fpn != nullptr);
  REQUIRE(occ != nullptr);
  // The top-level pin and the override's pins: the dynamic models are static and clean.
  CHECK((*vit)["summary"]["errors"] == 0);
  CHECK((*vit)["summary"]["runtime_shape_nodes"] == 0);
  CHECK((*fpn)["summary"]["errors"] == 0);
  CHECK((*fpn)["summary"]["unverified"] == 0);
  // Both legacy overrides match: the later wins (j6m), and its ignore applies.
  CHECK((*occ)["platform"] == "j6m");
  CHECK((*occ)["summary"]["notes"] == 0);
  CHECK((*vit)["platform"] == "j6p");
  // The command line wins over the file.
  const json forced = run_json({repo.path("legacy/occ.onnx"), "--platform", "j6p"});
  CHECK(forced["models"][0]["platform"] == "j6p");
  CHECK(forced["models"][0]["summary"]["errors"] == 4);
  // A configuration error names the file and the place.
  repo.config("overrides:\n  - platform: j6e\n");
  const CommandResult bad = run_bpu_lint({repo.path("models/vit.onnx")});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find(".bpu-lint.yaml:2:5: override is missing required key 'models'") != std::string::npos);
}

TEST_CASE("--input-shape means the same whatever the set of files, and a pin no model has is a warning") {
  Repo repo;
  const std::string vit = repo.path("models/vit.onnx"), occ = repo.path("legacy/occ.onnx");
  for (const auto& models : std::vector<std::vector<std::string>>{{vit}, {vit, occ}, {occ, vit}}) {
    std::vector<std::string> args = models;
    for (const char* a : {"--isolated", "--input-shape", "images=1x3x32x32", "--format", "concise"}) args.push_back(a);
    const CommandResult r = run_bpu_lint(args);
    INFO(r.out << r.err);
    CHECK(r.out.find("vit.onnx: 253 nodes: 69 on BPU, 0 on CPU, 177 folded") != std::string::npos);
    CHECK(r.out.find("no model of this run") == std::string::npos);
  }
  const CommandResult stray = run_bpu_lint({occ, "--isolated", "--input-shape", "images=1x3x32x32"});
  CHECK(stray.exit_code == 1);  // the model's own errors; the pin is only a warning
  CHECK(stray.out.find("warning: --input-shape images: no model of this run has an input named 'images'") !=
        std::string::npos);
}

TEST_CASE("a waiver scoped by model: silences only that model, unused only where it could apply") {
  Repo repo;
  repo.config(kTeamConfig);
  const CommandResult both = run_bpu_lint({repo.path("other/occ.onnx"), repo.path("legacy/occ.onnx"),
                                           "--platform", "j6p", "--format", "concise"});
  INFO(both.out);
  // Same node names in both models: only other/occ.onnx is waived.
  CHECK(both.out.find("other/occ.onnx: 9 nodes: 2 on BPU, 3 on CPU, 4 folded; 3 CPU islands (BPU<->CPU round "
                      "trips); findings: 0 errors, 0 warnings, 0 notes, 4 waived") != std::string::npos);
  CHECK(count(both.out, "legacy/occ.onnx:torch_jit/up") == 4);
  CHECK(both.out.find("matched nothing") == std::string::npos);
  // A run without other/occ.onnx cannot judge that waiver: no warning.
  const CommandResult one = run_bpu_lint({repo.path("models/vit.onnx")});
  CHECK(one.out.find("matched nothing") == std::string::npos);
  // A run that lints its model and finds nothing to waive warns.
  repo.config(std::string(kTeamConfig) + "  - rule: BPU2002\n    model: \"models/*\"\n    reason: int adds\n");
  const CommandResult unused = run_bpu_lint({repo.path("models/vit.onnx")});
  CHECK(unused.out.find("waiver for rule 'BPU2002' on node '*' in 'models/*' matched nothing") != std::string::npos);
}

TEST_CASE("a baseline reports stale entries only for the models of the run") {
  Repo repo;
  const std::string baseline = repo.path("baseline.yaml");
  const CommandResult written =
      run_bpu_lint({repo.path("legacy"), repo.path("other"), "--isolated", "--write-baseline", baseline});
  CHECK(written.exit_code == 1);
  REQUIRE(fs::exists(baseline));
  // other/occ.onnx changes: its findings go away (a model without them), legacy is not linted.
  fs::copy_file(exported("fpn_interpolate"), repo.path("other/occ.onnx"), fs::copy_options::overwrite_existing);
  const CommandResult only_other = run_bpu_lint({repo.path("other/occ.onnx"), "--isolated", "--baseline", baseline});
  INFO(only_other.out);
  CHECK(only_other.exit_code == 0);
  CHECK(count(only_other.out, "stale baseline entry") == 4);  // up1, up2: BPU1102; up3: BPU1101, BPU1102
  CHECK(only_other.out.find("legacy/occ.onnx") == std::string::npos);
}

TEST_CASE("--min-severity lists only findings at or above a level, in every format, and summaries count all") {
  const std::string example = example_model();
  const CommandResult text = run_bpu_lint({example, "--platform", "j6e", "--min-severity", "warning", "--format", "concise"});
  CHECK(text.out.find("[BPU0005]") == std::string::npos);
  CHECK(text.out.find("findings: 0 errors, 0 warnings, 3 notes on 3 nodes") != std::string::npos);
  const json j = run_json({example, "--platform", "j6e", "--min-severity", "error"});
  CHECK(j["models"][0]["diagnostics"].empty());
  CHECK(j["models"][0]["summary"]["notes"] == 3);
  const json all = run_json({example, "--platform", "j6e"});
  CHECK(all["models"][0]["diagnostics"].size() == 3);
  const CommandResult bad = run_bpu_lint({example, "--min-severity", "fatal"});
  CHECK(bad.exit_code == 2);
}

TEST_CASE("rules validate reports every mistake inside one rule, each at its place") {
  TempDir dir;
  const std::string broken = dir.path("team.yaml");
  // An unknown key used to hide the expression error and the bad severity.
  write_file(broken, R"(schema_version: 1
extends: j6p
rules:
  - id: TEAM0001
    name: three-mistakes
    summary: "x"
    ops: [Conv]
    colour: red
    require: "group >"
    severity: fatal
    message: "m"
    status: verified
    source: "s"
)");
  const CommandResult v = run_bpu_lint({"rules", "validate", broken});
  INFO(v.err);
  CHECK(v.exit_code == 2);
  CHECK(count(v.err, "\n") == 3);
  CHECK(v.err.find(broken + ":8:5: ") != std::string::npos);   // the unknown key
  CHECK(v.err.find(broken + ":9:") != std::string::npos);      // the expression
  CHECK(v.err.find(broken + ":10:15: severity must be error, warning or note") != std::string::npos);
}

TEST_CASE("rules validate lists every broken rule of a file at once, and explain finds user rules") {
  TempDir dir;
  const std::string broken = dir.path("team.yaml");
  write_file(broken, R"(schema_version: 1
extends: j6p
rules:
  - id: TEAM001
    name: short-id
    summary: "x"
    ops: [Conv]
    require: "true"
    severity: error
    message: "m"
    status: verified
    source: "s"
  - id: TEAM0002
    name: BadName
    summary: "x"
    ops: [Conv]
    require: "true"
    severity: error
    message: "m"
    status: verified
    source: "s"
  - id: TEAM0003
    name: unknown-op
    summary: "x"
    ops: [Convv]
    require: "true"
    severity: error
    message: "m"
    status: verified
    source: "s"
)");
  const CommandResult v = run_bpu_lint({"rules", "validate", broken});
  INFO(v.err);
  CHECK(v.exit_code == 2);
  CHECK(v.err.find(broken + ":4:9: rule id 'TEAM001' must be an uppercase letter, then uppercase letters or digits, "
                            "ending in four digits (e.g. BPU1101, TEAM0001)") != std::string::npos);
  CHECK(v.err.find(broken + ":14:11: rule name 'BadName' must be kebab-case") != std::string::npos);
  CHECK(v.err.find(broken + ":25:10: unknown op 'Convv'") != std::string::npos);
  CHECK(count(v.err, "\n") == 3);

  // The documented complete user rule file (docs/configuration-and-waivers.md) validates, and explain finds it.
  const std::string page = read_file(std::string(BPULINT_SOURCE_DIR) + "/docs/configuration-and-waivers.md");
  const std::smatch block = [&] {
    std::smatch m;
    REQUIRE(std::regex_search(page, m, std::regex("```yaml\n# team_rules.yaml\n([^`]*)```")));
    return m;
  }();
  const std::string team = dir.path("team_rules.yaml");
  write_file(team, block[1].str());
  const CommandResult ok = run_bpu_lint({"rules", "validate", team});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  const CommandResult by_rules = run_bpu_lint({"explain", "TEAM0001", "--rules", team});
  CHECK(by_rules.exit_code == 0);
  CHECK(by_rules.out.find("defined at: " + team + ":") != std::string::npos);
  write_file(dir.path("cfg.yaml"), "rules: [team_rules.yaml]\n");
  const CommandResult by_config = run_bpu_lint({"explain", "TEAM0001", "--config", dir.path("cfg.yaml")});
  CHECK(by_config.exit_code == 0);
  CHECK(by_config.out.find("defined at: " + team + ":") != std::string::npos);
  CHECK(run_bpu_lint({"explain", "TEAM0001"}).exit_code == 2);  // not found without them
}

TEST_CASE("folders: *.onnx in any case, a symlink that leads nowhere is reported, node paths have one slash") {
  TempDir dir;
  fs::copy_file(example_model(), dir.path("upper.ONNX"));
  fs::create_symlink(dir.path("gone.onnx"), dir.path("dangling.onnx"));
  const CommandResult r = run_bpu_lint({dir.dir(), "--isolated", "--format", "concise"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(dir.path("dangling.onnx") + ": error: a symlink that leads nowhere") != std::string::npos);
  CHECK(r.out.find("upper.ONNX:torch_jit/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose: error:") != std::string::npos);
  CHECK(r.out.find("//") == std::string::npos);
}

TEST_CASE("--hb-config: march and input shapes from a hb_mapper config with semicolon lists and an hb_compile config") {
  TempDir dir;
  // An RWKV-style block with two dynamic inputs, as hb_mapper configs for X3 list them.
  fs::create_directories(dir.path("models"));
  save_model(dir, "models/rwkv.onnx", model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[L] input, float[S,1024] state_in) => (float[S,1024] out) {
  out = Add (state_in, input)
}
)"));
  fs::create_directories(dir.path("config"));
  write_file(dir.path("config/rwkv_x3.yaml"), R"(# hb_mapper makertbin config (RDK X3)
model_parameters:
  onnx_model: '../models/rwkv.onnx'
  march: 'bernoulli2'
  working_dir: 'model_output'
  output_model_file_prefix: 'rwkv'
input_parameters:
  input_name: 'input; state_in'
  input_type_rt: 'featuremap; featuremap'
  input_layout_rt: 'NCHW; NCHW'
  input_type_train: 'featuremap; featuremap'
  input_layout_train: 'NCHW; NCHW'
  input_shape: '1024; 5x1024'
  norm_type: 'no_preprocess; no_preprocess'
calibration_parameters:
  cal_data_dir: './calibration_data/input; ./calibration_data/state'
  calibration_type: 'default'
compiler_parameters:
  compile_mode: 'latency'
  debug: False
  optimize_level: 'O3'
)");
  // The model comes from onnx_model, relative to the YAML's folder.
  const CommandResult r = run_bpu_lint({"--hb-config", dir.path("config/rwkv_x3.yaml"), "--isolated"});
  INFO(r.out << r.err);
  CHECK(r.out.find("rwkv_x3.yaml: Horizon compile config: march bernoulli2, input shapes input=1024; state_in=5x1024") !=
        std::string::npos);
  CHECK(r.out.find("[BPU9005]") == std::string::npos);  // both inputs pinned
  const json j = run_json({"--hb-config", dir.path("config/rwkv_x3.yaml"), "--isolated"});
  CHECK(j["models"][0]["platform"] == "bernoulli2");
  CHECK(j["hb_config"]["input_shapes"]["state_in"] == json::array({5, 1024}));

  // An hb_compile config for J6E; the model given on the command line wins over onnx_model.
  save_model(dir, "yolo.onnx", model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,3,64,64] images, float[8,3,3,3] W) => (float[N,8,62,62] y) {
  y = Conv (images, W)
}
)"));
  write_file(dir.path("config/yolo_j6e.yaml"), R"(model_parameters:
  onnx_model: '/home/someone/work/yolo11n.onnx'
  march: "nash-e"
  working_dir: 'model_output'
  output_model_file_prefix: 'yolo11n_detect_nashe_640x640_nv12'
input_parameters:
  input_name: 'images'
  input_type_rt: 'nv12'
  input_type_train: 'rgb'
  input_layout_train: 'NCHW'
  input_shape: '1x3x64x64'
  norm_type: 'data_scale'
  scale_value: 0.003921568627451
calibration_parameters:
  cal_data_dir: './calibration_data_rgb_f32_640'
  calibration_type: 'default'
  optimization: set_Softmax_input_int8,set_Softmax_output_int8
compiler_parameters:
  extra_params: {'input_no_padding': True, 'output_no_padding': True}
  jobs: 16
  compile_mode: 'latency'
  optimize_level: 'O2'
)");
  const json e = run_json({dir.path("yolo.onnx"), "--hb-config", dir.path("config/yolo_j6e.yaml"), "--isolated"});
  CHECK(e["models"][0]["platform"] == "j6e");
  CHECK(e["models"][0]["summary"]["errors"] == 0);
  CHECK(e["exit_code"] == 0);

  // A wrong march and a shape that contradicts the model are errors naming the file.
  write_file(dir.path("config/bad_march.yaml"), "model_parameters:\n  march: nash-q\n");
  const CommandResult march = run_bpu_lint({dir.path("yolo.onnx"), "--hb-config", dir.path("config/bad_march.yaml")});
  CHECK(march.exit_code == 2);
  CHECK(march.err.find("unknown platform or march 'nash-q' (from " + dir.path("config/bad_march.yaml") + ")") !=
        std::string::npos);
  write_file(dir.path("config/bad_shape.yaml"),
             "model_parameters:\n  march: nash-e\ninput_parameters:\n  input_name: images\n  input_shape: 1x4x64x64\n");
  const CommandResult shape = run_bpu_lint({dir.path("yolo.onnx"), "--hb-config", dir.path("config/bad_shape.yaml")});
  CHECK(shape.exit_code == 2);
  CHECK(shape.err.find("bad_shape.yaml input_shape images: dim 1 is 4 but the model fixes it to 3") != std::string::npos);
  write_file(dir.path("config/mismatch.yaml"), "input_parameters:\n  input_name: 'a; b'\n  input_shape: '1x3'\n");
  const CommandResult lists = run_bpu_lint({dir.path("yolo.onnx"), "--hb-config", dir.path("config/mismatch.yaml")});
  CHECK(lists.exit_code == 2);
  CHECK(lists.err.find("mismatch.yaml:3:16: input_name lists 2 inputs but input_shape 1 shapes") != std::string::npos);
}

TEST_CASE("--hb-config: nodes it puts on the CPU are a plan, not violations, and on the BPU they settle the default's warning") {
  // A real torch.onnx.export of a small ViT (tests/exports): on X5 its first attention MatMul breaks
  // BPU5201 and its Softmax is 3-D over the last axis (BPU3402).
  TempDir dir;
  const std::string model = exported("vit_mha_static");
  write_file(dir.path("x5.yaml"), R"(model_parameters:
  onnx_model: ')" + model + R"('
  march: 'bayes-e'
  run_on_cpu: '/blocks/blocks.0/attn/MatMul; /blocks/blocks.0/attn/Softmax'
  run_on_bpu: '/blocks/blocks.1/attn/Softmax'
  node_info: {"/blocks/blocks.1/attn/Softmax": {'ON': 'CPU', 'InputType': 'int8'}, "/blocks/blocks.9/Typo": {'ON': 'CPU'}}
)");
  const json before = run_json({model, "--platform", "bayes-e", "--isolated"});
  const json j = run_json({"--hb-config", dir.path("x5.yaml"), "--isolated", "--show-waived"});
  const json& m = j["models"][0];
  std::map<std::string, std::string> set_aside;  // node -> reason
  size_t planned_notes = 0;
  for (const auto& d : m["diagnostics"]) {
    if (d.contains("waiver")) set_aside[d["node"].get<std::string>() + " " + d["rule"].get<std::string>()] = d["waiver"];
    if (d["rule"] != "BPU0006") continue;
    ++planned_notes;
    const std::string text = d["message"];
    INFO(text);
    // node_info wins over run_on_bpu: three planned CPU nodes; the typo is named.
    CHECK(text.find("3 nodes on the CPU by the choice of " + dir.path("x5.yaml")) != std::string::npos);
    CHECK(text.find("names 1 node this model does not have: '/blocks/blocks.9/Typo'") != std::string::npos);
  }
  CHECK(planned_notes == 1);
  CHECK(set_aside.count("/blocks/blocks.0/attn/MatMul BPU5201") == 1);
  CHECK(set_aside.count("/blocks/blocks.0/attn/Softmax BPU3402") == 1);
  CHECK(set_aside.count("/blocks/blocks.1/attn/Softmax BPU3402") == 1);
  CHECK(set_aside["/blocks/blocks.0/attn/MatMul BPU5201"].find("run_on_cpu") != std::string::npos);
  CHECK(set_aside["/blocks/blocks.1/attn/Softmax BPU3402"].find("node_info") != std::string::npos);
  // The planned nodes count as CPU nodes, and no longer as errors.
  CHECK(m["summary"]["errors"].get<int>() == before["models"][0]["summary"]["errors"].get<int>() - 3);
  CHECK(m["summary"]["cpu_nodes"].get<int>() >= 3);
  // A broken node_info is a one-line error naming the file.
  write_file(dir.path("bad.yaml"), "model_parameters:\n  march: bayes-e\n  node_info: '{\"a\": [1, 2'\n");
  const CommandResult bad = run_bpu_lint({model, "--hb-config", dir.path("bad.yaml")});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.rfind("bpu-lint: error: " + dir.path("bad.yaml") + ":3:", 0) == 0);
  CHECK(count(bad.err, "\n") == 1);
}
