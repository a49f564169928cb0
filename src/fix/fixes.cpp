#include "bpulint/fix/fixes.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_map>

#include <onnx/defs/schema.h>

#include "bpulint/fix/convtranspose3d_rewrite.h"
#include "bpulint/engine/evaluate.h"
#include "bpulint/fix/fix_catalog.h"
#include "bpulint/fix/quantised_weight.h"
#include "bpulint/base/side_by_side.h"

namespace bpulint {
namespace {

bool int_list(const Value* v, std::vector<int64_t>& out) {
  if (v == nullptr || v->kind() != Value::Kind::List) return false;
  out.clear();
  for (const auto& item : v->items()) {
    if (item.kind() != Value::Kind::Int) return false;
    out.push_back(item.as_int());
  }
  return true;
}

struct Violations {
  std::vector<std::string> found;  // errors first, then warnings
  int errors = 0;
  std::string errors_brief;        // FixOption::new_errors_brief
};

// "BPU0002 (Reshape, Transpose), BPU1209 (ConvTranspose)": rules in order of
// first error, each with its ops sorted, so that fix kinds blocked alike read
// alike and choose_fix says the blocker once.
std::string brief_errors(const std::vector<std::pair<std::string, std::string>>& rule_ops) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_rule;
  for (const auto& rule_op : rule_ops) {
    // (no structured binding: clang 14 cannot capture one in the lambda)
    const std::string& rule = rule_op.first;
    const std::string& op = rule_op.second;
    auto it = std::find_if(by_rule.begin(), by_rule.end(), [&](const auto& r) { return r.first == rule; });
    if (it == by_rule.end()) it = by_rule.insert(by_rule.end(), {rule, {}});
    if (std::find(it->second.begin(), it->second.end(), op) == it->second.end()) it->second.push_back(op);
  }
  std::string out;
  for (auto& [rule, ops] : by_rule) {
    std::sort(ops.begin(), ops.end());
    out += (out.empty() ? "" : ", ") + rule + " (";
    for (size_t i = 0; i < ops.size(); ++i) out += (i > 0 ? ", " : "") + ops[i];
    out += ")";
  }
  return out;
}

// The platform's verdict on the replacement nodes alone: a mini model holding
// just the rewrite (weights as shapes only) goes through facts and evaluation.
Violations replacement_violations(const std::string& fix, const NodeFacts& node, const ConvTransposeParams& p,
                                  const Platform& platform, const RuleLevel& level) {
  onnx::ModelProto mini;
  mini.set_ir_version(8);
  auto* opset = mini.add_opset_import();
  opset->set_domain("");
  opset->set_version(std::max<int64_t>(node.opset, 13));
  auto* graph = mini.mutable_graph();
  graph->set_name("replacement");
  auto* x = graph->add_input();
  x->set_name(std::string(node.inputs[0].name));
  if (node.inputs[0].type != nullptr) *x->mutable_type() = *node.inputs[0].type;
  auto* y = graph->add_output();
  y->set_name(std::string(node.outputs[0].name));
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);

  onnx::TensorProto weight, bias;
  weight.set_name(node.inputs.size() > 1 ? std::string(node.inputs[1].name) : "W");
  weight.set_data_type(onnx::TensorProto::FLOAT);
  bias.set_name(node.inputs.size() > 2 ? std::string(node.inputs[2].name) : "B");
  bias.set_data_type(onnx::TensorProto::FLOAT);
  RewriteInputs in;
  in.node = node.proto;
  in.label = node.display_name;
  in.weight = &weight;
  in.bias = p.has_bias ? &bias : nullptr;
  in.params = p;
  NameAllocator names = NameAllocator::for_model(mini);
  Rewrite rewrite;
  std::string error;
  if (!build_rewrite(fix, in, names, nullptr, rewrite, error)) {
    return {{"cannot build the rewrite: " + error}, 1, "cannot build the rewrite: " + error};
  }
  for (auto& n : rewrite.nodes) *graph->add_node() = std::move(n);
  for (auto& t : rewrite.initializers) *graph->add_initializer() = std::move(t);

