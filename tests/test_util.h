// Shared helpers for the test suite: fixture models from the ONNX text
// format, temporary folders, and running the real bpu-lint binary.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bpulint/lint/lint.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint::test {

// Whether `text` is one strict JSON document (UTF-8 strings, paired
// surrogates), by nlohmann's parser; `error` gets its message when not.
bool json_valid(const std::string& text, std::string* error = nullptr);

// Parses ONNX text syntax (onnx/defs/parser.h); fails the test on a syntax error.
onnx::ModelProto model_from_text(const std::string& text);

// A fresh folder under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);
std::string save_model(const TempDir& dir, const std::string& name, const onnx::ModelProto& model);

// The built-in database (loaded once).
const RuleDatabase& database();
const Platform& platform(const std::string& name);
// For a literal: no temporary string, so GCC 14's -Wdangling-reference has nothing to suspect.
inline const Platform& platform(const char* name) { return platform(std::string(name)); }

// lint() with every rule at its own level and nothing waived: what the CLI
// does for a model without a configuration.
ModelReport lint_model(const std::string& path, const Platform& platform, const FactOptions& options = {});

// Lints a text-syntax model on a platform; returns the report.
ModelReport lint_text(const std::string& text, const std::string& platform_name = "j6p",
                      const FactOptions& options = {});

// The pipeline below the ONNX checker (load, facts, evaluate, placement,
// fix plans), as the fuzz targets drive it: the layers behind the gate must
// stay safe, and keep their promises, on graphs the checker would refuse.
ModelReport lint_unchecked(const std::string& path, const std::string& platform_name = "j6p");

// Rule ids of failed (not unknown) diagnostics, in output order.
std::vector<std::string> failed_rules(const ModelReport& report);
std::vector<std::string> unknown_rules(const ModelReport& report);

// Elements a tensor of `dims` holds.
int64_t element_count(const std::vector<int64_t>& dims);

// A float32 tensor `name` of `dims` holding `values`, as given even when they
// do not fill the dims, in raw_data (little-endian) or in float_data.
onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<float>& values, bool raw = false);

// `n` floats uniform in [-1, 1) drawn from `rng`: the tests' random weights.
std::vector<float> random_floats(int64_t n, std::mt19937& rng);

// A float32 tensor of random_floats from a generator seeded with `seed`, in float_data.
onnx::TensorProto random_float_tensor(const std::string& name, const std::vector<int64_t>& dims, unsigned seed);

// Occurrences of `needle` in `haystack` (overlapping ones too).
int count(const std::string& haystack, const std::string& needle);

// The bundled case-study model.
std::string example_model();

// A Conv (a layer: on the BPU) and a post-processing tail on its output:
// Flatten, TopK with k from a Constant, NonZero of a comparison; the Conv's
// output is a graph output too. Saved as <dir>/conv_topk.onnx; the Conv's
// weight (18 KiB) is left on disk by the loader. The host split's fixture.
std::string save_conv_topk(const TempDir& dir);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the bpu-lint binary with arguments (each shell-quoted here), standard
// input from `stdin_file`, and `env` (NAME=value words) set for it.
CommandResult run_bpu_lint(const std::vector<std::string>& args, const std::string& stdin_file = "/dev/null",
                           const std::string& env = "");

// A model in ONNX's text format, loaded and walked: its facts, which point
// into the loaded model (both live here).
struct WalkedModel {
  std::unique_ptr<LoadedModel> loaded = std::make_unique<LoadedModel>();
  ModelFacts facts;
  const ModelFacts* operator->() const { return &facts; }
  // The node writing `output` (the 1.12 text format has no node names).
  const NodeFacts& node(const std::string& output) const;
  // The first node of op type `op`.
  const NodeFacts& first(const std::string& op) const;
};
WalkedModel walk_model_text(const std::string& text, const FactOptions& options = {});

// "[N, 16, 4, 10, 10]": known dims, dim_params by name, ? for unknown; "-" without a shape.
std::string shape_text(const TensorFacts& t);

}  // namespace bpulint::test
