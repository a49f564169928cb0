// Hostile inputs, round 4 (issue 41), in its own cases: what a hostile model
// author or a careless CI does to the files bpu-lint reads beside the model.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include "bpulint/base/input_file.h"
#include "bpulint/fix/fix_apply.h"
#include "bpulint/rules/expr.h"
#include "ct3d_model.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

TEST_CASE("round 4: an input file is read as a bounded regular file, whatever the path names") {
  TempDir dir;
  REQUIRE(::mkfifo(dir.path("fifo").c_str(), 0600) == 0);
  write_file(dir.path("ok.yaml"), "platform: j6p\n");
  std::string text, error;
  CHECK(read_input_file(dir.path("ok.yaml"), kConfigFile, text, error));
  CHECK(text == "platform: j6p\n");

  struct Case {
    std::string path;
    std::string error;
  };
  const std::vector<Case> refused = {
      {dir.path("fifo"), "is a FIFO, not a regular file"},  // no writer: a blocking open would wait forever
      {"/dev/zero", "is a character device, not a regular file"},  // endless: once grew until bad_alloc
      {"/dev/urandom", "is a character device, not a regular file"},
      {dir.dir(), "is a folder, not a regular file"},
      {dir.path("missing"), "cannot open: No such file or directory"},
  };
  for (const auto& c : refused) {
    CAPTURE(c.path);
    CHECK_FALSE(read_input_file(c.path, kRuleFile, text, error));
    CHECK(error == c.error);
    CHECK(text.empty());
  }

  // Above its kind's cap: refused from the size alone, before a byte is read.
  const InputKind tiny{"test file", 16, "a test file"};
  write_file(dir.path("big"), std::string(17, 'x'));
  CHECK_FALSE(read_input_file(dir.path("big"), tiny, text, error));
  CHECK(error == "is larger than a test file may be (less than 1 MiB)");
  write_file(dir.path("fits"), std::string(16, 'x'));
  CHECK(read_input_file(dir.path("fits"), tiny, text, error));
  CHECK(text.size() == 16);
}

TEST_CASE("round 4: a FIFO, a device or a folder as any input file is one line and exit 2, never a hang") {
  TempDir dir;
  REQUIRE(::mkfifo(dir.path("fifo").c_str(), 0600) == 0);
  const std::string model = example_model();
  const std::string out = dir.path("out.json");
  // Every option that names a file bpu-lint reads whole, and the logs of compare and calibrate.
  const std::vector<std::vector<std::string>> commands = {
      {model, "--platform", "j6p", "--rules", "@"},
      {model, "--platform", "j6p", "--config", "@"},
      {model, "--platform", "j6p", "--baseline", "@"},
      {model, "--platform", "j6p", "--hb-config", "@"},
      {"rules", "validate", "@"},
      {"compare", model, "@"},
      {"calibrate", model, "@", "-o", out},
  };
  for (const std::string& bad : {dir.path("fifo"), std::string("/dev/zero"), std::string("/dev/urandom")}) {
    for (auto args : commands) {
      for (auto& a : args)
        if (a == "@") a = bad;
      CAPTURE(args);
      const CommandResult r = run_bpu_lint(args);
      CHECK(r.exit_code == 2);
      CHECK(count(r.err, "\n") == 1);
      CHECK(r.err.find(bad + ": ") != std::string::npos);
      CHECK(r.err.find("not a regular file") != std::string::npos);
      CHECK(r.out.empty());
    }
  }
  struct stat st {};
  CHECK(::stat(out.c_str(), &st) != 0);  // calibrate wrote nothing
}

namespace {

// A float initializer of zeros (empty: dims only, for an external payload).
onnx::TensorProto zero_floats(const std::string& name, const std::vector<int64_t>& dims, bool with_data) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  size_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= static_cast<size_t>(d);
  }
  if (with_data) t.set_raw_data(std::string(4 * n, '\0'));
  return t;
}