  LoadedModel loaded;
  loaded.path = "<replacement>";
  loaded.model = &mini;
  ModelFacts facts;
  if (!extract_facts(loaded, {}, facts, error)) {
    return {{"cannot analyse the rewrite: " + error}, 1, "cannot analyse the rewrite: " + error};
  }
  Violations out;
  std::vector<std::string> warnings;
  std::vector<std::pair<std::string, std::string>> error_rule_ops;
  for (const auto& d : evaluate(facts, platform)) {
    if (d.outcome != Outcome::Fail || d.node < 0) continue;
    Severity severity = d.severity;
    if (level && !level(*d.rule, severity)) continue;
    if (severity == Severity::Note) continue;
    const auto& n = facts.nodes[static_cast<size_t>(d.node)];
    const bool is_error = severity == Severity::Error;
    (is_error ? out.found : warnings)
        .push_back(d.rule->id + (is_error ? "" : " (warning)") + " on " + n.op_type + " '" + std::string(n.display_name) + "': " +
                   d.message);
    out.errors += is_error ? 1 : 0;
    if (is_error) error_rule_ops.push_back({d.rule->id, n.op_type});
  }
  out.found.insert(out.found.end(), warnings.begin(), warnings.end());
  out.errors_brief = brief_errors(error_rule_ops);
  return out;
}

// Best first: applicable, then free of new errors, then the fewest new
// warnings, then a kind made for the layer before a fallback that covers it
// too (FixKind::fallback: the D-tap rewrite adds a MatMul and a Transpose to
// what convtranspose2d does on a non-overlapping D), then the fewest
// intermediate channels (what the BPU's convolution cost follows: the case
// study measured 1.55x between 320 and 1280 channels), then data moved, MACs.
bool better(const FixOption& a, const FixOption& b) {
  if (a.applicable != b.applicable) return a.applicable;
  if ((a.new_errors == 0) != (b.new_errors == 0)) return a.new_errors == 0;
  const size_t warnings_a = a.new_violations.size() - static_cast<size_t>(a.new_errors);
  const size_t warnings_b = b.new_violations.size() - static_cast<size_t>(b.new_errors);
  if (warnings_a != warnings_b) return warnings_a < warnings_b;
  const auto fallback = [](const FixOption& o) {
    const FixKind* kind = find_fix_kind(o.id);
    return kind != nullptr && kind->layer != nullptr && kind->layer->fallback;
  };
  if (fallback(a) != fallback(b)) return !fallback(a);
  auto key = [](const FixCost& c) {
    auto known = [](int64_t v) { return v < 0 ? INT64_MAX : v; };
    return std::make_tuple(known(c.intermediate_channels), known(c.moved_elements), known(c.macs));
  };
  return key(a.cost) < key(b.cost);
}

}  // namespace

const FixOption* choose_fix(const NodeFixPlan& plan, const std::string& strategy, std::string& why_not) {
  if (!plan.inputs_blocker.empty()) {  // no fix kind can rewrite these inputs
    why_not = plan.inputs_blocker;
    return nullptr;
  }
  if (strategy == "auto") {
    if (const FixOption* r = plan.recommended()) return r;
    // The blocker first; said once when every fix kind has the same one. A
    // replacement's own errors are named by rule and op, not node by node.
    std::vector<std::pair<std::string, std::string>> reasons;
    for (const auto& o : plan.options) {
      if (!o.applicable) reasons.push_back({o.id, o.why_not});
      else if (o.new_errors > 0) reasons.push_back({o.id, "its nodes would break " + o.new_errors_brief});
    }
    const bool same = std::all_of(reasons.begin(), reasons.end(),
                                  [&](const auto& r) { return r.second == reasons.front().second; });
    if (!reasons.empty() && same) {
      why_not = "no fix applies: " + reasons.front().second;
    } else {
      why_not = "no fix applies";
      for (const auto& [id, reason] : reasons) why_not += "; " + id + ": " + reason;
    }
    // What is left to the user, said plainly: no rewrite of this layer runs
    // on this chip. Not while a pinned shape might still let one apply.
    const bool pin_may_help = std::any_of(plan.options.begin(), plan.options.end(),
                                          [](const FixOption& o) { return o.needs_pinned_shape; });
    if (!pin_may_help) why_not += "; the layer needs a change in its PyTorch source";
    return nullptr;
  }
  for (const auto& o : plan.options) {
    if (o.id != strategy) continue;
    if (!o.applicable) {
      why_not = o.id + " does not apply: " + o.why_not;
      return nullptr;
    }
    return &o;
  }
  why_not = "the rule does not offer " + strategy;
  return nullptr;
}

