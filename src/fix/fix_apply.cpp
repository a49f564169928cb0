#include "bpulint/fix/fix_apply.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_map>
#include <map>
#include <memory>
#include <set>
#include <atomic>
#include <system_error>
#include <thread>

#include "bpulint/fix/convtranspose3d_rewrite.h"
#include "bpulint/model/graph_walk.h"
#include "bpulint/model/model_checker.h"
#include "bpulint/model/model_writer.h"
#include "bpulint/fix/fix_proof.h"
#include "bpulint/fix/quantised_weight.h"

namespace bpulint {
namespace {

// Where a node of the facts lives in the mutable copy of the model.
struct NodeSlot {
  onnx::GraphProto* graph = nullptr;
  int index = 0;
  std::vector<onnx::GraphProto*> scopes;  // this graph, then its enclosing graphs
};

// Slot k is ModelFacts::nodes[k]: the facts' walk order (walk_graph).
std::vector<NodeSlot> collect_slots(onnx::GraphProto& main) {
  std::vector<NodeSlot> out;
  std::vector<onnx::GraphProto*> scopes;  // the graph being walked, then its enclosing graphs
  walk_graph(
      main,
      [&](onnx::GraphProto& g, const auto&, auto&& nodes) {
        scopes.insert(scopes.begin(), &g);
        nodes();
        scopes.erase(scopes.begin());
      },
      [&](onnx::NodeProto&, int i) { out.push_back({scopes.front(), i, scopes}); });
  return out;
}

struct FoundInitializer {
  onnx::GraphProto* graph = nullptr;
  const onnx::TensorProto* tensor = nullptr;
};

FoundInitializer find_initializer(const NodeSlot& slot, const std::string& name) {
  for (onnx::GraphProto* g : slot.scopes) {
    for (const auto& t : g->initializer()) {
      if (t.name() == name) return {g, &t};
    }
  }
  return {};
}

bool is_graph_input(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& v : g.input()) {
    if (v.name() == name) return true;
  }
  return false;
}

// Every name some node, graph output or function reads, anywhere in the model.
void collect_uses(const onnx::GraphProto& main, std::map<std::string, int>& uses) {
  walk_graph(
      main,
      [&](const onnx::GraphProto& g, const auto&, auto&& nodes) {
        for (const auto& o : g.output()) ++uses[o.name()];
        nodes();
      },
      [&](const onnx::NodeProto& n, int) {
        for (const auto& i : n.input()) ++uses[i];
      },
      WalkDepth::All);
}

// A rewrite built for one node, waiting for its proof.
struct Candidate {
  size_t result = 0;  // index into FixRun::results
  NodeSlot slot;
  const NodeFacts* facts = nullptr;
  RewriteInputs in;
  FoundInitializer weight, bias;
  std::unique_ptr<QuantisedWeight> quantised;  // in.quantised points here
  std::vector<FoundInitializer> quantisation;   // the old weight's scale and zero point
  Rewrite rewrite;
};

// Proves every candidate and records the outcome in its result. Proofs are
// independent and read only shared, unchanging data (the model copy, the
// facts, the source file) besides the shared layout proofs (locked), so they
// run on up to 4 threads.
void prove_all(const std::vector<Candidate>& candidates, std::vector<FixResult>& results,
               const TensorBytesReader& reader) {
  LayoutProofs layouts;  // layers of one shape share their layout proof
  auto prove_one = [&](const Candidate& c) {
    FixResult& result = results[c.result];
    ProofRecord proof;
    std::string error;
    result.applied = prove_rewrite(result.fix_id, c.in, c.rewrite, reader, *c.facts,
                                   0x5eed0000u + static_cast<uint64_t>(result.node), proof, error, &layouts);
    if (!result.applied) result.reason = "not proven, so not applied: " + error;
    result.trials = static_cast<int>(proof.input_shapes.size());
    result.seed = proof.seed;
    result.max_abs_error = proof.max_abs_error;
    result.proof_input_shapes = std::move(proof.input_shapes);
  };
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < candidates.size(); i = next++) prove_one(candidates[i]);
  };
  const size_t threads = std::min<size_t>({candidates.size(), std::max(1u, std::thread::hardware_concurrency()), 4});
  std::vector<std::thread> workers;
  try {
    for (size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  } catch (const std::system_error&) {
    // no more threads: the ones started and this one finish the work
  }
  work();
  for (auto& w : workers) w.join();
}

struct Planned {
  NodeSlot slot;
  Rewrite rewrite;
  std::vector<FoundInitializer> replaced;  // old weight and bias (and a quantised weight's scale and zero point)
  std::vector<std::string> weight_nodes;   // a quantised weight's old DequantizeLinear, then QuantizeLinear: outputs
};

bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool has_subgraph(const onnx::NodeProto& n) {
  return std::any_of(n.attribute().begin(), n.attribute().end(), [](const onnx::AttributeProto& a) {
    return a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS;
  });
}

// Removes the nodes of `graph` that wrote the rewritten layers' old weights and
// that nothing reads any more: its DequantizeLinear and QuantizeLinear, then,
// through their inputs, what computed their scale and zero point only for
// them (torch's Identity alias of a shared zero point, a scale computed from
// the weight by Abs -> ReduceMax -> Div -> Clip, the Constants under them).
// Only default-domain nodes without subgraphs in the weight's own chain go;
// a node anything else reads stays. The initializers the removed nodes read
// are added to `inputs`, for the dead-initializer sweep.
bool remove_dead_weight_chain(onnx::GraphProto& graph, const std::vector<std::string>& outputs,
                              std::map<std::string, int>& uses, std::set<std::string>& inputs) {
  std::unordered_map<std::string, int> writer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& o : graph.node(i).output()) writer[o] = i;
  }
  std::vector<std::string> pending(outputs.begin(), outputs.end());
  std::set<int> gone;
  while (!pending.empty()) {
    const std::string value = std::move(pending.back());
    pending.pop_back();
    const auto w = writer.find(value);
    if (w == writer.end() || gone.count(w->second) != 0) continue;
    const onnx::NodeProto& n = graph.node(w->second);
    if (!default_domain(n) || has_subgraph(n) ||
        std::any_of(n.output().begin(), n.output().end(), [&](const std::string& o) { return !o.empty() && uses[o] != 0; })) {
      continue;
    }
    gone.insert(w->second);
    for (const auto& i : n.input()) {
      if (i.empty()) continue;
      --uses[i];
      inputs.insert(i);
      pending.push_back(i);
    }
  }
  if (gone.empty()) return false;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (gone.count(i) == 0) *kept.Add() = std::move(*graph.mutable_node(i));
  }
  graph.mutable_node()->Swap(&kept);
  return true;
}

std::vector<std::pair<onnx::GraphProto*, Rewrite*>> planned_rewrites(std::vector<Planned>& planned) {
  std::vector<std::pair<onnx::GraphProto*, Rewrite*>> out;
  for (auto& p : planned) out.push_back({p.slot.graph, &p.rewrite});
  return out;
}

// Nodes that shared a weight get rewritten weights with the same content;
// keep one initializer per graph and point the later rewrites at it.
void share_identical_initializers(const std::vector<std::pair<onnx::GraphProto*, Rewrite*>>& rewrites) {
  std::map<std::pair<onnx::GraphProto*, std::string>, std::string> first;  // (graph, content) -> name
  for (auto& [graph, rewrite] : rewrites) {
    std::map<std::string, std::string> renamed;
    std::map<std::string, std::string> computed;  // name -> key: its bytes are not there yet
    for (const auto& c : rewrite->computed) computed[c.name] = c.key;
    std::vector<onnx::TensorProto> kept;
    for (auto& t : rewrite->initializers) {
      onnx::TensorProto unnamed = t;
      unnamed.clear_name();
      const auto c = computed.find(t.name());
      const auto key = std::make_pair(graph, (c != computed.end() ? "computed:" + c->second + ":" : std::string()) +
                                                 unnamed.SerializeAsString());
      auto it = first.find(key);
      if (it == first.end()) {
        first.emplace(key, t.name());
        kept.push_back(std::move(t));
      } else {
        renamed[t.name()] = it->second;
      }
    }
    rewrite->initializers = std::move(kept);
    for (auto& n : rewrite->nodes) {
      for (auto& in : *n.mutable_input()) {
        auto r = renamed.find(in);
        if (r != renamed.end()) in = r->second;
      }
    }
  }
}

// The weights left in the source file resolve against the source's folder,
// so the checker runs with that folder as its model dir.
// The initializers of a graph and its subgraphs whose float payload is large.
void large_payloads(onnx::GraphProto& main, std::vector<onnx::TensorProto*>& out) {
  walk_graph(
      main,
      [&](onnx::GraphProto& g, const auto&, auto&& nodes) {
        for (auto& t : *g.mutable_initializer()) {
          if (t.data_type() == onnx::TensorProto::FLOAT && t.raw_data().size() > kInlinePayloadLimit) out.push_back(&t);
        }
        nodes();
      },
      [](onnx::NodeProto&, int) {}, WalkDepth::All);
}

