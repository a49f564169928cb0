// The fix-it engine: plans (applicability, costs, ranking) and applying
// (proof, splicing, weights, writing), on models built with the protobuf API.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "bpulint/fix/fix_apply.h"
#include "bpulint/fix/fix_proof.h"
#include "bpulint/fix/fixes.h"
#include "ct3d_model.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

struct Layer {
  int64_t c_in = 8, c_out = 4, group = 1;
  std::vector<int64_t> kernel = {2, 2, 2}, strides = {2, 2, 2}, pads = {0, 0, 0, 0, 0, 0};
  std::vector<int64_t> output_padding = {0, 0, 0}, dilations = {1, 1, 1};
  bool bias = true;
  std::string name = "ct";
  std::vector<int64_t> spatial = {2, 3, 3};  // input D, H, W
};

// X [batch, c_in, 2, 3, 3] -> ConvTranspose -> Y (+ Relu so the graph has more than one node).
onnx::ModelProto layer_model(const Layer& l, const std::string& batch = "1") {
  models::Ct3dModel s;
  s.batch = batch;
  s.c_in = l.c_in;
  s.c_out = l.c_out;
  s.group = l.group;
  s.spatial = l.spatial;
  s.kernel = l.kernel;
  s.name = l.name;
  s.write_kernel_shape = false;  // taken from the weight
  s.strides = l.strides;
  s.pads = l.pads;
  s.output_padding = l.output_padding;
  s.dilations = l.dilations;
  s.write_group = true;
  s.bias = l.bias;
  s.relu = "relu";
  unsigned seed = 0;
  return models::ct3d_model(s, [&](const std::string& name, const std::vector<int64_t>& dims) {
    return random_float_tensor(name, dims, ++seed);
  });
}

ModelReport lint_proto(const TempDir& dir, const onnx::ModelProto& m, const std::string& name = "m.onnx") {
  ModelReport r = lint_model(save_model(dir, name, m), platform("j6p"), {});
  INFO(r.error);
  REQUIRE(r.ok);
  return r;
}

// The id as a pointer: a temporary string argument would make GCC 14's
// -Wdangling-reference suspect the returned reference.
const FixOption& option(const NodeFixPlan& plan, const char* id) {
  for (const auto& o : plan.options) {
    if (o.id == id) return o;
  }
  FAIL("no option " << id);
  return plan.options.front();
}

}  // namespace

TEST_CASE("case-study layers: every fix applies, convtranspose2d recommended, d-taps last, channel costs") {
  struct Case {
    int64_t c_in, c_out, kd, ch_2d, ch_1x1x1;
  };
  for (const Case& c : {Case{128, 64, 5, 320, 1280}, Case{64, 48, 2, 96, 384}, Case{48, 32, 2, 64, 256}}) {
    Layer l;
    l.c_in = c.c_in;
    l.c_out = c.c_out;
    l.kernel = {c.kd, 2, 2};
    l.strides = {c.kd, 2, 2};
    TempDir dir;
    const ModelReport r = lint_proto(dir, layer_model(l));
    REQUIRE(r.fix_plans.size() == 1);
    const NodeFixPlan& plan = r.fix_plans[0];
    REQUIRE(plan.options.size() == 3);
    CHECK(plan.options[0].id == "convtranspose2d");
    CHECK(plan.options[0].recommended);
    CHECK_FALSE(plan.options[1].recommended);
    // The D-tap rewrite applies too (it takes any D) but is the fallback: last,
    // below conv3d-1x1x1 although its intermediate channels are fewer.
    CHECK(plan.options[2].id == "convtranspose2d-d-taps");
    CHECK(plan.options[2].applicable);
    CHECK_FALSE(plan.options[2].recommended);
    CHECK(option(plan, "convtranspose2d").cost.intermediate_channels == c.ch_2d);
    CHECK(option(plan, "conv3d-1x1x1").cost.intermediate_channels == c.ch_1x1x1);
    CHECK(option(plan, "convtranspose2d-d-taps").cost.intermediate_channels == c.ch_2d);
    CHECK(option(plan, "convtranspose2d").new_violations.empty());
    CHECK(option(plan, "convtranspose2d-d-taps").new_violations.empty());
    // Same work, different layout: MACs and intermediate elements agree.
    CHECK(option(plan, "convtranspose2d").cost.macs == option(plan, "conv3d-1x1x1").cost.macs);
    CHECK(option(plan, "convtranspose2d").cost.intermediate_bytes ==
          4 * option(plan, "convtranspose2d").cost.intermediate_elements);
    // The D taps of a non-overlapping layer: the same 2-D ConvTranspose, then a
    // MatMul of D*KD x Do = (2*KD)^2 per output column, one more Transpose of the output.
    const FixCost& taps = option(plan, "convtranspose2d-d-taps").cost;
    const FixCost& ct2d = option(plan, "convtranspose2d").cost;
    const int64_t output = c.c_out * 2 * c.kd * 3 * 2 * 3 * 2;  // [1, Co, 2*KD, 6, 6]
    CHECK(taps.intermediate_elements == ct2d.intermediate_elements);
    CHECK(taps.macs == ct2d.macs + output * 2 * c.kd);
    CHECK(taps.moved_elements == ct2d.moved_elements + output);
    CHECK(taps.new_nodes == 9);  // 8, and the bias Add
  }
}

