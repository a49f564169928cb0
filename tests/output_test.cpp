// The output policy of every writer (-o, --write-baseline, --pytorch-snippet,
// --fixed-model and its .data file), end to end with the real binary: "-",
// device nodes, FIFOs, symlinks, permission bits, the input never the output,
// a file-size limit hit mid-write, and --fix interrupted by SIGINT, SIGTERM and
// SIGKILL while it writes a large model.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;
namespace fs = std::filesystem;

extern char** environ;

namespace {

const std::string kExample = example_model();

struct Run {
  int exit_code = -1;  // 128 + signal when killed
  bool timed_out = false;
  std::string out, err;
};

// Starts the binary with stdout/stderr to files; `env` adds NAME=VALUE pairs.
pid_t spawn(const std::vector<std::string>& args, const std::string& cwd, const std::vector<std::string>& env,
            const std::string& out, const std::string& err) {
  std::vector<std::string> argv_s = {BPULINT_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // only async-signal-safe calls until exec
    const int in = open("/dev/null", O_RDONLY);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

int decode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// Runs the binary to the end, or kills it after `timeout_s` (a test never hangs).
Run run(const std::vector<std::string>& args, const std::string& cwd = "", const std::vector<std::string>& env = {},
        int timeout_s = 60) {
  TempDir logs;
  const pid_t pid = spawn(args, cwd, env, logs.path("out"), logs.path("err"));
  Run r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.exit_code = decode(status);
  r.out = read_file(logs.path("out"));
  r.err = read_file(logs.path("err"));
  return r;
}

// A shell line, for `ulimit`; stdout and stderr together, through a pipe (not
// a file, which the limit would cut short).
Run run_shell(const std::string& script) {
  Run r;
  const std::string cmd = "bash -c '" + script + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  r.exit_code = decode(pclose(p));
  return r;
}

std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

struct stat lstat_of(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st;
}

mode_t mode_of(const std::string& path) { return lstat_of(path).st_mode & 07777; }

bool is_root() { return geteuid() == 0; }

// The four writers, each aimed at `target`, and the exit code of a good run
// (the example has findings; its fixed version has none).
struct Writer {
  const char* name;
  std::vector<std::string> (*args)(const std::string& target);
  int exit_code;
  bool model;
};
const Writer kWriters[] = {
    {"-o", [](const std::string& t) { return std::vector<std::string>{kExample, "--format", "json", "-o", t}; }, 1,
     false},
    {"--write-baseline", [](const std::string& t) { return std::vector<std::string>{kExample, "--write-baseline", t}; },
     1, false},
    {"--pytorch-snippet",
     [](const std::string& t) { return std::vector<std::string>{kExample, "--pytorch-snippet", t}; }, 1, false},
    {"--fixed-model",
     [](const std::string& t) { return std::vector<std::string>{kExample, "--fix", "--fixed-model", t}; }, 0, true},
};

// Reads a FIFO from before the writer opens it until the writer closes it.
// Opened non-blocking, so the test never waits on the FIFO itself.
class FifoReader {
 public:
  explicit FifoReader(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_NONBLOCK)) {
    REQUIRE(fd_ >= 0);
    thread_ = std::thread([this] { loop(); });
  }
  ~FifoReader() { stop(); }
  // What was read once the writer closed, or by `timeout_ms`; `closed` says which.
  std::string finish(int timeout_ms, bool& closed) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!done_ && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    closed = done_;
    stop();
    return data_;
  }

 private:
  void loop() {
    while (!stop_ && !done_) {
      pollfd p{fd_, POLLIN, 0};
      // No POLLHUP before a writer has come: a FIFO reports hang-up only once one has gone.
      if (poll(&p, 1, 20) <= 0) continue;
      char buf[65536];
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n > 0) data_.append(buf, static_cast<size_t>(n));
      else if (n == 0) done_ = true;
    }
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_;
  std::atomic<bool> stop_{false}, done_{false};
  std::string data_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("output policy: '-' is standard output for text, never a file named '-', and a model to '-' is refused") {
  TempDir dir;
  const Run json = run({kExample, "--format", "json", "-o", "-"}, dir.dir());
  CHECK(json.exit_code == 1);
  CHECK(json.out.rfind("{\n  \"version\": 1", 0) == 0);
  const Run text = run({kExample, "-o", "-"}, dir.dir());
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("[BPU1101]") != std::string::npos);

  // With the report in a file, a baseline or a snippet may take standard output.
  const Run baseline = run({kExample, "--write-baseline", "-", "-o", "report.txt"}, dir.dir());
  CHECK(baseline.exit_code == 1);
  CHECK(baseline.out.rfind("# bpu-lint baseline", 0) == 0);
  CHECK(read_file(dir.path("report.txt")).find("[BPU1101]") != std::string::npos);
  const Run snippet = run({kExample, "--pytorch-snippet", "-", "-o", "report.txt"}, dir.dir());
  const Run snippet_file = run({kExample, "--pytorch-snippet", "fix.py", "-o", "report2.txt"}, dir.dir());
  CHECK(snippet.exit_code == 1);
  CHECK(snippet.out.find("class ") != std::string::npos);
  CHECK(snippet.out == read_file(dir.path("fix.py")));
  CHECK(entries(dir.dir()) == std::set<std::string>{"report.txt", "report2.txt", "fix.py"});

  // Two documents on one stream are refused before any work.
  for (const std::string writer : {"--write-baseline", "--pytorch-snippet"}) {
    const Run both = run({kExample, writer, "-"}, dir.dir());
    INFO(writer);
    CHECK(both.exit_code == 2);
    CHECK(both.out.empty());
    CHECK(both.err.find("would share standard output") != std::string::npos);
  }
  // A model is never streamed (the re-lint reads it back): to a terminal or a pipe alike.
  const Run model = run({kExample, "--fix", "--fixed-model", "-"}, dir.dir());
  CHECK(model.exit_code == 2);
  CHECK(model.out.empty());
  CHECK(count(model.err, "\n") == 1);
  CHECK(model.err.find("cannot write a model to standard output") != std::string::npos);
  CHECK(entries(dir.dir()).count("-") == 0);
}

TEST_CASE("output policy: a character device stays a device node for every writer, a block device is refused") {
  if (!is_root()) {
    MESSAGE("skipped: mknod needs root");
    return;
  }
  TempDir dir;
  const std::string null_dev = dir.path("null"), full_dev = dir.path("full"), block_dev = dir.path("block");
  REQUIRE(mknod(null_dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);  // what /dev/null is
  REQUIRE(mknod(full_dev.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0);  // /dev/full: every write is ENOSPC
  REQUIRE(mknod(block_dev.c_str(), S_IFBLK | 0600, makedev(7, 200)) == 0);
  auto still_device = [](const std::string& path, mode_t type, unsigned major_no, unsigned minor_no) {
    const struct stat st = lstat_of(path);
    CHECK((st.st_mode & S_IFMT) == type);
    CHECK(major(st.st_rdev) == major_no);
    CHECK(minor(st.st_rdev) == minor_no);
  };
  for (const auto& w : kWriters) {
    INFO(std::string(w.name));
    const Run r = run(w.args(null_dev));
    INFO(r.out << r.err);
    if (w.model) {  // a model goes only to a regular file: refused before any work
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("refusing to write '" + null_dev + "': it is a character device") != std::string::npos);
    } else {
      CHECK(r.exit_code == w.exit_code);
    }
    still_device(null_dev, S_IFCHR, 1, 3);

    // A write that fails (no space left) is one line naming the file, exit 2.
    const Run full = run(w.args(full_dev));
    CHECK(full.exit_code == 2);
    if (!w.model) {
      CHECK(full.err.find(full_dev + ": error: cannot write '" + full_dev + "': No space left on device") !=
            std::string::npos);
    }
    still_device(full_dev, S_IFCHR, 1, 7);

    const Run block = run(w.args(block_dev));
    CHECK(block.exit_code == 2);
    CHECK(block.err.find("refusing to write '" + block_dev + "': it is a block device") != std::string::npos);
    CHECK(count(block.err, "\n") == 1);
    still_device(block_dev, S_IFBLK, 7, 200);
  }
  CHECK(entries(dir.dir()) == std::set<std::string>{"null", "full", "block"});
}

TEST_CASE("output policy: a FIFO is written through when someone reads it, refused at once when nobody does") {
  TempDir dir;
  const std::string fifo = dir.path("fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  for (const auto& w : kWriters) {
    INFO(std::string(w.name));
    {
      FifoReader reader(fifo);
      const Run r = run(w.args(fifo), "", {}, 30);
      bool closed = false;
      const std::string got = reader.finish(w.model ? 300 : 20000, closed);
      INFO(r.out << r.err);
      CHECK(!r.timed_out);
      if (w.model) {  // refused without opening the FIFO
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("refusing to write '" + fifo + "': it is a FIFO") != std::string::npos);
        CHECK(!closed);
        CHECK(got.empty());
      } else {  // the reader gets exactly what a regular file would hold
        CHECK(r.exit_code == w.exit_code);
        CHECK(closed);
        const std::string file = dir.path("regular");
        CHECK(run(w.args(file)).exit_code == w.exit_code);
        CHECK(got == read_file(file));
        CHECK(!got.empty());
        fs::remove(file);
      }
    }
    if (!w.model) {  // nobody reads: an error at once, not a wait
      const auto start = std::chrono::steady_clock::now();
      const Run r = run(w.args(fifo), "", {}, 10);
      const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      CHECK(!r.timed_out);
      CHECK(seconds < 10);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(fifo + ": error: cannot write '" + fifo + "': it is a FIFO and no process is reading it") !=
            std::string::npos);
    }
    CHECK(S_ISFIFO(lstat_of(fifo).st_mode));
  }
  CHECK(entries(dir.dir()) == std::set<std::string>{"fifo"});
}

