// Tests for the PyTorch snippet generator. The string checks pin the format;
// the real proof is running the generated Python through
// tests/pytorch/check_snippet.py, which compares every replacement module
// against nn.ConvTranspose3d numerically.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bpulint/fix/pytorch_snippet.h"

using bpulint::ConvTransposeParams;
using bpulint::pytorch_module_class;
using bpulint::pytorch_module_source;
using bpulint::pytorch_snippet;
using bpulint::pytorch_snippet_file;
using bpulint::SnippetLayer;
using bpulint::torch_module_path;

namespace {

ConvTransposeParams ct3d(int64_t c_in, int64_t c_out, std::vector<int64_t> kernel, std::vector<int64_t> strides,
                         int64_t group = 1, bool bias = true) {
  ConvTransposeParams p;
  p.c_in = c_in;
  p.c_out = c_out;
  p.group = group;
  p.kernel = std::move(kernel);
  p.strides = std::move(strides);
  p.pads = {0, 0, 0, 0, 0, 0};
  p.dilations = {1, 1, 1};
  p.output_padding = {0, 0, 0};
  p.has_bias = bias;
  return p;
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

const char* kPython = "/usr/bin/python3";

// Runs a shell command with its output in a log file; returns the exit code
// (-1 if it did not exit normally) and the output.
int run(const std::string& command, std::string& output) {
  const std::filesystem::path log =
      std::filesystem::temp_directory_path() / ("bpulint_snippet_" + std::to_string(getpid()) + ".log");
  const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  output = ss.str();
  std::filesystem::remove(log);
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// torch is a test dependency (installed by the set-up script): its absence is
// a failure with a clear message, never a silent skip.
void require_torch() {
  static std::string out;
  static const int rc = run(std::string(kPython) + " -c 'import torch'", out);  // once: importing takes ~1 s
  REQUIRE_MESSAGE(rc == 0, kPython << " cannot import torch; the PyTorch snippet checks need it "
                                      "(install torch for the system python). Output:\n"
                                   << out);
}

// Writes `text` to a temp .py file and runs check_snippet.py on it.
int check_snippet(const std::string& text, const std::string& tag, std::string& output) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("bpulint_snippet_" + std::to_string(getpid()) + "_" + tag + ".py");
  {
    std::ofstream out(file);
    out << text;
  }
  const std::string script = std::string(BPULINT_SOURCE_DIR) + "/tests/pytorch/check_snippet.py";
  const int rc = run(std::string(kPython) + " '" + script + "' '" + file.string() + "'", output);
  std::filesystem::remove(file);
  return rc;
}

}  // namespace

TEST_CASE("torch_module_path follows torch.onnx scope naming") {
  // Names below were produced by torch 1.13's exporter for the modules they map to.
  CHECK(torch_module_path("/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose") == "deblock_seg_v2.0");
  CHECK(torch_module_path("/deblock_seg_v2/deblock_seg_v2.6/ConvTranspose") == "deblock_seg_v2.6");
  CHECK(torch_module_path("/deblock_seg_v2/deblock_seg_v2.2/deblock_seg_v2.2.0/up/ConvTranspose") ==
        "deblock_seg_v2.2.0.up");
  // A ModuleList that is never called itself leaves no scope of its own.
  CHECK(torch_module_path("/deblock_seg_v2/deblock_seg_v2.2/deblock_seg_v2.2.0/blocks.0/ConvTranspose") ==
        "deblock_seg_v2.2.0.blocks.0");
  CHECK(torch_module_path("/top/ConvTranspose") == "top");
  CHECK(torch_module_path("/up/ConvTranspose_3") == "up");
  CHECK(torch_module_path("/0/0.1/ConvTranspose") == "0.1");  // the model itself is an nn.Sequential
  CHECK(torch_module_path("/seq/seq.0/seq.0.0_1/ConvTranspose") == "seq.0.0");  // second call of seq
  CHECK(torch_module_path("/top_1/ConvTranspose") == "top_1");  // ambiguous with a real name: kept
  CHECK(torch_module_path("/seg-x.0/ConvTranspose") == "seg-x.0");  // ModuleDict key
  // torch 1.13 exports of the modules in tests/pytorch/check_module_snippets.py. A layer called
  // again gets "_N" on its scope; which "_N" are real names is decided against the live model.
  CHECK(torch_module_path("/shared_1/ConvTranspose") == "shared_1");
  CHECK(torch_module_path("/dec/shared_2/ConvTranspose") == "dec.shared_2");
  CHECK(torch_module_path("/decoder.1/ConvTranspose") == "decoder.1");            // nn.ModuleList
  CHECK(torch_module_path("/blocks/blocks.2/up/ConvTranspose") == "blocks.2.up");  // nn.Sequential
  CHECK(torch_module_path("/blocks.1/up_1/ConvTranspose") == "blocks.1.up_1");    // ModuleList entry called again
  CHECK(torch_module_path("/up_1/ConvTranspose_1") == "up_1");

  // Not an exported scope.
  CHECK(torch_module_path("") == "");
  CHECK(torch_module_path("ConvTranspose_3") == "");  // pre-1.13 exporter
  CHECK(torch_module_path("/ConvTranspose") == "");   // top-level node: no module
  CHECK(torch_module_path("/") == "");
  CHECK(torch_module_path("/a/") == "");
  CHECK(torch_module_path("/a//ConvTranspose") == "");
  CHECK(torch_module_path("/a..b/ConvTranspose") == "");
  CHECK(torch_module_path("/a b/ConvTranspose") == "");
  CHECK(torch_module_path("/a\"/ConvTranspose") == "");
  CHECK(torch_module_path("/a\nimport os/ConvTranspose") == "");
}

TEST_CASE("pytorch_module_source defines one class per fix kind") {
  CHECK(pytorch_module_source("no-such-fix") == "");
  CHECK(pytorch_module_class("no-such-fix") == "");
  const std::string a = pytorch_module_source("convtranspose2d");
  const std::string b = pytorch_module_source("conv3d-1x1x1");
  const std::string c = pytorch_module_source("convtranspose2d-d-taps");
  CHECK(pytorch_module_class("convtranspose2d") == "ConvTranspose3dAsConvTranspose2d");
  CHECK(pytorch_module_class("conv3d-1x1x1") == "ConvTranspose3dAsConv3d1x1x1");
  CHECK(a.rfind("class ConvTranspose3dAsConvTranspose2d(nn.Module):", 0) == 0);
  CHECK(b.rfind("class ConvTranspose3dAsConv3d1x1x1(nn.Module):", 0) == 0);
  CHECK(c.rfind("class ConvTranspose3dAsConvTranspose2dDTaps(nn.Module):", 0) == 0);
  for (const std::string* s : {&a, &b, &c}) {
    CHECK(s->find("def __init__(self, layer: nn.ConvTranspose3d):") != std::string::npos);
    CHECK(s->find("raise ValueError(") != std::string::npos);
    CHECK(s->find("def forward(self, x") != std::string::npos);
  }
}

TEST_CASE("pytorch_snippet names the layer and its constructor") {
  const std::string s = pytorch_snippet("convtranspose2d", ct3d(128, 64, {5, 2, 2}, {5, 2, 2}), "deblock_seg_v2.0");
  CHECK(s.find("import torch\nfrom torch import nn\n") != std::string::npos);
  CHECK(count(s, "class ConvTranspose3dAsConvTranspose2d(nn.Module):") == 1);
  CHECK(count(s, "class ConvTranspose3dAsConv3d1x1x1") == 0);
  CHECK(s.find("# deblock_seg_v2.0: C_in=128, C_out=64, kernel=(5, 2, 2), stride=(5, 2, 2), padding=(0, 0, 0), "
               "output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, bias=True\n") != std::string::npos);
  CHECK(s.find("# deblock_seg_v2.0: nn.ConvTranspose3d(128, 64, kernel_size=(5, 2, 2), stride=(5, 2, 2), "
               "padding=(0, 0, 0), output_padding=(0, 0, 0), groups=1, bias=True, dilation=(1, 1, 1))\n") !=
        std::string::npos);
  CHECK(s.find("    layers.append((\"deblock_seg_v2.0\", ConvTranspose3dAsConvTranspose2d, dict(in_channels=128, "
               "out_channels=64, kernel_size=(5, 2, 2), stride=(5, 2, 2), padding=(0, 0, 0), output_padding=(0, 0, 0), "
               "dilation=(1, 1, 1), groups=1, bias=True)))\n") != std::string::npos);
  CHECK(s.find("    return _bpu_lint_swap(model, layers, not_replaced)\n") != std::string::npos);
  CHECK(s.find("def apply_bpu_lint_fixes(model: nn.Module) -> nn.Module:") != std::string::npos);
  CHECK(s.find("WARNING") == std::string::npos);
  CHECK(s.find("note:") == std::string::npos);

  // Unknown fix id or a non-3-D layer: nothing to generate.
  CHECK(pytorch_snippet("no-such-fix", ct3d(4, 4, {2, 2, 2}, {2, 2, 2}), "up") == "");
  CHECK(pytorch_snippet("convtranspose2d", ct3d(4, 4, {2, 2}, {2, 2}), "up") == "");

  SUBCASE("known input shape is stated, a dynamic batch as N") {
    ConvTransposeParams p = ct3d(48, 32, {2, 2, 2}, {2, 2, 2}, 1, false);
    p.input_shape = {-1, 48, 8, 16, 16};
    const std::string t = pytorch_snippet("conv3d-1x1x1", p, "deblock_seg_v2.6");
    CHECK(t.find("groups=1, bias=False, input=(N, 48, 8, 16, 16)\n") != std::string::npos);
    CHECK(t.find("layers.append((\"deblock_seg_v2.6\", ConvTranspose3dAsConv3d1x1x1, dict(in_channels=48, ") !=
          std::string::npos);
  }
  SUBCASE("paths go in as strings, resolved against the live model when applied") {
    const ConvTransposeParams p = ct3d(4, 4, {2, 2, 2}, {2, 2, 2});
    for (const char* path : {"decoder.up", "0", "heads.seg-x.0", "blocks.class", "shared_1"}) {
      CHECK(pytorch_snippet("convtranspose2d", p, path)
                .find("    layers.append((\"" + std::string(path) + "\", ConvTranspose3dAsConvTranspose2d, dict(") !=
            std::string::npos);
    }
    // Each helper defined once; the swap is all or nothing.
    const std::string t = pytorch_snippet("convtranspose2d", p, "up");
    CHECK(count(t, "def _bpu_lint_swap(model, layers, not_replaced=()):") == 1);
    CHECK(count(t, "def _bpu_lint_resolve(model, path, cls, exported):") == 1);
    CHECK(t.find("raise LookupError(\"apply_bpu_lint_fixes: model left unchanged;") != std::string::npos);
  }
  SUBCASE("an unknown or unsafe path leaves the assignment commented out") {
    const ConvTransposeParams p = ct3d(4, 4, {2, 2, 2}, {2, 2, 2});
    for (const char* path : {"", "a\nimport os", "a.b c", "x\"", "a..b"}) {
      const std::string t = pytorch_snippet("convtranspose2d", p, path);
      CHECK(t.find("# (unknown module path): nn.ConvTranspose3d(4, 4,") != std::string::npos);
      CHECK(t.find("    # layers.append((\"<path.to.layer>\", ConvTranspose3dAsConvTranspose2d, dict(in_channels=4, ") !=
            std::string::npos);
      CHECK(t.find("import os") == std::string::npos);
    }
  }
  SUBCASE("asymmetric pads: an exact padding/output_padding pair when one exists") {
    ConvTransposeParams p = ct3d(8, 6, {2, 3, 3}, {2, 2, 2});
    p.pads = {0, 1, 1, 0, 0, 0};  // begins (0,1,1), ends (0,0,0)
    const std::string t = pytorch_snippet("convtranspose2d", p, "up");
    CHECK(t.find("# note: the ONNX pads are begins (0, 1, 1), ends (0, 0, 0)") != std::string::npos);
    CHECK(t.find("reproduce them exactly") != std::string::npos);
    CHECK(t.find("padding=(0, 1, 1), output_padding=(0, 1, 1)") != std::string::npos);
    CHECK(t.find("NOT an exact match") == std::string::npos);

    p.pads = {0, 0, 0, 0, 1, 1};  // more at the end: needs a negative output_padding
    const std::string u = pytorch_snippet("convtranspose2d", p, "up");
    CHECK(u.find("NOT an exact match") != std::string::npos);
  }
  SUBCASE("parameters that break the class's preconditions are flagged") {
    const std::string t = pytorch_snippet("conv3d-1x1x1", ct3d(4, 4, {2, 3, 3}, {2, 2, 2}), "up");
    CHECK(t.find("# WARNING: preconditions not met for ConvTranspose3dAsConv3d1x1x1 (stride H != kernel H, "
                 "stride W != kernel W); its constructor will raise ValueError.") != std::string::npos);
    CHECK(pytorch_snippet("convtranspose2d", ct3d(4, 4, {2, 3, 3}, {2, 2, 2}), "up").find("WARNING") ==
          std::string::npos);
  }
}

TEST_CASE("pytorch_snippet_file: classes once, one block per layer") {
  const std::vector<SnippetLayer> layers = {
      {"conv3d-1x1x1", ct3d(48, 32, {2, 2, 2}, {2, 2, 2}), "b.6"},
      {"convtranspose2d", ct3d(128, 64, {5, 2, 2}, {5, 2, 2}), "a.0"},
      {"convtranspose2d", ct3d(64, 48, {2, 2, 2}, {2, 2, 2}), "a.3"},
      {"convtranspose2d", ct3d(64, 48, {2, 2, 2}, {2, 2, 2}), "a.3"},
      // The same path, other parameters: torch names up's second call "up_1" beside a real up_1.
      {"convtranspose2d", ct3d(64, 32, {2, 2, 2}, {2, 2, 2}), "a.3"},
      {"no-such-fix", ct3d(4, 4, {2, 2, 2}, {2, 2, 2}), "c"},
      {"convtranspose2d", ct3d(4, 4, {2, 2}, {2, 2}), "d"},
  };
  const std::string s = pytorch_snippet_file(layers);
  CHECK(count(s, "import torch\n") == 1);
  CHECK(count(s, "class ConvTranspose3dAsConvTranspose2d(nn.Module):") == 1);
  CHECK(count(s, "class ConvTranspose3dAsConv3d1x1x1(nn.Module):") == 1);
  // Catalog order for the classes, layer order for the blocks.
  CHECK(s.find("class ConvTranspose3dAsConvTranspose2d") < s.find("class ConvTranspose3dAsConv3d1x1x1"));
  CHECK(s.find("layers.append((\"b.6\", ") < s.find("layers.append((\"a.0\", "));
  CHECK(count(s, "layers.append((\"a.3\", ConvTranspose3dAsConvTranspose2d, ") == 2);  // two parameter sets
  CHECK(count(s, "# a.3: already listed above.") == 1);  // the identical third one
  CHECK(s.find("# c: unknown fix id; no PyTorch replacement generated.") != std::string::npos);
  CHECK(s.find("# d: not a 3-D ConvTranspose (kernel rank 2); no PyTorch replacement generated.") !=
        std::string::npos);
  CHECK(s.find("no-such-fix") == std::string::npos);

  // No layers at all: still valid Python, the function does nothing.
  const std::string empty = pytorch_snippet_file({});
  CHECK(empty.find("class ") == std::string::npos);
  CHECK(empty.find("def apply_bpu_lint_fixes(model: nn.Module) -> nn.Module:") != std::string::npos);
}

TEST_CASE("pytorch_snippet_file: a flagged layer without a replacement gets a comment saying why") {
  SnippetLayer skipped{"", ct3d(8, 4, {3, 3, 3}, {2, 2, 2}), "dec.1"};
  skipped.not_replaced = "D axis overlaps (kernel 3 != stride 2)\nimport os  # from the model";
  skipped.onnx_name = "/dec/dec.1/ConvTranspose\r\nos.system('x')";
  const std::string s =
      pytorch_snippet_file({{"convtranspose2d", ct3d(8, 4, {2, 2, 2}, {2, 2, 2}), "dec.0"}, skipped});
  CHECK(s.find("# dec.1 (ONNX node '/dec/dec.1/ConvTranspose??os.system('x')'): not replaced: D axis overlaps "
               "(kernel 3 != stride 2)?import os  # from the model\n") != std::string::npos);
  CHECK(s.find("\nimport os") == std::string::npos);  // model text never leaves the comment
  CHECK(s.find("layers.append((\"dec.0\", ConvTranspose3dAsConvTranspose2d, ") != std::string::npos);
  CHECK(s.find("(\"dec.1\"") == std::string::npos);
  // Named in the function's not_replaced list, as string literals the model text cannot end.
  CHECK(s.find("    not_replaced.append((\"dec.1 (ONNX node '/dec/dec.1/ConvTranspose??os.system('x')')\", "
               "\"D axis overlaps (kernel 3 != stride 2)?import os  # from the model\"))\n") != std::string::npos);
  SnippetLayer quoted{"", ct3d(8, 4, {2, 2, 2}, {2, 2, 2}), ""};
  quoted.not_replaced = "a \"quote\" and a \\";
  quoted.onnx_name = "n\"\\";
  const std::string q = pytorch_snippet_file({quoted});
  CHECK(q.find("    not_replaced.append((\"(unknown module path) (ONNX node 'n\\\"\\\\')\", "
               "\"a \\\"quote\\\" and a \\\\\"))\n") != std::string::npos);
}

TEST_CASE("generated PyTorch modules match nn.ConvTranspose3d (check_snippet.py)") {
  require_torch();

  std::vector<SnippetLayer> layers = {
      // The case study's three layers, under their torch.onnx-derived paths.
      {"convtranspose2d", ct3d(128, 64, {5, 2, 2}, {5, 2, 2}),
       torch_module_path("/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose")},
      {"convtranspose2d", ct3d(64, 48, {2, 2, 2}, {2, 2, 2}),
       torch_module_path("/deblock_seg_v2/deblock_seg_v2.3/ConvTranspose")},
      {"convtranspose2d", ct3d(48, 32, {2, 2, 2}, {2, 2, 2}, 1, false), "deblock_seg_v2.6"},
      {"convtranspose2d", ct3d(8, 12, {3, 2, 2}, {3, 2, 2}, 4), "heads.seg-x.0"},
      {"conv3d-1x1x1", ct3d(128, 64, {5, 2, 2}, {5, 2, 2}), "alt.0"},
      {"conv3d-1x1x1", ct3d(8, 6, {2, 2, 2}, {2, 2, 2}, 2, false), "alt.1.up"},
      {"conv3d-1x1x1", ct3d(12, 8, {2, 1, 3}, {2, 1, 3}, 4), ""},  // unknown path: usage commented out
  };
  // H/W overlap given as asymmetric ONNX pads, which the snippet turns into an
  // equivalent padding/output_padding; the checker verifies that against ONNX semantics.
  ConvTransposeParams overlap = ct3d(8, 6, {2, 3, 3}, {2, 2, 2});
  overlap.pads = {0, 1, 1, 0, 0, 0};
  layers.push_back({"convtranspose2d", overlap, "decoder.up_overlap"});
  ConvTransposeParams dilated = ct3d(8, 6, {2, 3, 3}, {2, 1, 2}, 2);
  dilated.dilations = {1, 2, 2};
  dilated.pads = {0, 2, 1, 0, 2, 1};
  dilated.output_padding = {0, 1, 1};
  layers.push_back({"convtranspose2d", dilated, "decoder.up_dilated"});
  // Overlapping D for the D-tap module: the flagship k3 s2 p1 op1, and asymmetric
  // ONNX pads along D that the snippet turns into padding/output_padding.
  ConvTransposeParams flagship = ct3d(8, 6, {3, 3, 3}, {2, 2, 2});
  flagship.pads = {1, 1, 1, 1, 1, 1};
  flagship.output_padding = {1, 1, 1};
  layers.push_back({"convtranspose2d-d-taps", flagship, "decoder.up3"});
  ConvTransposeParams skewed = ct3d(6, 6, {4, 2, 2}, {3, 2, 2}, 3, false);
  skewed.pads = {2, 0, 0, 1, 0, 0};
  layers.push_back({"convtranspose2d-d-taps", skewed, "decoder.up_skewed"});

  const std::string text = pytorch_snippet_file(layers);
  std::string output;
  const int rc = check_snippet(text, "both", output);
  INFO("check_snippet.py output:\n" << output);
  CHECK(rc == 0);
  CHECK(output.find(" passed, 0 failed") != std::string::npos);
  CHECK(output.find("PASS usage apply_bpu_lint_fixes(model)") != std::string::npos);
  CHECK(output.find("constructor reproduces the asymmetric ONNX pads") != std::string::npos);
  CHECK(output.find("PASS ConvTranspose3dAsConvTranspose2dDTaps flagship k3 s2 p1 op1") != std::string::npos);
  CHECK(output.find("PASS usage decoder.up3 ConvTranspose3dAsConvTranspose2dDTaps") != std::string::npos);
  CHECK(output.find("PASS usage decoder.up_skewed constructor reproduces the asymmetric ONNX pads") != std::string::npos);
}

TEST_CASE("check_snippet.py expects ValueError for warned blocks and catches a broken class") {
  require_torch();

  SUBCASE("a block whose parameters break the preconditions, and one PyTorch cannot express") {
    ConvTransposeParams inexact = ct3d(8, 6, {2, 3, 3}, {2, 2, 2});
    inexact.pads = {0, 0, 0, 0, 1, 1};  // more padding at the end than at the begin
    ConvTransposeParams dilated_d = ct3d(4, 4, {2, 2, 2}, {2, 2, 2});
    dilated_d.dilations = {2, 1, 1};
    const std::string text = pytorch_snippet_file({{"conv3d-1x1x1", ct3d(4, 4, {2, 3, 3}, {2, 2, 2}), "up"},
                                                   {"convtranspose2d", inexact, "down"},
                                                   {"convtranspose2d-d-taps", dilated_d, "side"}});
    std::string output;
    const int rc = check_snippet(text, "warned", output);
    INFO("check_snippet.py output:\n" << output);
    CHECK(rc == 0);
    CHECK(output.find("PASS usage up ConvTranspose3dAsConv3d1x1x1 rejects it") != std::string::npos);
    CHECK(output.find("PASS usage down approximate constructor parses") != std::string::npos);
    CHECK(output.find("PASS usage side ConvTranspose3dAsConvTranspose2dDTaps rejects it") != std::string::npos);
    // All or nothing: "down" resolves and is replaceable, yet the ValueError of "up" leaves it in place.
    CHECK(output.find("PASS usage apply_bpu_lint_fixes(model) refuses a warned layer, model unchanged") !=
          std::string::npos);
  }
  SUBCASE("negative control: a wrong bias layout must fail the check") {
    std::string text = pytorch_snippet("convtranspose2d", ct3d(8, 6, {2, 2, 2}, {2, 2, 2}), "up");
    const std::string right = "layer.bias.repeat_interleave(kd)";
    const size_t pos = text.find(right);
    REQUIRE(pos != std::string::npos);
    text.replace(pos, right.size(), "layer.bias.repeat(kd)");  // channel-major instead of tap-major
    std::string output;
    const int rc = check_snippet(text, "broken", output);
    INFO("check_snippet.py output:\n" << output);
    CHECK(rc == 1);
    CHECK(output.find(" failed") != std::string::npos);
    CHECK(output.find(", 0 failed") == std::string::npos);
  }
}

TEST_CASE("--pytorch-snippet on real exports: a layer called twice, ModuleList, Sequential, a real up_1") {
  // tests/pytorch/check_module_snippets.py exports each module with torch.onnx.export, runs
  // bpu-lint --pytorch-snippet on it, applies the snippet and compares the outputs, re-exports
  // and re-lints the swapped module on j6p, and checks that a bad path leaves a model untouched.
  require_torch();
  const std::filesystem::path work =
      std::filesystem::temp_directory_path() / ("bpulint_modules_" + std::to_string(getpid()));
  const std::string script = std::string(BPULINT_SOURCE_DIR) + "/tests/pytorch/check_module_snippets.py";
  std::string output;
  const int rc = run(std::string(kPython) + " '" + script + "' '" + BPULINT_BINARY + "' '" + work.string() + "'", output);
  std::filesystem::remove_all(work);
  INFO("check_module_snippets.py output:\n" << output);
  CHECK(rc == 0);
  CHECK(output.find(" passed, 0 failed") != std::string::npos);
  for (const char* name : {"shared_twice", "shared_thrice", "module_list", "sequential", "top_level_sequential",
                           "real_up_1_and_up_called_twice", "only_up_1", "module_dict_of_lists"}) {
    CAPTURE(name);
    CHECK(output.find("PASS " + std::string(name) + ": swapped module equals the original") != std::string::npos);
    CHECK(output.find("PASS " + std::string(name) + ": re-exported and re-linted on j6p, no ConvTranspose error") !=
          std::string::npos);
  }
  CHECK(output.find("PASS bad path: decoder.1 missing, decoder.0 left as it was") != std::string::npos);
  // A QAT layer (forward() fake-quantises its weight) and an F.conv_transpose3d call are never
  // swapped for a float module nor counted as written: named on the CLI and in apply's warning.
  for (const char* name : {"qat_and_float", "functional_and_float"}) {
    CAPTURE(name);
    CHECK(output.find("PASS " + std::string(name) + ": the CLI names the refused layer and counts 1 layer written") !=
          std::string::npos);
    CHECK(output.find("PASS " + std::string(name) + ": apply replaces the float layer, keeps the refused one") !=
          std::string::npos);
  }
  CHECK(output.find("PASS functional_only: no snippet written, the layer named as not replaced") != std::string::npos);
  CHECK(output.find("PASS a QAT layer where the snippet expects a float one: refused by name, untouched") !=
        std::string::npos);
}
