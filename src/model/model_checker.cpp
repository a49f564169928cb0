#include "bpulint/model/model_checker.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <exception>
#include <unordered_map>
#include <unordered_set>

#include "bpulint/base/name_table.h"

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

// A quick "yes" for the common graph, or "ask ONNX": every check ONNX 1.12's
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
    if (onnx::checker::check_is_experimental_op(node.op_type())) return false;  // ONNX warns on stderr
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