TEST_CASE("output policy: a symlink is followed, its target is replaced in its own folder and keeps its mode") {
  TempDir dir;
  fs::create_directories(dir.path("real"));
  const std::string link = dir.path("link"), target = dir.path("real/target");
  REQUIRE(symlink("real/target", link.c_str()) == 0);
  struct Case {
    const Writer* writer;
    std::vector<std::string> extra;
  };
  std::vector<Case> cases;
  for (const auto& w : kWriters) cases.push_back({&w, {}});
  cases.push_back({&kWriters[3], {"--external-data"}});
  for (const auto& c : cases) {
    INFO(std::string(c.writer->name) << (c.extra.empty() ? "" : " --external-data"));
    write_file(target, "old contents");
    REQUIRE(chmod(target.c_str(), 0604) == 0);  // unusual bits, so keeping them is no accident
    std::vector<std::string> args = c.writer->args(link);
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Run r = run(args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == c.writer->exit_code);
    CHECK(S_ISLNK(lstat_of(link).st_mode));
    CHECK(fs::read_symlink(link) == "real/target");
    const std::string now = read_file(target);
    CHECK(now != "old contents");
    CHECK(now.size() > 100);
    CHECK(mode_of(target) == 0604);
    CHECK(entries(dir.dir()) == std::set<std::string>{"link", "real"});
    if (!c.extra.empty()) {  // the weights beside the model they belong to, which lints
      CHECK(entries(dir.path("real")) == std::set<std::string>{"target", "target.data"});
      CHECK(fs::file_size(target + ".data") > 700000);
      CHECK(run({link}).exit_code == 0);
      fs::remove(target + ".data");
    }
    CHECK(entries(dir.path("real")) == std::set<std::string>{"target"});
  }

  // A symlink to nothing is refused, and nothing is created through it.
  const std::string dangling = dir.path("dangling");
  REQUIRE(symlink("real/missing", dangling.c_str()) == 0);
  for (const auto& w : kWriters) {
    INFO(std::string(w.name));
    const Run r = run(w.args(dangling));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("refusing to write '" + dangling + "': it is a symlink that does not lead to a file") !=
          std::string::npos);
    CHECK(!fs::exists(dir.path("real/missing")));
  }
}