TEST_CASE("applicability: overlap on D leaves only d-taps, overlap on H/W rules out conv3d-1x1x1") {
  TempDir dir;
  Layer overlapping;
  overlapping.kernel = {3, 3, 3};
  const ModelReport r = lint_proto(dir, layer_model(overlapping));
  REQUIRE(r.fix_plans.size() == 1);
  for (const auto& o : r.fix_plans[0].options) {
    if (o.id == "convtranspose2d-d-taps") continue;
    CHECK_FALSE(o.applicable);
    CHECK(o.why_not.find("D axis overlaps (kernel 3 != stride 2)") != std::string::npos);
  }
  REQUIRE(r.fix_plans[0].recommended() != nullptr);
  CHECK(r.fix_plans[0].recommended()->id == "convtranspose2d-d-taps");
  CHECK(r.fix_plans[0].options[0].id == "convtranspose2d-d-taps");
  CHECK(r.fix_plans[0].options[0].new_violations.empty());

  // A dilation along D: no fix applies, each says why.
  Layer dilated;
  dilated.dilations = {2, 1, 1};
  const ModelReport dd = lint_proto(dir, layer_model(dilated), "dd.onnx");
  REQUIRE(dd.fix_plans.size() == 1);
  CHECK(dd.fix_plans[0].recommended() == nullptr);
  CHECK(option(dd.fix_plans[0], "convtranspose2d-d-taps").why_not ==
        "D dilation 2; the D-tap rewrite needs D dilation 1");
  CHECK(option(dd.fix_plans[0], "convtranspose2d").why_not.find("D axis overlaps (dilation 2)") != std::string::npos);

  Layer hw;
  hw.kernel = {2, 3, 3};
  hw.pads = {0, 1, 1, 0, 1, 1};
  hw.output_padding = {0, 1, 1};
  const ModelReport h = lint_proto(dir, layer_model(hw), "hw.onnx");
  REQUIRE(h.fix_plans.size() == 1);
  CHECK(option(h.fix_plans[0], "convtranspose2d").applicable);
  CHECK_FALSE(option(h.fix_plans[0], "conv3d-1x1x1").applicable);
  CHECK(option(h.fix_plans[0], "conv3d-1x1x1").why_not.find("H axis overlaps") != std::string::npos);
}

TEST_CASE("applying: exact, written atomically beside the input, input untouched, re-lint clean") {
  for (const std::string strategy : {"auto", "convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps"}) {
    for (bool bias : {true, false}) {
      for (int64_t group : {1, 2}) {
        Layer l;
        l.bias = bias;
        l.group = group;
        TempDir dir;
        const std::string path = save_model(dir, "layer.onnx", layer_model(l, "N"));
        const std::string before = read_file(path);
        const ModelReport r = lint_model(path, platform("j6p"), {});
        REQUIRE(r.ok);
        const std::string out = dir.path("layer.fixed.onnx");
        const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, strategy, out);
        INFO(strategy << " bias=" << bias << " group=" << group << " " << run.error);
        REQUIRE(run.written);
        REQUIRE(run.results.size() == 1);
        CHECK(run.results[0].applied);
        CHECK(run.results[0].max_abs_error <= 1e-5);
        // Proven on two small inputs with a batch of 2; the real one (dynamic batch) checked by shape.
        REQUIRE(run.results[0].proof_input_shapes.size() == 2);
        for (const auto& shape : run.results[0].proof_input_shapes) CHECK(shape[0] == 2);
        CHECK(run.results[0].input_shape == std::vector<int64_t>{-1, 8, 2, 3, 3});
        CHECK(read_file(path) == before);
        const ModelReport fixed = lint_model(out, platform("j6p"), {});
        REQUIRE(fixed.ok);
        // The ConvTranspose errors are gone (a dynamic batch still gets its model-level finding).
        for (const auto& d : fixed.diagnostics) CHECK_FALSE((d.outcome == Outcome::Fail && d.rule->id.rfind("BPU11", 0) == 0));
        CHECK(fixed.summary.cpu == 0);
        // Old weights are gone (no dead initializers); the graph keeps its names.
        for (const auto& t : fixed.loaded->model->graph().initializer()) CHECK(t.name() != "W");
        CHECK(fixed.loaded->model->graph().input(0).name() == "X");
        CHECK(fixed.loaded->model->graph().output(0).name() == "Z");
        size_t files = 0;
        for (const auto& e : std::filesystem::directory_iterator(dir.dir())) files += e.is_regular_file() ? 1 : 0;
        CHECK(files == 2);  // no temp file left behind
      }
    }
  }
}

TEST_CASE("conv3d-1x1x1 lays out each new weight as it is written: embedded and external data hold the transposed kernel") {
  TempDir dir;
  models::Ct3dModel s;
  s.c_in = 16;
  s.c_out = 12;
  s.strides = {2, 2, 2};
  s.bias = true;
  std::mt19937 rng(11);
  const onnx::ModelProto model = models::ct3d_model(s, [&rng](const std::string& name, const std::vector<int64_t>& dims) {
    return float_tensor(name, dims, random_floats(element_count(dims), rng), /*raw=*/true);
  });
  const onnx::TensorProto& w = model.graph().initializer(0);
  REQUIRE(w.raw_data().size() > 4096);  // left on disk by the loader, read back by the layout
  const std::string path = save_model(dir, "layer.onnx", model);
  const ModelReport r = lint_model(path, platform("j6p"), {});
  REQUIRE(r.ok);
  // [Ci, Co, K] -> [Co * K, Ci]: laid out here independently of the rewrite.
  const int64_t ci_n = s.c_in, co_n = s.c_out, k_n = 8;
  std::string expected(w.raw_data().size(), '\0');
  for (int64_t ci = 0; ci < ci_n; ++ci) {
    for (int64_t co = 0; co < co_n; ++co) {
      for (int64_t k = 0; k < k_n; ++k) {
        expected.replace(static_cast<size_t>(((co * k_n + k) * ci_n + ci) * 4), 4, w.raw_data(),
                         static_cast<size_t>(((ci * co_n + co) * k_n + k) * 4), 4);
      }
    }
  }
  for (const bool external : {false, true}) {
    INFO((external ? "external data" : "embedded"));
    const std::string out = dir.path(external ? "external.onnx" : "embedded.onnx");
    const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "conv3d-1x1x1", out, external);
    INFO(run.error);
    REQUIRE(run.written);
    REQUIRE(run.results.size() == 1);
    CHECK(run.results[0].applied);
    LoadedModel fixed;
    std::string error;
    REQUIRE(load_model(out, fixed, error));
    int found = 0;
    for (const auto& t : fixed.model->graph().initializer()) {
      if (t.dims_size() != 5 || t.dims(0) != co_n * k_n) continue;
      ++found;
      std::string bytes;
      REQUIRE(read_tensor_bytes(fixed, t, bytes, error));
      CHECK(bytes == expected);
    }
    CHECK(found == 1);
    const ModelReport again = lint_model(out, platform("j6p"), {});
    REQUIRE(again.ok);
    CHECK(again.summary.cpu == 0);
  }
}