std::string NodeFixPlan::fix_blocked() const {
  std::string why_not;
  if (choose_fix(*this, "auto", why_not) == nullptr) return why_not;
  return "";
}

const FixOption* NodeFixPlan::recommended() const {
  for (const auto& o : options) {
    if (o.recommended) return &o;
  }
  return nullptr;
}

namespace {

// What the facts below resolve to, read straight from the node, when it sets
// kernel_shape and every other attribute the rewrites read is either unset or
// of its ONNX type (auto_pad only NOTSET, no output_shape): the ONNX defaults
// (strides and dilations 1, pads and output_padding 0, group 1) need no Value
// records. Exporters write ConvTranspose this way; false takes the general path.
bool direct_attributes(const NodeFacts& node, ConvTransposeParams& p) {
  using A = onnx::AttributeProto;
  if (node.proto == nullptr || node.opset <= 0) return false;
  const A *kernel = nullptr, *strides = nullptr, *pads = nullptr, *dilations = nullptr, *output_padding = nullptr,
          *group = nullptr, *auto_pad = nullptr;
  for (const A& a : node.proto->attribute()) {  // the last of a name wins, as in the facts
    const std::string& name = a.name();
    if (name == "kernel_shape") kernel = &a;
    else if (name == "strides") strides = &a;
    else if (name == "pads") pads = &a;
    else if (name == "dilations") dilations = &a;
    else if (name == "output_padding") output_padding = &a;
    else if (name == "group") group = &a;
    else if (name == "auto_pad") auto_pad = &a;
    else if (name == "output_shape") return false;
  }
  if (kernel == nullptr || kernel->type() != A::INTS) return false;
  for (const A* a : {strides, pads, dilations, output_padding}) {
    if (a != nullptr && a->type() != A::INTS) return false;
  }
  if ((group != nullptr && group->type() != A::INT) ||
      (auto_pad != nullptr && (auto_pad->type() != A::STRING || auto_pad->s() != "NOTSET"))) {
    return false;
  }
  // Defaults come from the schema; without one the general path decides.
  // The node is a default-domain ConvTranspose (conv_transpose_params checked),
  // so the answer depends on the opset alone: looked up once per opset and
  // thread (per node, it was a third of planning 20,000 findings).
  thread_local int64_t known_opset = -1;
  thread_local bool has_schema = false;
  if (node.opset != known_opset) {
    has_schema = onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(node.opset), node.domain) != nullptr;
    known_opset = node.opset;
  }
  if (!has_schema) return false;
  const auto ints = [](const A* a, size_t n, int64_t fill) {
    return a != nullptr ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>(n, fill);
  };
  const size_t rank = static_cast<size_t>(kernel->ints_size());
  p.kernel = ints(kernel, rank, 0);
  p.strides = ints(strides, rank, 1);
  p.pads = ints(pads, 2 * rank, 0);
  p.dilations = ints(dilations, rank, 1);
  p.output_padding = ints(output_padding, rank, 0);
  p.group = group != nullptr ? group->i() : 1;
  return true;
}

}  // namespace