TEST_CASE("output policy: a new file gets what the umask allows, an existing one keeps its permission bits") {
  TempDir dir;
  for (const auto& w : kWriters) {
    INFO(std::string(w.name));
    const std::string fresh = dir.path(std::string("new") + w.name);
    std::string cmd = "umask 027; exec " + std::string(BPULINT_BINARY);
    for (const auto& a : w.args(fresh)) cmd += " \"" + a + "\"";
    const Run made = run_shell(cmd);
    INFO(made.out);
    CHECK(made.exit_code == w.exit_code);
    CHECK(mode_of(fresh) == 0640);
    REQUIRE(chmod(fresh.c_str(), 0460) == 0);
    CHECK(run(w.args(fresh)).exit_code == w.exit_code);
    CHECK(mode_of(fresh) == 0460);
  }
}

TEST_CASE("output policy: no writer replaces an input model, by its name, a symlink or a hard link") {
  TempDir dir;
  const std::string model = dir.path("model.onnx"), hard = dir.path("hard.onnx"), sym = dir.path("sym.onnx");
  fs::copy_file(kExample, model);
  REQUIRE(link(model.c_str(), hard.c_str()) == 0);
  REQUIRE(symlink("model.onnx", sym.c_str()) == 0);
  const std::string before = read_file(model);
  for (const std::string flag : {"-o", "--write-baseline", "--pytorch-snippet", "--fixed-model"}) {
    for (const auto& target : {model, hard, sym}) {
      INFO(flag << " " << target);
      std::vector<std::string> args = {model, flag, target};
      if (flag == "--fixed-model") args.push_back("--fix");
      const Run r = run(args);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("refusing to overwrite the input model '" + model + "'") != std::string::npos);
      CHECK(count(r.err, "\n") == 1);
    }
  }
  // A model found in a folder is known only when it is read: the read names the clash, nothing is written.
  for (const std::string flag : {"-o", "--write-baseline"}) {  // (a snippet needs exactly one model)
    INFO(flag);
    const Run r = run({dir.dir(), flag, sym});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("is both an input model and the ") != std::string::npos);
  }
  CHECK(read_file(model) == before);
  CHECK(lstat_of(model).st_nlink == 2);
  CHECK(S_ISLNK(lstat_of(sym).st_mode));
  CHECK(entries(dir.dir()) == std::set<std::string>{"model.onnx", "hard.onnx", "sym.onnx"});
}