TEST_CASE("conv3d-1x1x1 on real exports: each written kernel is its layer's weight transposed, embedded or external") {
  // The float decoder and the QAT layer (an int8 constant under its DequantizeLinear).
  for (const std::string name : {"occupancy_static", "qat_upsample_static"}) {
    CAPTURE(name);
    const std::string input = std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + name + ".onnx";
    LoadedModel source;
    std::string error;
    REQUIRE(load_model(input, source, error));
    TempDir dir;
    std::map<std::string, std::string> written[2];  // initializer name -> bytes, embedded then external
    for (const bool external : {false, true}) {
      const std::string out = dir.path(external ? "external.onnx" : "embedded.onnx");
      std::vector<std::string> args = {input, "--fix", "--fix-strategy", "conv3d-1x1x1", "--fixed-model", out};
      if (external) args.push_back("--external-data");
      const CommandResult r = run_bpu_lint(args);
      INFO(r.out << r.err);
      REQUIRE(std::filesystem::exists(out));
      LoadedModel fixed;
      REQUIRE(load_model(out, fixed, error));
      for (const auto& t : fixed.model->graph().initializer()) {
        REQUIRE(read_tensor_bytes(fixed, t, written[external][t.name()], error));
      }
    }
    CHECK(written[0] == written[1]);
    int kernels = 0;
    for (const auto& old : source.model->graph().initializer()) {
      const auto it = written[0].find(old.name() + "_fix_conv3d-1x1x1");
      if (it == written[0].end() || old.dims_size() != 5) continue;  // the biases are repeated, not transposed
      ++kernels;
      std::string bytes;
      REQUIRE(read_tensor_bytes(source, old, bytes, error));
      const int64_t ci_n = old.dims(0), co_n = old.dims(1), k_n = old.dims(2) * old.dims(3) * old.dims(4);
      const size_t width = bytes.size() / static_cast<size_t>(ci_n * co_n * k_n);
      std::string expected(bytes.size(), '\0');
      for (int64_t ci = 0; ci < ci_n; ++ci) {
        for (int64_t co = 0; co < co_n; ++co) {
          for (int64_t k = 0; k < k_n; ++k) {
            expected.replace(static_cast<size_t>((co * k_n + k) * ci_n + ci) * width, width, bytes,
                             static_cast<size_t>((ci * co_n + co) * k_n + k) * width, width);
          }
        }
      }
      CHECK(it->second == expected);
    }
    CHECK(kernels == (name == "occupancy_static" ? 2 : 1));
  }
}

TEST_CASE("a forced strategy that does not apply leaves the node and says why") {
  Layer hw;
  hw.kernel = {2, 3, 3};
  hw.pads = {0, 1, 1, 0, 1, 1};
  TempDir dir;
  const ModelReport r = lint_proto(dir, layer_model(hw));
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "conv3d-1x1x1", dir.path("out.onnx"));
  CHECK_FALSE(run.written);
  REQUIRE(run.results.size() == 1);
  CHECK_FALSE(run.results[0].applied);
  CHECK(run.results[0].reason.find("conv3d-1x1x1 does not apply: H axis overlaps") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path("out.onnx")));
}

TEST_CASE("shared weights stay while another node reads them, and names never collide") {
  Layer l;
  onnx::ModelProto m = layer_model(l);
  auto* g = m.mutable_graph();
  // Another reader of W, and values already named like the rewrite's first choices.
  auto* reduce = g->add_node();
  reduce->set_op_type("ReduceSum");
  reduce->set_name("ct_fix_transpose_in");
  reduce->add_input("W");
  reduce->add_output("ct_fix_transpose_in_out");
  g->add_output()->set_name("ct_fix_transpose_in_out");
  g->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  g->mutable_output(1)->mutable_type()->mutable_tensor_type()->mutable_shape();  // ReduceSum keepdims=1 of W: rank 5
  for (int64_t d : {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1}}) {
    g->mutable_output(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  }
  TempDir dir;
  const ModelReport r = lint_proto(dir, m);
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("out.onnx"));
  INFO(run.error);
  REQUIRE(run.written);
  const ModelReport fixed = lint_model(dir.path("out.onnx"), platform("j6p"), {});
  REQUIRE(fixed.ok);
  bool has_w = false;
  std::set<std::string> node_names;
  for (const auto& t : fixed.loaded->model->graph().initializer()) has_w = has_w || t.name() == "W";
  for (const auto& n : fixed.loaded->model->graph().node()) CHECK(node_names.insert(n.name()).second);
  CHECK(has_w);
  CHECK(node_names.count("ct_fix_transpose_in_2") == 1);
}

TEST_CASE("--fix on the example: all three layers, both strategies, and the input is never overwritten") {
  const std::string example = std::string(BPULINT_SOURCE_DIR) + "/examples/case_study.onnx";
  TempDir dir;
  for (const char* strategy : {"convtranspose2d", "conv3d-1x1x1"}) {
    const std::string out = dir.path(std::string(strategy) + ".onnx");
    const CommandResult r = run_bpu_lint({example, "--fix", "--fix-strategy", strategy, "--fixed-model", out});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("fixed 3 of 3 nodes; wrote " + out) != std::string::npos);
    CHECK(r.out.find("max abs error 0") != std::string::npos);
    CHECK(r.out.find(out + ": ") != std::string::npos);
    CHECK(r.out.find("0 on CPU, 6 folded; 0 CPU islands") != std::string::npos);
  }
  const std::string before = read_file(example);
  const CommandResult same = run_bpu_lint({example, "--fix", "--fixed-model", example});
  CHECK(same.exit_code == 2);
  CHECK(same.err.find("refusing to overwrite the input model") != std::string::npos);
  CHECK(read_file(example) == before);
  CHECK(run_bpu_lint({example, "--fixed-model", dir.path("x.onnx")}).exit_code == 2);  // needs --fix
}

TEST_CASE("--pytorch-snippet: the example's replacements match in PyTorch and re-export clean") {
  const std::string example = std::string(BPULINT_SOURCE_DIR) + "/examples/case_study.onnx";
  TempDir dir;
  const CommandResult r = run_bpu_lint({example, "--pytorch-snippet", dir.path("fix.py")});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);  // the findings are still there: the snippet fixes the source, not this file
  CHECK(r.out.find("wrote PyTorch replacements for 3 layers") != std::string::npos);
  const std::string cmd = "/usr/bin/python3 " + std::string(BPULINT_SOURCE_DIR) +
                          "/tests/pytorch/check_example_snippet.py " + dir.path("fix.py") + " " +
                          dir.path("reexported.onnx") + " > " + dir.path("py.log") + " 2>&1";
  const int status = std::system(cmd.c_str());
  INFO(read_file(dir.path("py.log")));
  REQUIRE(status == 0);
  const CommandResult again = run_bpu_lint({dir.path("reexported.onnx")});
  INFO(again.out << again.err);
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("0 errors") != std::string::npos);
}

