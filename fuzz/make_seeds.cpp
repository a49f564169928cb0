// Writes the seed corpora under tests/fuzz/corpus/ (run once; the seeds are
// committed). Models are tiny: a few hundred bytes to a few KiB each.
//   make_seeds SOURCE_DIR
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ct3d_model.h"

namespace {

std::string root;

void put(const std::string& rel, const std::string& bytes) {
  std::ofstream out(root + "/tests/fuzz/corpus/" + rel, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out.good()) {
    std::cerr << "cannot write " << rel << "\n";
    std::exit(1);
  }
}

onnx::TensorProto floats(const std::string& name, const std::vector<int64_t>& dims, bool raw) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= d;
  }
  std::string bytes;
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i % 7) / 4.0f - 0.75f;
    if (raw) bytes.append(reinterpret_cast<const char*>(&v), 4);
    else t.add_float_data(v);
  }
  if (raw) t.set_raw_data(bytes);
  return t;
}

// X[batch, c_in, 2, 3, 3] -> ConvTranspose3d (kernel, stride) -> Relu -> Z
onnx::ModelProto ct3d(int64_t c_in, int64_t c_out, std::vector<int64_t> k, std::vector<int64_t> s, bool raw,
                      bool dynamic_batch) {
  bpulint::models::Ct3dModel spec;
  spec.graph = "torch_jit";
  spec.producer = "bpu-lint-seed";
  spec.batch = dynamic_batch ? "N" : "1";
  spec.c_in = c_in;
  spec.c_out = c_out;
  spec.kernel = k;
  spec.strides = s;
  spec.name = "/deblock/ConvTranspose";
  spec.bias = true;
  spec.relu = "/deblock/Relu";
  spec.output_shape = false;
  return bpulint::models::ct3d_model(
      spec, [&](const std::string& name, const std::vector<int64_t>& dims) { return floats(name, dims, raw); });
}