TEST_CASE("output policy: a write cut short by the file size limit is reported and leaves the old target as it was") {
  TempDir dir;
  struct Case {
    std::string args;  // after the binary
    std::string target;
    int limit_kib;
    std::string env;
  };
  const std::string bin = BPULINT_BINARY;
  const std::string report = dir.path("report.json"), fixed = dir.path("fixed.onnx"), data = fixed + ".data";
  const std::vector<Case> cases = {
      {kExample + " --format json -o " + report, report, 1, ""},
      {kExample + " --fix --fixed-model " + fixed, fixed, 100, ""},
      {kExample + " --fix --external-data --fixed-model " + fixed, data, 100, ""},
      {kExample + " --fix --fixed-model " + fixed, fixed, 100, "BPULINT_NAMED_TEMP_FILES=1 "},
  };
  for (const auto& c : cases) {
    INFO(c.env << c.args);
    for (const auto& f : {report, fixed, data}) write_file(f, "old " + f);
    // The limit applies to bpu-lint only; its output goes through a pipe.
    const Run r = run_shell("ulimit -f " + std::to_string(c.limit_kib) + "; " + c.env + "exec " + bin + " " + c.args);
    INFO(r.out);
    CHECK(r.exit_code == 2);
    CHECK(r.out.find("cannot write '" + c.target + "': File too large") != std::string::npos);
    CHECK(count(r.out, "File too large") == 1);
    for (const auto& f : {report, fixed, data}) CHECK(read_file(f) == "old " + f);
    CHECK(entries(dir.dir()) == std::set<std::string>{"report.json", "fixed.onnx", "fixed.onnx.data"});
  }
}

namespace {

// FNV-1a over 8-byte words: enough to tell a changed model from the same one.
uint64_t file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  uint64_t h = 1469598103934665603ull;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const size_t n = static_cast<size_t>(in.gcount());
    for (size_t i = 0; i < n; i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, buf.data() + i, std::min<size_t>(8, n - i));
      h = (h ^ w) * 1099511628211ull;
    }
  }
  return h;
}

// One small ConvTranspose3d that --fix rewrites (kernel D 5: off the BPU)
// beside a Gemm with dim x dim float weights that the fixed model must copy:
// the write takes long enough to be interrupted, the proof before it does not.
void save_big_model(const std::string& path, int64_t dim) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("big");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  auto weights = [&](const std::string& name, const std::vector<int64_t>& dims) {
    const uint32_t bits = 0x3c3c3c3c;  // 0.0115 everywhere
    float v;
    std::memcpy(&v, &bits, 4);
    const std::vector<float> values(static_cast<size_t>(element_count(dims)), v);
    *g->add_initializer() = float_tensor(name, dims, values, /*raw=*/true);
  };
  auto node = [&](const std::string& op, const std::vector<std::string>& in, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  };
  auto ints = [](onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  };
  value(g->add_input(), "voxels", {1, 8, 2, 3, 3});
  value(g->add_input(), "feat", {1, dim});
  value(g->add_output(), "up", {1, 4, 10, 6, 6});
  value(g->add_output(), "fc", {1, dim});
  weights("up.weight", {8, 4, 5, 2, 2});
  auto* up = node("ConvTranspose", {"voxels", "up.weight"}, "up");
  ints(up, "kernel_shape", {5, 2, 2});
  ints(up, "strides", {5, 2, 2});
  weights("fc.weight", {dim, dim});
  auto* a = node("Gemm", {"feat", "fc.weight"}, "fc")->add_attribute();
  a->set_name("transB");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  std::ofstream out(path, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&out));
}