TEST_CASE("--external-data writes the fixed weights beside the model, and ONNX reads them back") {
  const std::string example = std::string(BPULINT_SOURCE_DIR) + "/examples/case_study.onnx";
  TempDir dir;
  const std::string out = dir.path("fixed.onnx");
  const CommandResult r = run_bpu_lint({example, "--fix", "--external-data", "--fixed-model", out});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("(weights in " + out + ".data)") != std::string::npos);
  CHECK(std::filesystem::file_size(out) < 20000);           // structure only
  CHECK(std::filesystem::file_size(out + ".data") > 700000);  // the weights
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.dir())) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 2);
  const std::string check = "/usr/bin/python3 -c \"import onnx; m = onnx.load('" + out +
                            "'); onnx.checker.check_model(m, full_check=True)\" 2>" + dir.path("py.err");
  CHECK(std::system(check.c_str()) == 0);
  // Lint and fix again from the external-data model: weights are read through the reference.
  const CommandResult again = run_bpu_lint({out, "--fix", "--fix-strategy", "conv3d-1x1x1", "--fixed-model", dir.path("again.onnx")});
  CHECK(again.out.find("nothing to fix") != std::string::npos);
}

// --- The proof (fix_proof.h): small inputs, the same construction, shapes at the real size ---

namespace {

int64_t ct_out_length(const ConvTransposeParams& p, size_t a, int64_t n) {
  return p.strides[a] * (n - 1) + p.output_padding[a] + (p.kernel[a] - 1) * p.dilations[a] + 1 - p.pads[a] - p.pads[a + 3];
}

// Brute force: does every kernel tap along axis a write some output for an input n long?
bool all_taps_land(const ConvTransposeParams& p, size_t a, int64_t n) {
  const int64_t out = ct_out_length(p, a, n);
  for (int64_t k = 0; k < p.kernel[a]; ++k) {
    bool lands = false;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t o = i * p.strides[a] + k * p.dilations[a] - p.pads[a];
      lands = lands || (o >= 0 && o < out);
    }
    if (!lands) return false;
  }
  return out >= 1;
}

ConvTransposeParams params_of(const Layer& l) {
  ConvTransposeParams p;
  p.c_in = l.c_in;
  p.c_out = l.c_out;
  p.group = l.group;
  p.kernel = l.kernel;
  p.strides = l.strides;
  p.pads = l.pads;
  p.output_padding = l.output_padding;
  p.dilations = l.dilations;
  p.has_bias = l.bias;
  p.input_shape = {1, l.c_in, l.spatial[0], l.spatial[1], l.spatial[2]};
  return p;
}

// A linted one-layer model and the rewrite apply_fixes would build for it.
struct Proving {
  std::string fix;
  TempDir dir;
  ModelReport report;
  const NodeFacts* node = nullptr;
  RewriteInputs in;
  TensorBytesReader reader;

  Proving(const Layer& l, const std::string& fix_id) : fix(fix_id) {
    report = lint_model(save_model(dir, "m.onnx", layer_model(l)), platform("j6p"), {});
    REQUIRE(report.ok);
    REQUIRE(report.fix_plans.size() == 1);
    const NodeFixPlan& plan = report.fix_plans[0];
    node = &report.facts.nodes[static_cast<size_t>(plan.node)];
    in.node = node->proto;
    in.label = node->display_name;
    in.params = plan.params;
    for (const auto& t : report.loaded->model->graph().initializer()) {
      if (t.name() == "W") in.weight = &t;
      if (t.name() == "B") in.bias = &t;
    }
    reader = [this](const onnx::TensorProto& t, std::string& bytes, std::string& e) {
      return read_tensor_bytes(*report.loaded, t, bytes, e);
    };
    NameAllocator names = NameAllocator::for_model(*report.loaded->model);
    std::string error;
    REQUIRE(build_rewrite(fix, in, names, &reader, rewrite, error));
  }
  bool prove(const Rewrite& r, std::string& error, ProofRecord* out = nullptr) const {
    ProofRecord record;
    const bool ok = prove_rewrite(fix, in, r, reader, *node, 11, record, error);
    if (out != nullptr) *out = record;
    return ok;
  }
  Rewrite rewrite;
};

onnx::TensorProto& initializer_of(Rewrite& r, const std::string& name) {
  for (auto& t : r.initializers) {
    if (t.name() == name) return t;
  }
  FAIL("no initializer " << name);
  return r.initializers.front();
}

void set_int64s(onnx::TensorProto& t, const std::vector<int64_t>& v) {
  std::string raw(v.size() * 8, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t b = 0; b < 8; ++b) raw[i * 8 + b] = static_cast<char>((static_cast<uint64_t>(v[i]) >> (8 * b)) & 0xff);
  }
  t.set_raw_data(raw);
}

}  // namespace

