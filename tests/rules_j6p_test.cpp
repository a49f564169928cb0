// Each J6P rule fires on a violating node and stays quiet on a compliant one,
// at both edges of its range.
#include <doctest/doctest.h>

#include <algorithm>

#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

std::string head(int opset = 17) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n";
}

bool fires(const ModelReport& r, const std::string& id) {
  const auto ids = failed_rules(r);
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

bool unverified(const ModelReport& r, const std::string& id) {
  const auto ids = unknown_rules(r);
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// A ConvTranspose with weight [4, 2, kernel...] on input [1, 4, 3, 3(, 3)].
std::string conv_transpose(const std::vector<int>& kernel, const std::vector<int>& strides,
                           const std::string& extra_attrs = "") {
  auto dims = [](const std::vector<int>& v) {
    std::string s;
    for (int d : v) s += "," + std::to_string(d);
    return s;
  };
  std::string x = "float[1,4" + std::string(kernel.size() == 3 ? ",3,3,3" : ",3,3") + "]";
  std::string list;
  for (int s : strides) list += (list.empty() ? "" : ",") + std::to_string(s);
  return head() + "g (" + x + " X, float[4,2" + dims(kernel) + "] W) => (float[] Y) {\n  Y = ConvTranspose <strides = [" +
         list + "]" + extra_attrs + "> (X, W)\n}\n";
}

std::string unary(const std::string& op, const std::string& shape, const std::string& attrs = "", int opset = 17) {
  return head(opset) + "g (float" + shape + " X) => (float[] Y) {\n  Y = " + op + (attrs.empty() ? "" : " <" + attrs + ">") +
         " (X)\n}\n";
}

}  // namespace

TEST_CASE("BPU1101 convtranspose3d-kernel-d-range: kernel D from 1 to 2") {
  CHECK_FALSE(fires(lint_text(conv_transpose({1, 2, 2}, {1, 2, 2})), "BPU1101"));
  CHECK_FALSE(fires(lint_text(conv_transpose({2, 2, 2}, {1, 2, 2})), "BPU1101"));
  CHECK(fires(lint_text(conv_transpose({3, 2, 2}, {1, 2, 2})), "BPU1101"));
  const ModelReport r = lint_text(conv_transpose({5, 2, 2}, {5, 2, 2}));
  CHECK(fires(r, "BPU1101"));
  const auto& d = r.diagnostics.front();
  CHECK(d.message == "3-D ConvTranspose kernel D=5 (kernel [5, 2, 2], stride [5, 2, 2]) is outside the BPU range [1, 2]");
  REQUIRE_FALSE(d.facts.empty());
  CHECK(d.facts.back().text == "kernel_shape[0]");
  CHECK(d.facts.back().value.as_int() == 5);
  CHECK(d.fixes == std::vector<std::string>{"convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps"});
  // 2-D ConvTranspose is not 3-D: the rule does not apply.
  CHECK_FALSE(fires(lint_text(conv_transpose({2, 2}, {2, 2})), "BPU1101"));
}

TEST_CASE("BPU1102 convtranspose3d-stride-d: D-stride 1") {
  CHECK_FALSE(fires(lint_text(conv_transpose({2, 2, 2}, {1, 2, 2})), "BPU1102"));
  CHECK(fires(lint_text(conv_transpose({2, 2, 2}, {2, 2, 2})), "BPU1102"));
  const ModelReport two_d = lint_text(conv_transpose({2, 2}, {2, 2}));
  CHECK(failed_rules(two_d).empty());
  CHECK(two_d.summary.cpu == 0);
  CHECK(two_d.summary.bpu == 1);
}

TEST_CASE("unknown kernel gives cannot-verify, never a silent pass") {
  const ModelReport r = lint_text(head() + "g (float[1,4,3,3,3] X, float[?,?,?,?,?] W) => (float[1,?,?,?,?] Y) {\n"
                                           "  Y = ConvTranspose <strides = [2, 2, 2]> (X, W)\n}\n");
  CHECK(unverified(r, "BPU1101"));
  // The weight's rank is known, so the kernel is 3-D and D-stride 2 is decided.
  CHECK(fires(r, "BPU1102"));
  CHECK_FALSE(fires(r, "BPU1101"));
  for (const auto& d : r.diagnostics) {
    if (d.rule->id == "BPU1101") {
      CHECK(d.severity == Severity::Note);
      CHECK(d.message.rfind("cannot verify BPU1101", 0) == 0);
    }
  }
}

TEST_CASE("BPU2001 tensor-rank-limit: rank 10 ok, 11 fails, on BPU ops only") {
  CHECK_FALSE(fires(lint_text(unary("Sigmoid", "[1,1,1,1,1,1,1,1,1,2]")), "BPU2001"));
  CHECK(fires(lint_text(unary("Sigmoid", "[1,1,1,1,1,1,1,1,1,1,2]")), "BPU2001"));
  CHECK_FALSE(fires(lint_text(unary("Relu", "[1,1,1,1,1,1,1,1,1,1,2]")), "BPU2001"));  // folded
  // An attribute named like a fact cannot spoof it: ONNX's checker refuses
  // the model, and the layers below the checker ignore the attribute.
  TempDir dir;
  const std::string spoof = save_model(dir, "spoof.onnx", model_from_text(unary("Sigmoid", "[1,1,1,1,1,1,1,1,1,1,2]", "max_rank = 1")));
  const ModelReport refused = lint_model(spoof, platform("j6p"), {});
  CHECK_FALSE(refused.ok);
  CHECK(refused.error.find("Unrecognized attribute: max_rank") != std::string::npos);
  CHECK(fires(lint_unchecked(spoof), "BPU2001"));
}

TEST_CASE("BPU3001 softmax-axis-size at both edges, old and new opsets") {
  CHECK_FALSE(fires(lint_text(unary("Softmax", "[2,1]")), "BPU3001"));
  CHECK_FALSE(fires(lint_text(unary("Softmax", "[2,65535]")), "BPU3001"));
  CHECK(fires(lint_text(unary("Softmax", "[2,65536]")), "BPU3001"));
  CHECK(fires(lint_text(unary("LogSoftmax", "[65536,2]", "axis = 0")), "BPU3001"));
  // Opset 11 coerces to 2-D: the reduced elements are shape[axis:].
  CHECK_FALSE(fires(lint_text(unary("Softmax", "[1,255,257]", "", 11)), "BPU3001"));
  CHECK(fires(lint_text(unary("Softmax", "[1,256,256]", "", 11)), "BPU3001"));
  CHECK(unverified(lint_text(unary("Softmax", "[2,N]")), "BPU3001"));
}

TEST_CASE("BPU3002 layernorm-reduced-elements") {
  auto ln = [](const std::string& shape, const std::string& scale, int axis) {
    return head() + "g (float" + shape + " X, float" + scale + " S) => (float[] Y) {\n  Y = LayerNormalization <axis = " +
           std::to_string(axis) + "> (X, S)\n}\n";
  };
  CHECK_FALSE(fires(lint_text(ln("[2,65535]", "[65535]", -1)), "BPU3002"));
  CHECK_FALSE(fires(lint_text(ln("[2,1]", "[1]", -1)), "BPU3002"));
  CHECK(fires(lint_text(ln("[2,256,256]", "[256,256]", 1)), "BPU3002"));
}

TEST_CASE("BPU3003 instancenorm-reduced-elements") {
  auto in = [](const std::string& shape) {
    return head() + "g (float" + shape + " X, float[3] S, float[3] B) => (float[] Y) {\n"
                    "  Y = InstanceNormalization (X, S, B)\n}\n";
  };
  CHECK_FALSE(fires(lint_text(in("[1,3,255,257]")), "BPU3003"));
  CHECK_FALSE(fires(lint_text(in("[1,3,1,1]")), "BPU3003"));
  CHECK(fires(lint_text(in("[1,3,256,256]")), "BPU3003"));
}

TEST_CASE("BPU3004 reduce-l1-l2-reduced-elements, with and without axes") {
  CHECK_FALSE(fires(lint_text(unary("ReduceL2", "[1,65535]", "axes = [1]", 13)), "BPU3004"));
  CHECK(fires(lint_text(unary("ReduceL2", "[1,65536]", "axes = [1]", 13)), "BPU3004"));
  CHECK(fires(lint_text(unary("ReduceL1", "[1,65536]", "axes = [-1]", 13)), "BPU3004"));
  CHECK_FALSE(fires(lint_text(unary("ReduceL1", "[1,65535]", "", 13)), "BPU3004"));
  CHECK(fires(lint_text(unary("ReduceL1", "[2,65535]", "", 13)), "BPU3004"));
}

TEST_CASE("BPU3004 at opset 18 reads axes from the constant second input") {
  auto reduce = [](const std::string& shape, const std::string& axes) {
    return "<ir_version: 8, opset_import: [\"\" : 18]>\ng (float" + shape + " X) => (float[N,M] Y) {\n"
           "  A = Constant <value = int64[1] {" + axes + "}> ()\n  Y = ReduceL1 (X, A)\n}\n";
  };
  CHECK_FALSE(fires(lint_text(reduce("[1,65535]", "1")), "BPU3004"));
  CHECK(fires(lint_text(reduce("[1,65536]", "1")), "BPU3004"));
  CHECK_FALSE(fires(lint_text(reduce("[70000,2]", "1")), "BPU3004"));
  const ModelReport dynamic = lint_text("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                                        "g (float[1,65536] X, int64[1] A) => (float[N,M] Y) {\n  Y = ReduceL1 (X, A)\n}\n");
  CHECK(unverified(dynamic, "BPU3004"));
}

TEST_CASE("an axis past the rank is unknown, not a silent pass") {
  CHECK(unverified(lint_text(unary("Softmax", "[2,3]", "axis = 5", 11)), "BPU3001"));
}

TEST_CASE("BPU3005 argmax-axis-size is a derived note") {
  CHECK_FALSE(fires(lint_text(unary("ArgMax", "[1,32767]", "axis = 1")), "BPU3005"));
  const ModelReport r = lint_text(unary("ArgMin", "[1,32768]", "axis = 1"));
  CHECK(fires(r, "BPU3005"));
  CHECK(r.summary.warnings == 0);
  CHECK(r.summary.errors == 0);
  CHECK(r.summary.notes == 2);  // the hint, and ArgMin's unknown J6P placement
}

TEST_CASE("BPU4001 rnn-dim-limit") {
  auto lstm = [](int seq) {
    return head() + "g (float[" + std::to_string(seq) + ",1,4] X, float[1,32,4] W, float[1,32,8] R) => (float[] Y) {\n"
                    "  Y = LSTM <hidden_size = 8> (X, W, R)\n}\n";
  };
  CHECK_FALSE(fires(lint_text(lstm(2097151)), "BPU4001"));
  CHECK(fires(lint_text(lstm(2097152)), "BPU4001"));
  auto with_bias = [](int hidden) {
    const std::string h = std::to_string(hidden), h4 = std::to_string(4 * hidden), h8 = std::to_string(8 * hidden);
    return head() + "g (float[2,1,4] X, float[1," + h4 + ",4] W, float[1," + h4 + "," + h + "] R, float[1," + h8 +
           "] B) => (float[] Y) {\n  Y = LSTM <hidden_size = " + h + "> (X, W, R, B)\n}\n";
  };
  CHECK_FALSE(fires(lint_text(with_bias(262143)), "BPU4001"));  // B dim 2097144
  CHECK(fires(lint_text(with_bias(262144)), "BPU4001"));        // B dim 2097152, W 1048576
}

TEST_CASE("BPU9001/BPU9002 model input and output counts at 256 and 257") {
  auto model = [](int inputs, int outputs) {
    std::string ins, outs, body;
    for (int i = 0; i < inputs; ++i) ins += (i ? ", " : "") + std::string("float[1] I") + std::to_string(i);
    for (int o = 0; o < outputs; ++o) {
      outs += (o ? ", " : "") + std::string("float[1] O") + std::to_string(o);
      body += "  O" + std::to_string(o) + " = Relu (I0)\n";
    }
    return head() + "g (" + ins + ") => (" + outs + ") {\n" + body + "}\n";
  };
  CHECK_FALSE(fires(lint_text(model(256, 1)), "BPU9001"));
  CHECK(fires(lint_text(model(257, 1)), "BPU9001"));
  CHECK_FALSE(fires(lint_text(model(1, 256)), "BPU9002"));
  CHECK(fires(lint_text(model(1, 257)), "BPU9002"));
}

TEST_CASE("BPU9003 model-io-names-unique") {
  CHECK_FALSE(fires(lint_text(unary("Relu", "[2]")), "BPU9003"));
  const ModelReport r = lint_text(head() + "g (float[2] X) => (float[2] X) {\n}\n");
  CHECK(fires(r, "BPU9003"));
}

TEST_CASE("BPU9006 model-io-element-types-nash-p: float16 is a nash-p interface type") {
  CHECK_FALSE(fires(lint_text(unary("Relu", "[2]")), "BPU9006"));
  CHECK_FALSE(fires(lint_text(head() + "g (int8[2] X) => (int8[2] Y) {\n  Y = Relu (X)\n}\n"), "BPU9006"));
  const ModelReport f16 = lint_text(head() + "g (float16[2] X) => (float16[2] Y) {\n  Y = Relu (X)\n}\n");
  CHECK_FALSE(fires(f16, "BPU9006"));
  CHECK_FALSE(fires(f16, "BPU9004"));  // the J6E/M rule is not a J6P rule
  CHECK(fires(lint_text(head() + "g (double[2] X) => (double[2] Y) {\n  Y = Relu (X)\n}\n"), "BPU9006"));
}

TEST_CASE("ops outside the database are unknown, custom domains too") {
  const ModelReport r = lint_text(head() + "g (float[2] X) => (float[2] Y) {\n  Y = Neg (X)\n}\n");
  CHECK(unverified(r, "BPU0001"));
  CHECK(r.summary.unknown == 1);
  // Custom domains: once per op type, however many nodes use it.
  const ModelReport c = lint_text("<ir_version: 8, opset_import: [\"\" : 17, \"com.acme\" : 1]>\n"
                                  "g (float[2] X) => (float[2] Z) {\n  Y = com.acme.Magic (X)\n"
                                  "  Z = com.acme.Magic (Y)\n}\n");
  CHECK(unknown_rules(c) == std::vector<std::string>{"BPU0001"});
  CHECK(c.diagnostics.back().message.find("com.acme::Magic (2 nodes in the model)") != std::string::npos);
  CHECK(c.summary.unknown == 2);
}

TEST_CASE("CPU islands: connected CPU nodes are one round trip") {
  const std::string w = "float[4,4,2,2,2] W";
  const ModelReport chained = lint_text(head() + "g (float[1,4,2,2,2] X, " + w + ") => (float[] Z) {\n"
                                                 "  Y = ConvTranspose <strides = [2,2,2]> (X, W)\n"
                                                 "  Z = ConvTranspose <strides = [2,2,2]> (Y, W)\n}\n");
  CHECK(chained.summary.cpu == 2);
  CHECK(chained.summary.cpu_islands == 1);
  const ModelReport split = lint_text(head() + "g (float[1,4,2,2,2] X, " + w + ") => (float[] Z) {\n"
                                               "  Y = ConvTranspose <strides = [2,2,2]> (X, W)\n"
                                               "  A = Add (Y, Y)\n"
                                               "  Z = ConvTranspose <strides = [2,2,2]> (A, W)\n}\n");
  CHECK(split.summary.cpu == 2);
  CHECK(split.summary.bpu == 1);
  CHECK(split.summary.cpu_islands == 2);
}