bool has_o_tmpfile(const std::string& dir) {
  const int fd = open(dir.c_str(), O_TMPFILE | O_WRONLY, 0600);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// A descriptor of `pid` open on a file in `dir` holding between `low` and
// `high` bytes: the output being written. Returns its link text ("" if none).
std::string file_being_written(pid_t pid, const std::string& dir, off_t low, off_t high) {
  std::error_code ec;
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& e : fs::directory_iterator(fds, ec)) {
    const fs::path link = fs::read_symlink(e.path(), ec);
    struct stat st {};
    if (ec || link.string().rfind(dir + "/", 0) != 0 || stat(e.path().c_str(), &st) != 0) continue;
    if (st.st_size >= low && st.st_size <= high) return link.string();
  }
  return "";
}

}  // namespace

TEST_CASE("output policy: --fix interrupted mid-write leaves the input unchanged, no partial output, no temp file") {
  TempDir dir;
  fs::create_directories(dir.path("in"));
  const std::string big = dir.path("in/big.onnx");
  constexpr int64_t kDim = 5120;  // 100 MiB of weights
  save_big_model(big, kDim);
  const uint64_t before = file_hash(big);
  const bool tmpfile = has_o_tmpfile(dir.dir());
  struct Case {
    int sig;
    bool named_temps;  // the fallback for filesystems without O_TMPFILE
    bool old_target;
  };
  const Case cases[] = {
      {SIGINT, false, true}, {SIGTERM, false, false}, {SIGINT, true, true},
      {SIGTERM, true, false}, {SIGKILL, false, false},
  };
  for (const auto& c : cases) {
    INFO("signal " << c.sig << (c.named_temps ? ", named temp files" : "") << (c.old_target ? ", old target" : ""));
    if (!c.named_temps && !tmpfile) {
      MESSAGE("skipped: no O_TMPFILE on " << dir.dir());
      continue;
    }
    const std::string out_dir = dir.path("out"), out = out_dir + "/big.fixed.onnx";
    TempDir logs;
    const std::vector<std::string> env = c.named_temps ? std::vector<std::string>{"BPULINT_NAMED_TEMP_FILES=1"}
                                                       : std::vector<std::string>{};
    // Signal once the temp file holds some weights but not all of them (the
    // output is at least the 100 MiB weight). The poller may not get the CPU
    // while the kernel copies (ctest runs two tests on two cores): a run that
    // ends before it is caught mid-write is tried again, up to five times.
    std::string seen;
    int status = 0;
    for (int attempt = 0; attempt < 5 && seen.empty(); ++attempt) {
      fs::remove_all(out_dir);
      fs::create_directories(out_dir);
      if (c.old_target) write_file(out, "old");
      const pid_t pid = spawn({big, "--fix", "--fixed-model", out}, "", env, logs.path("out"), logs.path("err"));
      bool ended = false;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
      while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
        if (waitpid(pid, &status, WNOHANG) != 0) {
          ended = true;
          break;
        }
        seen = file_being_written(pid, out_dir, 8 << 20, kDim * kDim * 4 - 1);
        if (seen.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!seen.empty()) {
        const std::set<std::string> during = entries(out_dir);  // while it writes
        REQUIRE(kill(pid, c.sig) == 0);
        REQUIRE(waitpid(pid, &status, 0) == pid);
        const bool unnamed = seen.size() > 10 && seen.compare(seen.size() - 10, 10, " (deleted)") == 0;
        CHECK(unnamed == !c.named_temps);  // O_TMPFILE where the filesystem has it
        CHECK(during.size() == (c.old_target ? 1u : 0u) + (c.named_temps ? 1u : 0u));
      } else if (!ended) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
    }
    INFO(read_file(logs.path("out")) << read_file(logs.path("err")));
    REQUIRE(!seen.empty());  // the write was caught in progress
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == c.sig);  // the handler re-raises: the caller sees the signal
    CHECK(entries(out_dir) == (c.old_target ? std::set<std::string>{"big.fixed.onnx"} : std::set<std::string>{}));
    if (c.old_target) CHECK(read_file(out) == "old");
    CHECK(entries(dir.path("in")) == std::set<std::string>{"big.onnx"});
  }
  CHECK(file_hash(big) == before);
}