bool conv_transpose_params(const NodeFacts& node, ConvTransposeParams& p, std::string& why_not) {
  if (node.op_type != "ConvTranspose" || !node.domain.empty()) {
    why_not = "not a ConvTranspose";
    return false;
  }
  if (node.inputs.size() < 2 || node.outputs.empty() || node.outputs[0].name.empty()) {
    why_not = "the node has no weight input or no output";
    return false;
  }
  if (!direct_attributes(node, p)) {
    // The node's own facts, read one by one: a full record per finding (every
    // schema attribute, a Value tree per input) cost more than the checks.
    static const std::string op_class = "bpu";
    const NodeFactSource facts(node, op_class);
    const auto fact = [&facts](const std::string& name) {
      // Interned once per name, not per finding (interning takes a lock).
      static const std::map<std::string, FactId> ids = [] {
        std::map<std::string, FactId> m;
        for (const char* f : {"auto_pad", "output_shape", "kernel_shape", "strides", "pads", "dilations",
                              "output_padding", "group"}) {
          m.emplace(f, intern_fact(f));
        }
        return m;
      }();
      return facts.fact(ids.at(name), name);
    };
    const Value* auto_pad = fact("auto_pad");
    if (auto_pad != nullptr && auto_pad->kind() == Value::Kind::String && auto_pad->as_string() != "NOTSET") {
      why_not = "auto_pad " + auto_pad->as_string() + " is not supported by the rewrites (explicit pads are)";
      return false;
    }
    const Value* output_shape = fact("output_shape");
    if (output_shape != nullptr && !output_shape->is_unknown()) {
      why_not = "output_shape is set (its implicit pads are not supported by the rewrites)";
      return false;
    }
    const Value* group = nullptr;
    if (!int_list(fact("kernel_shape"), p.kernel) || !int_list(fact("strides"), p.strides) ||
        !int_list(fact("pads"), p.pads) || !int_list(fact("dilations"), p.dilations) ||
        !int_list(fact("output_padding"), p.output_padding) || (group = fact("group")) == nullptr ||
        group->kind() != Value::Kind::Int) {
      why_not = "its attributes or weight shape are not known";
      return false;
    }
    p.group = group->as_int();
  }
  // The inputs' shapes straight from their types, as the record's `shape`
  // would give them (an absent input has none).
  const auto shape_of = [](const TensorFacts& t) -> const onnx::TensorShapeProto* {
    if (t.name.empty() || t.type == nullptr || !t.type->has_tensor_type() || !t.type->tensor_type().has_shape()) {
      return nullptr;
    }
    return &t.type->tensor_type().shape();
  };
  std::vector<int64_t> weight;
  const onnx::TensorShapeProto* w = shape_of(node.inputs[1]);
  bool weight_known = w != nullptr;
  for (int i = 0; weight_known && i < w->dim_size(); ++i) {
    weight_known = w->dim(i).has_dim_value();
    if (weight_known) weight.push_back(w->dim(i).dim_value());
  }
  if (!weight_known || weight.size() < 2) {
    why_not = "the weight shape is not known";
    return false;
  }
  p.c_in = weight[0];
  if (weight[0] <= 0 || weight[1] <= 0 || p.group <= 0 || __builtin_mul_overflow(weight[1], p.group, &p.c_out)) {
    why_not = "the weight shape or group is not valid";
    return false;
  }
  p.has_bias = node.inputs.size() > 2 && !node.inputs[2].name.empty();
  // Unknown input dims are recorded as -1: whether a rewrite applies is
  // decided on the attributes first, so the real blocker is named first.
  p.input_shape.clear();
  if (const onnx::TensorShapeProto* x = shape_of(node.inputs[0])) {
    for (const auto& dim : x->dim()) p.input_shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  }
  return true;
}

