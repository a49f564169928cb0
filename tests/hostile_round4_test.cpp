// Hostile inputs, round 4 (issue 41), in its own cases: what a hostile model
// author or a careless CI does to the files bpu-lint reads beside the model.
#include <sys/stat.h>

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "bpulint/base/input_file.h"
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
  const InputKind tiny{"test file", 16};
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
