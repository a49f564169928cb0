// bpu-lint calibrate: the rule file it writes from (model, log) pairs makes
// compare agree on them, names its evidence, is deterministic and
// idempotent, and bad input leaves nothing written. On the real-format
// Bernoulli2 log (tests/compare/x3_bernoulli2_hb_mapper_rwkv.log) and on
// small graphs with a CSV placement table whose rows are chosen to need an
// op class, a conditional rule, a narrowed database rule or a leftover.
#include <doctest/doctest.h>

#include <filesystem>

#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const std::string kDir = std::string(BPULINT_SOURCE_DIR) + "/tests/compare/";
const std::string kRwkv = kDir + "rwkv_block.onnx";
const std::string kRwkvLog = kDir + "x3_bernoulli2_hb_mapper_rwkv.log";
const std::string kAttn = kDir + "attn_mini.onnx";
const std::string kAttnX5 = kDir + "x5_bayes_e_hb_mapper_attn.log";

const char* kCsvHeader = "Node,NodeType,ON,Threshold,Calibrated Cosine,Quantized Cosine,Output Data Type\n";

// Four Muls on J6E (class bpu): two on 4-D feature maps, two on 3-D ones; each named /m<i>.
std::string four_muls(const TempDir& dir) {
  onnx::ModelProto m = model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,4,4] A, float[1,8,16] B) => (float[1,8,4,4] Y, float[1,8,16] Z) {
      a1 = Mul (A, A)
      Y = Mul (a1, A)
      b1 = Mul (B, B)
      Z = Mul (b1, B)
    }
  )");
  for (int i = 0; i < m.graph().node_size(); ++i) m.mutable_graph()->mutable_node(i)->set_name("/m" + std::to_string(i));
  return save_model(dir, "muls.onnx", m);
}

std::string csv(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = kCsvHeader;
  for (const auto& [node, on] : rows) out += node + ",Mul," + on + ",1.0,0.99,0.99,si8\n";
  return out;
}

}  // namespace

TEST_CASE("calibrate: the Bernoulli2 log agrees on every matched node with the file it writes") {
  TempDir dir;
  const std::string out = dir.path("calibrated.yaml");
  const CommandResult r = run_bpu_lint({"calibrate", kRwkv, kRwkvLog, "-o", out});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("73 of 77 matched nodes agree (3 missed, 1 wrong, 0 unknown); with the file: 77 of 77") !=
        std::string::npos);
  const std::string yaml = read_file(out);
  // Relu and Sqrt ran on the CPU wherever they appear; BPU1421 is narrowed for the one BPU Mul.
  CHECK(yaml.find("extends: bernoulli2") != std::string::npos);
  CHECK(yaml.find("  - class: cpu\n    ops: [Relu]\n    status: verified\n") != std::string::npos);
  CHECK(yaml.find("  - class: cpu\n    ops: [Sqrt]\n    status: verified\n") != std::string::npos);
  CHECK(yaml.find("  - id: BPU1421\n") != std::string::npos);
  CHECK(yaml.find("when: \"not (") != std::string::npos);
  // Provenance: the log, its lines, the toolchain versions.
  CHECK(yaml.find("x3_bernoulli2_hb_mapper_rwkv.log lines 26, 88 (hbdk 3.46.4, horizon_nn 0.18.2, hb_mapper 1.18.2, "
                  "march bernoulli2)") != std::string::npos);

  // Valid, and compare with it agrees on 100%.
  CHECK(run_bpu_lint({"rules", "validate", out}).exit_code == 0);
  const CommandResult with = run_bpu_lint({"compare", kRwkv, kRwkvLog, "--rules", out});
  CHECK(with.exit_code == 0);
  CHECK(with.out.find("77 matched nodes: 77 agree, 0 missed, 0 wrong, 0 unknown") != std::string::npos);

  // Deterministic: the same input gives the same bytes.
  CHECK(run_bpu_lint({"calibrate", kRwkv, kRwkvLog, "-o", out}).exit_code == 0);
  CHECK(read_file(out) == yaml);
  // Idempotent: calibrating again with the file loaded adds nothing.
  const std::string again = dir.path("again.yaml");
  const CommandResult second = run_bpu_lint({"calibrate", kRwkv, kRwkvLog, "--rules", out, "-o", again});
  CHECK(second.exit_code == 0);
  const std::string added = read_file(again);
  CHECK(added.find("\nops:") == std::string::npos);
  CHECK(added.find("\nrules:") == std::string::npos);
  CHECK(added.find("Nothing to calibrate") != std::string::npos);
}