TEST_CASE("proof inputs: every tap lands, the layout input is >= 2, spans the overlap, its targets distinct") {
  std::vector<Layer> layers(5);
  layers[1].kernel = {2, 4, 4};  // H/W overlap: stride 2, pads 1
  layers[1].pads = {0, 1, 1, 0, 1, 1};
  layers[2].kernel = {3, 3, 5};
  layers[2].strides = {3, 1, 2};
  layers[2].pads = {0, 2, 3, 0, 0, 1};
  layers[2].output_padding = {0, 0, 1};
  layers[2].dilations = {1, 2, 3};
  layers[3].kernel = {5, 1, 1};  // the case study's first layer
  layers[3].strides = {5, 1, 1};
  layers[3].c_in = 3;
  layers[4].kernel = {2, 7, 2};
  layers[4].strides = {2, 1, 2};
  layers[4].pads = {0, 6, 0, 0, 6, 0};  // pads as large as the kernel: only interior inputs reach every tap
  layers[4].spatial = {40, 400, 400};
  for (const std::string fix : {"convtranspose2d", "conv3d-1x1x1"}) {
    for (const Layer& l : layers) {
      const ConvTransposeParams p = params_of(l);
      std::string why;
      if (!fix_applies(fix, p, why)) continue;
      ProofInputs in;
      INFO(fix << " kernel " << l.kernel[0] << "x" << l.kernel[1] << "x" << l.kernel[2]);
      INFO(why);
      REQUIRE(proof_inputs(fix, p, in, why));
      CHECK(in.weights[0] == 2);
      CHECK(in.layout[0] == 2);
      CHECK(in.weights[1] == l.c_in);
      int64_t out[3];
      for (size_t a = 0; a < 3; ++a) {
        const int64_t n = in.weights[a + 2], m = in.layout[a + 2];
        CHECK(all_taps_land(p, a, n));
        if (n > 1) CHECK_FALSE(all_taps_land(p, a, n - 1));  // just large enough
        const int64_t extent = (l.kernel[a] - 1) * l.dilations[a] + 1;
        CHECK(m >= std::max<int64_t>(2, n + (extent + l.strides[a] - 1) / l.strides[a]));
        CHECK(m <= 16);
        out[a] = ct_out_length(p, a, m);
      }
      // The spatial dims at the layout input (D, H, W and the output's) have
      // pairwise different values, none equal to a fixed entry (channels,
      // kernel) of a Reshape target it appears in (README, "Fixing").
      const int64_t d = in.layout[2], h = in.layout[3], w = in.layout[4];
      std::set<int64_t> values = {d, h, w};
      for (size_t a = 0; a < 3; ++a) {
        if (out[a] != in.layout[a + 2]) values.insert(out[a]);  // else an axis whose output length is its input's
        else CHECK((l.strides[a] == 1 && ct_out_length(p, a, 1) == 1));
      }
      CHECK(values.size() == 3 + static_cast<size_t>((out[0] != d) + (out[1] != h) + (out[2] != w)));
      // (spatial entries, fixed entries) of each target
      const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> targets =
          fix == "convtranspose2d"
              ? std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
                    {{h, w}, {l.c_in}}, {{d, out[1], out[2]}, {l.c_out, l.kernel[0]}}, {{out[0], out[1], out[2]}, {l.c_out}}}
              : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
                    {{d, h, w}, {l.c_out, l.kernel[0], l.kernel[1], l.kernel[2]}}, {{out[0], out[1], out[2]}, {l.c_out}}};
      for (const auto& [spatial, fixed] : targets) {
        for (int64_t v : spatial) CHECK(std::find(fixed.begin(), fixed.end(), v) == fixed.end());
      }
    }
  }
  Layer absurd;
  absurd.kernel = {2, 3, 3};
  absurd.pads = {0, 500, 0, 0, 500, 0};
  absurd.spatial = {2, 2000, 3};
  ProofInputs in;
  std::string why;
  CHECK_FALSE(proof_inputs("convtranspose2d", params_of(absurd), in, why));
  CHECK(why.find("along H would need more than 64 positions") != std::string::npos);
}

TEST_CASE("the proof passes exact rewrites and refuses a real rewrite that is not the proven construction") {
  for (const std::string fix : {"convtranspose2d", "conv3d-1x1x1"}) {
    Layer l;
    l.c_in = 6;
    l.group = 2;
    l.spatial = {2, 5, 7};  // H != W, so a swapped pair of targets shows
    if (fix == "convtranspose2d") {
      l.kernel = {2, 3, 3};
      l.pads = {0, 1, 1, 0, 1, 1};
    }
    Proving proving(l, fix);
    INFO(fix);
    std::string error;
    ProofRecord record;
    REQUIRE(proving.prove(proving.rewrite, error, &record));
    CHECK(record.max_abs_error <= 1e-6);
    REQUIRE(record.input_shapes.size() == 2);
    CHECK(record.input_shapes[0][0] == 2);
    CHECK_FALSE(record.sparse_layout);

    // The last Reshape's target with H and W swapped: the same element count, another layout.
    Rewrite swapped = proving.rewrite;
    onnx::TensorProto& target = initializer_of(swapped, swapped.nodes.back().input(1));
    std::vector<int64_t> dims = {-1, 4, 4, fix == "convtranspose2d" ? 7 : 14, fix == "convtranspose2d" ? 5 : 10};
    set_int64s(target, dims);
    CHECK_FALSE(proving.prove(swapped, error));
    CHECK(error.find("Reshape targets do not match the layout") != std::string::npos);

    // A weight value changed: no longer the construction that was proven.
    Rewrite reweighted = proving.rewrite;
    onnx::TensorProto& bias = initializer_of(reweighted, reweighted.nodes[fix == "convtranspose2d" ? 2 : 0].input(2));
    std::string raw = bias.raw_data();
    raw[1] = static_cast<char>(raw[1] ^ 0x40);
    bias.set_raw_data(raw);
    CHECK_FALSE(proving.prove(reweighted, error));
    CHECK(error.find("differs from the proven one") != std::string::npos);

    // An attribute changed.
    Rewrite regrouped = proving.rewrite;
    for (auto& n : regrouped.nodes) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.name() == "group") a.set_i(1);
      }
    }
    CHECK_FALSE(proving.prove(regrouped, error));
    CHECK(error.find("differs from the proven one") != std::string::npos);
  }
}

TEST_CASE("the proof checks the real rewrite against the node's own output shape") {
  Layer l;
  Proving proving(l, "convtranspose2d");
  // The node's facts claim another output shape (as a model whose inference disagrees would).
  NodeFacts node = *proving.node;
  std::vector<TensorFacts> outputs(node.outputs.begin(), node.outputs.end());
  onnx::TypeProto other = *outputs[0].type;
  other.mutable_tensor_type()->mutable_shape()->mutable_dim(4)->set_dim_value(7);
  outputs[0].type = &other;
  node.outputs = TensorList(outputs.data(), outputs.size());
  ProofRecord record;
  std::string error;
  CHECK_FALSE(prove_rewrite("convtranspose2d", proving.in, proving.rewrite, proving.reader, node, 1, record, error));
  CHECK(error.find("Reshape targets do not match the layout of input 1x8x2x3x3 and output 1x4x4x6x7") !=
        std::string::npos);
}

