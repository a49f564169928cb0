#include "bpulint/lint/hb_config_writer.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

namespace bpulint {
namespace {


std::string single_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

bool printable_scalar(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

// The existing node_info entries: a mapping, or a string holding one (as
// hb_config.cpp reads it; it has already been checked there).
std::vector<ConfigEdit> read_entries(const YAML::Node& model) {
  std::vector<ConfigEdit> out;
  if (!model || !model.IsMap() || !model["node_info"] || model["node_info"].IsNull()) return out;
  YAML::Node info = model["node_info"];
  if (info.IsScalar()) info = YAML::Load(info.Scalar());
  if (!info.IsMap()) return out;
  for (const auto& entry : info) {
    ConfigEdit e{entry.first.Scalar(), {}};  // an entry as the file has it
    if (entry.second.IsMap()) {
      for (const auto& f : entry.second) {
        if (f.first.IsScalar() && f.second.IsScalar()) e.fields.emplace_back(f.first.Scalar(), f.second.Scalar());
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool blank_or_comment(const std::string& line) {
  const size_t a = line.find_first_not_of(" \t\r");
  return a == std::string::npos || line[a] == '#';
}

// Lines [from, to) without the blank and comment lines at their end (they
// belong to what follows, or to nothing).
size_t trim_end(const std::vector<std::string>& lines, size_t from, size_t to) {
  while (to > from + 1 && blank_or_comment(lines[to - 1])) --to;
  return to;
}

// The line after the last line of the value of `key` in `map`: the next
// key's line, or `end` for the last key.
size_t value_end(const YAML::Node& map, const std::string& key, size_t end) {
  bool found = false;
  for (const auto& kv : map) {
    if (found) return static_cast<size_t>(kv.first.Mark().line);
    found = kv.first.IsScalar() && kv.first.Scalar() == key;
  }
  return end;
}

size_t key_line(const YAML::Node& map, const std::string& key, int& column) {
  for (const auto& kv : map) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) {
      column = kv.first.Mark().column;
      return static_cast<size_t>(kv.first.Mark().line);
    }
  }
  return std::string::npos;
}

std::vector<std::string> render_block(const std::vector<ConfigEdit>& entries, int indent, std::string& error) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::vector<std::string> out = {pad + "node_info:"};
  for (const ConfigEdit& e : entries) {
    std::string fields;
    for (const auto& [key, value] : e.fields) {
      if (!printable_scalar(key) || !printable_scalar(value)) {
        error = "node_info '" + e.node + "' holds a control character";
        return {};
      }
      fields += (fields.empty() ? "" : ", ") + single_quoted(key) + ": " + single_quoted(value);
    }
    out.push_back(pad + "  " + yaml_double_quoted(e.node) + ": {" + fields + "}");
  }
  return out;
}

// Everything but model_parameters.node_info, as YAML text: what must not change.
std::string without_node_info(const std::string& text) {
  YAML::Node root = YAML::Clone(YAML::Load(text));
  if (root.IsMap() && root["model_parameters"]) {
    YAML::Node model = root["model_parameters"];
    if (model.IsMap()) model.remove("node_info");
    // A section the fix created, or one left empty: as absent.
    if (model.IsNull() || (model.IsMap() && model.size() == 0)) root.remove("model_parameters");
  }
  YAML::Emitter e;
  e << root;
  return e.c_str();
}

bool prove(const std::string& before, const std::string& after, const std::string& path,
           const std::vector<ConfigEdit>& edits, std::string& error) {
  HbConfig parsed;
  if (!parse_hb_config(after, path, parsed, error)) {
    error = "the fixed config does not re-read: " + error;
    return false;
  }
  std::map<std::pair<std::string, std::string>, std::string> wanted;  // (node, field) -> value; a later edit wins
  for (const ConfigEdit& edit : edits) {
    for (const auto& [key, value] : edit.fields) wanted[{edit.node, key}] = value;
  }
  for (const auto& [at, value] : wanted) {
    const auto& [node, key] = at;
    auto it = parsed.nodes.find(node);
    const std::string* got = it == parsed.nodes.end()  ? nullptr
                             : key == "ON"             ? &it->second.on
                             : key == "InputType"      ? &it->second.input_type
                             : key == "OutputType"     ? &it->second.output_type
                                                       : nullptr;
    if (got == nullptr || *got != value) {
      error = "the fixed config does not read back node_info '" + node + "' " + key + ": " + value;
      return false;
    }
  }
  if (without_node_info(before) != without_node_info(after)) {
    error = "the fixed config changed more than node_info";
    return false;
  }
  return true;
}

}  // namespace

ConfigNodes config_nodes(const HbConfig& config) {
  ConfigNodes out;
  for (const auto& [name, node] : config.nodes) out[name] = {node.on, node.input_type, node.output_type};
  return out;
}

std::string default_fixed_config_path(const std::string& config_path, const std::string& folder) {
  const std::filesystem::path p(config_path);
  const std::string name = p.stem().string() + ".fixed.yaml";
  return folder.empty() ? name : (std::filesystem::path(folder) / name).string();
}

bool fix_hb_config_text(const std::string& text, const std::string& path, const std::vector<ConfigEdit>& edits,
                        std::string& out, std::string& error) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap() || root.Style() == YAML::EmitterStyle::Flow) {
      error = "the config is not a block-style YAML mapping; add the node_info lines by hand";
      return false;
    }
    const YAML::Node model = root["model_parameters"];
    if (model && !model.IsNull() && (!model.IsMap() || model.Style() == YAML::EmitterStyle::Flow)) {
      error = "model_parameters is written as a flow mapping; add the node_info lines by hand";
      return false;
    }
    std::vector<ConfigEdit> entries = read_entries(model);
    for (const ConfigEdit& edit : edits) merge_config_edit(entries, edit);
    std::vector<std::string> lines = split_lines(text);
    const bool crlf = text.find("\r\n") != std::string::npos;
    if (crlf) {
      for (auto& l : lines) {
        if (!l.empty() && l.back() == '\r') l.pop_back();
      }
    }
    int column = 0;
    const size_t model_line = key_line(root, "model_parameters", column);
    size_t from = 0, to = 0;  // the lines replaced (from == to: inserted at from)
    int indent = 2;
    if (model_line == std::string::npos) {  // no section: a new one at the end
      while (!lines.empty() && lines.back().empty()) lines.pop_back();
      lines.push_back("model_parameters:");
      from = to = lines.size();
    } else if (!model || model.IsNull() || model.size() == 0) {  // "model_parameters:" with nothing under it
      indent = column + 2;
      from = to = model_line + 1;
    } else {
      const size_t info_line = key_line(model, "node_info", indent);
      indent = model.begin()->first.Mark().column;  // as the section's keys are indented
      const size_t section_end = trim_end(lines, model_line, value_end(root, "model_parameters", lines.size()));
      if (info_line != std::string::npos) {
        from = info_line;
        to = trim_end(lines, info_line, std::min(value_end(model, "node_info", section_end), section_end));
      } else {
        from = to = section_end;
      }
    }
    // Marks come from the parser; a line range they cannot make is refused, never cut.
    if (from > lines.size() || to > lines.size() || to < from || indent < 0) {
      error = "cannot place node_info in this layout; add the lines by hand";
      return false;
    }
    const std::vector<std::string> block = render_block(entries, indent, error);
    if (block.empty()) return false;
    lines.erase(lines.begin() + static_cast<long>(from), lines.begin() + static_cast<long>(to));
    lines.insert(lines.begin() + static_cast<long>(from), block.begin(), block.end());
    out.clear();
    for (const auto& l : lines) out += l + (crlf ? "\r\n" : "\n");
    return prove(text, out, path, edits, error);
  } catch (const YAML::Exception& e) {
    error = "cannot edit the config: " + e.msg;
    return false;
  }
}

}  // namespace bpulint
