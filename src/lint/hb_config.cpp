#include "bpulint/lint/hb_config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <sstream>

#include "bpulint/base/input_file.h"
#include "bpulint/engine/facts.h"
#include "bpulint/rules/yaml_reader.h"

namespace bpulint {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return {};
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// 'input; state_in' or a YAML list: the items, trimmed; an empty string is no item.
std::vector<std::string> items(const FileReader& reader, const YAML::Node& node, const std::string& what) {
  std::vector<std::string> out;
  if (!node || node.IsNull()) return out;
  if (node.IsSequence()) {
    for (const auto& item : node) out.push_back(trim(reader.scalar(item, what + " entry")));
    return out;
  }
  const std::string text = reader.scalar(node, what);
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ';')) out.push_back(trim(part));
  if (out.size() == 1 && out[0].empty()) out.clear();
  return out;
}

const YAML::Node section(const FileReader& reader, const YAML::Node& root, const char* name) {
  const YAML::Node node = root[name];
  if (node && !node.IsNull() && !node.IsMap()) reader.fail(node, std::string(name) + " must be a mapping");
  return node;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// run_on_cpu / run_on_bpu: the nodes they name.
void read_run_on(const FileReader& reader, const YAML::Node& model, const char* key, const char* on,
                 std::map<std::string, HbNodeConfig>& nodes) {
  if (!model) return;
  for (const auto& name : items(reader, model[key], key)) {
    if (name.empty()) continue;
    nodes[name].on = on;
    nodes[name].from = key;
  }
}

// node_info: a mapping, or a string holding one (as some configs quote it).
void read_node_info(const FileReader& reader, const YAML::Node& model, std::map<std::string, HbNodeConfig>& nodes) {
  if (!model || !model["node_info"] || model["node_info"].IsNull()) return;
  YAML::Node info = model["node_info"];
  if (info.IsScalar()) {
    const std::string text = info.as<std::string>();
    if (trim(text).empty()) return;
    try {
      info = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      reader.fail(model["node_info"], "node_info is not a mapping of node names: " + yaml_message(e.msg));
    }
  }
  if (!info.IsMap()) reader.fail(model["node_info"], "node_info must map node names to {ON, InputType, OutputType}");
  for (const auto& entry : info) {
    const std::string name = trim(reader.scalar(entry.first, "node_info node name"));
    if (name.empty()) continue;  // names no node, as an empty run_on_cpu item
    if (!entry.second.IsMap()) reader.fail(model["node_info"], "node_info '" + name + "' must be a mapping");
    HbNodeConfig& node = nodes[name];
    // Horizon's own file: keys other than these three are left alone.
    for (const auto& field : entry.second) {
      const std::string key = reader.scalar(field.first, "node_info key");
      const std::string value = trim(reader.scalar(field.second, "node_info " + key));
      if (key == "ON") {
        node.on = upper(value);
        if (node.on != "BPU" && node.on != "CPU") {
          reader.fail(field.second, "node_info '" + name + "': ON must be BPU or CPU, not '" + value + "'");
        }
        node.from = "node_info";
      } else if (key == "InputType") {
        node.input_type = value;
      } else if (key == "OutputType") {
        node.output_type = value;
      }
    }
  }
}

}  // namespace

std::string HbNodeConfig::float_type() const {
  for (const std::string* t : {&input_type, &output_type}) {
    if (*t == "float16" || *t == "float32" || *t == "float") return *t;
  }
  return {};
}

bool parse_hb_config(const std::string& text, const std::string& path, HbConfig& out, std::string& error) {
  out = HbConfig{};
  out.path = path;
  try {
    const YAML::Node root = YAML::Load(text);
    FileReader reader(path);
    if (!root.IsMap()) reader.fail(root, "not a Horizon compile config: the file is not a YAML mapping");
    const YAML::Node model = section(reader, root, "model_parameters");
    const YAML::Node inputs = section(reader, root, "input_parameters");
    if (!model && !inputs) {
      reader.fail(root, "not a Horizon compile config: no model_parameters or input_parameters section");
    }
    if (model && model["onnx_model"] && !model["onnx_model"].IsNull()) {
      const std::string onnx = trim(reader.scalar(model["onnx_model"], "onnx_model"));
      const std::filesystem::path p(onnx);
      const std::filesystem::path folder = std::filesystem::path(path).parent_path();
      out.model = onnx.empty() || p.is_absolute() || folder.empty() ? onnx : (folder / p).string();
    }
    if (model && model["march"] && !model["march"].IsNull()) out.march = trim(reader.scalar(model["march"], "march"));
    read_run_on(reader, model, "run_on_cpu", "CPU", out.nodes);
    read_run_on(reader, model, "run_on_bpu", "BPU", out.nodes);
    read_node_info(reader, model, out.nodes);  // last: it wins
    if (inputs) {
      const std::vector<std::string> names = items(reader, inputs["input_name"], "input_name");
      const std::vector<std::string> shapes = items(reader, inputs["input_shape"], "input_shape");
      if (!names.empty() && !shapes.empty() && names.size() != shapes.size()) {
        reader.fail(inputs["input_shape"], "input_name lists " + std::to_string(names.size()) + " inputs but input_shape " +
                                               std::to_string(shapes.size()) + " shapes");
      }
      if (names.empty() && shapes.size() > 1) {
        reader.fail(inputs["input_shape"], "input_shape lists " + std::to_string(shapes.size()) +
                                               " shapes but input_name names no input");
      }
      for (size_t i = 0; i < shapes.size(); ++i) {
        std::vector<int64_t> dims;
        std::string why;
        if (!parse_dims(shapes[i], dims, why)) reader.fail(inputs["input_shape"], "input_shape: " + why);
        const std::string name = names.empty() ? "" : names[i];
        if (!out.input_shapes.emplace(name, dims).second) {
          reader.fail(inputs["input_name"], "input_name lists '" + name + "' twice");
        }
        out.input_order.push_back(name);
      }
    }
    return true;
  } catch (const LoadError& e) {
    error = e.where.str() + ": " + yaml_message(e.message);
  } catch (const YAML::Exception& e) {
    error = SourceLocation{path, e.mark.line + 1, e.mark.column + 1}.str() + ": YAML syntax error: " + yaml_message(e.msg);
  }
  return false;
}

bool load_hb_config(const std::string& path, HbConfig& out, std::string& error) {
  std::string text;
  if (!read_input_file(path, kHbConfigFile, text, error)) {
    error = path + ": " + error;
    return false;
  }
  if (!parse_hb_config(text, path, out, error)) return false;
  out.text = std::move(text);
  return true;
}

std::string hb_config_summary(const HbConfig& c) {
  std::string s = c.march.empty() ? "no march" : "march " + c.march;
  if (!c.input_order.empty()) {
    s += ", input shapes ";
    for (size_t i = 0; i < c.input_order.size(); ++i) {
      const auto& name = c.input_order[i];
      std::string dims;
      for (int64_t d : c.input_shapes.at(name)) dims += (dims.empty() ? "" : "x") + std::to_string(d);
      s += (i ? "; " : "") + (name.empty() ? std::string("(the only input)") : name) + "=" + dims;
    }
  }
  return s;
}

}  // namespace bpulint