TEST_CASE("layers of one shape share their layout proof, other shapes do not") {
  Layer a, b, other;
  b.name = "other_name";  // other names and weights, same shape
  other.kernel = {2, 3, 3};
  other.pads = {0, 1, 1, 0, 1, 1};
  Proving pa(a, "convtranspose2d"), pb(b, "convtranspose2d"), po(other, "convtranspose2d");
  LayoutProofs layouts;
  CHECK(&layouts.get("convtranspose2d", pa.in) == &layouts.get("convtranspose2d", pb.in));
  CHECK(&layouts.get("convtranspose2d", pa.in) != &layouts.get("convtranspose2d", po.in));
  CHECK(&layouts.get("convtranspose2d", pa.in) != &layouts.get("conv3d-1x1x1", pa.in));
  // Proven through the shared layout proof: the real weights still decide.
  for (Proving* p : {&pa, &pb}) {
    ProofRecord record;
    std::string error;
    CHECK(prove_rewrite(p->fix, p->in, p->rewrite, p->reader, *p->node, 5, record, error, &layouts));
    CHECK(record.input_shapes.size() == 2);
  }
  Rewrite reweighted = pb.rewrite;
  onnx::TensorProto& bias = initializer_of(reweighted, reweighted.nodes[2].input(2));
  std::string raw = bias.raw_data();
  raw[0] = static_cast<char>(raw[0] ^ 1);
  bias.set_raw_data(raw);
  ProofRecord record;
  std::string error;
  CHECK_FALSE(prove_rewrite(pb.fix, pb.in, reweighted, pb.reader, *pb.node, 5, record, error, &layouts));
  CHECK(error.find("differs from the proven one") != std::string::npos);
}

TEST_CASE("a wide layer's layout input carries one random channel per position") {
  Layer l;
  l.c_in = 256;
  l.c_out = 256;
  Proving proving(l, "convtranspose2d");
  std::string error;
  ProofRecord record;
  REQUIRE(proving.prove(proving.rewrite, error, &record));
  CHECK(record.sparse_layout);
  CHECK(record.max_abs_error == 0);
  CHECK(record.input_shapes[0] == std::vector<int64_t>{2, 256, 1, 1, 1});
}

TEST_CASE("a layer far above the old 4 G-MAC proof limit is fixed: the proof is small, the shapes real") {
  Layer l;
  l.c_in = 16;
  l.c_out = 8;
  l.spatial = {64, 512, 512};  // 16 x 64x512x512 inputs x 8 outputs x 8 taps = 17.2 G MACs
  TempDir dir;
  const ModelReport r = lint_proto(dir, layer_model(l));
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("big.fixed.onnx"));
  INFO(run.error);
  REQUIRE(run.written);
  REQUIRE(run.results.size() == 1);
  INFO(run.results[0].reason);
  CHECK(run.results[0].applied);
  CHECK(run.results[0].max_abs_error == 0);
  CHECK(run.results[0].input_shape == std::vector<int64_t>{1, 16, 64, 512, 512});
  for (const auto& shape : run.results[0].proof_input_shapes) {
    CHECK(shape.size() == 5);
    CHECK(shape[0] * shape[2] * shape[3] * shape[4] <= 2 * 8 * 8 * 8);
  }
  const ModelReport fixed = lint_model(dir.path("big.fixed.onnx"), platform("j6p"), {});
  REQUIRE(fixed.ok);
  CHECK(fixed.summary.cpu == 0);
}

// --- Honest labels: what --fix will not do, and every verdict on the replacement ---

TEST_CASE("a fix lists the warnings its replacement gets, ranks by them, and warnings do not block it") {
  // kernel (2,1,1): the 2-D ConvTranspose of convtranspose2d has a 1x1 kernel and strides,
  // which break the Bayes hints BPU1601 and BPU1602. On j6p they are derived, so notes;
  // a platform copy where they are warnings stands for a chip where they are known.
  Platform strict = platform("j6p");
  for (auto& rule : strict.rules) {
    if (rule.id.rfind("BPU160", 0) == 0) rule.severity = Severity::Warning;
  }
  const auto lint_strict = [&strict](const TempDir& d, const onnx::ModelProto& m, const std::string& name) {
    ModelReport r = lint_model(save_model(d, name, m), strict, {});
    INFO(r.error);
    REQUIRE(r.ok);
    return r;
  };
  Layer l;
  l.kernel = {2, 1, 1};
  l.strides = {2, 1, 1};
  TempDir dir;
  const ModelReport r = lint_strict(dir, layer_model(l), "m.onnx");
  REQUIRE(r.fix_plans.size() == 1);
  const FixOption& ct2d = option(r.fix_plans[0], "convtranspose2d");
  CHECK(ct2d.new_errors == 0);
  REQUIRE(ct2d.new_violations.size() == 2);
  CHECK(ct2d.new_violations[0].rfind("BPU1601 (warning) on ConvTranspose 'ct_fix_convtranspose2d'", 0) == 0);
  CHECK(ct2d.new_violations[1].rfind("BPU1602 (warning) on ConvTranspose", 0) == 0);
  CHECK(option(r.fix_plans[0], "conv3d-1x1x1").new_violations.empty());
  CHECK(r.fix_plans[0].options[0].id == "conv3d-1x1x1");  // no warnings ranks first
  CHECK(r.fix_plans[0].options[0].recommended);

  // With conv3d-1x1x1 ruled out (a dilation on H), the one with warnings is still recommended.
  l.dilations = {1, 2, 1};
  const ModelReport only = lint_strict(dir, layer_model(l), "dilated.onnx");
  REQUIRE(only.fix_plans.size() == 1);
  const FixOption* rec = only.fix_plans[0].recommended();
  REQUIRE(rec != nullptr);
  CHECK(rec->id == "convtranspose2d");
  CHECK(rec->new_errors == 0);
  CHECK(rec->new_violations.size() >= 2);  // BPU1601, BPU1602, and the dilation hint
  for (const auto& v : rec->new_violations) CHECK(v.find(" (warning) on ConvTranspose") != std::string::npos);
  CHECK(only.fix_plans[0].fix_blocked().empty());
  // From the CLI, the configuration's severity settings decide the replacement's levels too.
  const CommandResult plain = run_bpu_lint({dir.path("dilated.onnx")});
  CHECK(plain.out.find("its nodes would break") == std::string::npos);
  write_file(dir.path("bpu-lint.yaml"), "severity: {BPU1601: warning, BPU1602: warning, BPU1605: warning}\n");
  const CommandResult text = run_bpu_lint({dir.path("dilated.onnx"), "--config", dir.path("bpu-lint.yaml")});
  CHECK(text.out.find("its nodes would break BPU1602 (warning) on ConvTranspose 'ct_fix_convtranspose2d'") !=
        std::string::npos);
  CHECK(text.out.find("its nodes would break BPU1605 (warning)") != std::string::npos);
  CHECK(text.out.find("BPU1603") == std::string::npos);
}