// Strict inference runs on a copy, and never reads float weights: the large
// payloads (inline rewritten weights of conv3d-1x1x1) are moved aside while
// copying instead of being held twice.
bool check_model_validity(onnx::ModelProto& model, const std::string& model_dir, std::string& error) {
  if (!check_onnx_model(model, model_dir, error)) return false;
  try {
    std::vector<onnx::TensorProto*> large;
    large_payloads(*model.mutable_graph(), large);
    std::vector<std::string> aside(large.size());
    for (size_t i = 0; i < large.size(); ++i) large[i]->mutable_raw_data()->swap(aside[i]);
    onnx::ModelProto copy = model;
    for (size_t i = 0; i < large.size(); ++i) large[i]->mutable_raw_data()->swap(aside[i]);
    onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/false);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), strict);
  } catch (const std::exception& e) {
    error = e.what();
    if (auto nl = error.find('\n'); nl != std::string::npos) error.resize(nl);
    return false;
  }
  return true;
}

}  // namespace

FixRun apply_fixes(const LoadedModel& loaded, const ModelFacts& facts_of_model, const std::vector<NodeFixPlan>& plans,
                   const std::string& strategy, const std::string& output_path, bool external_data) {
  FixRun run;
  run.output_path = output_path;
  onnx::ModelProto model = *loaded.model;
  const std::vector<NodeSlot> slots = collect_slots(*model.mutable_graph());
  NameAllocator names = NameAllocator::for_model(model);
  const TensorBytesReader reader = [&](const onnx::TensorProto& t, std::string& bytes, std::string& error) {
    return read_tensor_bytes(loaded, t, bytes, error);
  };

  // Rewrites are built in node order (names are handed out in that order),
  // proven side by side, then spliced in node order.
  std::vector<Candidate> candidates;
  for (const auto& plan : plans) {
    FixResult result;
    result.node = plan.node;
    const NodeFacts& facts = facts_of_model.nodes[static_cast<size_t>(plan.node)];
    const FixOption* option = choose_fix(plan, strategy, result.reason);
    if (option == nullptr || static_cast<size_t>(plan.node) >= slots.size()) {
      if (option != nullptr) result.reason = "node not found in the model";
      run.results.push_back(result);
      continue;
    }
    result.fix_id = option->id;
    result.input_shape = plan.params.input_shape;
    const NodeSlot& slot = slots[static_cast<size_t>(plan.node)];
    const onnx::NodeProto& node = slot.graph->node(slot.index);
    Candidate c;
    c.result = run.results.size();
    c.slot = slot;
    c.facts = &facts;
    c.in.node = &node;
    c.in.label = facts.display_name;
    c.in.params = plan.params;
    std::string error;
    QuantisedWeight quantised;
    if (find_quantised_weight(facts_of_model, facts, quantised, error) == WeightForm::Quantised) {
      // The constant under the weight's DequantizeLinear is what the rewrite lays out.
      c.quantised = std::make_unique<QuantisedWeight>(quantised);
      c.in.quantised = c.quantised.get();
      c.weight = find_initializer(slot, quantised.values->name());
      // An initializer scale or zero point goes once nothing reads it; a
      // computed one (Identity, a constant chain) goes with its dead nodes.
      for (const std::string* name : {&quantised.scale_name, &quantised.zero_point_name}) {
        if (!name->empty()) c.quantisation.push_back(find_initializer(slot, *name));
      }
    } else {
      c.weight = find_initializer(slot, node.input(1));
    }
    error.clear();
    c.bias = plan.params.has_bias ? find_initializer(slot, node.input(2)) : FoundInitializer{};
    c.in.weight = c.weight.tensor;
    c.in.bias = c.bias.tensor;
    if (!plan.inputs_blocker.empty()) {
      result.reason = plan.inputs_blocker;
    } else if (c.weight.tensor == nullptr || (plan.params.has_bias && c.bias.tensor == nullptr)) {
      result.reason = "the weight and bias must be initializers (not computed or graph inputs)";
    } else if (!build_rewrite(option->id, c.in, names, &reader, c.rewrite, error, /*defer_weights=*/true)) {
      result.reason = "cannot build the rewrite: " + error;
    } else {
      candidates.push_back(std::move(c));
    }
    run.results.push_back(std::move(result));
  }
  prove_all(candidates, run.results, reader);
  std::vector<Planned> planned;
  for (auto& c : candidates) {
    if (!run.results[c.result].applied) continue;
    Planned p{c.slot, std::move(c.rewrite), {c.weight, c.bias}, {}};
    p.replaced.insert(p.replaced.end(), c.quantisation.begin(), c.quantisation.end());
    if (c.quantised != nullptr) {
      p.weight_nodes.push_back(c.quantised->dequantize->output(0));
      if (c.quantised->quantize != nullptr) p.weight_nodes.push_back(c.quantised->quantize->output(0));
    }
    planned.push_back(std::move(p));
  }
  if (planned.empty()) return run;

  share_identical_initializers(planned_rewrites(planned));
  // The weights laid out anew are computed as they are written, one at a
  // time. Until then each is marked as data of the model file past its end:
  // the checker sees a tensor with data, and a read that is not routed to its
  // computation fails instead of returning other bytes.
  std::map<std::string, ComputedWeight> computed;
  for (auto& p : planned) {
    for (auto& c : p.rewrite.computed) computed.emplace(c.name, std::move(c));
    for (auto& t : p.rewrite.initializers) {
      auto c = computed.find(t.name());
      if (c != computed.end()) set_external_data(t, loaded.name, loaded.file_size, c->second.length);
    }
  }

  // Splice: each graph's node list is rebuilt once, rewrites in place of their node.
  std::map<onnx::GraphProto*, std::map<int, Planned*>> by_graph;
  for (auto& p : planned) by_graph[p.slot.graph][p.slot.index] = &p;
  for (auto& [graph, replacements] : by_graph) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Reserve(graph->node_size());
    for (int i = 0; i < graph->node_size(); ++i) {
      auto it = replacements.find(i);
      if (it == replacements.end()) {
        *nodes.Add() = std::move(*graph->mutable_node(i));
        continue;
      }
      for (auto& n : it->second->rewrite.nodes) *nodes.Add() = std::move(n);
      for (auto& t : it->second->rewrite.initializers) *graph->add_initializer() = std::move(t);
    }
    graph->mutable_node()->Swap(&nodes);
  }

  // No dead initializers: old weights go unless something still reads them
  // (or they double as graph inputs, whose default they are).
  std::map<std::string, int> uses;
  const auto count_uses = [&] {
    uses.clear();
    collect_uses(model.graph(), uses);
    for (const auto& f : model.functions()) {
      for (const auto& n : f.node()) {
        for (const auto& i : n.input()) ++uses[i];
      }
    }
  };
  count_uses();
  // Nor dead nodes: a quantised weight's old DequantizeLinear and
  // QuantizeLinear, and what computed their scale and zero point, go once
  // nothing reads their outputs.
  // One pass per graph (its writer index is built once, whatever the
  // number of rewritten layers).
  std::map<onnx::GraphProto*, std::vector<std::string>> weight_outputs;
  for (const auto& p : planned) {
    auto& outputs = weight_outputs[p.slot.graph];
    outputs.insert(outputs.end(), p.weight_nodes.begin(), p.weight_nodes.end());
  }
  std::map<onnx::GraphProto*, std::set<std::string>> chain_inputs;
  bool removed = false;
  for (auto& [graph, outputs] : weight_outputs) {
    if (!outputs.empty()) removed |= remove_dead_weight_chain(*graph, outputs, uses, chain_inputs[graph]);
  }
  if (removed) count_uses();
  std::map<onnx::GraphProto*, std::set<std::string>> dead;
  for (auto& [graph, read] : chain_inputs) {
    const NodeSlot& any = std::find_if(planned.begin(), planned.end(), [g = graph](const Planned& p) {
                            return p.slot.graph == g;
                          })->slot;
    for (const auto& name : read) {
      const FoundInitializer old = find_initializer(any, name);
      if (old.tensor != nullptr && uses[name] == 0 && !is_graph_input(*old.graph, name)) dead[old.graph].insert(name);
    }
  }
  for (const auto& p : planned) {
    for (const auto& old : p.replaced) {
      if (old.tensor != nullptr && uses[old.tensor->name()] == 0 && !is_graph_input(*old.graph, old.tensor->name())) {
        dead[old.graph].insert(old.tensor->name());
      }
    }
  }
  for (auto& [graph, gone] : dead) {
    google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
    for (auto& t : *graph->mutable_initializer()) {
      if (gone.count(t.name()) == 0) *kept.Add() = std::move(t);
    }
    graph->mutable_initializer()->Swap(&kept);
  }

  std::string error;
  // The loaded path, not the display path: it is where the weights really are.
  const std::string& source_dir = loaded.folder;
  if (!check_model_validity(model, source_dir.empty() ? "." : source_dir, error)) {
    run.error = "the rewritten model fails the ONNX checker or strict shape inference (" + error +
                "); nothing was written";
    for (auto& r : run.results) {
      if (r.applied) {
        r.applied = false;
        r.reason = "rolled back: the rewritten model is invalid";
      }
    }
    return run;
  }
  WriteOptions write_options;
  write_options.external_data = external_data;
  ComputedPayloads payloads;
  for (const auto& [name, c] : computed) {
    payloads[name] = {c.length, [&c = c, &reader](std::string& bytes, std::string& e) { return c.compute(reader, bytes, e); }};
  }
  write_options.computed = &payloads;
  WriteResult written;
  if (!write_model_atomic(loaded, model, output_path, write_options, written, error)) {
    run.error = error;
    for (auto& r : run.results) {
      if (r.applied) {
        r.applied = false;
        r.reason = "rolled back: the model could not be written";
      }
    }
    return run;
  }
  run.written = true;
  if (written.external_data) run.data_path = written.data_path;
  return run;
}

}  // namespace bpulint
