// A Horizon compile configuration as input: the YAML a team already keeps
// for `hb_mapper makertbin` (Bayes, Bayes-e, Bernoulli2) or `hb_compile`
// (Nash). bpu-lint reads the model, the march and the input shapes from it
// and ignores everything else (it is Horizon's file, with many more keys).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace bpulint {

// What the config says of one node: hb_mapper's and hb_compile's
// model_parameters.node_info ({"<node>": {'ON': 'BPU', 'InputType': 'int8',
// 'OutputType': 'int8'}}) and run_on_cpu / run_on_bpu ('a;b' or a list);
// node_info wins over run_on_*.
struct HbNodeConfig {
  std::string on;                       // "BPU", "CPU" or "" (not set)
  std::string input_type, output_type;  // "int8", "int16", "float16", ... or ""
  std::string from;                     // where `on` was set: "node_info", "run_on_cpu" or "run_on_bpu"
  std::string float_type() const;       // "float16"/"float32" when an input or output type is float, else ""
};

struct HbConfig {
  std::string path;   // the YAML file
  std::string text;   // its text, as read (the config fixes edit a copy of it)
  std::string model;  // model_parameters.onnx_model, resolved against the YAML's folder; "" when absent
  std::string march;  // model_parameters.march; "" when absent
  // input_parameters.input_name / input_shape, ';'-separated lists; the name
  // "" pins the model's only input (a config that leaves input_name empty).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  std::vector<std::string> input_order;  // input names as listed, for messages
  std::map<std::string, HbNodeConfig> nodes;  // by node name
};

// Reads `text` as the configuration found at `path`. False with a one-line
// "path:line:col: problem" for YAML errors, a section or key of the wrong
// kind, a shape that is not DIMxDIMx..., or name and shape lists of
// different lengths.
bool parse_hb_config(const std::string& text, const std::string& path, HbConfig& out, std::string& error);
bool load_hb_config(const std::string& path, HbConfig& out, std::string& error);

// "march nash-e, input shapes images=1x3x640x640; state_in=5x1024"
std::string hb_config_summary(const HbConfig& config);

}  // namespace bpulint