TEST_CASE("the lint says when --fix will leave a node as it is, and why (text and JSON)") {
  TempDir dir;
  // A weight that is a graph input: the fixes apply to the layer, but --fix has no bytes to rewrite.
  Layer l;
  onnx::ModelProto m = layer_model(l);
  auto* g = m.mutable_graph();
  auto* w = g->add_input();
  w->set_name("W");
  auto* wt = w->mutable_type()->mutable_tensor_type();
  wt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {int64_t{8}, int64_t{4}, int64_t{2}, int64_t{2}, int64_t{2}}) wt->mutable_shape()->add_dim()->set_dim_value(d);
  g->mutable_initializer()->DeleteSubrange(0, 1);  // W
  const std::string input_weight = save_model(dir, "input_weight.onnx", m);
  // A D axis that is dilated: no fix applies.
  Layer overlap;
  overlap.dilations = {2, 1, 1};
  const std::string overlapping = save_model(dir, "overlap.onnx", layer_model(overlap));

  const ModelReport r = lint_model(input_weight, platform("j6p"), {});
  REQUIRE(r.ok);
  REQUIRE(r.fix_plans.size() == 1);
  // The rewrite itself would do, but --fix cannot apply it: listed, never "recommended".
  CHECK(r.fix_plans[0].recommended() == nullptr);
  CHECK(r.fix_plans[0].options[0].applicable);
  const std::string why = "its weight 'W' is not an initializer (computed, or a graph input), so --fix has no bytes to rewrite";
  CHECK(r.fix_plans[0].fix_blocked() == why);
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("out.onnx"));
  REQUIRE(run.results.size() == 1);
  CHECK_FALSE(run.results[0].applied);
  CHECK(run.results[0].reason == why);

  const CommandResult text = run_bpu_lint({input_weight});
  CHECK(text.out.find("      --fix leaves this node as it is: " + why + "\n") != std::string::npos);
  CHECK(text.out.find("recommended, ") == std::string::npos);
  const CommandResult json = run_bpu_lint({input_weight, overlapping, "--format", "json"});
  CHECK(json.out.find("\"fix_blocked\": \"" + why + "\"") != std::string::npos);
  const std::string d_axis = "D axis overlaps (dilation 2); the rewrite needs kernel == stride, no padding, "
                             "no output_padding and dilation 1 on it";
  CHECK(json.out.find("\"fix_blocked\": \"no fix applies; convtranspose2d: " + d_axis + "; conv3d-1x1x1: " + d_axis +
                      "; convtranspose2d-d-taps: D dilation 2; the D-tap rewrite needs D dilation 1; the layer needs a "
                      "change in its PyTorch source\"") != std::string::npos);
  // A node --fix does rewrite says so with null.
  const CommandResult fine = run_bpu_lint({example_model(), "--format", "json"});
  CHECK(fine.out.find("\"fix_blocked\": null") != std::string::npos);
}

TEST_CASE("a quantised (QDQ) weight: the fix is recommended, --fix applies it, no output calls it unfixable") {
  TempDir dir;
  auto scalar = [](const std::string& name, int type) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(type);
    if (type == onnx::TensorProto::FLOAT) t.add_float_data(0.01f);
    else t.add_int32_data(0);
    return t;
  };
  auto qdq_model = [&](bool fake_quant) {
    onnx::ModelProto m = layer_model(Layer{});
    auto* g = m.mutable_graph();
    onnx::TensorProto w = g->initializer(0);  // W, float
    REQUIRE(w.name() == "W");
    g->mutable_initializer()->DeleteSubrange(0, 1);
    *g->add_initializer() = scalar("w_scale", onnx::TensorProto::FLOAT);
    *g->add_initializer() = scalar("w_zp", onnx::TensorProto::INT8);
    if (fake_quant) {
      w.set_name("W_float");
      *g->add_initializer() = w;
    } else {  // DequantizeLinear of an int8 constant
      onnx::TensorProto q;
      q.set_name("W_q");
      q.set_data_type(onnx::TensorProto::INT8);
      for (int64_t d : w.dims()) q.add_dims(d);
      int64_t count = 1;
      for (int64_t d : w.dims()) count *= d;
      for (int64_t i = 0; i < count; ++i) q.add_int32_data(static_cast<int32_t>(i % 7) - 3);
      *g->add_initializer() = q;
    }
    onnx::NodeProto ct = g->node(0);
    g->mutable_node()->Clear();
    if (fake_quant) {
      auto* qn = g->add_node();
      qn->set_op_type("QuantizeLinear");
      qn->set_name("w_quant");
      for (const char* i : {"W_float", "w_scale", "w_zp"}) qn->add_input(i);
      qn->add_output("W_q");
    }
    auto* dq = g->add_node();
    dq->set_op_type("DequantizeLinear");
    dq->set_name("w_dequant");
    for (const char* i : {"W_q", "w_scale", "w_zp"}) dq->add_input(i);
    dq->add_output("W");
    *g->add_node() = ct;
    return m;
  };
  for (bool fake_quant : {true, false}) {
    INFO("fake_quant " << fake_quant);
    const std::string path = save_model(dir, fake_quant ? "fq.onnx" : "dq.onnx", qdq_model(fake_quant));
    const ModelReport r = lint_model(path, platform("j6p"), {});
    REQUIRE(r.ok);
    REQUIRE(r.fix_plans.size() == 1);
    REQUIRE(r.fix_plans[0].recommended() != nullptr);
    CHECK(r.fix_plans[0].recommended()->id == "convtranspose2d");
    CHECK(r.fix_plans[0].fix_blocked().empty());
    const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("out.onnx"));
    REQUIRE(run.results.size() == 1);
    CHECK(run.results[0].applied);
    CHECK(run.written);
    const CommandResult text = run_bpu_lint({path});
    INFO(text.out);
    CHECK(text.out.find("convtranspose2d (recommended, safe)") != std::string::npos);
    CHECK(text.out.find("--fix leaves this node as it is") == std::string::npos);
    CHECK(text.out.find("a quantised weight") == std::string::npos);
    const CommandResult json = run_bpu_lint({path, "--format", "json"});
    CHECK(json.out.find("\"recommended\": true") != std::string::npos);
    CHECK(json.out.find("\"fix_blocked\": null") != std::string::npos);
    const CommandResult sarif = run_bpu_lint({path, "--format", "sarif"});
    CHECK(sarif.out.find("leaves this node") == std::string::npos);
    CHECK(sarif.out.find("a quantised weight") == std::string::npos);
  }
}