// A ConvTranspose3d (W 8x4x2x2x2) whose weights are in "w.data" beside it:
// the run reads that file (--fix copies it), a lint only knows its name.
std::string model_with_external_weights(const TempDir& dir) {
  models::Ct3dModel layer;
  layer.strides = {2, 2, 2};  // kernel == stride: a layer --fix rewrites
  onnx::ModelProto m = models::ct3d_model(
      layer, [](const std::string& name, const std::vector<int64_t>& dims) { return zero_floats(name, dims, false); });
  models::make_external(m, "w.data", "0", "1024");
  std::string weights;
  for (int i = 0; i < 256; ++i) weights += std::string("\x00\x00\x80\x3f", 4);  // 1.0f
  write_file(dir.path("w.data"), weights);
  return save_model(dir, "m.onnx", m);
}

}  // namespace

TEST_CASE("round 4: no output replaces a file the run reads, nor another output, by any name") {
  TempDir dir;
  const std::string model = model_with_external_weights(dir);
  const std::string weights = read_file(dir.path("w.data"));
  write_file(dir.path("config.yaml"), "platform: j6p\n");
  write_file(dir.path("rules.yaml"), read_file(dir.path("config.yaml")));  // only its identity matters here
  REQUIRE(::symlink("config.yaml", dir.path("config.link").c_str()) == 0);
  REQUIRE(::link(dir.path("config.yaml").c_str(), dir.path("config.hard").c_str()) == 0);
  REQUIRE(run_bpu_lint({model, "--write-baseline", dir.path("base.yaml")}).exit_code != 2);
  const std::string baseline = read_file(dir.path("base.yaml"));

  struct Case {
    std::vector<std::string> args;
    std::string message;  // both roles
  };
  const std::string w = dir.path("w.data"), out = dir.path("out.onnx");
  const std::vector<Case> cases = {
      // Onto the weights: the lint never opens them, the model names them.
      {{"-o", w}, "is both the external data of " + model + " and the report (-o)"},
      {{"--write-baseline", w}, "and the baseline (--write-baseline)"},
      {{"--pytorch-snippet", w}, "and the PyTorch snippet (--pytorch-snippet)"},
      {{"--fix", "--fixed-model", w}, "and the fixed model (--fix)"},
      // Onto a file read beside the model, by its name, a symlink or a hard link.
      {{"--config", dir.path("config.yaml"), "-o", dir.path("config.yaml")}, "is both the config and the report (-o)"},
      {{"--config", dir.path("config.yaml"), "-o", dir.path("config.link")}, "is both the config and the report (-o)"},
      {{"--config", dir.path("config.yaml"), "-o", dir.path("config.hard")}, "is both the config and the report (-o)"},
      {{"--baseline", dir.path("base.yaml"), "-o", dir.path("base.yaml")}, "is both the baseline (--baseline) and the report (-o)"},
      // Two outputs on one file.
      {{"--fix", "--fixed-model", out, "-o", out}, "is both the fixed model (--fix) and the report (-o)"},
      {{"--fix", "--fixed-model", out, "--write-baseline", out}, "is both the fixed model (--fix) and the baseline (--write-baseline)"},
      {{"-o", dir.path("r.json"), "--write-baseline", dir.path("r.json")}, "is both the baseline (--write-baseline) and the report (-o)"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {model, "--platform", "j6p"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CAPTURE(args);
    const CommandResult r = run_bpu_lint(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(count(r.err, "error:") == 1);  // one clash, one line
    CHECK(read_file(w) == weights);
    CHECK(read_file(dir.path("config.yaml")) == "platform: j6p\n");
    CHECK(read_file(dir.path("base.yaml")) == baseline);
    CHECK_FALSE(std::filesystem::exists(out));
    CHECK_FALSE(std::filesystem::exists(dir.path("r.json")));
  }
  // The one write onto a read that is meant: --write-baseline refreshing the --baseline it read.
  const CommandResult refresh =
      run_bpu_lint({model, "--baseline", dir.path("base.yaml"), "--write-baseline", dir.path("base.yaml")});
  CHECK(refresh.exit_code != 2);
  CHECK(read_file(w) == weights);
}

TEST_CASE("round 4: a weights file swapped for a symlink out of the folder while --fix runs: no outside byte, ever") {
  TempDir outside, dir;
  const std::string model = model_with_external_weights(dir);
  write_file(outside.path("secret"), std::string(1024, '\x42'));  // 48.56f, never a weight of the model
  REQUIRE(::link(dir.path("w.data").c_str(), dir.path("w.real").c_str()) == 0);

  // Swaps w.data between the real file and a symlink to the secret, each by
  // an atomic rename, as fast as it can, while the fixes run.
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    for (unsigned i = 0; !stop; ++i) {
      const std::string next = dir.path("next");
      std::remove(next.c_str());
      if (i % 2 == 0) (void)::symlink(outside.path("secret").c_str(), next.c_str());
      else (void)::link(dir.path("w.real").c_str(), next.c_str());
      (void)std::rename(next.c_str(), dir.path("w.data").c_str());
    }
  });
  int written = 0, refused = 0;
  for (int run = 0; run < 1000; ++run) {
    const ModelReport r = lint_model(model, platform("j6p"));
    if (!r.ok || r.fix_plans.empty()) continue;
    const std::string out = dir.path("fixed.onnx");
    const FixRun fixed = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", out);
    if (!fixed.written) {
      ++refused;
      continue;
    }
    ++written;
    const std::string bytes = read_file(out);
    REQUIRE_MESSAGE(bytes.find("\x42\x42\x42\x42") == std::string::npos, "run " << run << " copied outside bytes");
    std::remove(out.c_str());
  }
  stop = true;
  swapper.join();
  MESSAGE(written << " fixed models written, " << refused << " refused, none with an outside byte");
  CHECK(written > 0);  // the race was run, not only refused
}

TEST_CASE("round 4: a rule expression of nested quantifiers stops at the step limit, naming the rule") {
  // 2^40 evaluations if run out: it never finished before the limit.
  const std::string nested = "all(a in range(0, 1048576): all(b in range(0, 1048576): a + b >= 0))";
  ExprError err;
  const ExprPtr e = parse_expr(nested, &err);
  REQUIRE(e);
  const Value v = eval(*e, Value::of_record({}));
  REQUIRE(v.is_unknown());
  CHECK(v.as_string().find("evaluation steps") != std::string::npos);
  // One level over a range of a hundred thousand still runs to its answer.
  const ExprPtr one = parse_expr("all(a in range(0, 100000): a >= 0)", &err);
  REQUIRE(one);
  CHECK(eval(*one, Value::of_record({})).as_bool());

  // From the command line: the lint ends, the finding says which rule could not be checked.
  TempDir dir;
  write_file(dir.path("slow.yaml"), "schema_version: 1\nextends: j6p\nrules:\n  - id: TEAM0001\n    name: team-slow\n"
                                    "    summary: \"A pathological rule.\"\n    ops: [ConvTranspose]\n"
                                    "    require: \"" + nested + "\"\n    severity: error\n    effect: cpu_fallback\n"
                                    "    message: \"slow\"\n    status: inferred\n    source: \"test\"\n");
  // One ConvTranspose: each evaluation runs to the limit (seconds under the sanitizers).
  models::Ct3dModel layer;
  onnx::ModelProto one_layer = models::ct3d_model(
      layer, [](const std::string& name, const std::vector<int64_t>& dims) { return zero_floats(name, dims, true); });
  const CommandResult r = run_bpu_lint({save_model(dir, "one.onnx", one_layer), "--platform", "j6p", "--rules",
                                        dir.path("slow.yaml"), "--show-unverified"});
  CHECK(r.exit_code != 2);
  CHECK(r.out.find("cannot verify TEAM0001") != std::string::npos);
  CHECK(r.out.find("evaluation steps") != std::string::npos);
}

TEST_CASE("round 4: an unreadable folder in a walk is reported, one line, and the exit is 2") {
  // Root reads every folder: the walk runs as nobody (setpriv), from a copy of
  // the binary that nobody may run.
  if (::geteuid() != 0 || std::system("command -v setpriv >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: needs root and setpriv to run the walk as another user");
    return;
  }
  TempDir dir;
  std::filesystem::permissions(dir.dir(), std::filesystem::perms(0755));
  std::filesystem::copy_file(BPULINT_BINARY, dir.path("bpu-lint"));
  std::filesystem::permissions(dir.path("bpu-lint"), std::filesystem::perms(0755));
  std::filesystem::create_directories(dir.path("models/locked"));
  std::filesystem::permissions(dir.path("models"), std::filesystem::perms(0755));
  std::filesystem::copy_file(example_model(), dir.path("models/locked/hidden.onnx"));
  std::filesystem::permissions(dir.path("models/locked"), std::filesystem::perms(0700));

  const auto walk = [&] {
    const std::string cmd = "cd / && setpriv --reuid=65534 --regid=65534 --clear-groups " + dir.path("bpu-lint") + " " +
                            dir.path("models") + " >" + dir.path("out") + " 2>" + dir.path("err");
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  // Nothing else there: before, exit 0 without a word.
  CHECK(walk() == 2);
  std::string err = read_file(dir.path("err"));
  CHECK(err == dir.path("models/locked") + ": error: cannot read the folder: Permission denied\n");

  // Beside a model that can be linted: that one is linted, the folder still reported, exit 2.
  std::filesystem::copy_file(example_model(), dir.path("models/open.onnx"));
  std::filesystem::permissions(dir.path("models/open.onnx"), std::filesystem::perms(0644));
  CHECK(walk() == 2);
  err = read_file(dir.path("err"));
  CHECK(count(err, "cannot read the folder") == 1);
  CHECK(read_file(dir.path("out")).find("open.onnx") != std::string::npos);

  // An ignore file nobody may read: said, not skipped (what it leaves out would be linted).
  std::filesystem::remove_all(dir.path("models/locked"));
  write_file(dir.path("models/.gitignore"), "open.onnx\n");
  std::filesystem::permissions(dir.path("models/.gitignore"), std::filesystem::perms(0600));
  CHECK(walk() == 2);
  CHECK(read_file(dir.path("err")) == dir.path("models/.gitignore") + ": error: cannot open: Permission denied (an ignore file)\n");
}

TEST_CASE("round 4: a waiver written from the text report never moves to another node when one is inserted upstream") {
  TempDir dir;
  const std::string head = "<ir_version: 8, opset_import: [\"\" : 17]>\n";
  const std::string layer = "  A = ConvTranspose <strides = [1, 2, 2]> (X, W)\n  Y = Relu (A)\n}\n";
  const std::string model = dir.path("m.onnx");
  const auto save = [&](const std::string& upstream, const std::string& outputs) {
    save_model(dir, "m.onnx",
               model_from_text(head + "g (float[1,4,3,3,3] X, float[4,2,5,2,2] W) => (" + outputs + ") {\n" +
                               upstream + layer));
  };
  save("", "float[] Y");
  const CommandResult before = run_bpu_lint({model, "--isolated"});
  REQUIRE(before.exit_code == 1);
  REQUIRE(count(before.out, "error:") == 1);
  // What the text report shows for the unnamed node: its position, and the identity a waiver names.
  CHECK(before.out.find("ConvTranspose 'ConvTranspose_0'") != std::string::npos);
  CHECK(before.out.find("node #0 of graph g, opset 17; unnamed, identity g/ConvTranspose:A") != std::string::npos);
  // An unnamed ConvTranspose of its own inserted upstream takes the position ConvTranspose_0.
  save("  Z = ConvTranspose <strides = [1, 2, 2]> (X, W)\n", "float[] Y, float[] Z");

  // By position (what the text showed first): waives nothing, never the inserted node, and says why.
  write_file(dir.path("by_position.yaml"),
             "waivers:\n  - rule: BPU1101\n    node: ConvTranspose_0\n    reason: reviewed\n");
  const CommandResult position = run_bpu_lint({model, "--config", dir.path("by_position.yaml")});
  CHECK(position.exit_code == 1);
  CHECK(count(position.out, "BPU1101]") == 2);  // neither ConvTranspose is waived
  INFO(position.out << position.err);
  const std::string said = position.out + position.err;
  CHECK(said.find("is an unnamed node's position in its graph") != std::string::npos);
  CHECK(said.find("name it by its identity 'g/ConvTranspose:Z'") != std::string::npos);

  // By identity: the original layer stays waived, the inserted one does not.
  write_file(dir.path("by_identity.yaml"),
             "waivers:\n  - rule: BPU1101\n    node: g/ConvTranspose:A\n    reason: reviewed\n");
  const CommandResult identity =
      run_bpu_lint({model, "--config", dir.path("by_identity.yaml"), "--format", "json", "--show-waived"});
  INFO(identity.out);
  CHECK(identity.exit_code == 1);
  const auto report = nlohmann::json::parse(identity.out);
  std::map<std::string, bool> waived;
  for (const auto& d : report["models"][0]["diagnostics"]) {
    if (d["rule"] == "BPU1101") waived[d["node_id"].get<std::string>()] = d.contains("waiver");
  }
  CHECK(waived == std::map<std::string, bool>{{"g/ConvTranspose:A", true}, {"g/ConvTranspose:Z", false}});
}

TEST_CASE("round 4: SIGTERM, SIGINT or SIGHUP while a model is read from standard input leaves no temporary file") {
  for (const char* sig : {"TERM", "INT", "HUP"}) {
    CAPTURE(sig);
    TempDir dir;
    std::filesystem::create_directories(dir.path("tmp"));
    // The writer never finishes: bpu-lint is still spooling when the signal comes.
    const std::string cmd = "cd " + dir.dir() + " && (sleep 2 | TMPDIR=" + dir.path("tmp") + " '" + BPULINT_BINARY +
                            "' - >/dev/null 2>&1 & pid=$!; sleep 0.8; ls -A tmp >during; kill -" + sig +
                            " $pid; wait $pid; ls -A tmp >after)";
    REQUIRE(std::system(cmd.c_str()) == 0);
    CHECK(read_file(dir.path("during")).find("bpu-lint-stdin-") == 0);  // it was spooling
    CHECK(read_file(dir.path("after")).empty());
  }
}

namespace {

// Protobuf wire format by hand: models no ONNX writer would make.
std::string varint(uint64_t n) {
  std::string out;
  for (; n >= 0x80; n >>= 7) out += static_cast<char>((n & 0x7f) | 0x80);
  return out + static_cast<char>(n);
}
std::string field(int number, const std::string& payload) {
  return varint((static_cast<uint64_t>(number) << 3) | 2) + varint(payload.size()) + payload;
}
// ModelProto{ir_version: 8, opset_import{version: 17}, graph{...}}.
std::string wire_model(const std::string& graph) {
  return varint(1 << 3) + varint(8) + field(8, varint(2 << 3) + varint(17)) + field(7, graph);
}

}  // namespace

TEST_CASE("round 4: what costs memory per record is bounded and the bound is said: nodes, inputs, names") {
  TempDir dir;
  struct Case {
    std::string name, bytes, error;
  };
  std::string empty_nodes;  // 2 bytes each on disk, kilobytes each in memory
  for (int i = 0; i <= (1 << 20); ++i) empty_nodes += field(1, "");
  std::string wide = field(2, "y") + field(4, "Sum");
  for (int i = 0; i <= (1 << 16); ++i) wide += field(1, "x");
  const std::vector<Case> cases = {
      {"empty_nodes.onnx", wire_model(empty_nodes + field(2, "g")), "more than 1048576 nodes; bpu-lint reads at most that many"},
      {"wide.onnx", wire_model(field(1, wide) + field(2, "g")), "a node has more than 65536 inputs"},
      {"long_name.onnx",
       wire_model(field(1, field(3, std::string((1 << 20) + 1, 'n')) + field(4, "Relu") + field(1, "x") + field(2, "y")) +
                  field(2, "g")),
       "a node has a name of 1048577 bytes; bpu-lint reads names of at most 1 MiB"},
      {"long_input.onnx",
       wire_model(field(1, field(4, "Relu") + field(1, std::string(3 << 20, 'x')) + field(2, "y")) + field(2, "g")),
       "a node has an input name of 3145728 bytes"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    write_file(dir.path(c.name), c.bytes);
    const CommandResult r = run_bpu_lint({dir.path(c.name), "--platform", "j6p"});
    CHECK(r.exit_code == 2);
    CHECK(count(r.err, "\n") == 1);
    CHECK(r.err.find(c.error) != std::string::npos);
  }
}

TEST_CASE("round 4: --fix copies from any number of external data files, whatever the descriptor limit") {
  TempDir dir;
  models::Ct3dModel layer;
  layer.strides = {2, 2, 2};
  onnx::ModelProto m = models::ct3d_model(
      layer, [](const std::string& name, const std::vector<int64_t>& dims) { return zero_floats(name, dims, true); });
  // 600 unused initializers, one external file each, under a limit of 256 descriptors.
  for (int i = 0; i < 600; ++i) {
    const std::string name = "e" + std::to_string(i);
    write_file(dir.path(name + ".bin"), std::string(16, static_cast<char>(i)));
    onnx::TensorProto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(4);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = t->add_external_data();
    e->set_key("location");
    e->set_value(name + ".bin");
  }
  const std::string model = save_model(dir, "m.onnx", m);
  const std::string cmd = "ulimit -n 256 && '" + std::string(BPULINT_BINARY) + "' " + model + " --platform j6p --fix --fixed-model " +
                          dir.path("out.onnx") + " --external-data >" + dir.path("log") + " 2>&1";
  const int status = std::system(cmd.c_str());
  INFO(read_file(dir.path("log")));
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(read_file(dir.path("log")).find("wrote " + dir.path("out.onnx")) != std::string::npos);
}

TEST_CASE("round 4: a SIGKILL between writing the weights and the model leaves the old pair, never a mixed one") {
  TempDir dir;
  const std::string model = model_with_external_weights(dir);
  const std::string out = dir.path("out.onnx");
  const std::vector<std::string> fix = {model, "--platform", "j6p", "--fix", "--fixed-model", out, "--external-data"};
  REQUIRE(run_bpu_lint(fix).exit_code == 0);
  const std::string old_model = read_file(out), old_data = read_file(out + ".data");

  // Killed right after the new weights are in place, before the new model is.
  const CommandResult killed = run_bpu_lint(fix, "/dev/null", "BPULINT_TEST_KILL_BETWEEN_COMMITS=1");
  CHECK(killed.exit_code == 128 + 9);
  CHECK(read_file(out) == old_model);         // the old model ...
  CHECK(read_file(out + ".data") == old_data);  // ... with its own weights
  CHECK(run_bpu_lint({out, "--platform", "j6p"}).exit_code == 0);

  // The next run writes the new pair under the other name and removes the old weights.
  REQUIRE(run_bpu_lint(fix).exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(out + ".data"));
  CHECK(read_file(out + ".1.data") == old_data);  // the same weights, the same rewrite
  CHECK(run_bpu_lint({out, "--platform", "j6p"}).exit_code == 0);
}