namespace {

// Identical layers (a decoder repeats its blocks) get the same verdict on
// their replacement: key on everything the mini model is built from. The
// input's type comes serialized (`type_bytes`, "" when unknown).
std::string violation_key(const std::string& fix, const NodeFacts& n, const ConvTransposeParams& p,
                          const std::string& type_bytes) {
  // Built once per finding: appended in place, no temporary strings.
  std::string key;
  key.reserve(160 + type_bytes.size());
  const auto num = [&key](int64_t x, char sep) {
    char buf[24];
    key.append(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
    key += sep;
  };
  key += fix;
  key += '|';
  num(n.opset, '|');
  num(p.c_in, ',');
  num(p.c_out, ',');
  num(p.group, ',');
  key += p.has_bias ? 'b' : '-';
  for (const auto* v : {&p.kernel, &p.strides, &p.pads, &p.dilations, &p.output_padding, &p.input_shape}) {
    key += '|';
    for (int64_t x : *v) num(x, ',');
  }
  if (n.inputs[0].type != nullptr) {
    key += '|';
    key += type_bytes;
  }
  return key;
}

// What apply_fixes needs of the weight and bias: float32 initializers (a
// computed weight or a graph input has no bytes to rewrite), or a weight that
// is DequantizeLinear of a constant (`weight_form` Quantised).
std::string inputs_blocker(const NodeFacts& n, const ConvTransposeParams& p, WeightForm weight_form,
                           const std::string& quantised_why_not) {
  for (size_t i = 1; i < (p.has_bias ? 3u : 2u) && i < n.inputs.size(); ++i) {
    const TensorFacts& t = n.inputs[i];
    const char* what = i == 1 ? "weight" : "bias";
    if (i == 1 && weight_form == WeightForm::Quantised) continue;
    if (i == 1 && weight_form == WeightForm::Unsupported) return quantised_why_not + "; --fix cannot rewrite it";
    if (t.initializer == nullptr) {
      return std::string("its ") + what + " '" + std::string(t.name) +
             "' is not an initializer (computed, or a graph input), so --fix has no bytes to rewrite";
    }
    if (t.initializer->data_type() != onnx::TensorProto::FLOAT) {
      return std::string("its ") + what + " '" + std::string(t.name) + "' is " +
             dtype_name(t.initializer->data_type()) + "; the rewrites handle float32";
    }
  }
  return "";
}

using WantedFixes = std::vector<std::pair<long, std::vector<std::string>>>;

// Plans for wanted[lo, hi), in order. `violations_cache` spares re-linting
// the replacement of a layer identical to one already planned.
std::vector<NodeFixPlan> plan_range(const ModelFacts& facts, const WantedFixes& wanted, size_t lo, size_t hi,
                                    const Platform& platform, const RuleLevel& level) {
  std::unordered_map<std::string, Violations> violations_cache;
  std::unordered_map<const onnx::TypeProto*, std::string> type_bytes;
  std::vector<NodeFixPlan> plans;
  plans.reserve(hi - lo);
  for (size_t w = lo; w < hi; ++w) {
    const auto& [node, ids] = wanted[w];
    if (ids.empty()) continue;
    NodeFixPlan plan;
    plan.node = node;
    const NodeFacts& n = facts.nodes[static_cast<size_t>(node)];
    std::string why_not;
    plan.params_known = conv_transpose_params(n, plan.params, why_not);
    QuantisedWeight quantised;
    std::string quantised_why_not;
    const WeightForm weight_form =
        plan.params_known ? find_quantised_weight(facts, n, quantised, quantised_why_not) : WeightForm::Float;
    plan.options.reserve(ids.size());
    for (const auto& id : ids) {
      const FixKind* kind = find_fix_kind(id);
      FixOption o;
      o.id = id;
      o.title = kind ? kind->title : id;
      o.applicability = kind ? kind->applicability : Applicability::Unsafe;
      if (!plan.params_known) {
        o.why_not = why_not;
      } else if (!fix_applies(id, plan.params, o.why_not)) {
        // A missing shape: say which graph input to pin, when that is the cause.
        const RootCause* cause = facts.cause(n.inputs.empty() ? 0 : n.inputs[0].cause);
        const bool shape_missing = plan.params.input_shape.size() != plan.params.kernel.size() + 2 ||
                                   std::any_of(plan.params.input_shape.begin() + 1, plan.params.input_shape.end(),
                                               [](int64_t d) { return d < 0; });
        o.needs_pinned_shape = shape_missing && o.why_not.rfind("input ", 0) == 0;
        if (o.needs_pinned_shape && cause != nullptr && !cause->hint.empty()) o.why_not += "; " + cause->hint;
      } else if (WeightAxis axis; weight_form == WeightForm::Quantised && quantised.axis >= 0 && kind != nullptr &&
                 !kind->layer->weight_axis(plan.params, quantised.axis, axis, o.why_not)) {
        // A per-channel quantised weight whose axis this kind's layout cannot carry.
      } else {
        o.applicable = true;
        o.cost = predict_cost(id, plan.params);
        // Inferred types are shared between look-alike tensors: serialized once each.
        const onnx::TypeProto* type = n.inputs[0].type;
        auto bytes = type_bytes.find(type);
        if (bytes == type_bytes.end()) {
          bytes = type_bytes.emplace(type, type != nullptr ? type->SerializeAsString() : std::string()).first;
        }
        const std::string key = violation_key(id, n, plan.params, bytes->second);
        auto cached = violations_cache.find(key);
        if (cached == violations_cache.end()) {
          cached = violations_cache.emplace(key, replacement_violations(id, n, plan.params, platform, level)).first;
        }
        o.new_violations = cached->second.found;
        o.new_errors = cached->second.errors;
        o.new_errors_brief = cached->second.errors_brief;
      }
      plan.options.push_back(std::move(o));
    }
    std::stable_sort(plan.options.begin(), plan.options.end(), better);
    if (plan.params_known) plan.inputs_blocker = inputs_blocker(n, plan.params, weight_form, quantised_why_not);
    // Recommended means --fix applies it: not while the weight or bias cannot be rewritten.
    if (plan.inputs_blocker.empty() && !plan.options.empty() && plan.options.front().applicable &&
        plan.options.front().new_errors == 0) {
      plan.options.front().recommended = true;
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace

std::vector<NodeFixPlan> plan_fixes(const ModelFacts& facts, const std::vector<Diagnostic>& diagnostics,
                                    const Platform& platform, const RuleLevel& level) {
  // Fix ids per node, in the order their rules list them.
  std::map<long, std::vector<std::string>> by_node;
  for (const auto& d : diagnostics) {
    if (d.node < 0 || d.outcome != Outcome::Fail || d.severity != Severity::Error || !d.shown()) continue;
    auto& ids = by_node[d.node];
    for (const auto& f : d.rule->fixes) {
      const FixKind* kind = find_fix_kind(f);
      if (kind == nullptr || kind->layer == nullptr) continue;  // a config remedy: plan_config_fixes
      if (std::find(ids.begin(), ids.end(), f) == ids.end()) ids.push_back(f);
    }
  }
  const WantedFixes wanted(std::make_move_iterator(by_node.begin()), std::make_move_iterator(by_node.end()));
  // Plans are independent and read-only on the facts: thousands of findings
  // are planned in two halves at once (planning is the last step before the
  // report, when the other core is idle). Each half keeps its own cache, so
  // a layer repeated in both is re-linted at most twice; the plans are the same.
  constexpr size_t kSplitFrom = 256;
  if (wanted.size() < kSplitFrom) return plan_range(facts, wanted, 0, wanted.size(), platform, level);
  const size_t mid = wanted.size() / 2;
  std::vector<NodeFixPlan> plans, second;
  run_side_by_side([&] { plans = plan_range(facts, wanted, 0, mid, platform, level); },
                   [&] { second = plan_range(facts, wanted, mid, wanted.size(), platform, level); });
  plans.insert(plans.end(), std::make_move_iterator(second.begin()), std::make_move_iterator(second.end()));
  return plans;
}

}  // namespace bpulint