TEST_CASE("--pytorch-snippet writes a comment for each flagged layer it cannot replace") {
  TempDir dir;
  // Three layers: the first non-overlapping, the second overlapping on D (the
  // D-tap module), the third dilated on D (nothing replaces it).
  Layer l;
  onnx::ModelProto m = layer_model(l);
  auto* g = m.mutable_graph();
  *g->add_initializer() = random_float_tensor("W2", {4, 4, 3, 2, 2}, 3);
  *g->add_initializer() = random_float_tensor("W3", {4, 4, 2, 2, 2}, 4);
  auto add_layer = [&](const std::string& name, const std::string& x, const std::string& w, const std::string& y) {
    auto* n = g->add_node();
    n->set_op_type("ConvTranspose");
    n->set_name(name);
    n->add_input(x);
    n->add_input(w);
    n->add_output(y);
    models::add_ints(*n, "strides", {2, 2, 2});
    return n;
  };
  add_layer("/dec/dec.1/ConvTranspose", "Z", "W2", "Z2");
  models::add_ints(*add_layer("/dec/dec.2/ConvTranspose", "Z2", "W3", "Z3"), "dilations", {2, 1, 1});
  g->mutable_node(0)->set_name("/dec/dec.0/ConvTranspose");
  g->mutable_output(0)->set_name("Z3");
  auto* shape = g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->Clear();
  for (int64_t d : {int64_t{1}, int64_t{4}, int64_t{19}, int64_t{24}, int64_t{24}}) shape->add_dim()->set_dim_value(d);
  const std::string path = save_model(dir, "three.onnx", m);
  const CommandResult r = run_bpu_lint({path, "--pytorch-snippet", dir.path("fix.py")});
  INFO(r.out << r.err);
  CHECK(r.out.find("wrote PyTorch replacements for 2 layers to " + dir.path("fix.py") +
                   " (1 flagged layer left as is, each with a comment saying why)") != std::string::npos);
  const std::string snippet = read_file(dir.path("fix.py"));
  CHECK(snippet.find("layers.append((\"dec.0\", ConvTranspose3dAsConvTranspose2d, ") != std::string::npos);
  CHECK(snippet.find("layers.append((\"dec.1\", ConvTranspose3dAsConvTranspose2dDTaps, ") != std::string::npos);
  CHECK(snippet.find("    # dec.2 (ONNX node '/dec/dec.2/ConvTranspose'): not replaced: no fix applies; "
                     "convtranspose2d: D axis overlaps (dilation 2)") != std::string::npos);
  CHECK(snippet.find("convtranspose2d-d-taps: D dilation 2; the D-tap rewrite needs D dilation 1; the layer needs a "
                     "change in its PyTorch source\n") != std::string::npos);
}

TEST_CASE("hundreds of findings are planned in two halves like one at a time") {
  // plan_fixes splits many findings across two threads; every plan must be
  // the one a model with that layer alone gets, in node order.
  auto plan_text = [](const NodeFixPlan& p) {
    std::string s = p.inputs_blocker + (p.params_known ? "|known" : "|unknown");
    for (const auto& o : p.options) {
      s += "|" + o.id + (o.applicable ? "+" : "-") + (o.recommended ? "*" : "") + o.why_not + ":" +
           std::to_string(o.cost.intermediate_channels) + "," + std::to_string(o.cost.intermediate_elements) + "," +
           std::to_string(o.new_errors);
      for (const auto& v : o.new_violations) s += ";" + v;
    }
    return s;
  };
  const std::vector<Layer> kinds = [] {
    Layer a;  // the case study's first layer
    a.c_in = 16, a.c_out = 8, a.kernel = {2, 2, 2}, a.strides = {2, 2, 2};
    Layer b = a;  // a kernel depth the 2-D rewrite cannot take
    b.kernel = {5, 2, 2}, b.strides = {5, 2, 2};
    Layer c = a;
    c.c_out = 4, c.bias = true;
    return std::vector<Layer>{a, b, c};
  }();
  std::vector<std::string> alone;
  for (const Layer& l : kinds) {
    TempDir dir;
    const ModelReport r = lint_proto(dir, layer_model(l));
    REQUIRE(r.fix_plans.size() == 1);
    alone.push_back(plan_text(r.fix_plans[0]));
  }
  // 300 layers side by side, all reading X, kinds in turn.
  onnx::ModelProto m = layer_model(kinds[0]);
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_initializer();
  g->clear_output();
  unsigned seed = 0;
  for (int i = 0; i < 300; ++i) {
    const Layer& l = kinds[static_cast<size_t>(i) % kinds.size()];
    const onnx::ModelProto one = layer_model(l);
    onnx::NodeProto n = one.graph().node(0);
    const std::string tag = std::to_string(i);
    n.set_name("ct" + tag);
    n.set_output(0, "Y" + tag);
    for (int k = 1; k < n.input_size(); ++k) {
      const std::string w = n.input(k) + tag;
      n.set_input(k, w);
      auto dims = std::vector<int64_t>(one.graph().initializer(k - 1).dims().begin(), one.graph().initializer(k - 1).dims().end());
      *g->add_initializer() = random_float_tensor(w, dims, ++seed);
    }
    *g->add_node() = n;
    *g->add_output() = one.graph().output(0);
    g->mutable_output(i)->set_name("Y" + tag);
  }
  TempDir dir;
  const ModelReport r = lint_proto(dir, m);
  REQUIRE(r.fix_plans.size() == 300);
  for (size_t i = 0; i < r.fix_plans.size(); ++i) {
    INFO("layer " << i);
    CHECK(r.fix_plans[i].node == static_cast<long>(i));
    CHECK(plan_text(r.fix_plans[i]) == alone[i % kinds.size()]);
  }
}
