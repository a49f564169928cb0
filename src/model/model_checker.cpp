#include "bpulint/model/model_checker.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <exception>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bpulint/base/name_table.h"
#include "onnx_compat.h"

namespace bpulint {
using onnx::checker::ValidationError;
namespace {

// The checker's messages span lines and end with a context block that names
// the node ("==> Context: Bad node spec for node. Name: conv OpType: Conv").
// One line: the reason, then the node.
std::string one_line(const std::string& what) {
  std::string reason = what, context;
  if (auto at = what.find("==> Context:"); at != std::string::npos) {
    reason = what.substr(0, at);
    context = what.substr(at + 12);
    if (auto name = context.find("Name: "); name != std::string::npos) context = context.substr(name);
    else context.clear();
  }
  auto squash = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      const bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
      if (space) {
        if (!out.empty() && out.back() != ' ') out += ' ';
      } else {
        out += c;
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  std::string line = squash(reason);
  context = squash(context);  // "Name: conv OpType: Conv"
  if (auto op = context.find(" OpType: "); op != std::string::npos && context.compare(0, 6, "Name: ") == 0) {
    line += " (node '" + context.substr(6, op - 6) + "', " + context.substr(op + 9) + ")";
  } else if (!context.empty()) {
    line += " (" + context + ")";
  }
  return line;
}

// A quick "yes" for the common graph, or "ask ONNX": every check ONNX's
// check_graph makes on a graph without subgraphs, sparse initializers or
// removed experimental ops (value infos, initializers, schemas through ONNX's
// own check_node, topological order, SSA), with names in a flat table of
// views into the model. ONNX's driver copies every name into a node-based
// set it grows as it goes: on a 100k-node graph that was half of the
// checker's time. Any failure, or any graph it does not cover, returns false
// and the caller runs ONNX's check_graph, whose verdict and message are the
// ones reported; so this path may only ever be stricter, never more lenient.
// With NameCheck::ByCaller the name tables are left out (check_onnx_model).
bool plain_graph_passes(const onnx::GraphProto& graph, const onnx::checker::CheckerContext& ctx, NameCheck names) {
  if (graph.name().empty() || graph.sparse_initializer_size() > 0) return false;
  for (const auto& node : graph.node()) {
    if (onnx_compat::is_experimental_op(node)) return false;  // ONNX warns on stderr
    for (const auto& attr : node.attribute()) {
      if (attr.has_g() || attr.graphs_size() > 0) return false;  // subgraphs see the outer names
    }
  }
  try {
    for (const auto& vi : graph.input()) onnx::checker::check_value_info(vi, ctx);
    for (const auto& vi : graph.output()) onnx::checker::check_value_info(vi, ctx);
    const onnx::checker::LexicalScopeContext no_subgraphs;  // check_node passes it to subgraphs only
    // Names: single assignment, defined before use; skipped when the caller checked them.
    const bool own_names = names == NameCheck::Here;
    size_t expected = 0;
    if (own_names) {
      expected = static_cast<size_t>(graph.input_size()) + static_cast<size_t>(graph.initializer_size());
      for (const auto& node : graph.node()) expected += static_cast<size_t>(node.output_size());
    }
    NameTable<bool> defined(expected);
    NameTable<bool> initializers(own_names ? static_cast<size_t>(graph.initializer_size()) : 0);
    auto initializer_named = [&](const std::string& name) {
      if (!own_names) return true;
      if (name.empty() || !initializers.insert(name)) return false;
      if (ctx.get_ir_version() <= 3) return defined.contains(name);  // must be a graph input
      defined.insert(name);
      return true;
    };
    auto inputs_defined = [&](const onnx::NodeProto& node) {
      return !own_names || std::all_of(node.input().begin(), node.input().end(),
                                       [&](const std::string& n) { return n.empty() || defined.contains(n); });
    };
    auto outputs_new = [&](const onnx::NodeProto& node) {
      return !own_names || std::all_of(node.output().begin(), node.output().end(),
                                       [&](const std::string& n) { return n.empty() || defined.insert(n); });
    };
    for (const auto& vi : graph.input()) {
      if (own_names && !defined.insert(vi.name())) return false;
    }
    for (const auto& init : graph.initializer()) {
      if (!initializer_named(init.name())) return false;
      onnx::checker::check_tensor(init, ctx);
    }
    for (const auto& node : graph.node()) {
      if (!inputs_defined(node)) return false;
      onnx::checker::check_node(node, ctx, no_subgraphs);
      if (!outputs_new(node)) return false;
    }
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

}  // namespace

namespace {

// One graph of check_structure, with the names of the scopes around it.
class StructureCheck {
 public:
  explicit StructureCheck(std::string& error) : error_(error) {}

  bool graph(const onnx::GraphProto& g, const std::string& where) {
    scopes_.emplace_back();
    const bool ok = graph_body(g, where);
    scopes_.pop_back();
    return ok;
  }

 private:
  bool graph_body(const onnx::GraphProto& g, const std::string& where) {
    for (const auto& vi : g.input()) {
      if (!assign(vi.name(), where, "graph input")) return false;
    }
    const std::unordered_set<std::string> inputs = scopes_.back();
    std::unordered_set<std::string> initializers;
    for (const auto& init : g.initializer()) {
      // An initializer may repeat a graph input's name (IR < 4 requires it), once.
      if (inputs.count(init.name()) != 0 && initializers.insert(init.name()).second) continue;
      if (!assign(init.name(), where, "initializer")) return false;
    }
    for (const auto& node : g.node()) {
      const std::string who = "node '" + node.name() + "' (" + node.op_type() + ")" + where;
      for (const auto& in : node.input()) {
        if (!in.empty() && !defined(in)) {
          error_ = who + " reads '" + in + "', which nothing before it defines";
          return false;
        }
      }
      for (const auto& attr : node.attribute()) {
        if (attr.has_g() && !graph(attr.g(), " in a subgraph of " + who)) return false;
        for (const auto& sub : attr.graphs()) {
          if (!graph(sub, " in a subgraph of " + who)) return false;
        }
      }
      for (const auto& out : node.output()) {
        if (!out.empty() && !assign(out, where, who + " output")) return false;
      }
    }
    for (const auto& vi : g.output()) {
      if (!defined(vi.name())) {
        error_ = "graph output '" + vi.name() + "'" + where + " is not defined by any node, input or initializer";
        return false;
      }
    }
    return true;
  }

  bool defined(const std::string& name) const {
    return std::any_of(scopes_.rbegin(), scopes_.rend(), [&](const auto& s) { return s.count(name) != 0; });
  }

  bool assign(const std::string& name, const std::string& where, const std::string& what) {
    if (name.empty()) {
      error_ = "a " + what + where + " has no name";
      return false;
    }
    if (!scopes_.back().insert(name).second) {
      error_ = "'" + name + "' is assigned twice" + where + " (again as " + what + ")";
      return false;
    }
    return true;
  }

  std::string& error_;
  std::vector<std::unordered_set<std::string>> scopes_;
};

}  // namespace

bool check_structure(const onnx::ModelProto& model, std::string& error) {
  StructureCheck check(error);
  return check.graph(model.graph(), "");
}

const OnnxLibrary& onnx_library() {
  static const OnnxLibrary library = [] {
    OnnxLibrary l;
    l.version = onnx_compat::library_version();
    l.ir_version = onnx::IR_VERSION;
    const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    if (auto it = map.find(onnx::ONNX_DOMAIN); it != map.end()) l.opset = it->second.second;
    return l;
  }();
  return library;
}

std::string checker_cannot_judge(const onnx::ModelProto& model) {
  if (model.ir_version() > onnx::IR_VERSION) {
    return "IR version " + std::to_string(model.ir_version()) + " is newer than the ONNX library's (" +
           std::to_string(onnx::IR_VERSION) + ")";
  }
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& imp : model.opset_import()) {
    const std::string domain = imp.domain() == "ai.onnx" ? "" : imp.domain();
    auto it = map.find(domain);
    if (it != map.end() && imp.version() > it->second.second) {
      return "opset " + std::to_string(imp.version()) + (domain.empty() ? "" : " of " + domain) +
             " is newer than the ONNX library's (" + std::to_string(it->second.second) + ")";
    }
  }
  return {};
}

bool check_onnx_model(const onnx::ModelProto& model, const std::string& model_dir, std::string& error,
                      NameCheck names) {
  try {
    // What onnx::checker::check_model(ModelProto) does, with a model folder
    // for external data (that overload has none).
    if (model.ir_version() <= 0) fail_check("the model has no ir_version");
    std::unordered_set<std::string> keys;
    for (const auto& entry : model.metadata_props()) {
      if (!keys.insert(entry.key()).second) fail_check("duplicate key '", entry.key(), "' in metadata_props");
    }
    std::unordered_map<std::string, int> opsets;
    for (const auto& imp : model.opset_import()) opsets[imp.domain()] = static_cast<int>(imp.version());
    if (model.ir_version() >= 3 && opsets.empty()) fail_check("the model has no opset_import");
    if (model.ir_version() < 3 && !opsets.empty()) {
      fail_check("a model with IR version < 3 cannot have opset_import");
    }
    if (opsets.empty()) opsets[onnx::ONNX_DOMAIN] = 1;
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(static_cast<int>(model.ir_version()));
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(model_dir.empty() ? "." : model_dir);
    onnx::checker::LexicalScopeContext lex;
    if (!plain_graph_passes(model.graph(), ctx, names)) onnx::checker::check_graph(model.graph(), ctx, lex);
    if (model.ir_version() >= 8) onnx::checker::check_model_local_functions(model, ctx, lex);
  } catch (const std::exception& e) {
    error = one_line(e.what());
    return false;
  }
  return true;
}

}  // namespace bpulint