TEST_CASE("calibrate: an op on both sides gets a rule on the fact that separates them, the simplest first") {
  TempDir dir;
  const std::string model = four_muls(dir);
  const std::string log = dir.path("muls.csv");
  write_file(log, csv({{"/m0", "BPU"}, {"/m1", "BPU"}, {"/m2", "CPU"}, {"/m3", "CPU"}}));
  const std::string out = dir.path("cal.yaml");
  const CommandResult r = run_bpu_lint({"calibrate", model, log, "--platform", "j6e", "-o", out});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  const std::string yaml = read_file(out);
  INFO(yaml);
  CHECK(yaml.find("  - id: CAL0001\n    name: mul-calibrated-j6e\n") != std::string::npos);
  CHECK(yaml.find("    ops: [Mul]\n    require: \"input[0].rank == 4\"\n") != std::string::npos);
  CHECK(yaml.find("2 Mul nodes on the CPU, 2 nodes on the BPU side: ") != std::string::npos);
  CHECK(yaml.find("\nops:") == std::string::npos);  // Mul is a BPU op on J6E already
  const CommandResult with = run_bpu_lint({"compare", model, log, "--platform", "j6e", "--rules", out});
  CHECK(with.out.find("4 matched nodes: 4 agree") != std::string::npos);

  // Two facts when no one fact does: the 4-D Mul that reads a model input twice stays on the BPU.
  write_file(log, csv({{"/m0", "BPU"}, {"/m1", "CPU"}, {"/m2", "CPU"}, {"/m3", "CPU"}}));
  const CommandResult two = run_bpu_lint({"calibrate", model, log, "--platform", "j6e", "-o", out});
  INFO(two.out << two.err);
  CHECK(two.exit_code == 0);
  const std::string yaml2 = read_file(out);
  INFO(yaml2);
  // One fact separates nothing here; two do: read a model input, and of rank 4.
  CHECK(yaml2.find("require: \"input[0].producer == '' and input[0].rank == 4\"") != std::string::npos);
  CHECK(run_bpu_lint({"compare", model, log, "--platform", "j6e", "--rules", out}).exit_code == 0);
}

TEST_CASE("calibrate: nodes no fact separates are left, listed in the file, and the exit code says so") {
  TempDir dir;
  onnx::ModelProto m = model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,4,4] A) => (float[1,8,4,4] Y, float[1,8,4,4] Z) {
      Y = Mul (A, A)
      Z = Mul (A, A)
    }
  )");
  m.mutable_graph()->mutable_node(0)->set_name("/twin0");
  m.mutable_graph()->mutable_node(1)->set_name("/twin1");
  const std::string model = save_model(dir, "twins.onnx", m);
  const std::string log = dir.path("twins.csv");
  write_file(log, csv({{"/twin0", "BPU"}, {"/twin1", "CPU"}}));
  const std::string out = dir.path("cal.yaml");
  const CommandResult r = run_bpu_lint({"calibrate", model, log, "--platform", "j6e", "-o", out});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("left for you (1") != std::string::npos);
  const std::string yaml = read_file(out);
  CHECK(yaml.find("#   /twin1 (Mul), " + log + " line 3: CPU; no fact separates the 1 CPU node of Mul from its 1 BPU node") !=
        std::string::npos);
  CHECK(run_bpu_lint({"rules", "validate", out}).exit_code == 0);
}

