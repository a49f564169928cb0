#include "bpulint/compare/rule_stub.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "bpulint/rules/expr.h"
#include "bpulint/base/json_writer.h"

namespace bpulint {
namespace {

std::string tensor_text(const Value& t) {
  const Value* present = t.field("present");
  if (present != nullptr && present->kind() == Value::Kind::Bool && !present->as_bool()) return "(omitted)";
  const Value* dtype = t.field("dtype");
  const Value* shape = t.field("shape");
  const Value* is_const = t.field("const");
  std::string out = dtype != nullptr && dtype->kind() == Value::Kind::String ? dtype->as_string() : "?";
  out += " " + (shape != nullptr ? shape->to_string() : std::string("?"));
  if (is_const != nullptr && is_const->kind() == Value::Kind::Bool && is_const->as_bool()) out += " (constant)";
  return out;
}

// The input or output a reason line names ("The input0 of Node(...)"): {"input", 0}.
bool reason_port(const std::string& reason, std::string& port, int& index) {
  for (const char* which : {"input", "output"}) {
    const std::string key = std::string("The ") + which;
    const size_t at = reason.find(key);
    if (at == std::string::npos) continue;
    size_t i = at + key.size();
    if (i < reason.size() && reason[i] == ' ') ++i;  // "input 0" as well as "input0"
    const size_t digits = i;
    while (i < reason.size() && i - digits < 3 && std::isdigit(static_cast<unsigned char>(reason[i])) != 0) ++i;
    if (i == digits) continue;
    port = which;
    index = std::stoi(reason.substr(digits, i - digits));
    return true;
  }
  return false;
}

}  // namespace

// Text from a model or a log inside a YAML comment: one line, valid UTF-8.
std::string comment_text(const std::string& s) {
  std::string out;
  for (unsigned char c : sanitize_utf8(s)) out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  return out;
}

// A YAML double-quoted scalar holding `s` exactly (escapes for '\', '"' and
// control characters).
std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : sanitize_utf8(s)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// "GlobalAveragePool" -> "global-average-pool"; anything but letters and digits separates words.
std::string kebab(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isalnum(c) == 0 || c > 0x7f) {
      if (!out.empty() && out.back() != '-') out += '-';
      continue;
    }
    if (std::isupper(c) != 0 && i > 0 && std::islower(static_cast<unsigned char>(s[i - 1])) != 0 && out.back() != '-') {
      out += '-';
    }
    out += static_cast<char>(std::tolower(c));
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "node" : out;
}

std::string versions_text(const CompileLog* log) {
  if (log == nullptr) return "";
  std::string out;
  for (const auto& v : log->versions) out += (out.empty() ? "" : ", ") + v.tool + " " + v.version;
  if (!log->marches.empty()) out += (out.empty() ? "march " : ", march ") + log->marches.front();
  return out;
}

