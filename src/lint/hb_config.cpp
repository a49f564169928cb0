#include "bpulint/lint/hb_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

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

}  // namespace

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
  return parse_hb_config(text, path, out, error);
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
