#include "test_util.h"

#include "bpulint/engine/evaluate.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <onnx/defs/parser.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace bpulint::test {

bool json_valid(const std::string& text, std::string* error) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    return !parsed.is_discarded();
  } catch (const nlohmann::json::exception& e) {
    if (error != nullptr) *error = e.what();
    return false;
  }
}

namespace {

// Fixtures write graph outputs as `float[] Y` (no shape) to stay short, but
// ONNX's checker, which bpu-lint runs on every model, requires a declared
// shape: give them the shape the fact walk infers, as an exporter would.
// Outputs nothing can be inferred for keep no shape (and fail the checker).
void declare_output_shapes(onnx::ModelProto& model) {
  bool missing = false;
  for (const auto& o : model.graph().output()) {
    missing = missing || (o.type().has_tensor_type() && !o.type().tensor_type().has_shape());
  }
  if (!missing) return;
  LoadedModel loaded;
  loaded.path = "<fixture>";
  loaded.model = &model;
  ModelFacts facts;
  std::string error;
  if (!extract_facts(loaded, {}, facts, error)) return;
  std::map<std::string, const onnx::TypeProto*> inferred;
  for (const auto& n : facts.nodes) {
    if (n.graph_id != 0) continue;
    for (const auto& t : n.outputs) {
      if (t.type != nullptr && t.type->has_tensor_type() && t.type->tensor_type().has_shape()) {
        inferred[std::string(t.name)] = t.type;
      }
    }
  }
  for (auto& o : *model.mutable_graph()->mutable_output()) {
    auto it = inferred.find(o.name());
    if (o.type().has_tensor_type() && !o.type().tensor_type().has_shape() && it != inferred.end()) {
      *o.mutable_type() = *it->second;
    }
  }
}

}  // namespace