std::string text_model(const std::string& text) {
  onnx::ModelProto m;
  const auto status = onnx::OnnxParser::Parse(m, text.c_str());
  if (!status.IsOK()) {
    std::cerr << status.ErrorMessage() << "\n" << text << "\n";
    std::exit(1);
  }
  return m.SerializeAsString();
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seeds SOURCE_DIR\n";
    return 2;
  }
  root = argv[1];

  // --- fuzz_model -----------------------------------------------------------
  put("fuzz_model/ct3d_k5s5.onnx", ct3d(4, 2, {5, 2, 2}, {5, 2, 2}, true, false).SerializeAsString());
  put("fuzz_model/ct3d_k2s2_dyn.onnx", ct3d(2, 2, {2, 2, 2}, {2, 2, 2}, false, true).SerializeAsString());
  // Weight over the 4 KiB inline limit: exercises the lean encoder's stripping.
  put("fuzz_model/ct3d_stripped.onnx", ct3d(16, 8, {3, 2, 2}, {3, 2, 2}, true, false).SerializeAsString());
  {
    onnx::ModelProto m = ct3d(2, 2, {2, 2, 2}, {1, 2, 2}, true, false);
    auto* w = m.mutable_graph()->mutable_initializer(0);
    w->clear_raw_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : {std::pair<const char*, const char*>{"location", "weights.bin"}, {"offset", "0"}, {"length", "256"}}) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    put("fuzz_model/ct3d_external.onnx", m.SerializeAsString());
  }
  // Regression: a ConvTranspose3d breaking BPU1101 with no output (plan_fixes read outputs[0]).
  {
    onnx::ModelProto m = ct3d(4, 2, {5, 2, 2}, {5, 2, 2}, true, false);
    m.mutable_graph()->mutable_node(0)->clear_output();
    put("fuzz_model/regress_ct3d_no_output.onnx", m.SerializeAsString());
  }
  // Regression: strides[1] = 2^62 wraps the H output size to 2 (unchecked out_size()).
  {
    onnx::ModelProto m = ct3d(2, 2, {5, 2, 2}, {5, int64_t{1} << 62, 2}, true, false);
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(3)->set_dim_value(5);
    put("fuzz_model/regress_stride_overflow.onnx", m.SerializeAsString());
  }
  put("fuzz_model/if_softmax.onnx", text_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[1,3,8,8] X, float[4,3,3,3] W, int64[2] S) => (float[] Y, float[] R) {
  A = Conv <pads = [1,1,1,1]> (X, W)
  Y = If (c) <then_branch = t () => (float[] o) { o = Softmax <axis = 1> (A) },
              else_branch = e () => (float[] o) { o = Relu (A) }>
  R = Reshape (A, S)
}
)"));
  put("fuzz_model/ops_mix.onnx", text_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,16] X, float[16,8] W, float[8] B) => (float[] Y, float[] T, int64[] Sh) {
  G = Gemm <transB = 0> (X, W, B)
  M = MatMul (X, W)
  T = Transpose <perm = [1,0]> (M)
  Y = LayerNormalization <axis = -1> (G, B, B)
  Sh = Shape (T)
  U = Unsqueeze (Y, Sh)
}
)"));
  put("fuzz_model/loop_scan.onnx", text_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, bool c, float[4] X) => (float[] Y) {
  Y = Loop (n, c, X) <body = b (int64 i, bool ci, float[4] x) => (bool co, float[4] y) {
    co = Identity (ci)
    y = Abs (x)
  }>
}
)"));

  // --- fuzz_rules: rule files, expressions and templates --------------------
  const std::string j6p = read(root + "/rules/j6p.yaml");
  put("fuzz_rules/j6p.yaml", j6p);
  put("fuzz_rules/user_extends.yaml",
      "schema_version: 1\nextends: j6p\nops:\n  - class: cpu\n    ops: [Softmax]\n    status: inferred\n"
      "    source: \"team\"\nrules:\n  - id: TEAM0001\n    name: small-kernel\n    summary: \"Small kernels.\"\n"
      "    ops: [Conv, ConvTranspose]\n    when: \"len(kernel_shape) >= 2\"\n"
      "    require: \"all(k in kernel_shape: k <= 7) and prod(input[0].shape[2:]) <= 1000000\"\n"
      "    severity: warning\n    effect: perf_warning\n    message: \"kernel {kernel_shape} at {input[0].shape}\"\n"
      "    status: inferred\n    source: \"team benchmark\"\n");
  put("fuzz_rules/shared.yaml",
      "schema_version: 1\nshared: common\ndescription: shared limits\nrules:\n  - id: SH0001\n    name: rank\n"
      "    summary: \"Rank at most 10.\"\n    ops: [\"*\"]\n    require: \"max_rank <= 10\"\n    severity: error\n"
      "    effect: compile_error\n    message: \"rank {max_rank} > 10\"\n    status: verified\n    source: s\n");
  put("fuzz_rules/anchors.yaml",
      "schema_version: 1\nextends: j6p\nrules:\n  - &r\n    id: A1\n    name: a\n    summary: s\n    ops: [Conv]\n"
      "    require: \"1 in 0..2\"\n    severity: note\n    effect: advice\n    message: m\n    status: inferred\n"
      "    source: s\n  - *r\n");
  // Every expression and message in the rule file, one seed each.
  std::regex expr_line(R"re(^\s*(?:when|require|message): "(.*)"\s*$)re");
  std::istringstream lines(j6p);
  std::string line;
  int i = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, expr_line)) put("fuzz_rules/expr_" + std::to_string(i++) + ".txt", m[1].str());
  }
  const char* exprs[] = {
      "prod(huge) > 0",
      "sum(huge) + 1",
      "huge[0] * huge[1] // -1 % 0",
      "all(t in input: t.rank <= 10 and known(t.shape))",
      "input[0].dtype in {'int8', 'int16'} or input[1].shape[-1:] == [2]",
      "map(k in kernel_shape: ceil_div(k, 2) * align_up(k, 16))",
      "range(0, 9223372036854775807)",
      "count(x in huge: x < 0) == 1 and min(huge) < max(huge)",
      "-(-9223372036854775807 - 1)",
      "alpha * 1e308 * 1e308",
      "not (nothing and false) or abs(huge[2])",
      "input[0].shape[1:3][0] in 1..65535",
      "{kernel_shape[0]} x {strides} {{literal}} {input[0].shape[2:]}",
  };
  for (const char* e : exprs) put("fuzz_rules/expr_" + std::to_string(i++) + ".txt", e);

  // --- fuzz_fix: FuzzedDataProvider bytes ------------------------------------
  put("fuzz_fix/zeros", std::string(64, '\0'));
  put("fuzz_fix/ones", std::string(64, '\x01'));
  put("fuzz_fix/mixed", std::string("\x02\x01\x00\x01\x01\x01\x01\x02\x01\x00\x00\x00\x00\x00\x01\x00\x02\x03\x01\x01\x00\xff\x07\x01\x02\x03\x04\x05\x06\x07\x08", 31));
  put("fuzz_fix/ff", std::string(64, '\xff'));
  std::cout << "seeds written\n";
  return 0;
}