TEST_CASE("calibrate: pairs of one platform, and bad input is one line, exit 2, nothing written") {
  TempDir dir;
  const std::string out = dir.path("cal.yaml");
  auto refused = [&](const std::vector<std::string>& args, const std::string& message) {
    const CommandResult r = run_bpu_lint(args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(count(r.err, "\n") == 1);
    CHECK_FALSE(std::filesystem::exists(out));
  };
  refused({"calibrate", kRwkv, "-o", out}, "calibrate takes pairs: MODEL LOG [MODEL LOG ...] (got 1 path)");
  refused({"calibrate", kRwkv, kRwkvLog, kAttn, kAttnX5, "-o", out},
          "is a bayes-e log, the ones before it bernoulli2; one rule file calibrates one platform");
  refused({"calibrate", kRwkv, dir.path("missing.log"), "-o", out}, "missing.log: error: cannot open: No such file or directory");
  write_file(dir.path("garbage.onnx"), "not a model");
  refused({"calibrate", dir.path("garbage.onnx"), kRwkvLog, "-o", out}, "garbage.onnx: error:");
  refused({"calibrate", kRwkv, kRwkvLog, "--platform", "nope", "-o", out}, "unknown platform or march 'nope' (known: ");
  // A log of another march is judged on --platform, and calibrate says so.
  const CommandResult other = run_bpu_lint({"calibrate", kAttn, kAttnX5, "--platform", "j6e", "-o", dir.path("other.yaml")});
  CHECK(other.out.find("note: " + kAttnX5 + " is for march bayes-e, the rules for j6e (--platform)") != std::string::npos);
  // The output is never an input: not a log, not a --rules file.
  const std::string log_copy = dir.path("copy.log");
  write_file(log_copy, read_file(kRwkvLog));
  const CommandResult as_log = run_bpu_lint({"calibrate", kRwkv, log_copy, "-o", log_copy});
  CHECK(as_log.exit_code == 2);
  CHECK(as_log.err.find("is also an input (a model or log)") != std::string::npos);
  CHECK(read_file(log_copy) == read_file(kRwkvLog));
}

TEST_CASE("calibrate: hb_compile's node_info CSV and hbdk4's advice JSON teach what the printed table does") {
  TempDir dir;
  const std::string model = four_muls(dir);
  // The same placement three ways: the CSV a team keeps, `<prefix>_node_info.csv` (quoted data
  // types, as hb_compile writes it) and `<prefix>_advice.json` keyed by each node's first output
  // tensor (a1, Y, b1, Z; one as <tensor>_quantized), with hbdk4's backends.
  write_file(dir.path("table.csv"), csv({{"/m0", "BPU"}, {"/m1", "BPU"}, {"/m2", "CPU"}, {"/m3", "CPU"}}));
  write_file(dir.path("m_node_info.csv"), std::string(kCsvHeader) +
                                              "/m0,Mul,VPU+BPU,1.0,0.99,0.99,\"f32,si16\"\n/m1,Mul,BPU,1.0,0.99,0.99,si8\n"
                                              "/m2,Mul,CPU,1.0,0.99,0.99,f32\n/m3,Mul,JIT,1.0,0.99,0.99,f32\n");
  write_file(dir.path("m_advice.json"),
             R"([{"tensor": "a1_quantized", "op_type": "Mul", "backend": "Vpu"}, {"tensor": "Y", "op_type": "Mul", "backend": "bpu"},
                 {"tensor": "b1", "op_type": "Mul", "backend": "external_cpu"}, {"tensor": "Z", "op_type": "Mul", "backend": "external_jit"}])");
  std::vector<std::string> rules;
  for (const char* log : {"table.csv", "m_node_info.csv", "m_advice.json"}) {
    const std::string out = dir.path(std::string(log) + ".yaml");
    const CommandResult r = run_bpu_lint({"calibrate", model, dir.path(log), "--platform", "j6e", "-o", out});
    INFO(log << ": " << r.out << r.err);
    CHECK(r.exit_code == 0);
    const std::string yaml = read_file(out);
    INFO(yaml);
    CHECK(yaml.find("    ops: [Mul]\n    require: \"input[0].rank == 4\"\n") != std::string::npos);
    // The rule, without its source line (which names the log file).
    const size_t begin = yaml.find("rules:\n");
    REQUIRE(begin != std::string::npos);
    const size_t source = yaml.find("    source: ", begin);
    rules.push_back(yaml.substr(begin, source - begin));
  }
  CHECK(rules[1] == rules[0]);
  CHECK(rules[2] == rules[0]);
}