// An op type as a YAML flow item: bare when it is an identifier, as rules/*.yaml write them.
std::string op_item(const std::string& op) {
  const bool bare = !op.empty() && std::isalpha(static_cast<unsigned char>(op[0])) != 0 &&
                    std::all_of(op.begin(), op.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
  return bare ? op : yaml_quote(op);
}

std::vector<std::string> readable_facts(const NodeFacts& node, const Platform& platform) {
  const std::string cls = node.domain.empty() ? op_class_name(platform.effective_class(node.op_type)) : "unknown";
  const Value rec = node_record(node, cls);
  std::vector<std::string> lines;
  lines.push_back("op: " + (node.domain.empty() ? "" : node.domain + ".") + node.op_type + " (opset " +
                  std::to_string(node.opset) + "), class " + cls + " on " + platform.name);
  for (const auto& [key, value] : rec.fields()) {
    if (reserved_node_facts().count(key) != 0 || value.is_unknown()) continue;
    lines.push_back(key + ": " + value.to_string());
  }
  for (const char* side : {"input", "output"}) {
    const Value* list = rec.field(side);
    if (list == nullptr || list->kind() != Value::Kind::List) continue;
    for (size_t i = 0; i < list->items().size(); ++i) {
      lines.push_back(std::string(side) + "[" + std::to_string(i) + "]: " + tensor_text(list->items()[i]));
    }
  }
  return lines;
}

std::string reason_dtype(const std::string& reason) {
  static const std::string kKey = "data type:";
  const size_t at = reason.find(kKey);
  if (at == std::string::npos) return "";
  size_t i = at + kKey.size();
  while (i < reason.size() && reason[i] == ' ') ++i;
  size_t end = i;
  while (end < reason.size() && std::isalnum(static_cast<unsigned char>(reason[end])) != 0) ++end;
  std::string t = reason.substr(i, end - i);
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // The compilers' spellings (hb_compile: si8, ui8; hb_mapper: float) as rules spell them.
  if (t == "float") return "float32";
  if (t == "half") return "float16";
  if (t.size() > 2 && (t.rfind("si", 0) == 0 || t.rfind("ui", 0) == 0) &&
      std::isdigit(static_cast<unsigned char>(t[2])) != 0) {
    return (t[0] == 's' ? "int" : "uint") + t.substr(2);
  }
  return t.size() <= 16 ? t : "";
}

std::string rule_stub(const StubInput& in) {
  const NodeFacts& node = *in.node;
  const Platform& platform = *in.platform;
  const std::string reason = in.reason != nullptr ? in.reason->text : "";
  const std::string dtype = reason_dtype(reason);
  std::string port = "input";
  int index = -1;
  const bool has_port = !dtype.empty() && reason_port(reason, port, index);

  char id[16];
  std::snprintf(id, sizeof id, "CMP%04d", in.number < 1 ? 1 : (in.number - 1) % 9999 + 1);
  const std::string versions = versions_text(in.compile_log);
  const std::string where = in.log + (in.reason != nullptr ? " line " + std::to_string(in.reason->line)
                                                           : " line " + std::to_string(in.row_line));
  std::ostringstream out;
  out << "# Rule stub from `bpu-lint compare " << comment_text(in.model) << " " << comment_text(in.log) << "`.\n"
      << "# " << comment_text(std::string(node.display_name)) << " (" << comment_text(node.op_type) << "): predicted on the BPU on "
      << platform.name << "; the compiler ran it on the CPU (log line " << in.row_line << ").\n";
  if (!versions.empty()) out << "# Toolchain in the log: " << comment_text(versions) << ".\n";
  if (in.reason != nullptr) out << "# Reason in the log (line " << in.reason->line << "): " << comment_text(reason) << "\n";
  else out << "# The log gives no reason for the CPU placement.\n";
  out << "# Facts of the node:\n";
  for (const auto& line : readable_facts(node, platform)) out << "#   " << comment_text(line) << "\n";

  std::string require, message, summary, name;
  if (!dtype.empty()) {
    const std::string tensor = has_port ? port + "[" + std::to_string(index) + "]" : "";
    require = has_port ? tensor + ".dtype != '" + dtype + "'" : "all(t in input: t.dtype != '" + dtype + "')";
    message = has_port ? "{op} " + port + " " + std::to_string(index) + " is {" + tensor + ".dtype}; the " + platform.name +
                             " compiler runs {op} with " + dtype + " there on the CPU"
                       : "{op} has a " + dtype + " input; the " + platform.name + " compiler runs it on the CPU";
    summary = node.op_type + (has_port ? " " + port + " " + std::to_string(index) : "") + " of type " + dtype +
              " runs on the CPU on " + platform.name + ".";
    name = kebab(node.op_type) + (has_port ? "-" + port + std::to_string(index) : "") + "-not-" + kebab(dtype) + "-" +
           kebab(platform.name);
    // Say whether the condition catches this node as exported: in a float
    // model the data type in the reason is the one the compiler's
    // quantisation chose, which the ONNX file does not carry.
    ExprError err;
    const ExprPtr e = parse_expr(require, &err);
    const std::string cls = node.domain.empty() ? op_class_name(platform.effective_class(node.op_type)) : "unknown";
    const Value v = e ? eval(*e, node_record(node, cls)) : Value::unknown();
    if (v.kind() == Value::Kind::Bool && !v.as_bool()) {
      out << "# This require fails on the node as exported: the rule catches it.\n";
    } else if (v.kind() == Value::Kind::Bool) {
      out << "# This require HOLDS on the node as exported (its ONNX type is not " << dtype << "): " << dtype
          << " is the type the\n# compiler's quantisation chose. The rule catches models that carry " << dtype
          << " there (QAT/QDQ exports);\n# to flag float models too, replace it with a condition on the facts above, "
          << "or \"false\" (always on the CPU).\n";
    } else {
      out << "# Whether this require fails on the node as exported cannot be decided (a fact is unknown).\n";
    }
  } else {
    require = "FILL_IN";
    message = "{op} runs on the CPU on " + platform.name + " (seen in a compile log)";
    summary = node.op_type + " runs on the CPU on " + platform.name + " under a condition to be found.";
    name = kebab(node.op_type) + "-cpu-placement-" + kebab(platform.name);
  }
  const std::string source = "bpu-lint compare: " + where + (versions.empty() ? "" : " (" + versions + ")") + ": " +
                             (reason.empty() ? comment_text(std::string(node.display_name)) + " ran on the CPU" : reason);

  out << "# Check it with `bpu-lint rules validate FILE`, use it with `--rules FILE` (or `rules:` in\n"
      << "# .bpu-lint.yaml) and run compare again; set status: verified once your logs confirm it.\n"
      << "schema_version: 1\n"
      << "extends: " << platform.name << "\n"
      << "rules:\n"
      << "  - id: " << id << "\n"
      << "    name: " << name << "\n"
      << "    summary: " << yaml_quote(summary) << "\n"
      << "    ops: [" << op_item(node.op_type) << "]\n";
  if (!node.domain.empty()) out << "    domain: " << yaml_quote(node.domain) << "\n";
  if (require == "FILL_IN") {
    out << "    # FILL_IN: the condition under which " << comment_text(node.op_type)
        << " stays on the BPU, from the facts above\n"
        << "    # (e.g. \"input[0].rank == 4\"); \"false\" puts every " << comment_text(node.op_type)
        << " on the CPU. The loader refuses FILL_IN.\n";
  }
  out << "    require: " << yaml_quote(require) << "\n"
      << "    severity: error\n"
      << "    effect: cpu_fallback\n"
      << "    message: " << yaml_quote(message) << "\n"
      << "    status: inferred\n"
      << "    source: " << yaml_quote(source) << "\n";
  return out.str();
}

}  // namespace bpulint