onnx::ModelProto model_from_text(const std::string& text) {
  onnx::ModelProto model;
  const auto status = onnx::OnnxParser::Parse(model, text.c_str());
  INFO(status.ErrorMessage());
  REQUIRE(status.IsOK());
  declare_output_shapes(model);
  return model;
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  dir_ = (std::filesystem::temp_directory_path() /
          ("bpulint-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++)))
             .string();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string save_model(const TempDir& dir, const std::string& name, const onnx::ModelProto& model) {
  const std::string path = dir.path(name);
  write_file(path, model.SerializeAsString());
  return path;
}

const RuleDatabase& database() {
  static const RuleDatabase db = [] {
    RuleDatabase d;
    std::string error;
    if (!load_default_rule_database("", d, error)) FAIL("built-in rule database: " << error);
    return d;
  }();
  return db;
}

const Platform& platform(const std::string& name) {
  const Platform* p = database().find(name);
  REQUIRE(p != nullptr);
  return *p;
}

ModelReport lint_model(const std::string& path, const Platform& platform, const FactOptions& options) {
  return lint(path, ModelPlan::defaults(platform, options));
}

ModelReport lint_unchecked(const std::string& path, const std::string& platform_name) {
  ModelReport r;
  r.path = path;
  r.loaded = std::make_unique<LoadedModel>();
  if (!load_model(path, *r.loaded, r.error) || !extract_facts(*r.loaded, {}, r.facts, r.error)) return r;
  const Platform& p = platform(platform_name);
  r.diagnostics = evaluate(r.facts, p);
  r.placement = place_nodes(r.facts, p, r.diagnostics);
  r.summary = summarize(r.facts, r.placement, r.diagnostics);
  r.fix_plans = plan_fixes(r.facts, r.diagnostics, p);
  r.ok = true;
  return r;
}

ModelReport lint_text(const std::string& text, const std::string& platform_name, const FactOptions& options) {
  TempDir dir;
  const std::string path = save_model(dir, "model.onnx", model_from_text(text));
  ModelReport r = lint_model(path, platform(platform_name), options);
  INFO(r.error);
  REQUIRE(r.ok);
  return r;
}

std::vector<std::string> failed_rules(const ModelReport& report) {
  std::vector<std::string> ids;
  for (const auto& d : report.diagnostics) {
    if (d.outcome == Outcome::Fail) ids.push_back(d.rule->id);
  }
  return ids;
}

std::vector<std::string> unknown_rules(const ModelReport& report) {
  std::vector<std::string> ids;
  for (const auto& d : report.diagnostics) {
    if (d.outcome == Outcome::Unknown) ids.push_back(d.rule->id);
  }
  return ids;
}

int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<float>& values, bool raw) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  if (raw) {
    std::string bytes(values.size() * 4, '\0');
    if (!values.empty()) std::memcpy(&bytes[0], values.data(), bytes.size());  // test hosts are little-endian
    t.set_raw_data(std::move(bytes));
  } else {
    t.mutable_float_data()->Add(values.begin(), values.end());
  }
  return t;
}

std::vector<float> random_floats(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(dist(rng));
  return out;
}

onnx::TensorProto random_float_tensor(const std::string& name, const std::vector<int64_t>& dims, unsigned seed) {
  std::mt19937 rng(seed);
  return float_tensor(name, dims, random_floats(element_count(dims), rng));
}

int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

std::string example_model() { return std::string(BPULINT_SOURCE_DIR) + "/examples/case_study.onnx"; }

std::string save_conv_topk(const TempDir& dir) {
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17], producer_name: "split-test">
g (float[1,16,16,16] x) => (float[1,32,16,16] feat, float[1,10] scores, int64[1,10] indices, int64[4,N] where) {
  feat = Conv <pads = [1, 1, 1, 1]> (x, W, B)
  k = Constant <value = int64[1] {10}> ()
  flat = Flatten <axis = 1> (feat)
  scores, indices = TopK <axis = 1> (flat, k)
  hits = Greater (feat, threshold)
  where = NonZero (hits)
}
)");
  std::mt19937 rng(7);
  *m.mutable_graph()->add_initializer() = float_tensor("W", {32, 16, 3, 3}, random_floats(32 * 16 * 3 * 3, rng), true);
  *m.mutable_graph()->add_initializer() = random_float_tensor("B", {32}, 8);
  *m.mutable_graph()->add_initializer() = float_tensor("threshold", {}, {0.5f});
  auto* meta = m.add_metadata_props();
  meta->set_key("origin");
  meta->set_value("host_split_test");
  return save_model(dir, "conv_topk.onnx", m);
}

namespace {
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

CommandResult run_bpu_lint(const std::vector<std::string>& args, const std::string& stdin_file,
                           const std::string& env) {
  TempDir dir;
  std::string cmd = (env.empty() ? "" : "env " + env + " ") + shell_quote(BPULINT_BINARY);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(dir.path("out")) + " 2>" + shell_quote(dir.path("err")) + " <" + shell_quote(stdin_file);
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = read_file(dir.path("out"));
  r.err = read_file(dir.path("err"));
  return r;
}

const NodeFacts& WalkedModel::node(const std::string& output) const {
  for (const auto& n : facts.nodes) {
    if (!n.outputs.empty() && n.outputs[0].name == output) return n;
  }
  FAIL("no node writes " << output);
  return facts.nodes.front();
}

const NodeFacts& WalkedModel::first(const std::string& op) const {
  for (const auto& n : facts.nodes) {
    if (n.op_type == op) return n;
  }
  FAIL("no " << op << " node");
  return facts.nodes.front();
}

WalkedModel walk_model_text(const std::string& text, const FactOptions& options) {
  TempDir dir;
  WalkedModel w;
  std::string error;
  REQUIRE(load_model(save_model(dir, "m.onnx", model_from_text(text)), *w.loaded, error));
  REQUIRE(extract_facts(*w.loaded, options, w.facts, error));
  return w;
}

std::string shape_text(const TensorFacts& t) {
  if (t.type == nullptr || !t.type->has_tensor_type() || !t.type->tensor_type().has_shape()) return "-";
  std::string out;
  for (const auto& d : t.type->tensor_type().shape().dim()) {
    out += out.empty() ? "[" : ", ";
    out += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
  }
  return out.empty() ? "[]" : out + "]";
}

}  // namespace bpulint::test
